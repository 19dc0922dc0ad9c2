package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/problem"
)

// KindFeed is the bus event the sequencer publishes after it stamped
// events; Revision is the feed's new head. Feeds of every instance read
// the new events when they hear it.
const KindFeed = "feed"

// SequencerJob names the sequencer's job lease (locks.Keys.Job).
const SequencerJob = "feed-sequencer"

// Defaults of the feed.
const (
	DefaultStampEvery = 100 * time.Millisecond // the sequencer's period when nothing wakes it
	DefaultStampBatch = 500                    // events stamped per transaction
	DefaultRing       = 4096                   // recent events a Feed keeps in memory
	DefaultRingBytes  = 16 << 20               // and their detail bytes at most
	sequencerLeaseTTL = 5 * time.Second        // a dead sequencer's successor takes over within it
	sequencerTurn     = 30 * time.Second       // a sequencer lets its lease go and takes it again
)

// FeedMetrics are the change feed's collectors. A nil *FeedMetrics
// records nothing.
type FeedMetrics struct {
	stamped     prometheus.Counter
	stampRaces  prometheus.Counter
	head        prometheus.Gauge
	lag         prometheus.Histogram
	gaps        prometheus.Counter
	behind      prometheus.Counter
	Subscribers prometheus.Gauge // open streams and waits on this instance (the api counts them)
}

// NewFeedMetrics creates the collectors and registers them with reg (nil:
// not registered).
func NewFeedMetrics(reg prometheus.Registerer) *FeedMetrics {
	m := &FeedMetrics{
		stamped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promptd_feed_stamped_total", Help: "Events given their feed position (seq) by this instance's sequencer."}),
		stampRaces: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promptd_feed_stamp_races_total", Help: "Stamps rolled back because another sequencer moved first."}),
		head: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "promptd_feed_head", Help: "The highest feed position this instance has read."}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "promptd_feed_lag_seconds", Help: "Time from an event's recording to this instance reading it into its feed (streams send it then).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		gaps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promptd_feed_gaps_total", Help: "Reads that found a hole in the feed's positions (should stay 0)."}),
		behind: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "promptd_feed_store_behind_total", Help: "Reads that found the store's feed head below a position already read (the store went back: should stay 0)."}),
		Subscribers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "promptd_feed_subscribers", Help: "Open event streams and long-polls on this instance."}),
	}
	if reg != nil {
		reg.MustRegister(m.stamped, m.stampRaces, m.head, m.lag, m.gaps, m.behind, m.Subscribers)
	}
	return m
}

// SequencerOptions configure a Sequencer.
type SequencerOptions struct {
	DB      *gorm.DB     // holds audit_events
	Bus     *Bus         // wakes it (any event) and carries KindFeed to every instance
	Locker  locks.Locker // the job lease: one stamping instance at a time
	Keys    locks.Keys
	Every   time.Duration // zero: DefaultStampEvery
	Batch   int           // zero: DefaultStampBatch
	Logger  *slog.Logger
	Metrics *FeedMetrics
}

// Sequencer gives committed audit events their feed positions
// (audit.Stamp), on one instance of the cluster at a time: every instance
// runs one, and the one holding the job lease stamps. It stamps when any
// bus event arrives (a write committed somewhere) and at least every
// Every, so events written without a bus event (lease events, an instance
// without Redis) are in the feed within that period.
type Sequencer struct {
	o    SequencerOptions
	wake chan struct{}
}

