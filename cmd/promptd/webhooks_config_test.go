package main

import (
	"strings"
	"testing"
	"time"

	"github.com/promptd/promptd/webhook"
)

func TestLoadConfig_webhookVariables_areReadAndChecked(t *testing.T) {
	key := webhook.NewKey()
	c, err := loadConfig(env(map[string]string{"PROMPTD_SECRET_KEY": key, "PROMPTD_WEBHOOK_ALLOW_HTTP": "true",
		"PROMPTD_WEBHOOK_ALLOW_PRIVATE": "true", "PROMPTD_WEBHOOK_BACKOFF": "1s, 2m"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.SecretKey) != 32 || !c.WebhookAllowHTTP || !c.WebhookAllowPrivate ||
		len(c.WebhookBackoff) != 2 || c.WebhookBackoff[1] != 2*time.Minute {
		t.Fatalf("config = %+v", c)
	}
	_, err = loadConfig(env(map[string]string{"PROMPTD_SECRET_KEY": "c2hvcnQ=", "PROMPTD_WEBHOOK_BACKOFF": "5s,-1s"}))
	if err == nil || !strings.Contains(err.Error(), "PROMPTD_SECRET_KEY") || !strings.Contains(err.Error(), "PROMPTD_WEBHOOK_BACKOFF") ||
		strings.Contains(err.Error(), "c2hvcnQ=") {
		t.Fatalf("err = %v; want both variables named, the key never quoted", err)
	}
}
