package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// runImports is `promptbench imports`: the field report on agent batch
// imports, reproduced. One board is seeded with -rows rows ({"id",
// "fields": {}}); for each strategy in turn, -agents agents then loop for
// -duration: pick -batch row ids (-hot-share of them from the first -hot
// rows, which every agent shares, the rest uniform), read them (the
// snapshot), sleep -think (the stale snapshot), and set fields.a<agent>
// of each to the agent's batch counter, by the strategy's protocol:
//
//	a  one generic lease on "import" held for the whole batch, one batch write
//	b  after the think, each row claimed (a row lease with a fence), written
//	   with its fence from the claimed record, released
//	c  one all_or_nothing batch with each row's snapshot revision; on
//	   batch_rejected the conflicting rows re-read and the whole batch retried
//	d  an exclusive intent on the batch's ids first (on intent_conflict the
//	   covered ids dropped when most of the batch is left, else a short wait),
//	   then c under the intent
//	e  the control: per row, the current revision re-read and the snapshot
//	   payload written over it (last write wins)
//
// After each strategy every row is read and each of its acknowledged
// writes checked (ledger); the values an agent writes grow across the
// strategies, so a field an earlier one left reads as older. It fails
// when a to d lost an update, e lost none, or a strategy had errors.
func runImports(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("promptbench imports", flag.ContinueOnError)
	var b importBench
	var strategies string
	fs.StringVar(&b.url, "url", "http://127.0.0.1:8080", "promptd base URL")
	fs.StringVar(&b.admin, "admin-token", os.Getenv("PROMPTD_BENCH_ADMIN_TOKEN"), "admin token (defines the boards)")
	fs.StringVar(&b.runtime, "runtime-token", os.Getenv("PROMPTD_BENCH_RUNTIME_TOKEN"), "runtime token (the agents)")
	fs.StringVar(&strategies, "strategies", "a,b,c,d,e", "comma-separated, of a (global lease), b (row leases), c (commit proofs), d (intents + proofs), e (naive control)")
	fs.IntVar(&b.rows, "rows", 100_000, "rows of the board (every strategy runs on it in turn)")
	fs.IntVar(&b.agents, "agents", 64, "concurrent agents")
	fs.IntVar(&b.batch, "batch", 50, "rows per batch")
	fs.IntVar(&b.hot, "hot", 2000, "rows of the hot range every agent draws from")
	fs.Float64Var(&b.hotShare, "hot-share", 0.6, "share of each batch drawn from the hot range")
	fs.DurationVar(&b.duration, "duration", 20*time.Second, "how long each strategy's agents start batches")
	fs.DurationVar(&b.think, "think", 50*time.Millisecond, "sleep between the snapshot and the write")
	fs.DurationVar(&b.grace, "grace", 30*time.Second, "a batch still waiting for its lock, or retrying, this long after -duration is abandoned")
	fs.IntVar(&b.readers, "readers", 8, "requests in flight per agent for its per-row reads and writes")
	fs.IntVar(&b.maxRecords, "board-max-records", 100_000, "the server's PROMPTD_BOARD_MAX_RECORDS (printed; -rows must fit)")
	fs.StringVar(&b.mysqlDSN, "mysql-dsn", "", "promptd's MariaDB, for its version in the machine line")
	fs.StringVar(&b.prefix, "prefix", fmt.Sprintf("ib%d", time.Now().Unix()%100000), "prefix of the board and the holders")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case b.admin == "" || b.runtime == "":
		return fmt.Errorf("-admin-token and -runtime-token are required")
	case b.rows < 1 || b.agents < 1 || b.batch < 1 || b.batch > 1000 || b.readers < 1 || b.duration <= 0:
		return fmt.Errorf("-rows, -agents, -readers and -duration must be positive, -batch 1..1000")
	case b.batch > b.rows || int64(b.rows) > int64(b.maxRecords):
		return fmt.Errorf("-rows %d: must hold a batch (%d) and fit -board-max-records %d", b.rows, b.batch, b.maxRecords)
	case b.hotShare < 0 || b.hotShare > 1:
		return fmt.Errorf("-hot-share must be 0..1")
	}
	b.hot = max(1, min(b.hot, b.rows))
	b.url = strings.TrimSuffix(b.url, "/")
	var picked []importStrategy
	for _, key := range strings.Split(strategies, ",") {
		i := slices.IndexFunc(importStrategies, func(s importStrategy) bool { return s.key == strings.TrimSpace(key) })
		if i < 0 {
			return fmt.Errorf("unknown strategy %q (a, b, c, d, e)", key)
		}
		picked = append(picked, importStrategies[i])
	}
	board := b.prefix + "-rows"
	t0 := time.Now()
	if err := b.seed(ctx, board); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	seeded := time.Since(t0)
	fmt.Fprintf(os.Stderr, "promptbench imports: seeded %d rows in %s\n", b.rows, seeded.Round(time.Millisecond))
	var results []strategyResult
	for i, s := range picked {
		r, err := b.runStrategy(ctx, s, board, int64(i+1)*1_000_000_000)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Fprintf(os.Stderr, "promptbench imports: %s: %d rows written in %s, %d lost\n", s.name, r.t.acked, r.elapsed.Round(time.Millisecond), r.lost)
		results = append(results, r)
	}
	b.print(ctx, out, results, seeded)
	err := verdict(results)
	if err != nil {
		fmt.Fprintf(out, "\ncheck: FAILED\n%v\n", err)
		return errors.New("the check failed (above)")
	}
	fmt.Fprintf(out, "\ncheck: passed (every strategy but the control kept every acknowledged write; the control lost some, so the check can tell)\n")
	return nil
}