// NewSequencer returns a sequencer; Run runs it.
func NewSequencer(o SequencerOptions) *Sequencer {
	if o.Every <= 0 {
		o.Every = DefaultStampEvery
	}
	if o.Batch <= 0 {
		o.Batch = DefaultStampBatch
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Sequencer{o: o, wake: make(chan struct{}, 1)}
	if o.Bus != nil {
		o.Bus.SubscribeAll(func(_ context.Context, ev Event) {
			if ev.Kind != KindFeed {
				s.Nudge()
			}
		})
	}
	return s
}

// Nudge asks the sequencer to stamp now.
func (s *Sequencer) Nudge() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run stamps until ctx ends. Without the job lease (another instance
// holds it) it tries again every second. When the lock store is
// unavailable it stamps without the lease: stamps are compare-and-set on
// a unique column, so two sequencers at once are slower, never wrong.
func (s *Sequencer) Run(ctx context.Context) {
	key, err := s.o.Keys.Job(SequencerJob)
	if err != nil {
		panic(err) // a constant job name
	}
	for ctx.Err() == nil {
		ran, err := locks.RunExclusive(ctx, s.o.Locker, key, sequencerLeaseTTL, s.stampFor(sequencerTurn), locks.RunUnlockedIfUnavailable())
		if err != nil && ctx.Err() == nil && !errors.Is(err, locks.ErrLeaseLost) {
			s.o.Logger.Warn("feed sequencer", "err", err)
		}
		if !ran || err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// stampFor returns a run that stamps for at most turn (then Run takes the
// lease again, or finds whether the lock store is back).
func (s *Sequencer) stampFor(turn time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, turn)
		defer cancel()
		tick := time.NewTicker(s.o.Every)
		defer tick.Stop()
		for {
			n, err := s.StampOnce(ctx)
			if err != nil && ctx.Err() == nil {
				s.o.Logger.Warn("feed: stamping failed; retrying", "err", err)
			}
			if n == s.o.Batch {
				continue // more are waiting
			}
			select {
			case <-ctx.Done():
				return nil
			case <-s.wake:
			case <-tick.C:
			}
		}
	}
}

// StampOnce stamps one batch and, when it stamped any, tells every
// instance the new head. A lost race is not an error (nothing stamped).
func (s *Sequencer) StampOnce(ctx context.Context) (int, error) {
	n, head, err := audit.Stamp(ctx, s.o.DB, s.o.Batch)
	if errors.Is(err, audit.ErrStampRace) {
		if s.o.Metrics != nil {
			s.o.Metrics.stampRaces.Inc()
		}
		return 0, nil
	}
	if err != nil || n == 0 {
		return 0, err
	}
	if s.o.Metrics != nil {
		s.o.Metrics.stamped.Add(float64(n))
	}
	if s.o.Bus != nil {
		s.o.Bus.Publish(ctx, Event{Kind: KindFeed, Revision: head})
	}
	return n, nil
}

// FeedOptions configure a Feed.
type FeedOptions struct {
	DB  *gorm.DB
	Bus *Bus // KindFeed wakes the reader
	// Poll is how often the reader looks for new events without being
	// woken; zero means 100ms (the store is the only signal without Redis).
	Poll time.Duration
	// Ring and RingBytes bound the recent events kept in memory, served to
	// every subscriber without a store read; zero means the defaults.
	Ring, RingBytes int
	// Retention bounds how far back a reader may resume
	// (PROMPTD_EVENT_RETENTION); zero means 168h.
	Retention time.Duration
	Logger    *slog.Logger
	Metrics   *FeedMetrics
}

// ErrCursorExpired: the position is older than the feed keeps (see
// CursorExpiredError for the oldest one it has).
var ErrCursorExpired = errors.New("events: cursor expired")

// CursorExpiredError says from where a reader may resume.
type CursorExpiredError struct{ Oldest int64 }

func (e *CursorExpiredError) Error() string { return "events: cursor older than the oldest kept event" }

// Is makes errors.Is(err, ErrCursorExpired) hold.
func (e *CursorExpiredError) Is(target error) bool { return target == ErrCursorExpired }

// Problem is 410 cursor_expired naming the position to resume from.
func (e *CursorExpiredError) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.CursorExpired, Detail: fmt.Sprintf(
		"the feed no longer keeps events after this position; resume from %d (or since=0)", e.Oldest)}).
		With("oldest", strconv.FormatInt(e.Oldest, 10))
}

// Feed is one instance's reader of the change feed: a single goroutine
// reads new events from the store (woken by KindFeed, and every Poll) into
// a bounded ring of recent events, from which every subscriber of the
// instance is served; a subscriber behind the ring reads the store itself,
// one bounded page at a time. Subscribers hold no buffer of their own, so
// a slow one costs nothing but its cursor.
type Feed struct {
	o    FeedOptions
	wake chan struct{}

	mu      sync.Mutex
	ring    []audit.Stamped // contiguous positions first..head
	bytes   int
	first   int64 // position of ring[0] (head+1 when empty)
	head    int64
	changed chan struct{} // closed when head moves
	started bool

	oldestMu sync.Mutex
	oldest   int64
	oldestAt time.Time
}

