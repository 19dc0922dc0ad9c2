package problem_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/promptd/promptd/problem"
)

type quota struct{ limit int }

func (q *quota) Error() string { return "quota" }
func (q *quota) Problem() *problem.Problem {
	return (&problem.Problem{Code: problem.QuotaExceeded, Detail: "over"}).With("limit", q.limit)
}

var errGone = problem.New(problem.SessionClosed, "test: closed", "the session is closed").With("state", "closed").
	WithHeader("Retry-After", "1")

func TestOf_findsTheFirstCodedErrorOfTheChain(t *testing.T) {
	for _, c := range []struct {
		err  error
		code string
	}{
		{errGone, problem.SessionClosed},
		{fmt.Errorf("reading: %w", errGone), problem.SessionClosed},
		{fmt.Errorf("%w: %w", &quota{3}, errGone), problem.QuotaExceeded},
		{errors.Join(errors.New("plain"), errGone), problem.SessionClosed},
		{&problem.RevisionConflictError{Expected: 1, Current: 2}, problem.RevisionConflict},
		{problem.FromHeader(&problem.RevisionConflictError{Expected: 1, Current: 2}), problem.PreconditionFailed},
		{&http.MaxBytesError{Limit: 10}, problem.BodyTooLarge},
		{&problem.LimitError{Name: "turns", Limit: 5}, problem.LimitExceeded},
		{problem.Invalid(problem.InvalidField, "a.b", "bad %d", 1), problem.InvalidField},
		{errors.New("plain"), problem.Internal}, // the control: nothing coded is internal
		{problem.Errorf(problem.Forbidden, "no").With("scope", "x"), problem.Forbidden},
	} {
		p := problem.Of(c.err)
		if p.Code != c.code {
			t.Errorf("Of(%v) = %s, want %s", c.err, p.Code, c.code)
		}
		if _, known := problem.Codes[p.Code]; !known {
			t.Errorf("Of(%v) = %s, not in Codes", c.err, p.Code)
		}
		if p.Code != problem.Internal && p.Err != c.err && !errors.Is(p, c.err) {
			t.Errorf("Of(%v).Err = %v: the cause is lost", c.err, p.Err)
		}
	}
}

// A sentinel's problem is a new one each time: adding to one answer never
// changes the next.
func TestSentinel_problemIsACopy(t *testing.T) {
	p := problem.Of(errGone)
	p.With("state", "mutated").WithHeader("Retry-After", "9")
	q := problem.Of(fmt.Errorf("again: %w", errGone))
	if q.Fields["state"] != "closed" || len(q.Header.Values("Retry-After")) != 1 {
		t.Fatalf("the second problem saw the first's changes: %v %v", q.Fields, q.Header)
	}
	if !errors.Is(fmt.Errorf("w: %w", errGone), errGone) || errGone.Error() != "test: closed" {
		t.Fatal("a sentinel is tested by identity and keeps its message")
	}
}

func TestLimitError_detail(t *testing.T) {
	if d := problem.Of(&problem.LimitError{Name: "turns", Limit: 5, Detail: "at most %d turns"}).Detail; d != "at most 5 turns" {
		t.Errorf("detail = %q", d)
	}
	if d := problem.Of(&problem.LimitError{Name: "webhooks", Limit: 7}).Detail; d != "webhooks is limited to 7" {
		t.Errorf("default detail = %q", d)
	}
}
