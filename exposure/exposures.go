package exposure

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
	"github.com/promptd/promptd/sqlstore"
)

// Limits of a report.
const (
	MaxItems      = 1000
	MaxCount      = 1_000_000
	MaxAge        = 24 * time.Hour  // an exposure's at may be this old
	MaxAhead      = 5 * time.Minute // and this far ahead of the server's clock
	MaxRange      = 7 * 24 * time.Hour
	DefaultRange  = time.Hour
	DefaultSeries = 10000
)

// Options configure a Service.
type Options struct {
	DB     *gorm.DB
	Logger *slog.Logger
	Now    func() time.Time
	// Metrics receives promptd_exposures_total; nil records none.
	Metrics *Metrics
	// FlushEvery is how often the server's own counts are written; zero
	// means 2s.
	FlushEvery time.Duration
	// SQLTimeout bounds each SQL operation; zero means 5s.
	SQLTimeout time.Duration
	// Releases checks exposures and outcomes against their release;
	// Envs checks exposures without a release against the env's
	// pointer. Record refuses to run without both, RecordOutcomes
	// without Releases.
	Releases *release.Service
	Envs     Envs
	// ClockSkew is how far outside a release's run an outcome's at may
	// fall (reporters' clocks differ from the server's); zero means 30s.
	ClockSkew time.Duration
}

// Service records exposures and outcomes. Safe for concurrent use.
type Service struct {
	o   Options
	log *slog.Logger

	mu      sync.Mutex
	pending map[Key]int64 // the server's own resolves, not yet written
}

// New returns a Service; Run writes what Count gathers.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FlushEvery <= 0 {
		o.FlushEvery = 2 * time.Second
	}
	if o.SQLTimeout <= 0 {
		o.SQLTimeout = 5 * time.Second
	}
	if o.ClockSkew <= 0 {
		o.ClockSkew = 30 * time.Second
	}
	return &Service{o: o, log: o.Logger, pending: map[Key]int64{}}
}

// Item is one exposure report: Count servings of Version (in ReleaseID's
// Arm, when both are set) at At.
type Item struct {
	Agent, Env string
	Version    int
	ReleaseID  string
	Arm        string
	Count      int64
	At         time.Time
}

// Key is what exposures are aggregated by.
type Key struct {
	Agent, Env string
	MinuteMs   int64
	ReleaseID  string
	Version    int
	Arm        string
}

// Accepted is the answer to a report.
type Accepted struct {
	Accepted int `json:"accepted"`
}

func invalid(field, format string, args ...any) error {
	return &promptstore.InvalidError{Code: "invalid_field", Field: field, Detail: fmt.Sprintf(format, args...)}
}

func checkIDs(prefix, agent, env string) error {
	if err := ident.Validate(prefix+"agent", agent); err != nil {
		return err
	}
	return ident.Validate(prefix+"env", env)
}

// checkArm checks a release id and arm pair: both or neither.
func checkArm(prefix, releaseID, arm string, required bool) error {
	switch {
	case releaseID == "" && arm == "" && !required:
		return nil
	case releaseID == "" || len(releaseID) > 64 || !strings.HasPrefix(releaseID, "rel_"):
		return invalid(prefix+"release_id", "release_id must be a release id (rel_...)")
	case arm != release.ArmBaseline && arm != release.ArmCandidate:
		return invalid(prefix+"arm", `arm must be "baseline" or "candidate" with a release_id`)
	}
	return nil
}