type importBench struct {
	url, admin, runtime string
	rows, agents, batch int
	hot                 int
	hotShare            float64
	duration, think     time.Duration
	grace               time.Duration
	readers, maxRecords int
	mysqlDSN, prefix    string
}

// importStrategy is one way of writing an agent's batch.
type importStrategy struct {
	key, name string
	lossy     bool      // the control: it must lose updates
	report    [3]string // the field report's rows/s, p99 and retry rate
	write     func(*importAgent, context.Context, []string) error
}

var importStrategies = []importStrategy{
	{key: "a", name: "(a) global lease", report: [3]string{"8", "180s", "-"}, write: (*importAgent).globalLease},
	{key: "b", name: "(b) row leases + fences", report: [3]string{"210", "18s", "3.2 %"}, write: (*importAgent).rowLeases},
	{key: "c", name: "(c) batch commit proofs", report: [3]string{"195", "22s", "4.1 %"}, write: (*importAgent).commitProofs},
	{key: "d", name: "(d) intents + proofs", report: [3]string{"-", "-", "-"}, write: (*importAgent).intentsAndProofs},
	{key: "e", name: "(e) naive last write wins (control)", lossy: true, report: [3]string{"-", "-", "-"}, write: (*importAgent).lastWriteWins},
}

// errAbandoned: the batch was given up, still waiting for its lock or
// retrying -grace after -duration; nothing of it was written but, in (b),
// the rows written before.
var errAbandoned = errors.New("batch abandoned")

// tally is what one agent counted.
type tally struct {
	batches, abandoned, errors               int
	acked, attempts, retries                 int
	intentConflicts, droppedRows, leaseWaits int
	claimsLost, shed                         int
	firstErr                                 error
	lat                                      []time.Duration
}

func (t *tally) failed(err error) {
	t.errors++
	if t.firstErr == nil {
		t.firstErr = err
	}
}

func (t *tally) add(o tally) {
	t.batches, t.abandoned, t.errors = t.batches+o.batches, t.abandoned+o.abandoned, t.errors+o.errors
	t.acked, t.attempts, t.retries = t.acked+o.acked, t.attempts+o.attempts, t.retries+o.retries
	t.intentConflicts, t.droppedRows, t.leaseWaits = t.intentConflicts+o.intentConflicts, t.droppedRows+o.droppedRows, t.leaseWaits+o.leaseWaits
	t.claimsLost, t.shed = t.claimsLost+o.claimsLost, t.shed+o.shed
	if t.firstErr == nil {
		t.firstErr = o.firstErr
	}
	t.lat = append(t.lat, o.lat...)
}

