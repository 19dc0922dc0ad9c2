package client_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promptd/promptd/api/client"
	"github.com/promptd/promptd/internal/harness/testenv"
)

func TestWebhooks_embedded_generateAPrivateSecretKeyAndRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("starts promptd")
	}
	dir := t.TempDir()
	p := testenv.StartPromptd(t, map[string]string{"PROMPTD_DATA_DIR": dir, "PROMPTD_TOKENS": "ops:admin:" + adminSecret})
	c := client.New(p.URL, adminSecret)
	ctx := context.Background()
	fi, err := os.Stat(filepath.Join(dir, "secret_key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secret_key: %v, mode %v; want a 0600 file", err, fi)
	}

	_, err = c.CreateWebhook(ctx, client.CreateWebhookRequest{URL: "https://169.254.169.254/x", Actions: []string{"*"}})
	var ce *client.Error
	if !errors.Is(err, client.ErrInvalidURL) || !errors.As(err, &ce) || ce.Fields["reason"] != "refused_address" {
		t.Fatalf("metadata address: %v", err)
	}
	kctx := client.WithIdempotencyKey(ctx, "hook-1")
	req := client.CreateWebhookRequest{URL: "https://93.184.216.34/hook", Actions: []string{"release.*"}, Agents: []string{"support"}}
	w, err := c.CreateWebhook(kctx, req)
	if err != nil || w.Secret == nil || !strings.HasPrefix(*w.Secret, "whsec_") {
		t.Fatalf("create: %+v %v", w, err)
	}
	replay, err := c.CreateWebhook(kctx, req)
	if err != nil || replay.Secret != nil || !replay.SecretRedacted || replay.ID != w.ID {
		t.Fatalf("replay: %+v %v", replay, err)
	}
	off := false
	u, err := c.UpdateWebhook(ctx, w.ID, client.UpdateWebhookRequest{Enabled: &off, ExpectedRevision: 1})
	if err != nil || u.Enabled || u.Revision != 2 {
		t.Fatalf("update: %+v %v", u, err)
	}
	if _, err := c.UpdateWebhook(ctx, w.ID, client.UpdateWebhookRequest{Enabled: &off, ExpectedRevision: 1}); !errors.Is(err, client.ErrRevisionConflict) {
		t.Fatalf("stale update: %v", err)
	}
	r, err := c.RotateWebhookSecret(ctx, w.ID, 2)
	if err != nil || r.Secret == nil || *r.Secret == *w.Secret || r.PreviousSecretSignsUntil == nil {
		t.Fatalf("rotate: %+v %v", r, err)
	}
	ws, err := c.ListWebhooks(ctx)
	if err != nil || len(ws) != 1 || ws[0].Secret != nil {
		t.Fatalf("list: %+v %v", ws, err)
	}
	if page, err := c.ListDeliveries(ctx, w.ID, client.ListOptions{}); err != nil || len(page.Items) != 0 {
		t.Fatalf("deliveries: %+v %v", page, err)
	}
	if _, err := c.RetryDelivery(ctx, w.ID, "1"); !errors.Is(err, client.ErrDeliveryNotFound) {
		t.Fatalf("retry: %v", err)
	}
	if err := c.DeleteWebhook(ctx, w.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetWebhook(ctx, w.ID); !errors.Is(err, client.ErrWebhookNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
}
