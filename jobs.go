package promptd

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
	"github.com/promptd/promptd/intent"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/session"
	"github.com/promptd/promptd/webhook"
)

// Job periods.
const (
	idempotencySweepEvery = 10 * time.Minute
	retentionEvery        = 10 * time.Minute // webhook deliveries, exposures
	releaseStepsEvery     = time.Second      // steps are due to the second
	sessionSweepEvery     = time.Minute
	boardSweepEvery       = time.Second // a run sweeps every boardSweepTick for most of it
	boardSweepTick        = 200 * time.Millisecond
	intentSweepEvery      = time.Second
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

// leadRetry is how often a replica that does not lead a singleton job
// tries to take its lease. A leader killed without releasing it (kill -9)
// keeps the job from running for at most locks.MaxRunTTL + leadRetry.
const leadRetry = time.Second

// singleton runs job every period on one instance at a time. One replica
// leads the job: it holds the job's lease (locks.RunExclusive on
// locks.Keys.Job(name), a lease of locks.MaxRunTTL renewed at a third of
// it) for as long as it lives, runs the job at once and then every period
// under it; the others try to take the lease every leadRetry. So when the
// leader dies a successor runs the job within locks.MaxRunTTL + leadRetry
// of its death, whatever the period. Jobs that take their own lease on the
// same key (board, release, session sweeps) re-enter the leader's.
//
// With unlockedIfUnavailable the job still runs (every period, on every
// replica) while the lock store is unavailable: only for jobs whose
// writes are conditional anyway.
func (s *scheduler) singleton(name string, every time.Duration, job func(context.Context) error, unlockedIfUnavailable bool) {
	key, err := s.keys.Job(name)
	if err != nil {
		panic(err) // job names are constants
	}
	st := &leadState{}
	s.cron.Schedule(cron.Every(leadRetry), cron.FuncJob(func() { s.lead(name, key, every, job, unlockedIfUnavailable, st) }))
}

// leadState is what a replica remembers of one singleton job between
// its attempts to lead it.
type leadState struct {
	lastRun time.Time // of an unlocked run (lock store unavailable)
	failing bool      // the last attempt could not take the lease: warned once
}

// lead is one attempt to lead a singleton job: it returns when this
// replica stops leading (the lease held elsewhere or lost, or stop).
func (s *scheduler) lead(name, key string, every time.Duration, job func(context.Context) error, unlockedIfUnavailable bool, st *leadState) {
	ran, err := locks.RunExclusive(s.ctx, s.locker, key, locks.MaxRunTTL, func(ctx context.Context) error {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			s.runJob(ctx, name, job)
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
		}
	})
	switch {
	case s.ctx.Err() != nil:
	case ran:
		st.failing = false
		s.log.Info("stopped leading a job", "job", name, "err", err) // lease lost: another replica (or this one) takes over
	case err == nil:
		st.failing = false // led by another replica
	default:
		if !st.failing {
			s.log.Warn("job lease not obtained; trying again every second", "job", name, "err", err)
		}
		st.failing = true
		if unlockedIfUnavailable && errors.Is(err, locks.ErrUnavailable) && time.Since(st.lastRun) >= every {
			st.lastRun = time.Now()
			s.runJob(s.ctx, name, job)
		}
	}
}

// runJob is one run of a job, bounded by jobTimeout.
func (s *scheduler) runJob(ctx context.Context, name string, job func(context.Context) error) {
	ctx, cancel := context.WithTimeout(ctx, jobTimeout)
	defer cancel()
	if err := job(ctx); err != nil && ctx.Err() == nil {
		s.log.Warn("job failed", "job", name, "err", err)
	}
}