// importAgent runs one agent's batches. Its per-row requests run
// concurrently (readers at a time), hence mu around what they count.
type importAgent struct {
	b      *importBench
	board  string
	k      int
	field  string // fields.a<k>
	holder string
	end    time.Time  // no new batch after it
	rng    *rand.Rand // the agent's own goroutine only (pick)
	v      int64      // the current batch's value
	mu     sync.Mutex
	t      tally
	led    ledger
}

// strategyResult is one strategy's row of the table.
type strategyResult struct {
	s        importStrategy
	t        tally
	elapsed  time.Duration
	load     [2]string // the 1-minute load average at the start and the end
	rowsRead int
	lost     int
	examples []string
}

// runStrategy runs the agents on board for -duration (and the batches
// in flight then to their end); their values start above base.
func (b *importBench) runStrategy(ctx context.Context, s importStrategy, board string, base int64) (strategyResult, error) {
	r := strategyResult{s: s, load: [2]string{loadAverage()}}
	start := time.Now()
	agents := make([]*importAgent, b.agents)
	var wg sync.WaitGroup
	for k := range agents {
		a := &importAgent{b: b, board: board, k: k, field: "a" + strconv.Itoa(k), holder: fmt.Sprintf("%s-%s-agent-%d", b.prefix, s.key, k),
			v: base, end: start.Add(b.duration), rng: rand.New(rand.NewPCG(uint64(start.UnixNano()), uint64(k))), led: ledger{}}
		agents[k] = a
		wg.Go(func() { a.loop(ctx, s) })
	}
	wg.Wait()
	r.elapsed = time.Since(start)
	r.load[1] = loadAverage()
	led := ledger{}
	for _, a := range agents {
		r.t.add(a.t)
		led.merge(a.led)
	}
	if ctx.Err() != nil {
		return r, ctx.Err()
	}
	final, err := b.readAll(ctx, board)
	if err != nil {
		return r, fmt.Errorf("final read: %w", err)
	}
	r.rowsRead = len(final)
	r.lost, r.examples = led.lost(final)
	return r, nil
}

func (a *importAgent) loop(ctx context.Context, s importStrategy) {
	for ctx.Err() == nil && time.Now().Before(a.end) {
		ids := a.pick()
		a.v++
		t0 := time.Now()
		err := s.write(a, ctx, ids)
		d := time.Since(t0)
		a.count(func(t *tally) {
			switch {
			case err == nil:
				t.batches++
				t.lat = append(t.lat, d)
			case errors.Is(err, errAbandoned):
				t.abandoned++
			case ctx.Err() == nil:
				t.failed(err)
			}
		})
	}
}

// pick draws a batch of distinct ids: hot-share of them from the hot
// range, the rest from the whole board.
func (a *importAgent) pick() []string {
	b := a.b
	seen := make(map[int]bool, b.batch)
	ids := make([]string, 0, b.batch)
	hot := int(float64(b.batch)*b.hotShare + 0.5)
	for len(ids) < b.batch {
		n := b.rows
		if len(ids) < hot && len(seen) < b.hot {
			n = b.hot
		}
		if i := a.rng.IntN(n); !seen[i] {
			seen[i] = true
			ids = append(ids, rowID(i))
		}
	}
	return ids
}

func rowID(i int) string { return fmt.Sprintf("c%06d", i) }

// late: the batch has waited or retried past -duration plus -grace.
func (a *importAgent) late() bool { return time.Now().After(a.end.Add(a.b.grace)) }

func (a *importAgent) count(f func(t *tally)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(&a.t)
}

// acked records an acknowledged write of the agent's field on row id.
func (a *importAgent) acked(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.t.acked++
	a.led.ack(id, a.k, a.v)
}

// rowPayload is a row's payload: its id and one field per agent.
type rowPayload struct {
	ID     string           `json:"id"`
	Fields map[string]int64 `json:"fields"`
}

// with is p with field set to v (p itself unchanged).
func (p rowPayload) with(field string, v int64) rowPayload {
	f := maps.Clone(p.Fields)
	if f == nil {
		f = map[string]int64{}
	}
	f[field] = v
	return rowPayload{ID: p.ID, Fields: f}
}

// boardRow is a record as the agents use it.
type boardRow struct {
	ID       string     `json:"id"`
	Revision int64      `json:"revision"`
	Payload  rowPayload `json:"payload"`
}