// Record validates items (all or nothing: the first bad item names its
// field, items[i].x), each against the stored data too (see
// checker.check), and adds their counts in one transaction, one upsert
// statement per 500 distinct keys. Its transaction runs then (the api
// records the Idempotency-Key answer in it).
func (s *Service) Record(ctx context.Context, items []Item, then ...sqlstore.Then[Accepted]) (Accepted, error) {
	if len(items) == 0 || len(items) > MaxItems {
		return Accepted{}, invalid("items", "1..%d items", MaxItems)
	}
	if s.o.Releases == nil || s.o.Envs == nil {
		return Accepted{}, errors.New("exposure: exposures need Options.Releases and Options.Envs")
	}
	now := s.o.Now()
	real := newChecker(s)
	sums := map[Key]int64{}
	for i, it := range items {
		p := fmt.Sprintf("items[%d].", i)
		if err := checkIDs(p, it.Agent, it.Env); err != nil {
			return Accepted{}, err
		}
		switch {
		case it.Version < 1 || it.Version >= promptstore.MaxVersion:
			return Accepted{}, invalid(p+"version", "version must be a positive version")
		case it.Count < 1 || it.Count > MaxCount:
			return Accepted{}, invalid(p+"count", "count must be 1..%d", MaxCount)
		case it.At.Before(now.Add(-MaxAge)) || it.At.After(now.Add(MaxAhead)):
			return Accepted{}, invalid(p+"at", "at must be at most 24h old and at most 5m ahead")
		}
		if err := checkArm(p, it.ReleaseID, it.Arm, false); err != nil {
			return Accepted{}, err
		}
		if err := real.check(ctx, p, it); err != nil {
			return Accepted{}, promptstore.StoreErr(err)
		}
		sums[keyOf(it)] += it.Count
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.SQLTimeout)
	defer cancel()
	out := Accepted{Accepted: len(items)}
	var err error
	for attempt := 0; attempt < 3; attempt++ { // a deadlock victim rolled back whole: try again
		_, err = sqlstore.Transact(ctx, s.o.DB, func(tx *gorm.DB) (Accepted, error) { return out, upsert(tx, sums) }, then...)
		if err == nil || !errors.Is(err, sqlstore.ErrUnavailable) || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 20 * time.Millisecond)
	}
	if err != nil {
		return Accepted{}, promptstore.StoreErr(err)
	}
	s.o.Metrics.add(sums)
	return out, nil
}

func keyOf(it Item) Key {
	m := it.At.UnixMilli()
	return Key{Agent: it.Agent, Env: it.Env, MinuteMs: m - m%60000, ReleaseID: it.ReleaseID, Version: it.Version, Arm: it.Arm}
}

// upsert adds sums to the per-minute rows, keys in sorted order (so
// concurrent batches lock rows in one order).
func upsert(tx *gorm.DB, sums map[Key]int64) error {
	keys := make([]Key, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b Key) int {
		return cmp.Or(cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.Env, b.Env), cmp.Compare(a.MinuteMs, b.MinuteMs),
			cmp.Compare(a.ReleaseID, b.ReleaseID), cmp.Compare(a.Version, b.Version), cmp.Compare(a.Arm, b.Arm))
	})
	conflict := ` ON CONFLICT (agent, env, minute_ms, release_id, version, arm) DO UPDATE SET count = exposures.count + excluded.count`
	if sqlstore.Dialect(tx) == sqlstore.MySQL {
		conflict = ` ON DUPLICATE KEY UPDATE count = count + VALUES(count)`
	}
	for chunk := range slices.Chunk(keys, 500) {
		args := make([]any, 0, 7*len(chunk))
		for _, k := range chunk {
			args = append(args, k.Agent, k.Env, k.MinuteMs, k.ReleaseID, k.Version, k.Arm, sums[k])
		}
		values := strings.Repeat("(?, ?, ?, ?, ?, ?, ?), ", len(chunk))
		if err := tx.Exec(`INSERT INTO exposures (agent, env, minute_ms, release_id, version, arm, count) VALUES `+
			values[:len(values)-2]+conflict, args...).Error; err != nil {
			return err
		}
	}
	return nil
}

// Count adds one serving the server made itself (a resolve or assemble
// answer), written by the next flush.
func (s *Service) Count(agent, env string, version int, releaseID, arm string) {
	k := keyOf(Item{Agent: agent, Env: env, Version: version, ReleaseID: releaseID, Arm: arm, At: s.o.Now()})
	s.mu.Lock()
	s.pending[k]++
	s.mu.Unlock()
}