// NewFeed returns a feed; Start reads its head, Run keeps it current.
func NewFeed(o FeedOptions) *Feed {
	if o.Poll <= 0 {
		o.Poll = 100 * time.Millisecond
	}
	if o.Ring <= 0 {
		o.Ring = DefaultRing
	}
	if o.RingBytes <= 0 {
		o.RingBytes = DefaultRingBytes
	}
	if o.Retention <= 0 {
		o.Retention = 168 * time.Hour
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	f := &Feed{o: o, wake: make(chan struct{}, 1), changed: make(chan struct{}), first: 1}
	if o.Bus != nil {
		o.Bus.Subscribe(KindFeed, func(context.Context, Event) {
			select {
			case f.wake <- struct{}{}:
			default:
			}
		})
	}
	return f
}

// Run reads new events until ctx ends. It starts at the feed's head when
// it starts: the ring only ever holds events from there on.
func (f *Feed) Run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := f.start(ctx); err == nil {
			break
		} else if ctx.Err() == nil {
			f.o.Logger.Warn("feed: reading the head failed; retrying", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	tick := time.NewTicker(f.o.Poll)
	defer tick.Stop()
	for {
		more, err := f.ReadNew(ctx)
		if err != nil && ctx.Err() == nil {
			f.o.Logger.Warn("feed: reading new events failed; retrying", "err", err)
		}
		if more {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		case <-tick.C:
		}
	}
}

func (f *Feed) start(ctx context.Context) error {
	head, err := audit.Head(ctx, f.o.DB)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.started {
		f.head, f.first, f.started = head, head+1, true
		f.broadcastLocked()
	}
	return nil
}

const readPage = 1000

// ReadNew reads the events after the ring's head into it; more says a
// full page was read (there may be more).
func (f *Feed) ReadNew(ctx context.Context) (more bool, err error) {
	f.mu.Lock()
	head := f.head
	f.mu.Unlock()
	evs, err := audit.ReadAfter(ctx, f.o.DB, head, readPage)
	var pruned *audit.PrunedError
	switch {
	case errors.As(err, &pruned):
		// This instance fell behind the retention (stopped for longer):
		// the events in between are gone; the ring restarts after them.
		f.o.Metrics.gap()
		f.o.Logger.Error("feed: events this instance had not read yet were pruned; it goes on after them",
			"after", head, "pruned_through", pruned.Through)
		f.mu.Lock()
		if f.head == head {
			f.ring, f.bytes, f.head, f.first = nil, 0, pruned.Through, pruned.Through+1
		}
		f.mu.Unlock()
		return true, nil
	case err != nil:
		return false, f.alarm(head, err)
	case len(evs) == 0:
		return false, nil
	}
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.head != head {
		return true, nil // read concurrently; read again from the new head
	}
	for _, ev := range evs {
		if ev.Seq != f.head+1 {
			// Impossible by audit.Stamp's argument; counted so tests and
			// operators see it, and the ring restarts at the new position.
			f.o.Metrics.gap()
			f.o.Logger.Error("feed: a hole in the feed's positions", "after", f.head, "next", ev.Seq)
			f.ring, f.bytes, f.first = nil, 0, ev.Seq
		}
		f.ring = append(f.ring, ev)
		f.bytes += len(ev.Details) + len(ev.Resource) + 256
		f.head = ev.Seq
		if f.o.Metrics != nil {
			f.o.Metrics.lag.Observe(now.Sub(ev.At).Seconds())
		}
	}
	drop := 0
	for len(f.ring)-drop > f.o.Ring || (f.bytes > f.o.RingBytes && len(f.ring)-drop > 1) {
		f.bytes -= len(f.ring[drop].Details) + len(f.ring[drop].Resource) + 256
		drop++
	}
	if drop > 0 {
		f.ring = append([]audit.Stamped(nil), f.ring[drop:]...)
		f.first += int64(drop)
	}
	if f.o.Metrics != nil {
		f.o.Metrics.head.Set(float64(f.head))
	}
	f.broadcastLocked()
	return len(evs) == readPage, nil
}

func (m *FeedMetrics) gap() {
	if m != nil {
		m.gaps.Inc()
	}
}

// alarm reports a read after position after that found the store's head
// below it: after was read from the store before, so the store went back
// (restored from an older backup). It returns err.
func (f *Feed) alarm(after int64, err error) error {
	var ahead *audit.AheadError
	if errors.As(err, &ahead) && after <= f.Head() {
		if f.o.Metrics != nil {
			f.o.Metrics.behind.Inc()
		}
		f.o.Logger.Error("feed: the store's head is below a position this instance has read; the store went back",
			"read", after, "store_head", ahead.Head)
	}
	return err
}

// storeErr maps a store read's error: pruned events are a
// *CursorExpiredError (resume after the highest pruned), a position
// beyond the store's head an *audit.AheadError (an alarm when this
// instance had read it).
func (f *Feed) storeErr(after int64, err error) error {
	var pruned *audit.PrunedError
	if errors.As(err, &pruned) {
		return &CursorExpiredError{Oldest: pruned.Through}
	}
	return f.alarm(after, err)
}

// CheckPosition is nil when a reader may resume after position after:
// not beyond the feed's head (an *audit.AheadError, checked against the
// store when after is beyond this instance's head).
func (f *Feed) CheckPosition(ctx context.Context, after int64) error {
	if after <= f.Head() {
		return nil
	}
	m, err := audit.ReadMarks(ctx, f.o.DB)
	if err != nil {
		return err
	}
	if after > m.Head {
		return f.alarm(after, &audit.AheadError{After: after, Head: m.Head})
	}
	return nil
}

func (f *Feed) broadcastLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// Head is the last position this instance has read (0 before Run read
// the store's head).
func (f *Feed) Head() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.head
}

// Position is where a reader of new events only starts: the head this
// instance has read, or the store's before the feed started.
func (f *Feed) Position(ctx context.Context) (int64, error) {
	f.mu.Lock()
	head, started := f.head, f.started
	f.mu.Unlock()
	if started {
		return head, nil
	}
	return audit.Head(ctx, f.o.DB)
}

// Started reports whether the feed has read the store's head.
func (f *Feed) Started() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.started
}