// (a): the lease on "import" for the read, the think and the write.
func (a *importAgent) globalLease(ctx context.Context, ids []string) error {
	var l struct {
		LeaseID string `json:"lease_id"`
		Token   string `json:"token"`
	}
	for {
		err := a.call(ctx, "POST", "/v1/leases", map[string]any{"resources": []string{"import"}, "holder": a.holder,
			"ttl_ms": 30000, "wait_ms": 10000}, 200, &l)
		if err == nil {
			break
		}
		if !isRefusal(err, 423, "lease_held") {
			return err
		}
		a.count(func(t *tally) { t.leaseWaits++ })
		if a.late() {
			return errAbandoned
		}
	}
	defer a.cleanup(ctx, "DELETE", "/v1/leases/"+l.LeaseID, nil, 204, "Lease-Token", l.Token)
	snap, err := a.read(ctx, ids)
	if err != nil {
		return err
	}
	if err := sleepCtx(ctx, a.b.think); err != nil {
		return err
	}
	return a.commit(ctx, ids, snap, nil)
}

// (b): the snapshot and the think, then each row (readers at a time)
// claimed, written with the claim's fence at the revision the claim
// answered (its own read after claiming) and released. A refused claim
// (another agent holds the row) is retried after a backoff and counted.
// No agent waits for a claim while holding one, so there is no waiting
// cycle. A claim that expired before its write (stale_fence,
// claim_expired: refused, nothing lost) is counted, not retried.
func (a *importAgent) rowLeases(ctx context.Context, ids []string) error {
	if _, err := a.read(ctx, ids); err != nil {
		return err
	}
	if err := sleepCtx(ctx, a.b.think); err != nil {
		return err
	}
	errs := make([]error, len(ids))
	parallel(len(ids), a.b.readers, func(i int) { errs[i] = a.claimWrite(ctx, ids[i]) })
	var failed []error
	abandoned := false
	for _, err := range errs {
		if errors.Is(err, errAbandoned) {
			abandoned = true
		} else if err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) == 0 && abandoned {
		return errAbandoned
	}
	return errors.Join(failed...)
}

func (a *importAgent) claimWrite(ctx context.Context, id string) error {
	var c struct {
		Record boardRow `json:"record"`
		Fence  int64    `json:"fence"`
	}
	rec := "/v1/boards/" + a.board + "/records/" + id
	for try := 0; ; try++ {
		a.count(func(t *tally) { t.attempts++ })
		err := a.call(ctx, "POST", rec+"/claim", map[string]any{"holder": a.holder, "ttl_ms": 30000}, 200, &c)
		if err == nil {
			break
		}
		if !isRefusal(err, 409, "invalid_transition") {
			return err
		}
		a.count(func(t *tally) { t.retries++ })
		if a.late() {
			return errAbandoned
		}
		if err := sleepCtx(ctx, backoff(try)); err != nil {
			return err
		}
	}
	err := a.call(ctx, "PATCH", rec, map[string]any{
		"expected_revision": c.Record.Revision, "fence": c.Fence, "payload": c.Record.Payload.with(a.field, a.v)}, 200, nil)
	switch {
	case err == nil:
		a.acked(id)
	case a.claimLost(err):
		return nil
	}
	if rerr := a.cleanup(ctx, "POST", rec+"/release", map[string]any{"fence": c.Fence}, 200); rerr != nil {
		a.claimLost(rerr)
	}
	return err
}

// claimLost counts a refusal because the claim expired or was taken over.
func (a *importAgent) claimLost(err error) bool {
	if !isRefusal(err, 409, "claim_expired") && !isRefusal(err, 409, "stale_fence") {
		return false
	}
	a.count(func(t *tally) { t.claimsLost++ })
	return true
}

// (c): the snapshot, the think, one all_or_nothing batch.
func (a *importAgent) commitProofs(ctx context.Context, ids []string) error {
	snap, err := a.read(ctx, ids)
	if err != nil {
		return err
	}
	if err := sleepCtx(ctx, a.b.think); err != nil {
		return err
	}
	return a.commit(ctx, ids, snap, nil)
}

