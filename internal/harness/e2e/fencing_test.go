package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

const childEnv = "PROMPTD_E2E_RUNTIME_A"

// TestMain runs runtime A instead of the tests when the test binary is
// started as a child process.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		runtimeA()
	}
	os.Exit(m.Run())
}

// runtimeA takes the session lease over HTTP, reports it, then waits for
// a line on stdin (the parent stops it in between) and appends with its
// fence.
func runtimeA() {
	url, id := os.Getenv("E2E_URL"), os.Getenv("E2E_SESSION")
	var l struct {
		Token string
		Fence int64
	}
	r, err := call("POST", url+"/v1/sessions/"+id+"/lease", runtimeToken, map[string]any{"holder": "runtime-A", "ttl_ms": 500})
	if err != nil || r.Status != 200 {
		fmt.Println("ERROR lease", r.Status, string(r.Body), err)
		os.Exit(1)
	}
	_ = json.Unmarshal(r.Body, &l)
	fmt.Println("LEASE", l.Fence)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() { // each line: the expected revision to append with
		r, err := call("POST", url+"/v1/sessions/"+id+"/turns", runtimeToken, map[string]any{"expected_revision": json.Number(in.Text()),
			"fence": l.Fence, "turns": []map[string]any{{"role": "assistant", "content": "A's late answer"}}})
		if err != nil {
			fmt.Println("ERROR append", err)
			os.Exit(1)
		}
		var p struct{ Code string }
		_ = json.Unmarshal(r.Body, &p)
		fmt.Println("APPEND", r.Status, p.Code)
	}
	os.Exit(0)
}

// Fencing end to end over HTTP with a real pause: A holds the lease and is
// SIGSTOPped past its TTL; B leases with a higher fence; A's appends with
// its old fence are stale_fence, before and after B writes; B's turns stay.
// (The control run, the same pause against a row written without the
// fence condition, is locks.TestFencing_pausedHolder_lateWriteRejected's
// "unfenced" case: there the stale write overwrites B's.)
func TestE2E_fencing_pausedRuntimeRejected(t *testing.T) {
	onEachBackend(t, 2, fencingPausedRuntime)
}

func fencingPausedRuntime(t *testing.T, c *cluster) {
	a, b := c.nodes[0].URL, c.nodes[1].URL
	seed(t, a, "chat", "prod", 1)
	must(t, 201, "POST", a+"/v1/sessions", runtimeToken, map[string]any{"session_id": "conv-1", "agent": "chat", "env": "prod"})

	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), childEnv+"=1", "E2E_URL="+a, "E2E_SESSION=conv-1")
	stdin, _ := child.StdinPipe()
	stdout, _ := child.StdoutPipe()
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	out := bufio.NewScanner(stdout)
	line := func(prefix string) string {
		t.Helper()
		for out.Scan() {
			if rest, ok := strings.CutPrefix(out.Text(), prefix+" "); ok {
				return rest
			}
			if strings.HasPrefix(out.Text(), "ERROR") {
				t.Fatalf("runtime A: %s", out.Text())
			}
		}
		t.Fatalf("runtime A ended before %s", prefix)
		return ""
	}
	fenceA := line("LEASE")
	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond) // past A's 500 ms TTL
	var lb struct {
		Token string
		Fence int64
	}
	must(t, 200, "POST", b+"/v1/sessions/conv-1/lease", runtimeToken, map[string]any{"holder": "runtime-B", "ttl_ms": 10000}).json(t, &lb)
	_ = child.Process.Signal(syscall.SIGCONT)

	fmt.Fprintln(stdin, "0") // A appends before B has written anything
	if got := line("APPEND"); got != "409 stale_fence" {
		t.Fatalf("A's append with fence %s after B leased (fence %d): %s", fenceA, lb.Fence, got)
	}
	var ok struct{ Revision int64 }
	must(t, 201, "POST", b+"/v1/sessions/conv-1/turns", runtimeToken, map[string]any{"expected_revision": 0, "fence": lb.Fence,
		"turns": []map[string]any{{"role": "assistant", "content": "B's answer"}}}).json(t, &ok)
	fmt.Fprintln(stdin, ok.Revision) // A tries again, even with the current revision
	if got := line("APPEND"); got != "409 stale_fence" {
		t.Fatalf("A's second append: %s", got)
	}
	var s struct {
		Turns []struct{ Content string }
		Fence int64
	}
	must(t, 200, "GET", a+"/v1/sessions/conv-1", runtimeToken, nil).json(t, &s)
	if len(s.Turns) != 1 || s.Turns[0].Content != "B's answer" || s.Fence != lb.Fence {
		t.Fatalf("session after A's attempts: %+v", s)
	}
	t.Logf("A (fence %s) paused past its TTL; B leased with fence %d; A's appends before and after B's write: 409 stale_fence; B's turn intact", fenceA, lb.Fence)
}