// Read returns the events after position after, in order, at most limit,
// and the position scanned: the last event returned, or the feed's head
// when none is newer. Events still in the ring come from memory; older
// ones from the store. A position older than Retention is a
// *CursorExpiredError.
func (f *Feed) Read(ctx context.Context, after int64, limit int) ([]audit.Stamped, int64, error) {
	if limit <= 0 {
		return nil, after, errors.New("events: limit must be positive")
	}
	f.mu.Lock()
	if f.started && after >= f.first-1 {
		defer f.mu.Unlock()
		if after >= f.head {
			return nil, max(after, f.head), nil
		}
		i := int(after - f.first + 1)
		n := min(limit, len(f.ring)-i)
		out := make([]audit.Stamped, n)
		copy(out, f.ring[i:i+n])
		return out, out[n-1].Seq, nil
	}
	f.mu.Unlock()
	if err := f.Kept(ctx, after); err != nil {
		return nil, after, err
	}
	// The head is read before the store: every event up to it is stamped,
	// so the read sees it. Read after, it could name events stamped while
	// the read ran, which the read did not see, and the reader's cursor
	// would pass them by.
	head := f.Head()
	evs, err := audit.ReadAfter(ctx, f.o.DB, after, limit)
	if err != nil {
		return nil, after, f.storeErr(after, err)
	}
	if len(evs) == 0 {
		return nil, max(after, head), nil
	}
	return evs, evs[len(evs)-1].Seq, nil
}