// runSingleton is one run of a singleton job under its lease, skipped
// when another replica holds it; ran reports whether this instance ran
// it.
func (s *scheduler) runSingleton(name, key string, job func(context.Context) error) (ran bool) {
	ran, err := locks.RunExclusive(s.ctx, s.locker, key, locks.MaxRunTTL, func(ctx context.Context) error {
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

// JobOptions configure the jobs Runtime.Run schedules; zero values are the
// server's defaults (the PROMPTD_* variable named beside each).
type JobOptions struct {
	// ReconcileEvery: how often this instance's caches are reconciled with
	// SQL (PROMPTD_RECONCILE_EVERY); zero means 2s.
	ReconcileEvery time.Duration
	// GuardEvery: how often release guards are evaluated
	// (PROMPTD_GUARD_EVERY); zero means 10s, negative turns guards off.
	GuardEvery time.Duration
	// AuditRetention: audit events older are deleted
	// (PROMPTD_AUDIT_RETENTION); zero means 2160h. AuditPruneEvery: how
	// often (PROMPTD_AUDIT_PRUNE_EVERY); zero means 10m.
	AuditRetention, AuditPruneEvery time.Duration
	// DeliveryRetention: delivered and failed webhook deliveries older are
	// deleted (PROMPTD_WEBHOOK_DELIVERY_RETENTION); zero means 720h.
	DeliveryRetention time.Duration
	// ExposureRetention, OutcomeRetention: exposure minutes, and the
	// outcomes of releases that ended, older are deleted
	// (PROMPTD_EXPOSURE_RETENTION, PROMPTD_OUTCOME_RETENTION); zero means
	// exposure.DefaultRetention.
	ExposureRetention, OutcomeRetention time.Duration
}

// The defaults of JobOptions (and of the server's variables).
const (
	DefaultReconcileEvery    = 2 * time.Second
	DefaultGuardEvery        = 10 * time.Second
	DefaultAuditRetention    = 2160 * time.Hour
	DefaultAuditPruneEvery   = 10 * time.Minute
	DefaultDeliveryRetention = 720 * time.Hour
)

func (o JobOptions) withDefaults() JobOptions {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.ReconcileEvery, DefaultReconcileEvery)
	def(&o.GuardEvery, DefaultGuardEvery)
	def(&o.AuditRetention, DefaultAuditRetention)
	def(&o.AuditPruneEvery, DefaultAuditPruneEvery)
	def(&o.DeliveryRetention, DefaultDeliveryRetention)
	def(&o.ExposureRetention, exposure.DefaultRetention)
	def(&o.OutcomeRetention, exposure.DefaultRetention)
	return o
}

// Run runs the runtime's scheduled jobs until ctx ends, then stops them
// and waits for runs in progress (at most stopWait): on every instance the
// cache reconciler; once across the instances sharing the database (each
// under its job lease, so a successor takes over within 5 s of a holder's
// kill -9) the release steps and guards, the session, board, change-request
// and Idempotency-Key sweeps, and the audit, webhook-delivery, exposure and
// outcome retention. The per-instance loops that serve reads (the change
// feed, the sequencer, webhook dispatch, exposure flushes, the token cache)
// run from New until Close. One Run at a time (ErrRunning); the server
// calls it as an embedding program does.
func (r *Runtime) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer r.running.Store(false)
	s := r.scheduler()
	s.start()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), stopWait)
	defer cancel()
	s.stop(sctx)
	return nil
}

// scheduler is Run's scheduler with every job registered, not started.
func (r *Runtime) scheduler() *scheduler {
	o := r.jobs.withDefaults()
	s := newScheduler(r.locker, r.keys, r.log)
	scheduleJobs(s, jobDeps{db: r.db, store: r.Prompts, idem: r.Idempotency, releases: r.Releases, sessions: r.Sessions,
		boards: r.Boards, intents: r.Intents, auditRetention: o.AuditRetention, auditPruneEvery: o.AuditPruneEvery,
		webhooks: r.Webhooks, deliveryRetention: o.DeliveryRetention, exposures: r.Exposures,
		exposureRetention: o.ExposureRetention, outcomeRetention: o.OutcomeRetention,
		guardEvery: max(o.GuardEvery, 0), access: r.Access}, o.ReconcileEvery, r.log)
	return s
}

// ErrRunning: Run was called while another call of it runs (the jobs would
// run twice in one process).
var ErrRunning = errors.New("promptd: Run is already running")

// stopWait bounds how long Run waits for job runs in progress once its
// context ends.
const stopWait = 10 * time.Second