// Flush writes the counts gathered since the last flush; on failure they
// are kept for the next one.
func (s *Service) Flush(ctx context.Context) error {
	s.mu.Lock()
	batch := s.pending
	s.pending = map[Key]int64{}
	s.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.SQLTimeout)
	defer cancel()
	_, err := sqlstore.Transact(ctx, s.o.DB, func(tx *gorm.DB) (struct{}, error) { return struct{}{}, upsert(tx, batch) })
	if err != nil {
		s.mu.Lock()
		for k, n := range batch {
			s.pending[k] += n
		}
		s.mu.Unlock()
		return promptstore.StoreErr(err)
	}
	s.o.Metrics.add(batch)
	return nil
}

// Run flushes every FlushEvery until ctx ends, then once more with a
// fresh context, so what was counted before a clean shutdown is written.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.o.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := s.Flush(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("writing exposure counts failed; kept for the next flush", "err", err)
			}
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := s.Flush(fctx); err != nil {
				s.log.Error("writing exposure counts at shutdown failed; they are lost", "err", err)
			}
			return
		}
	}
}

// Row is one minute's count.
type Row struct {
	Minute    time.Time
	ReleaseID string
	Version   int
	Arm       string
	Count     int64
}

// ListInput selects an env's exposures in [From, To), oldest first.
type ListInput struct {
	Agent, Env string
	From, To   time.Time
	Page       promptstore.Page
}

// List returns the rows of in, oldest first, and the cursor of the next
// page ("" at the end): the last row's key.
func (s *Service) List(ctx context.Context, in ListInput) ([]Row, string, error) {
	if err := checkIDs("", in.Agent, in.Env); err != nil {
		return nil, "", err
	}
	if !in.From.Before(in.To) {
		return nil, "", invalid("from", "from must be before to")
	}
	if in.To.Sub(in.From) > MaxRange {
		return nil, "", invalid("to", "at most 7 days from from")
	}
	q := `SELECT minute_ms, release_id, version, arm, count FROM exposures WHERE agent = ? AND env = ? AND minute_ms >= ? AND minute_ms < ?`
	args := []any{in.Agent, in.Env, in.From.UnixMilli(), in.To.UnixMilli()}
	if in.Page.Cursor != "" {
		c, err := parseCursor(in.Page.Cursor)
		if err != nil {
			return nil, "", err
		}
		q += ` AND (minute_ms > ? OR (minute_ms = ? AND (release_id > ? OR (release_id = ? AND (version > ? OR (version = ? AND arm > ?))))))`
		args = append(args, c.MinuteMs, c.MinuteMs, c.ReleaseID, c.ReleaseID, c.Version, c.Version, c.Arm)
	}
	q += ` ORDER BY minute_ms, release_id, version, arm LIMIT ?`
	args = append(args, in.Page.Limit+1)
	ctx, cancel := context.WithTimeout(ctx, s.o.SQLTimeout)
	defer cancel()
	var rows []struct {
		MinuteMs  int64
		ReleaseID string
		Version   int
		Arm       string
		Count     int64
	}
	if err := s.o.DB.WithContext(ctx).Raw(q, args...).Scan(&rows).Error; err != nil {
		return nil, "", promptstore.StoreErr(err)
	}
	next := ""
	if len(rows) > in.Page.Limit {
		rows = rows[:in.Page.Limit]
		l := rows[len(rows)-1]
		next = strings.Join([]string{strconv.FormatInt(l.MinuteMs, 10), l.ReleaseID, strconv.Itoa(l.Version), l.Arm}, "~")
	}
	out := make([]Row, len(rows))
	for i, r := range rows {
		out[i] = Row{Minute: time.UnixMilli(r.MinuteMs).UTC(), ReleaseID: r.ReleaseID, Version: r.Version, Arm: r.Arm, Count: r.Count}
	}
	return out, next, nil
}

func parseCursor(c string) (Key, error) {
	parts := strings.Split(c, "~")
	bad := invalid("cursor", "bad cursor")
	if len(parts) != 4 {
		return Key{}, bad
	}
	ms, err1 := strconv.ParseInt(parts[0], 10, 64)
	v, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil {
		return Key{}, bad
	}
	return Key{MinuteMs: ms, ReleaseID: parts[1], Version: v, Arm: parts[3]}, nil
}
