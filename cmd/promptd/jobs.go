package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"
	"gorm.io/gorm"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/api/idempotency"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/board"
	"github.com/promptd/promptd/exposure"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/webhook"
)

// Job periods.
const (
	idempotencySweepEvery = 10 * time.Minute
	auditRetentionEvery   = 10 * time.Minute
	releaseStepsEvery     = time.Second // steps are due to the second
	sessionSweepEvery     = time.Minute
	boardSweepEvery       = time.Second // a run sweeps every boardSweepTick for most of it
	boardSweepTick        = 200 * time.Millisecond
	jobTimeout            = time.Minute
)

// cronLogger adapts slog to robfig/cron's logger.
type cronLogger struct{ log *slog.Logger }

func (l cronLogger) Info(msg string, kv ...any) { l.log.Debug("cron: "+msg, kv...) }
func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error("cron: "+msg, append(kv, "err", err)...)
}

// scheduler runs promptd's jobs: per-instance jobs on every replica, and
// cluster singletons under a locks lease so one replica runs each run.
// Every job recovers from panics and is skipped while its previous run is
// still going.
type scheduler struct {
	cron   *cron.Cron
	ctx    context.Context // cancelled by stop, so runs in progress end
	cancel context.CancelFunc
	locker locks.Locker
	keys   locks.Keys
	log    *slog.Logger
}

func newScheduler(locker locks.Locker, keys locks.Keys, log *slog.Logger) *scheduler {
	l := cronLogger{log}
	ctx, cancel := context.WithCancel(context.Background())
	return &scheduler{
		cron:   cron.New(cron.WithLogger(l), cron.WithChain(cron.Recover(l), cron.SkipIfStillRunning(l))),
		ctx:    ctx,
		cancel: cancel,
		locker: locker, keys: keys, log: log,
	}
}

// everyInstance runs job every period on this instance.
func (s *scheduler) everyInstance(name string, every time.Duration, job func(context.Context) error) {
	s.cron.Schedule(cron.Every(every), cron.FuncJob(func() {
		ctx, cancel := context.WithTimeout(s.ctx, min(every*5, jobTimeout))
		defer cancel()
		if err := job(ctx); err != nil && s.ctx.Err() == nil {
			s.log.Warn("job failed", "job", name, "err", err)
		}
	}))
}

// singleton runs job every period on one instance at a time: each run
// goes through locks.RunExclusive on the job's key (locks.Keys.Job(name)),
// skipped when another replica holds it. The run's context ends if the
// lease is lost, at stop, or after jobTimeout.
func (s *scheduler) singleton(name string, every time.Duration, job func(context.Context) error) {
	key, err := s.keys.Job(name)
	if err != nil {
		panic(err) // job names are constants
	}
	s.cron.Schedule(cron.Every(every), cron.FuncJob(func() { s.runSingleton(name, key, job) }))
}

// runSingleton is one run of a singleton job; ran reports whether this
// instance ran it. The lease outlives the job's timeout, so it is never
// lost to its TTL while the run is within its time.
func (s *scheduler) runSingleton(name, key string, job func(context.Context) error) (ran bool) {
	ran, err := locks.RunExclusive(s.ctx, s.locker, key, jobTimeout+10*time.Second, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, jobTimeout)
		defer cancel()
		if err := job(ctx); err != nil && ctx.Err() == nil {
			return err
		}
		return nil // cut short by the timeout, stop or a lost lease: the next run continues
	})
	switch {
	case err == nil || s.ctx.Err() != nil:
	case !ran:
		s.log.Warn("job lease not obtained; skipping this run", "job", name, "err", err)
	default:
		s.log.Warn("job failed", "job", name, "err", err)
	}
	return ran
}

func (s *scheduler) start() { s.cron.Start() }

// stop stops scheduling, cancels runs in progress and waits for them (at
// most until ctx ends).
func (s *scheduler) stop(ctx context.Context) {
	done := s.cron.Stop()
	s.cancel()
	select {
	case <-done.Done():
	case <-ctx.Done():
	}
}

// jobDeps are the services whose jobs promptd schedules.
type jobDeps struct {
	db             *gorm.DB // holds the audit table
	store          *promptstore.Store
	idem           *idempotency.Store
	releases       *release.Service
	sessions       *session.Service
	boards         *board.Service
	auditRetention time.Duration // PROMPTD_AUDIT_RETENTION
	webhooks       *webhook.Service
	access         *access.Service
	// deliveryRetention: PROMPTD_WEBHOOK_DELIVERY_RETENTION
	deliveryRetention time.Duration
	// exposures: outcome ids past their dedupe window are forgotten.
	exposures  *exposure.Service
	guardEvery time.Duration // PROMPTD_GUARD_EVERY
}