// jobDeps are the services whose jobs promptd schedules.
type jobDeps struct {
	db             *gorm.DB // holds the audit table
	store          *promptstore.Store
	idem           *idempotency.Store
	releases       *release.Service
	sessions       *session.Service
	boards         *board.Service
	intents        *intent.Service
	auditRetention time.Duration // PROMPTD_AUDIT_RETENTION
	// auditPruneEvery: PROMPTD_AUDIT_PRUNE_EVERY
	auditPruneEvery time.Duration
	webhooks        *webhook.Service
	access          *access.Service
	// deliveryRetention: PROMPTD_WEBHOOK_DELIVERY_RETENTION
	deliveryRetention time.Duration
	// exposures: outcome ids past their dedupe window are forgotten;
	// exposures and ended releases' outcomes past their retention
	// (PROMPTD_EXPOSURE_RETENTION, PROMPTD_OUTCOME_RETENTION) deleted.
	exposures         *exposure.Service
	exposureRetention time.Duration
	outcomeRetention  time.Duration
	guardEvery        time.Duration // PROMPTD_GUARD_EVERY
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
	s.singleton("idempotency-sweep", idempotencySweepEvery, sweepIdempotency(d, log), false)
	s.singleton("audit-retention", d.auditPruneEvery, pruneAudit(d, log), false)
	// Delivered and failed webhook deliveries past their retention go too
	// (pending ones never).
	if d.webhooks != nil {
		s.singleton("webhook-retention", retentionEvery, func(ctx context.Context) error {
			n, err := d.webhooks.Prune(ctx, time.Now().Add(-d.deliveryRetention))
			if n > 0 {
				log.Info("deleted webhook deliveries past retention", "deleted", n, "retention", d.deliveryRetention.String())
			}
			return err
		}, false)
	}
	// Outcome ids older than their 7-day dedupe window are forgotten (the
	// outcomes stay for the guard), by one replica, in batches.
	if d.exposures != nil {
		s.singleton("outcome-dedupe-sweep", idempotencySweepEvery, func(ctx context.Context) error {
			_, err := d.exposures.Sweep(ctx, 10000)
			return err
		}, false)
		s.singleton("exposure-retention", retentionEvery, pruneExposures(d, log), false)
	}
	// Change requests past their 24 h are marked expired (and audited).
	if d.access != nil {
		s.singleton("change-request-expiry", time.Minute, func(ctx context.Context) error {
			n, err := d.access.ExpireRequests(ctx)
			if n > 0 {
				log.Info("expired change requests", "expired", n)
			}
			return err
		}, false)
	}
	// The jobs below run without their lease while the lock store is
	// unavailable: their writes carry revision (and fence) conditions.
	//
	// Release steps due now are applied once across replicas: RunDueSteps
	// runs under the job lease (release.StepsJob; it re-enters the
	// leader's) and applies each step under the release row's revision and
	// step conditions.
	s.singleton(release.StepsJob, releaseStepsEvery, func(ctx context.Context) error {
		n, err := d.releases.RunDueSteps(ctx)
		if n > 0 {
			log.Info("applied release steps", "applied", n)
		}
		return err
	}, true)
	// Release guards are evaluated by one replica at a time: RunGuards runs
	// under the job lease (release.GuardJob) and trips a guard through the
	// normal revision-checked transition.
	if d.guardEvery > 0 {
		s.singleton(release.GuardJob, d.guardEvery, func(ctx context.Context) error {
			_, err := d.releases.RunGuards(ctx)
			return err
		}, true)
	}
	// Idle sessions are closed and old closed ones deleted; Sweep runs under
	// the job lease (session.SweepJob), so one replica runs it at a time.
	s.singleton(session.SweepJob, sessionSweepEvery, func(ctx context.Context) error {
		closed, deleted, err := d.sessions.Sweep(ctx)
		if closed+deleted > 0 {
			log.Info("swept sessions", "closed", closed, "deleted", deleted)
		}
		return err
	}, true)
	// Expired board claims are reclaimed within about boardSweepTick of
	// their expiry: each run holds the job lease (board.SweepJob) and
	// sweeps every tick for most of a second; one replica at a time.
	if d.boards != nil {
		s.singleton(board.SweepJob, boardSweepEvery, func(ctx context.Context) error {
			res, err := d.boards.Sweep(ctx, boardSweepEvery-boardSweepTick, boardSweepTick)
			if res.Exhausted+res.Deleted > 0 {
				log.Info("swept boards", "reclaimed", res.Reclaimed, "exhausted", res.Exhausted, "deleted", res.Deleted)
			}
			return err
		}, true)
	}
	// Expired intents end (intent.expired on the feed) within about
	// intentSweepEvery; writes under them are refused from their expiry
	// on whatever the sweeper does (the SQL clock decides).
	if d.intents != nil {
		s.singleton(intent.SweepJob, intentSweepEvery, func(ctx context.Context) error {
			n, err := d.intents.Sweep(ctx)
			if n > 0 {
				log.Debug("swept intents", "expired", n)
			}
			return err
		}, true)
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

// pruneExposures deletes the exposure minutes older than
// d.exposureRetention and the outcomes of releases that ended longer than
// d.outcomeRetention ago (a running or paused release's stay: its guard
// reads them). A run cut short by the job timeout is continued by the
// next one.
func pruneExposures(d jobDeps, log *slog.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		now := time.Now()
		n, err := d.exposures.PruneExposures(ctx, now.Add(-d.exposureRetention))
		if n > 0 {
			log.Info("deleted exposures past retention", "deleted", n, "retention", d.exposureRetention.String())
		}
		if err != nil {
			return err
		}
		n, err = d.exposures.PruneOutcomes(ctx, now.Add(-d.outcomeRetention))
		if n > 0 {
			log.Info("deleted ended releases' outcomes past retention", "deleted", n, "retention", d.outcomeRetention.String())
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