// (d): an exclusive intent on the ids first; on intent_conflict the ids
// the other intents cover are dropped if more than half of the batch is
// left, else it waits a little and tries again. Then (c) under it.
func (a *importAgent) intentsAndProofs(ctx context.Context, ids []string) error {
	var in struct {
		ID    string `json:"id"`
		Fence int64  `json:"fence"`
	}
	scope := ids
	for try := 0; ; try++ {
		err := a.call(ctx, "POST", "/v1/intents", map[string]any{"holder": a.holder, "mode": "exclusive", "ttl_ms": 30000,
			"scope": map[string]any{"records": []map[string]any{{"board": a.board, "ids": scope}}}}, 201, &in)
		if err == nil {
			break
		}
		var r *refusal
		if !errors.As(err, &r) || r.status != 409 || r.problem.Code != "intent_conflict" {
			return err
		}
		a.count(func(t *tally) { t.intentConflicts++ })
		covered := map[string]bool{}
		for _, c := range r.problem.Conflicts {
			for _, rec := range c.Scope.Records {
				if rec.Board == a.board {
					for _, id := range rec.IDs {
						covered[id] = true
					}
				}
			}
		}
		left := slices.DeleteFunc(slices.Clone(scope), func(id string) bool { return covered[id] })
		if len(left) > len(ids)/2 && len(left) < len(scope) {
			scope = left
			continue
		}
		if a.late() {
			return errAbandoned
		}
		if err := sleepCtx(ctx, backoff(try)); err != nil {
			return err
		}
	}
	a.count(func(t *tally) { t.droppedRows += len(ids) - len(scope) })
	defer a.cleanup(ctx, "POST", "/v1/intents/"+in.ID+"/release", map[string]any{"fence": in.Fence}, 200)
	snap, err := a.read(ctx, scope)
	if err != nil {
		return err
	}
	if err := sleepCtx(ctx, a.b.think); err != nil {
		return err
	}
	return a.commit(ctx, scope, snap, map[string]any{"id": in.ID, "fence": in.Fence})
}

// (e): per row, the current revision re-read and the snapshot's payload
// (plus the agent's field) written over it; a revision conflict between
// the two is retried the same way. What others wrote since the snapshot
// is overwritten.
func (a *importAgent) lastWriteWins(ctx context.Context, ids []string) error {
	snap, err := a.read(ctx, ids)
	if err != nil {
		return err
	}
	if err := sleepCtx(ctx, a.b.think); err != nil {
		return err
	}
	errs := make([]error, len(ids))
	parallel(len(ids), a.b.readers, func(i int) {
		id := ids[i]
		for {
			a.count(func(t *tally) { t.attempts++ })
			var cur boardRow
			if errs[i] = a.call(ctx, "GET", "/v1/boards/"+a.board+"/records/"+id, nil, 200, &cur); errs[i] != nil {
				return
			}
			errs[i] = a.call(ctx, "PATCH", "/v1/boards/"+a.board+"/records/"+id, map[string]any{
				"expected_revision": cur.Revision, "payload": snap[id].Payload.with(a.field, a.v)}, 200, nil)
			if !isRefusal(errs[i], 409, "revision_conflict") || a.late() {
				break
			}
			a.count(func(t *tally) { t.retries++ })
		}
		if errs[i] == nil {
			a.acked(id)
		}
	})
	return errors.Join(errs...)
}

// commit writes the batch as one all_or_nothing batch of updates, each
// row at its snapshot revision with the snapshot's payload plus the
// agent's field. On batch_rejected it re-reads the conflicting rows and
// retries the whole batch (their count is the retries).
func (a *importAgent) commit(ctx context.Context, ids []string, snap map[string]boardRow, intent map[string]any) error {
	for {
		items := make([]map[string]any, len(ids))
		for i, id := range ids {
			items[i] = map[string]any{"op": "update", "id": id, "expected_revision": snap[id].Revision, "payload": snap[id].Payload.with(a.field, a.v)}
		}
		body := map[string]any{"mode": "all_or_nothing", "items": items}
		if intent != nil {
			body["intent"] = intent
		}
		a.count(func(t *tally) { t.attempts += len(items) })
		var res struct{ Results []batchResult }
		err := a.call(ctx, "POST", "/v1/boards/"+a.board+"/batches", body, 201, &res)
		if err == nil {
			for _, r := range res.Results {
				if r.Status == "updated" || r.Status == "merged" {
					a.acked(r.ID)
				}
			}
			return nil
		}
		var r *refusal
		if !errors.As(err, &r) || r.problem.Code != "batch_rejected" {
			return err
		}
		var stale []string
		for _, res := range r.problem.Results {
			if res.Status == "conflict" {
				if res.Conflict.Code != "revision_conflict" {
					return fmt.Errorf("batch: %s on %s", res.Conflict.Code, res.ID)
				}
				stale = append(stale, res.ID)
			}
		}
		a.count(func(t *tally) { t.retries += len(stale) })
		if a.late() {
			return errAbandoned
		}
		fresh, err := a.read(ctx, stale)
		if err != nil {
			return err
		}
		for id, row := range fresh {
			snap[id] = row
		}
	}
}