// scheduleJobs registers promptd's jobs.
func scheduleJobs(s *scheduler, d jobDeps, reconcileEvery time.Duration, log *slog.Logger) {
	// The reconciler keeps this instance's caches (pointers, then the
	// releases they name) within one period of SQL.
	s.everyInstance("reconcile", reconcileEvery, func(ctx context.Context) error {
		return errors.Join(d.store.Reconcile(ctx), d.releases.Reconcile(ctx))
	})
	// Expired Idempotency-Key outcomes, and audit events older than the
	// retention, are deleted by one replica, in bounded batches.
	s.singleton("idempotency-sweep", idempotencySweepEvery, sweepIdempotency(d, log))
	s.singleton("audit-retention", auditRetentionEvery, pruneAudit(d, log))
	// Delivered and failed webhook deliveries past their retention go too
	// (pending ones never).
	if d.webhooks != nil {
		s.singleton("webhook-retention", auditRetentionEvery, func(ctx context.Context) error {
			n, err := d.webhooks.Prune(ctx, time.Now().Add(-d.deliveryRetention))
			if n > 0 {
				log.Info("deleted webhook deliveries past retention", "deleted", n, "retention", d.deliveryRetention.String())
			}
			return err
		})
	}
	// Outcome ids older than their 7-day dedupe window are forgotten (the
	// outcomes stay for the guard), by one replica, in batches.
	if d.exposures != nil {
		s.singleton("outcome-dedupe-sweep", idempotencySweepEvery, func(ctx context.Context) error {
			_, err := d.exposures.Sweep(ctx, 10000)
			return err
		})
	}
	// Change requests past their 24 h are marked expired (and audited).
	if d.access != nil {
		s.singleton("change-request-expiry", time.Minute, func(ctx context.Context) error {
			n, err := d.access.ExpireRequests(ctx)
			if n > 0 {
				log.Info("expired change requests", "expired", n)
			}
			return err
		})
	}
	// Release steps due now are applied once across replicas: RunDueSteps
	// runs under its own job lease (locks.RunExclusive on the job key
	// release.StepsJob) and applies each step under the release row's
	// revision and step conditions.
	s.everyInstance(release.StepsJob, releaseStepsEvery, func(ctx context.Context) error {
		n, err := d.releases.RunDueSteps(ctx)
		if n > 0 {
			log.Info("applied release steps", "applied", n)
		}
		return err
	})
	// Release guards are evaluated by one replica at a time: RunGuards runs
	// under its own job lease (release.GuardJob) and trips a guard through
	// the normal revision-checked transition.
	if d.guardEvery > 0 {
		s.everyInstance(release.GuardJob, d.guardEvery, func(ctx context.Context) error {
			_, err := d.releases.RunGuards(ctx)
			return err
		})
	}
	// Idle sessions are closed and old closed ones deleted; Sweep runs under
	// its own job lease (session.SweepJob), so one replica runs it at a time.
	s.everyInstance(session.SweepJob, sessionSweepEvery, func(ctx context.Context) error {
		closed, deleted, err := d.sessions.Sweep(ctx)
		if closed+deleted > 0 {
			log.Info("swept sessions", "closed", closed, "deleted", deleted)
		}
		return err
	})
	// Expired board claims are reclaimed within about boardSweepTick of
	// their expiry: each run holds the job lease (board.SweepJob) and
	// sweeps every tick for most of a second; one replica at a time.
	if d.boards != nil {
		s.everyInstance(board.SweepJob, boardSweepEvery, func(ctx context.Context) error {
			res, err := d.boards.Sweep(ctx, boardSweepEvery-boardSweepTick, boardSweepTick)
			if res.Exhausted+res.Deleted > 0 {
				log.Info("swept boards", "reclaimed", res.Reclaimed, "exhausted", res.Exhausted, "deleted", res.Deleted)
			}
			return err
		})
	}
}

// sweepIdempotency deletes the Idempotency-Key outcomes past their TTL.
func sweepIdempotency(d jobDeps, log *slog.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		n, err := d.idem.Sweep(ctx)
		if n > 0 {
			log.Info("swept expired idempotency keys", "deleted", n)
		}
		return err
	}
}

// pruneAudit deletes the audit events older than d.auditRetention. A run
// cut short by the job timeout is continued by the next one.
func pruneAudit(d jobDeps, log *slog.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		n, err := audit.Prune(ctx, d.db, time.Now().Add(-d.auditRetention))
		if n > 0 {
			log.Info("deleted audit events past retention", "deleted", n, "retention", d.auditRetention.String())
		}
		return err
	}
}
