package main

import (
	"testing"
	"time"

	"github.com/promptd/promptd/internal/harness/testenv"
)

// With the leases on etcd, /readyz reports etcd: ok while it answers; with
// its only member SIGSTOPped, down and degraded, still 200 (SQL answers);
// ok again after the member resumes.
func TestMain_leasesOnEtcd_readyzReportsEtcd(t *testing.T) {
	const adm = "etcd-admin-secret-01234"
	member := testenv.StartEtcd(t)
	cfg, err := loadConfig(env(map[string]string{
		"PROMPTD_MYSQL_DSN":      testenv.MySQLDSN(t),
		"PROMPTD_TOKENS":         "ops:admin:" + adm,
		"PROMPTD_ETCD_ENDPOINTS": member.Endpoint(),
		"PROMPTD_INSTANCE_ID":    "etcd-ready",
	}))
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + openMain(t, cfg, &lockedBuffer{}).Addr().String()
	waitReadyz := func(want string) {
		t.Helper()
		var code int
		var body string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if code, body = readyz(t, base); code == 200 && body == want {
				return
			}
		}
		t.Fatalf("/readyz = %d %s, want 200 %s", code, body, want)
	}
	waitReadyz(`{"sql":"ok","redis":"disabled","etcd":"ok","mode":"normal"}`)
	member.Pause()
	waitReadyz(`{"sql":"ok","redis":"disabled","etcd":"down","mode":"degraded"}`)
	member.Resume()
	waitReadyz(`{"sql":"ok","redis":"disabled","etcd":"ok","mode":"normal"}`)
}