// read GETs the rows (readers at a time).
func (a *importAgent) read(ctx context.Context, ids []string) (map[string]boardRow, error) {
	rows := make([]boardRow, len(ids))
	errs := make([]error, len(ids))
	parallel(len(ids), a.b.readers, func(i int) {
		errs[i] = a.call(ctx, "GET", "/v1/boards/"+a.board+"/records/"+ids[i], nil, 200, &rows[i])
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make(map[string]boardRow, len(rows))
	for _, r := range rows {
		out[r.ID] = r
	}
	return out, nil
}

// backoff is 5 ms doubled per try up to 100 ms, half of it jittered.
func backoff(try int) time.Duration {
	d := min(5*time.Millisecond<<min(try, 5), 100*time.Millisecond)
	return d/2 + rand.N(d/2+1)
}

// call is the package's call for the agent, the server's load shedding
// retried and counted.
func (a *importAgent) call(ctx context.Context, method, path string, body any, want int, out any, hdr ...string) error {
	return retryShed(ctx, func() error { return call(ctx, method, a.b.url+path, a.b.runtime, body, want, out, hdr...) },
		func() { a.count(func(t *tally) { t.shed++ }) })
}

// retryShed calls f again while the server sheds load (503: a store
// that did not answer in time, or overloaded; 429: a quota), which it
// answers having changed nothing, up to 30 times, after 50 ms to 1.6 s
// (jittered); each retry calls counted.
func retryShed(ctx context.Context, f func() error, counted func()) error {
	for try := 0; ; try++ {
		err := f()
		var r *refusal
		if !errors.As(err, &r) || (r.status != 503 && r.status != 429) || try >= 30 {
			return err
		}
		counted()
		d := 50 * time.Millisecond << min(try, 5)
		if err := sleepCtx(ctx, d/2+rand.N(d/2+1)); err != nil {
			return err
		}
	}
}

// cleanup releases what the batch held, even when ctx was cancelled (a
// fresh context, bounded). A failure is counted like any other, but a
// lost claim's (claimLost).
func (a *importAgent) cleanup(ctx context.Context, method, path string, body any, want int, hdr ...string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := a.call(ctx, method, path, body, want, nil, hdr...)
	if err != nil && !isRefusal(err, 409, "claim_expired") && !isRefusal(err, 409, "stale_fence") {
		a.count(func(t *tally) { t.failed(err) })
	}
	return err
}

// batchResult is one item's part of a batch's commit proof.
type batchResult struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Conflict struct {
		Code string `json:"code"`
	} `json:"conflict"`
}

// importProblem is what the agents read of a problem answer.
type importProblem struct {
	Code      string        `json:"code"`
	Results   []batchResult `json:"results"`
	Conflicts []struct {
		Scope struct {
			Records []struct {
				Board string   `json:"board"`
				IDs   []string `json:"ids"`
			} `json:"records"`
		} `json:"scope"`
	} `json:"conflicts"`
}

// refusal is an answer with another status than the one wanted.
type refusal struct {
	request string
	status  int
	problem importProblem
	body    string
}

func (r *refusal) Error() string { return fmt.Sprintf("%s: %d %s", r.request, r.status, r.body) }

func isRefusal(err error, status int, code string) bool {
	var r *refusal
	return errors.As(err, &r) && r.status == status && r.problem.Code == code
}

// call sends one request; the wanted status decodes into out (when
// non-nil), any other is a *refusal.
func call(ctx context.Context, method, target, token string, body any, want int, out any, hdr ...string) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != want {
		r := &refusal{request: method + " " + target, status: res.StatusCode, body: string(bytes.TrimSpace(raw))}
		_ = json.Unmarshal(raw, &r.problem)
		if len(r.body) > 300 {
			r.body = r.body[:300] + "..."
		}
		return r
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// parallel calls fn(0..n-1) from at most workers goroutines.
func parallel(n, workers int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(n, workers) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// seed defines board (open -> held by a claim, back to open on release)
// and creates its rows in batches of 1,000 creates.
func (b *importBench) seed(ctx context.Context, board string) error {
	def := map[string]any{"states": []string{"open", "held", "archived"}, "initial": "open", "terminal": []string{"archived"},
		"transitions": map[string][]string{"open": {"held"}, "held": {"open"}}, "expected_revision": 0,
		"claim": map[string]any{"from": "open", "to": "held", "ttl_ms": 30000, "reclaim_to": "open", "max_attempts": 1000, "exhausted": "archived"}}
	if err := call(ctx, "PUT", b.url+"/v1/boards/"+board, b.admin, def, 201, nil); err != nil {
		return err
	}
	const per = 1000
	errs := make([]error, (b.rows+per-1)/per)
	parallel(len(errs), 2, func(c int) {
		items := make([]map[string]any, 0, per)
		for i := c * per; i < min(b.rows, (c+1)*per); i++ {
			items = append(items, map[string]any{"op": "create", "id": rowID(i), "payload": rowPayload{ID: rowID(i), Fields: map[string]int64{}}})
		}
		errs[c] = retryShed(ctx, func() error {
			return call(ctx, "POST", b.url+"/v1/boards/"+board+"/batches", b.runtime, map[string]any{"mode": "all_or_nothing", "items": items}, 201, nil)
		}, func() {})
	})
	return errors.Join(errs...)
}

// readAll lists every row of board: id -> its fields.
func (b *importBench) readAll(ctx context.Context, board string) (map[string]map[string]int64, error) {
	out := make(map[string]map[string]int64, b.rows)
	for cursor := ""; ; {
		var page struct {
			Items []boardRow `json:"items"`
			Next  *string    `json:"next"`
		}
		u := b.url + "/v1/boards/" + board + "/records?limit=500"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		if err := retryShed(ctx, func() error { return call(ctx, "GET", u, b.runtime, nil, 200, &page) }, func() {}); err != nil {
			return nil, err
		}
		for _, r := range page.Items {
			out[r.ID] = r.Payload.Fields
		}
		if page.Next == nil || *page.Next == "" {
			return out, nil
		}
		cursor = *page.Next
	}
}

// cell is one agent's field of one row.
type cell struct {
	row   string
	agent int
}

// ledger is the lost-update model: per cell, the last value the server
// acknowledged writing (an agent's values only grow).
type ledger map[cell]int64

func (l ledger) ack(row string, agent int, v int64) {
	if c := (cell{row, agent}); v > l[c] {
		l[c] = v
	}
}

func (l ledger) merge(o ledger) {
	for c, v := range o {
		l.ack(c.row, c.agent, v)
	}
}

// lost counts the acknowledged writes the final rows (row -> fields) do
// not show: the field missing, or an older value in it. It answers up
// to five of them, in row order.
func (l ledger) lost(final map[string]map[string]int64) (int, []string) {
	var bad []string
	for c, v := range l {
		f, ok := final[c.row]["a"+strconv.Itoa(c.agent)]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s a%d: acknowledged %d, missing", c.row, c.agent, v))
		case f < v:
			bad = append(bad, fmt.Sprintf("%s a%d: acknowledged %d, found %d", c.row, c.agent, v, f))
		}
	}
	slices.Sort(bad)
	return len(bad), bad[:min(5, len(bad))]
}

// verdict fails when a strategy other than the control lost an update,
// the control lost none, or a strategy had errors or wrote nothing.
func verdict(rs []strategyResult) error {
	var errs []error
	for _, r := range rs {
		switch {
		case r.t.errors > 0:
			errs = append(errs, fmt.Errorf("%s: %d batches failed, the first: %v", r.s.name, r.t.errors, r.t.firstErr))
		case r.t.acked == 0:
			errs = append(errs, fmt.Errorf("%s: no write acknowledged", r.s.name))
		case r.s.lossy && r.lost == 0:
			errs = append(errs, fmt.Errorf("%s: lost no update, so the check cannot tell a lost one", r.s.name))
		case !r.s.lossy && r.lost > 0:
			errs = append(errs, fmt.Errorf("%s: %d lost updates, e.g. %s", r.s.name, r.lost, strings.Join(r.examples, "; ")))
		}
	}
	return errors.Join(errs...)
}

func (b *importBench) print(ctx context.Context, w io.Writer, rs []strategyResult, seeded time.Duration) {
	fmt.Fprintf(w, "\nmachine: %d cores (nproc), %s, %s; promptd with PROMPTD_BOARD_MAX_RECORDS=%d (the board's %d rows against the default limit of 100,000 non-terminal records per board)\n",
		runtime.NumCPU(), b.mariaDB(ctx), runtime.Version(), b.maxRecords, b.rows)
	fmt.Fprintf(w, "workload: one board of %d rows (seeded in %s, %.0f rows/s, batches of 1,000 creates), the strategies in turn on it; %d agents, batches of %d (%.0f %% from %d hot rows), %s of batches each, think %s, %d requests in flight per agent\n\n",
		b.rows, seeded.Round(time.Millisecond), float64(b.rows)/seeded.Seconds(), b.agents, b.batch, b.hotShare*100, b.hot, b.duration, b.think, b.readers)
	fmt.Fprintln(w, "| strategy | agents | rows/s | batch p50 | batch p99 | conflict-retry rate | intent conflicts | lost updates | acknowledged writes | report: QPS | report: p99 | report: retries |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		p50, p99 := pct(r.t.lat)
		rate := "-"
		if r.t.attempts > 0 {
			rate = fmt.Sprintf("%.2f %% (%d / %d)", 100*float64(r.t.retries)/float64(r.t.attempts), r.t.retries, r.t.attempts)
		}
		fmt.Fprintf(w, "| %s | %d | %.0f | %s | %s | %s | %d | %d | %d | %s | %s | %s |\n", r.s.name, b.agents, float64(r.t.acked)/r.elapsed.Seconds(),
			p50.Round(time.Millisecond), p99.Round(time.Millisecond), rate, r.t.intentConflicts, r.lost, r.t.acked, r.s.report[0], r.s.report[1], r.s.report[2])
	}
	fmt.Fprintln(w)
	for _, r := range rs {
		fmt.Fprintf(w, "- %s: %d batches acknowledged, %d abandoned (still waiting or retrying %s after the end), %d failed (an unexpected answer); %d acknowledged row writes in %s; lease waits (423) %d, claims expired before their write or release %d, rows dropped by intent conflicts %d, requests retried after 503/429 %d; %d rows read back; load average %s at the start, %s at the end",
			r.s.name, r.t.batches, r.t.abandoned, b.grace, r.t.errors, r.t.acked, r.elapsed.Round(time.Millisecond), r.t.leaseWaits, r.t.claimsLost, r.t.droppedRows,
			r.t.shed, r.rowsRead, r.load[0], r.load[1])
		if r.t.firstErr != nil {
			fmt.Fprintf(w, "; first error: %v", r.t.firstErr)
		}
		if len(r.examples) > 0 {
			fmt.Fprintf(w, "; lost e.g. %s", strings.Join(r.examples, "; "))
		}
		fmt.Fprintln(w)
	}
}

// loadAverage is the machine's 1-minute load average ("?" off Linux).
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(raw)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// mariaDB is the server's version, from -mysql-dsn.
func (b *importBench) mariaDB(ctx context.Context) string {
	if b.mysqlDSN == "" {
		return "MariaDB version unknown (no -mysql-dsn)"
	}
	db, err := sql.Open("mysql", b.mysqlDSN)
	if err != nil {
		return "MariaDB version unknown (" + err.Error() + ")"
	}
	defer db.Close()
	var v string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v); err != nil {
		return "MariaDB version unknown (" + err.Error() + ")"
	}
	return "MariaDB " + v
}
