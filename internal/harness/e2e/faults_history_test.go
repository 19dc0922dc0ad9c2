package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Clock: wall time at process start plus monotonic time since, so the
// parent and the lease-holding child process (same host clock) stamp on
// one time line, and no stamp moves with a clock step inside a run.
var (
	monoBase = time.Now()
	wallBase = monoBase.UnixNano()
)

func now() int64 { return wallBase + int64(time.Since(monoBase)) }

// op is one request of the fault workload and what came back. Every
// written value (turn text, state value, version config) is unique.
type op struct {
	Kind   string `json:"kind"` // see the kind constants
	Key    string `json:"key"`  // the partition: session, session/state key, agent/env, resource
	Client int    `json:"client"`
	Node   int    `json:"node"`
	Call   int64  `json:"call"`
	Ret    int64  `json:"ret"`
	// Unknown: transport error or 5xx after every retry: the write may or
	// may not have happened (porcupine: return = infinity).
	Unknown bool   `json:"unknown,omitempty"`
	Status  int    `json:"status"`
	Code    string `json:"code,omitempty"`

	ExpRev  int64  `json:"exp_rev,omitempty"`
	Text    string `json:"text,omitempty"`
	Fence   int64  `json:"fence,omitempty"`
	Version int    `json:"version,omitempty"`
	Since   int64  `json:"since,omitempty"`

	Rev     int64    `json:"rev,omitempty"`
	Seq     int64    `json:"seq,omitempty"`
	Texts   []string `json:"texts,omitempty"`
	Partial bool     `json:"partial,omitempty"` // a read page that did not reach the end
	RYW     int64    `json:"ryw,omitempty"`     // resolve right after this pointer revision was acknowledged on the node
}

const (
	kAppend  = "append"  // POST /sessions/{id}/turns, one turn
	kRead    = "read"    // GET /sessions/{id}?since=
	kPut     = "sput"    // PUT /sessions/{id}/state/{key}
	kSRead   = "sread"   // GET /sessions/{id}/state, one op per key
	kCAS     = "cas"     // PUT /agents/{a}/envs/{e} with expected_revision
	kPRead   = "pread"   // GET /agents/{a}/envs/{e}
	kGrant   = "grant"   // POST /sessions/{id}/lease
	kLGrant  = "lgrant"  // POST /leases, one op per resource
	kResolve = "resolve" // GET .../prompt
	kOther   = "other"   // counted only: creates, releases, assembles, lease releases
	kHTTP500 = "http500" // a 5xx other than 503 seen on any attempt
)

func (o op) ok() bool { return !o.Unknown && o.Status >= 200 && o.Status < 300 }

// finish stamps the return and classifies the outcome.
func (o *op) finish(r resp, err error) {
	o.Ret = now()
	o.Status = r.Status
	if err != nil || r.Status >= 500 {
		o.Unknown = true
		return
	}
	if r.Status >= 400 {
		var p struct{ Code string }
		_ = json.Unmarshal(r.Body, &p)
		o.Code = p.Code
	}
}

// history collects ops; in the child process emit prints them instead.
type history struct {
	mu   sync.Mutex
	ops  []op
	emit func(op)
}

func (h *history) add(o op) {
	if h.emit != nil {
		h.emit(o)
		return
	}
	h.mu.Lock()
	h.ops = append(h.ops, o)
	h.mu.Unlock()
}

func (h *history) all() []op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]op(nil), h.ops...)
}

// ---- linearizability (porcupine), one partition per key ----