// ReadBoard is Read of one board's events: the others are skipped in
// memory, and not read at all from the store (the board's index). The
// position scanned is the last event returned when limit were found, else
// the feed's head as it was before the read (every event up to it is
// stamped and so seen by the read), or after, whichever is newer.
func (f *Feed) ReadBoard(ctx context.Context, board string, after int64, limit int) ([]audit.Stamped, int64, error) {
	if limit <= 0 {
		return nil, after, errors.New("events: limit must be positive")
	}
	f.mu.Lock()
	if f.started && after >= f.first-1 {
		defer f.mu.Unlock()
		if after >= f.head {
			return nil, max(after, f.head), nil
		}
		var out []audit.Stamped
		for _, e := range f.ring[after-f.first+1:] {
			if e.Board != board {
				continue
			}
			if out = append(out, e); len(out) == limit {
				return out, e.Seq, nil
			}
		}
		return out, f.head, nil
	}
	f.mu.Unlock()
	if err := f.Kept(ctx, after); err != nil {
		return nil, after, err
	}
	head := f.Head()
	evs, err := audit.ReadBoardAfter(ctx, f.o.DB, board, after, limit)
	if err != nil {
		return nil, after, f.storeErr(after, err)
	}
	if len(evs) == limit {
		return evs, evs[len(evs)-1].Seq, nil
	}
	scanned := max(after, head)
	if len(evs) > 0 {
		scanned = max(scanned, evs[len(evs)-1].Seq)
	}
	return evs, scanned, nil
}

// Kept is nil when a reader may resume after position after (0: from
// the oldest), else a *CursorExpiredError whose Oldest is also past every
// position pruned by now.
func (f *Feed) Kept(ctx context.Context, after int64) error {
	if after <= 0 {
		return nil
	}
	oldest, err := f.Oldest(ctx)
	if err != nil {
		return err
	}
	if after < oldest {
		if oldest, err = f.OldestNow(ctx); err != nil {
			return err
		}
		return &CursorExpiredError{Oldest: oldest}
	}
	return nil
}

// OldestNow is Oldest raised to the highest position pruned by now: the
// position a 410 or a reader from the oldest (since 0) is sent to. Oldest
// alone may be up to 10 s behind the pruning, and a reader sent there
// would meet pruned events (a second 410) on its next read.
func (f *Feed) OldestNow(ctx context.Context) (int64, error) {
	oldest, err := f.Oldest(ctx)
	if err != nil {
		return 0, err
	}
	m, err := audit.ReadMarks(ctx, f.o.DB)
	if err != nil {
		return 0, err
	}
	return max(oldest, m.PrunedThrough), nil
}

// Oldest is the oldest position a reader may resume from (its events
// after it are kept and within Retention). It is read at most every 10 s,
// so pruning may have passed it since (see OldestNow).
func (f *Feed) Oldest(ctx context.Context) (int64, error) {
	f.oldestMu.Lock()
	defer f.oldestMu.Unlock()
	if !f.oldestAt.IsZero() && time.Since(f.oldestAt) < 10*time.Second {
		return f.oldest, nil
	}
	s, err := audit.OldestAfter(ctx, f.o.DB, time.Now().Add(-f.o.Retention))
	if err != nil {
		return 0, err
	}
	f.oldest, f.oldestAt = s-1, time.Now()
	return f.oldest, nil
}

// Wait blocks until the feed's head passes after, or ctx ends (false).
func (f *Feed) Wait(ctx context.Context, after int64) bool {
	for {
		f.mu.Lock()
		if f.started && f.head > after {
			f.mu.Unlock()
			return true
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ctx.Done():
			return false
		case <-ch:
		}
	}
}

// Filter selects feed events: Actions are names or patterns ("release.*",
// path.Match syntax); empty fields match everything.
type Filter struct {
	Actions           []string
	Agent, Env, Board string
}

// Match reports whether ev passes f.
func (f Filter) Match(ev audit.Stamped) bool {
	if f.Agent != "" && ev.Agent != f.Agent || f.Env != "" && ev.Env != f.Env || f.Board != "" && ev.Board != f.Board {
		return false
	}
	if len(f.Actions) == 0 {
		return true
	}
	for _, p := range f.Actions {
		if ok, _ := path.Match(p, ev.Action); ok {
			return true
		}
	}
	return false
}
