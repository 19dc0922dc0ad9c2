package e2e

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The fault suite's checkers, on hand-made histories: each must find the
// violation it exists for, and accept the legal variant.

func TestCheck_turnModel(t *testing.T) {
	ok := op{Status: 201}
	appendOp := func(client int, call, ret, exp int64, text string, out op) op {
		o := out
		o.Kind, o.Key, o.Client, o.Call, o.Ret, o.ExpRev, o.Text = kAppend, "s", client, call, ret, exp, text
		return o
	}
	read := func(call, ret, rev, since int64, texts ...string) op {
		return op{Kind: kRead, Key: "s", Client: 9, Call: call, Ret: ret, Status: 200, Rev: rev, Since: since, Texts: texts}
	}
	a1 := ok
	a1.Rev, a1.Seq = 1, 1
	cases := []struct {
		name string
		ops  []op
		want porcupine.CheckResult
	}{
		{"two appends at revision 0 both acknowledged", []op{
			appendOp(1, 0, 10, 0, "x", a1), appendOp(2, 20, 30, 0, "y", a1)}, porcupine.Illegal},
		{"a read shows a turn beyond its revision (the old two-statement GET)", []op{
			appendOp(1, 0, 10, 0, "x", a1), appendOp(2, 20, 40, 1, "y", op{Unknown: true}),
			read(25, 30, 1, 0, "x", "y")}, porcupine.Illegal},
		{"a read misses an acknowledged append", []op{
			appendOp(1, 0, 10, 0, "x", a1), read(20, 30, 0, 0)}, porcupine.Illegal},
		{"conflict reported although the revision matched", []op{
			appendOp(1, 0, 10, 0, "x", op{Status: 409, Code: "revision_conflict"}), read(20, 30, 0, 0)}, porcupine.Illegal},
		{"unknown outcome that did not happen", []op{
			appendOp(1, 0, 10, 0, "x", op{Unknown: true}), read(20, 30, 0, 0),
			appendOp(2, 40, 50, 0, "y", a1), read(60, 70, 1, 0, "y")}, porcupine.Ok},
		{"concurrent append and read", []op{
			appendOp(1, 0, 30, 0, "x", a1), read(10, 20, 0, 0), read(25, 35, 1, 0, "x")}, porcupine.Ok},
	}
	for _, c := range cases {
		if got := checkLinearizable(turnModel, c.ops, kAppend, kRead).result; got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestCheck_stateAndPointerModels(t *testing.T) {
	put := op{Kind: kPut, Key: "s/k", Client: 1, Call: 0, Ret: 10, ExpRev: 0, Text: "a", Status: 200, Rev: 1}
	lost := op{Kind: kSRead, Key: "s/k", Client: 2, Call: 20, Ret: 30, Status: 200}
	if got := checkLinearizable(stateModel, []op{put, lost}, kPut, kSRead); got.result != porcupine.Illegal || len(got.illegal) != 2 {
		t.Errorf("state read after an acknowledged put sees nothing: %s, illegal history %q", got.result, got.illegal)
	}
	seen := lost
	seen.Rev, seen.Text = 1, "a"
	if got := checkLinearizable(stateModel, []op{put, seen}, kPut, kSRead).result; got != porcupine.Ok {
		t.Errorf("legal state history: %s", got)
	}
	cas := op{Kind: kCAS, Key: "a/e", Client: 1, Call: 0, Ret: 10, ExpRev: 1, Version: 3, Status: 200, Rev: 2}
	stale := op{Kind: kPRead, Key: "a/e", Client: 2, Call: 20, Ret: 30, Status: 200, Rev: 1, Version: 1}
	if got := checkLinearizable(pointerModel, []op{cas, stale}, kCAS, kPRead).result; got != porcupine.Illegal {
		t.Errorf("SQL pointer read older than an acknowledged move: %s", got)
	}
}

func TestCheck_fences(t *testing.T) {
	g := func(key string, call, ret, fence int64) op {
		return op{Kind: kGrant, Key: key, Call: call, Ret: ret, Fence: fence, Status: 200}
	}
	if n, _ := fenceRegressions([]op{g("s", 0, 10, 5), g("s", 20, 30, 4)}); n != 1 {
		t.Errorf("a later grant with a lower fence: %d regressions", n)
	}
	if n, _ := fenceRegressions([]op{g("s", 0, 10, 5), g("s", 20, 30, 5)}); n != 1 {
		t.Errorf("a later grant with the same fence: %d regressions", n)
	}
	if n, _ := fenceRegressions([]op{g("s", 0, 30, 5), g("s", 10, 20, 4), g("t", 40, 50, 1)}); n != 0 {
		t.Errorf("concurrent grants, and another key: %d regressions", n)
	}
	w := op{Kind: kAppend, Key: "s", Call: 20, Ret: 30, Fence: 5, Status: 201}
	if n, _ := staleFenceAccepted([]op{g("s", 0, 10, 6), w}); n != 1 {
		t.Errorf("write with fence 5 after fence 6 was granted: %d accepted", n)
	}
	if n, _ := staleFenceAccepted([]op{g("s", 0, 25, 6), w}); n != 0 {
		t.Errorf("grant concurrent with the write: %d", n)
	}

	// Board records: a claim is a grant of the record's fence, a record
	// write under an older claim's fence is a stale write.
	claim := func(call, ret, fence int64) op {
		return op{Kind: kBClaim, Key: "r1", Call: call, Ret: ret, Fence: fence, Status: 200}
	}
	if n, _ := fenceRegressions([]op{claim(0, 10, 3), claim(20, 30, 3)}); n != 1 {
		t.Errorf("two claims of a record granted one fence: %d regressions", n)
	}
	done := op{Kind: kBPatch, Key: "r1", Call: 40, Ret: 50, Fence: 3, Text: "done", Status: 200}
	if n, _ := staleFenceAccepted([]op{claim(0, 10, 3), claim(20, 30, 4), done}); n != 1 {
		t.Errorf("a done under fence 3 after fence 4 was claimed: %d accepted", n)
	}
	if n, _ := staleFenceAccepted([]op{claim(0, 10, 3), done}); n != 0 {
		t.Errorf("a done under the current claim: %d", n)
	}
}

func TestCheck_staleness(t *testing.T) {
	s := int64(time.Second)
	cas := op{Kind: kCAS, Key: "a/e", Call: 0, Ret: s, ExpRev: 1, Version: 3, Status: 200, Rev: 2}
	res := func(call int64, version int, ryw int64) op {
		return op{Kind: kResolve, Key: "a/e", Call: call, Ret: call + 1, Version: version, RYW: ryw, Status: 200}
	}
	worst, over, ryw, n := staleness([]op{cas, res(6*s, 1, 0), res(2*s, 3, 2), res(s+1, 1, 2)}, "a/e", 3*time.Second)
	if n != 3 || over != 1 || ryw != 1 || worst < 5*time.Second {
		t.Errorf("worst %v, over %d, ryw %d, checked %d; want >= 5s, 1, 1, 3", worst, over, ryw, n)
	}
	if _, over, _, _ := staleness([]op{cas, res(s+s/2, 1, 0)}, "a/e", 3*time.Second); over != 0 {
		t.Errorf("half a second behind counted over a 3 s bound")
	}
	if _, over, _, _ := staleness([]op{cas, res(2*s, 4, 0)}, "a/e", 3*time.Second); over != 1 {
		t.Errorf("a version never written was explained")
	}
}

func TestCheck_boardModel(t *testing.T) {
	create := op{Kind: kBCreate, Key: "r", Client: 1, Call: 0, Ret: 10, Status: 201}
	claim := func(client int, call, ret, fence, rev int64) op {
		return op{Kind: kBClaim, Key: "r", Client: client, Call: call, Ret: ret, Fence: fence, Rev: rev, Status: 200}
	}
	patch := func(client int, call, ret, fence, exp int64, state string, out op) op {
		o := out
		o.Kind, o.Key, o.Client, o.Call, o.Ret, o.Fence, o.ExpRev, o.Text = kBPatch, "r", client, call, ret, fence, exp, state
		return o
	}
	okAt := func(rev int64) op { return op{Status: 200, Rev: rev} }
	read := func(call int64, state string, fence, rev int64) op {
		return op{Kind: kBRead, Key: "r", Client: -1, Call: call, Ret: call + 5, Status: 200, Text: state, Fence: fence, Rev: rev}
	}
	// one claim worked to the end: claim (fence 1, rev 2), running (3), done (4, fence 2)
	worked := []op{create, claim(2, 20, 30, 1, 2), patch(2, 40, 50, 1, 2, "running", okAt(3)), patch(2, 60, 70, 1, 3, "done", okAt(4))}
	cases := []struct {
		name string
		ops  []op
		want porcupine.CheckResult
	}{
		{"claimed, run and done; read done", append(slices.Clone(worked), read(100, "done", 2, 4)), porcupine.Ok},
		{"reclaimed unseen, claimed again and done; the first claim's write refused", []op{create,
			claim(2, 20, 30, 1, 2), claim(3, 40, 50, 3, 4), patch(2, 60, 70, 1, 2, "running", op{Status: 409, Code: "stale_fence"}),
			patch(3, 60, 70, 3, 4, "running", okAt(5)), patch(3, 80, 90, 3, 5, "done", okAt(6)), read(100, "done", 4, 6)}, porcupine.Ok},
		{"an unknown create, then its record claimed", []op{{Kind: kBCreate, Key: "r", Client: 1, Call: 0, Ret: 10, Unknown: true},
			claim(2, 20, 30, 1, 2), read(100, "claimed", 1, 2)}, porcupine.Ok},
		{"acknowledged done, read back pending (lost)", append(slices.Clone(worked), read(100, "pending", 3, 5)), porcupine.Illegal},
		{"claimed again after an acknowledged done", append(slices.Clone(worked), claim(3, 80, 90, 3, 5)), porcupine.Illegal},
		{"a write under the first claim accepted after a second claim returned", []op{create,
			claim(2, 20, 30, 1, 2), claim(3, 40, 50, 3, 4), patch(2, 60, 70, 1, 2, "running", okAt(3))}, porcupine.Illegal},
		{"two claims granted the same fence", []op{create, claim(2, 20, 30, 1, 2), claim(3, 40, 50, 1, 3)}, porcupine.Illegal},
		{"a claim of a record never created", []op{claim(2, 20, 30, 1, 2)}, porcupine.Illegal},
	}
	for _, c := range cases {
		if got := checkLinearizable(boardModel, boardOps(c.ops), kBCreate, kBClaim, kBPatch, kBRead).result; got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// TestCheck_retriedPatchRefusedByItself: the history CI recorded. The
// "done" PATCH committed on a promptd killed before it answered; its retry
// (same body, next node) was refused stale_fence by that very write, and
// the read after the run shows it done. Counted as a refusal, the history
// is illegal; as the unknown outcome it is, legal.
func TestCheck_retriedPatchRefusedByItself(t *testing.T) {
	create := op{Kind: kBCreate, Key: "r", Client: 1, Call: 0, Ret: 10, Status: 201}
	claim := op{Kind: kBClaim, Key: "r", Client: 2, Call: 20, Ret: 30, Fence: 1, Rev: 2, Status: 200}
	running := op{Kind: kBPatch, Key: "r", Client: 2, Call: 40, Ret: 50, Fence: 1, ExpRev: 2, Text: "running", Status: 200, Rev: 3}
	done := op{Kind: kBPatch, Key: "r", Client: 2, Call: 60, Ret: 70, Fence: 1, ExpRev: 3, Text: "done", Status: 409, Code: "stale_fence"}
	read := op{Kind: kBRead, Key: "r", Client: -1, Call: 100, Ret: 105, Status: 200, Text: "done", Fence: 2, Rev: 4}
	check := func(done op) porcupine.CheckResult {
		return checkLinearizable(boardModel, boardOps([]op{create, claim, running, done, read}), kBCreate, kBClaim, kBPatch, kBRead).result
	}
	if got := check(done); got != porcupine.Illegal {
		t.Errorf("the refusal taken at its word: %s, want Illegal", got)
	}
	done.Unknown = true
	if got := check(done); got != porcupine.Ok {
		t.Errorf("the refusal as an unknown outcome: %s, want Ok", got)
	}
}

// TestWrite_retryRefusedAfterLostAnswer: write marks a PATCH whose retry is
// refused after a try that got no answer as unknown, and keeps a refusal
// with no lost try before it, and a POST's (its Idempotency-Key replays
// the first answer), definite.
func TestWrite_retryRefusedAfterLostAnswer(t *testing.T) {
	var tries atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if tries.Add(1)%2 == 1 && r.Header.Get("X-Lose") != "" { // "commits", then dies before answering
			conn, _, err := rw.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		rw.Header().Set("Content-Type", "application/problem+json")
		rw.WriteHeader(http.StatusConflict)
		_, _ = rw.Write([]byte(`{"code":"stale_fence"}`))
	}))
	defer srv.Close()
	w := &workload{nodes: func() []string { return []string{srv.URL} }, h: &history{}, stop: make(chan struct{})}
	for _, c := range []struct {
		method  string
		lose    bool
		unknown bool
	}{{"PATCH", true, true}, {"PATCH", false, false}, {"POST", true, false}} {
		tries.Store(0)
		var o op
		hdr := []string{}
		if c.lose {
			hdr = append(hdr, "X-Lose", "1")
		}
		w.write(&o, 0, c.method, "/v1/boards/b/records/r", map[string]any{}, hdr...)
		if o.Unknown != c.unknown || o.Status != http.StatusConflict {
			t.Errorf("%s, first answer lost %v: unknown %v status %d after %d tries, want unknown %v, 409",
				c.method, c.lose, o.Unknown, o.Status, tries.Load(), c.unknown)
		}
	}
}
