package release_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/sqlstore"
)

// Four steps one second apart, with three instances running the step job
// every 100 ms: the release ends as the steps define, each step applied
// exactly once.
func TestSteps_threeInstances_eachStepOnce(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{MySQLDSN: testenv.MySQLDSN(t)}, migrations())
	rdb := testenv.RedisClient(t)
	keys := locks.Keys{Prefix: fmt.Sprint("steps", time.Now().UnixNano())}
	var envs []*env
	for i := 0; i < 3; i++ {
		locker := locks.NewRedis(rdb, locks.RedisOptions{Keys: keys}, locks.Options{Holder: fmt.Sprint("i", i)})
		envs = append(envs, newEnv(t, db, promptd.Options{Locker: locker, Keys: keys}, rdb))
	}
	envs[0].seed(t)
	ctx := ctxT(t)
	r, err := envs[0].rel.Create(ctx, release.CreateInput{Agent: "a", Env: "prod", CandidateVersion: 2, Percent: "5",
		Steps: []release.Step{{Percent: "25", After: "1s"}, {Percent: "50", After: "1s"}, {Percent: "75", After: "1s"}, {Promote: true, After: "1s"}}})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	for _, e := range envs {
		go func() {
			defer func() { done <- struct{}{} }()
			tk := time.NewTicker(100 * time.Millisecond)
			defer tk.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tk.C:
					_, _ = e.rel.RunDueSteps(context.Background())
				}
			}
		}()
	}
	deadline := time.Now().Add(15 * time.Second)
	var final *release.Release
	for time.Now().Before(deadline) {
		final, err = envs[1].rel.Get(ctx, r.ID)
		if err == nil && final.State == release.Promoted {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	for range envs {
		<-done
	}
	if final == nil || final.State != release.Promoted || final.StepsApplied != 4 {
		t.Fatalf("final = %+v", final)
	}
	var steps []struct{ Details string }
	db.Raw(`SELECT details FROM audit_events WHERE action = 'release.step_applied' ORDER BY id`).Scan(&steps)
	if len(steps) != 4 {
		t.Fatalf("%d release.step_applied events, want 4: %v", len(steps), steps)
	}
	want := []string{"25", "50", "75", "75"}
	for i, h := range final.History[1:] {
		if string(h.Percent) != want[i] {
			t.Fatalf("history %d: %+v", i, h)
		}
	}
	env, _ := envs[2].store.GetEnv(ctx, "a", "prod")
	if env.Version != 2 || env.ActiveReleaseID != "" {
		t.Fatalf("env after the promote step: %+v", env)
	}
	gaps := []time.Duration{}
	for i := 1; i < len(final.History); i++ {
		gaps = append(gaps, final.History[i].At.Sub(final.History[i-1].At).Round(10*time.Millisecond))
	}
	t.Logf("4 steps over 3 instances: %d step_applied events, final %s at v%d; gaps between transitions %v", len(steps), final.State, env.Version, gaps)
}
