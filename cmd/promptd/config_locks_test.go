package main

import (
	"strings"
	"testing"
	"time"
)

func TestLoadConfig_retentionAndLockLimits_areReadAndChecked(t *testing.T) {
	c, err := loadConfig(env(map[string]string{
		"PROMPTD_AUDIT_RETENTION":   "720h",
		"PROMPTD_LEASE_MAX_WAITERS": "500",
		"PROMPTD_LOCK_FENCE_TTL":    "1h",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.AuditRetention != 720*time.Hour || c.LeaseMaxWaiters != 500 || c.LockFenceTTL != time.Hour {
		t.Fatalf("config = %+v", c)
	}
	_, err = loadConfig(env(map[string]string{
		"PROMPTD_AUDIT_RETENTION":   "0s",
		"PROMPTD_LEASE_MAX_WAITERS": "0",
		"PROMPTD_LOCK_FENCE_TTL":    "a day",
	}))
	for _, name := range []string{"PROMPTD_AUDIT_RETENTION", "PROMPTD_LEASE_MAX_WAITERS", "PROMPTD_LOCK_FENCE_TTL"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("invalid %s not reported: %v", name, err)
		}
	}
}