// porcupineOps turns the ops of the given kinds into porcupine operations:
// unknown writes return at infinity, unknown reads are dropped (they
// observed nothing).
func porcupineOps(ops []op, kinds ...string) []porcupine.Operation {
	var out []porcupine.Operation
	for _, o := range ops {
		if !contains(kinds, o.Kind) {
			continue
		}
		ret := o.Ret
		isRead := o.Kind == kRead || o.Kind == kSRead || o.Kind == kPRead
		if isRead && !o.ok() {
			continue // a read that failed or was refused (429, 503) observed nothing
		}
		if o.Unknown {
			ret = math.MaxInt64
		}
		out = append(out, porcupine.Operation{ClientId: o.Client, Input: o, Call: o.Call, Output: o, Return: ret})
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func byKey(h []porcupine.Operation) [][]porcupine.Operation {
	m := map[string][]porcupine.Operation{}
	var keys []string
	for _, o := range h {
		k := o.Input.(op).Key
		if _, ok := m[k]; !ok {
			keys = append(keys, k)
		}
		m[k] = append(m[k], o)
	}
	sort.Strings(keys)
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

// turnLog is a session's turn texts, each followed by "\x00"; n counts
// them (one turn per append, so n is also the session revision).
type turnLog struct {
	n int64
	s string
}

func (t turnLog) suffix(since int64) []string {
	all := strings.Split(t.s, "\x00")
	all = all[:len(all)-1]
	if since >= int64(len(all)) {
		return nil
	}
	return all[max(since, 0):]
}

// turnModel: appends with expected_revision (and maybe a fence), reads of
// (revision, turns after since).
var turnModel = porcupine.Model{
	Partition: byKey,
	Init:      func() interface{} { return turnLog{} },
	Step: func(state, input, _ interface{}) (bool, interface{}) {
		st, o := state.(turnLog), input.(op)
		switch o.Kind {
		case kAppend:
			next := turnLog{st.n + 1, st.s + o.Text + "\x00"}
			return casStep(o, st, next, st.n == o.ExpRev, o.Rev == st.n+1 && o.Seq == st.n+1, o.Code == "revision_conflict")
		case kRead:
			if o.Rev != st.n {
				return false, st
			}
			want := st.suffix(o.Since)
			if o.Partial && len(o.Texts) <= len(want) {
				want = want[:len(o.Texts)]
			}
			return equalStrings(want, o.Texts), st
		}
		return false, st
	},
	DescribeOperation: func(input, _ interface{}) string { o := input.(op); return o.describe() },
}

// casStep is the step of a write conditional on a revision: applies says
// the model's state meets its condition, asExpected that an acknowledged
// answer names the revision the write must have made, conflict that the
// answer was the revision-conflict rejection. An unknown outcome happened
// if it could (porcupine may place it last, where it changes nothing
// observed); another rejection (lease_held, stale_fence) changed nothing.
func casStep[S any](o op, st, next S, applies, asExpected, conflict bool) (bool, interface{}) {
	switch {
	case o.Unknown:
		if applies {
			return true, next
		}
		return true, st
	case o.ok():
		return applies && asExpected, next
	case conflict:
		return !applies, st
	}
	return true, st
}

type stateEntry struct {
	rev int64
	val string
}

// stateModel: one blackboard entry; puts with expected_revision (0 creates).
var stateModel = porcupine.Model{
	Partition: byKey,
	Init:      func() interface{} { return stateEntry{} },
	Step: func(state, input, _ interface{}) (bool, interface{}) {
		st, o := state.(stateEntry), input.(op)
		switch o.Kind {
		case kPut:
			next := stateEntry{st.rev + 1, o.Text}
			return casStep(o, st, next, st.rev == o.ExpRev, o.Rev == st.rev+1, o.Code == "revision_conflict")
		case kSRead:
			return o.Rev == st.rev && o.Text == st.val, st
		}
		return false, st
	},
	DescribeOperation: func(input, _ interface{}) string { o := input.(op); return o.describe() },
}

type pointerState struct {
	rev int64
	ver int
}

// pointerModel: an env pointer, seeded at (revision 1, version 1); moves
// with expected_revision, reads from SQL.
var pointerModel = porcupine.Model{
	Partition: byKey,
	Init:      func() interface{} { return pointerState{1, 1} },
	Step: func(state, input, _ interface{}) (bool, interface{}) {
		st, o := state.(pointerState), input.(op)
		switch o.Kind {
		case kCAS:
			next := pointerState{st.rev + 1, o.Version}
			return casStep(o, st, next, st.rev == o.ExpRev, o.Rev == st.rev+1, o.Code == "revision_conflict" || o.Status == 412)
		case kPRead:
			return o.Rev == st.rev && o.Version == st.ver, st
		}
		return false, st
	},
	DescribeOperation: func(input, _ interface{}) string { o := input.(op); return o.describe() },
}

func (o op) describe() string {
	out := fmt.Sprintf("%s %s exp=%d text=%q fence=%d v=%d since=%d", o.Kind, o.Key, o.ExpRev, o.Text, o.Fence, o.Version, o.Since)
	if o.Unknown {
		return out + " -> unknown"
	}
	return out + fmt.Sprintf(" -> %d %s rev=%d seq=%d texts=%d", o.Status, o.Code, o.Rev, o.Seq, len(o.Texts))
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// linResult checks one model over its ops, partition by partition.
// illegal is the history of the first partition found illegal, in call
// order (call and return times relative to its first call), so that a
// failure shows what happened to that key.
type linResult struct {
	partitions, ops int
	result          porcupine.CheckResult
	illegal         []string
}

func checkLinearizable(m porcupine.Model, ops []op, kinds ...string) linResult {
	h := porcupineOps(ops, kinds...)
	parts := byKey(h)
	r := linResult{partitions: len(parts), ops: len(h)}
	r.result = porcupine.CheckOperationsTimeout(m, h, 60*time.Second)
	if r.result != porcupine.Illegal {
		return r
	}
	for _, p := range parts {
		if porcupine.CheckOperationsTimeout(m, p, 10*time.Second) != porcupine.Illegal {
			continue
		}
		sort.Slice(p, func(i, j int) bool { return p[i].Call < p[j].Call })
		t0 := p[0].Call
		for _, o := range p {
			ret := "never"
			if o.Return != math.MaxInt64 {
				ret = fmt.Sprintf("%.1fms", float64(o.Return-t0)/1e6)
			}
			r.illegal = append(r.illegal, fmt.Sprintf("[%.1fms .. %s] %s", float64(o.Call-t0)/1e6, ret, o.Input.(op).describe()))
		}
		break
	}
	return r
}

// ---- fences ----

// fenceRegressions: per key, a grant must be above every fence observed
// (granted or read from the session row) before it was requested, and a
// read at or above it. Returns the count and a few examples.
func fenceRegressions(ops []op) (int, []string) {
	per := map[string][]op{}
	for _, o := range ops {
		if o.ok() && o.Fence > 0 && (o.Kind == kGrant || o.Kind == kLGrant || o.Kind == kRead || o.Kind == kBClaim) {
			per[o.Key] = append(per[o.Key], o)
		}
	}
	n, ex := 0, []string(nil)
	for key, obs := range per {
		byRet := append([]op(nil), obs...)
		sort.Slice(byRet, func(i, j int) bool { return byRet[i].Ret < byRet[j].Ret })
		byCall := append([]op(nil), obs...)
		sort.Slice(byCall, func(i, j int) bool { return byCall[i].Call < byCall[j].Call })
		var high int64
		i := 0
		for _, b := range byCall {
			for i < len(byRet) && byRet[i].Ret < b.Call {
				high = max(high, byRet[i].Fence)
				i++
			}
			bad := b.Fence < high || (b.Kind != kRead && b.Fence == high)
			if bad {
				n++
				if len(ex) < 3 {
					ex = append(ex, fmt.Sprintf("%s %s fence %d after %d was seen", key, b.Kind, b.Fence, high))
				}
			}
		}
	}
	return n, ex
}

// staleFenceAccepted: acknowledged fenced writes (session appends and
// state, board record writes) whose fence was already below a grant of the
// session lease or the record's claim returned before they were sent.
func staleFenceAccepted(ops []op) (int, []string) {
	grants := map[string][]op{}
	for _, o := range ops {
		if (o.Kind == kGrant || o.Kind == kBClaim) && o.ok() {
			grants[o.Key] = append(grants[o.Key], o)
		}
	}
	n, ex := 0, []string(nil)
	for _, o := range ops {
		if (o.Kind != kAppend && o.Kind != kPut && o.Kind != kBPatch) || !o.ok() || o.Fence == 0 {
			continue
		}
		sess, _, _ := strings.Cut(o.Key, "/")
		for _, g := range grants[sess] {
			if g.Fence > o.Fence && g.Ret < o.Call {
				n++
				if len(ex) < 3 {
					ex = append(ex, fmt.Sprintf("%s with fence %d accepted after fence %d was granted", o.describe(), o.Fence, g.Fence))
				}
				break
			}
		}
	}
	return n, ex
}

// ---- resolve: bounded staleness and read-your-writes ----

var lagLadder = []time.Duration{0, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 3 * time.Second, 5 * time.Second, 10 * time.Second, time.Minute}

type ptrWrite struct {
	rev       int64
	ver       int
	call, ret int64
	acked     bool
}

// staleness returns, for the resolves of key (agent/env), the largest lag
// (from the ladder) any of them needed to be explained: a resolve called
// at c is fresh within L if it served the version of a revision at or
// above every revision acknowledged before c-L, written (at least begun)
// before the resolve returned. over counts resolves beyond bound; ryw
// counts read-your-writes misses (the resolve right after an
// acknowledged switch on the same node).
func staleness(ops []op, key string, bound time.Duration) (worst time.Duration, over, ryw, checked int) {
	writes := []ptrWrite{{rev: 1, ver: 1, acked: true}}
	for _, o := range ops {
		if o.Kind != kCAS || o.Key != key {
			continue
		}
		switch {
		case o.ok():
			writes = append(writes, ptrWrite{o.Rev, o.Version, o.Call, o.Ret, true})
		case o.Unknown:
			writes = append(writes, ptrWrite{o.ExpRev + 1, o.Version, o.Call, math.MaxInt64, false})
		}
	}
	explained := func(r op, floor int64) bool {
		for _, w := range writes {
			if w.rev >= floor && w.ver == r.Version && w.call < r.Ret {
				return true
			}
		}
		return false
	}
	floorAt := func(t int64) int64 {
		f := int64(1)
		for _, w := range writes {
			if w.acked && w.ret < t {
				f = max(f, w.rev)
			}
		}
		return f
	}
	for _, r := range ops {
		if r.Kind != kResolve || r.Key != key || !r.ok() {
			continue
		}
		checked++
		if r.RYW > 0 && !explained(r, r.RYW) {
			ryw++
		}
		lag := time.Duration(math.MaxInt64)
		for _, l := range lagLadder {
			if explained(r, floorAt(r.Call-int64(l))) {
				lag = l
				break
			}
		}
		if lag > bound {
			over++
		}
		worst = max(worst, lag)
	}
	return worst, over, ryw, checked
}
