package e2e

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the control's unfenced write

	pclient "github.com/promptd/promptd/api/client"
)

const boardChildEnv = "PROMPTD_E2E_BOARD_CHILD"

// A test binary started with boardChildEnv is the claimer process of the
// board fencing test, not a test run.
func init() {
	if os.Getenv(boardChildEnv) != "" {
		os.Exit(runBoardChild())
	}
}

// runBoardChild claims E2E_RECORD of E2E_BOARD on E2E_NODE, prints
// "CLAIMED <fence> <revision>", waits for a line on stdin (the test sends
// it while the process is stopped, so it is read only after SIGCONT), then
// writes its result, {"by": "first"}, as a worker that does not check its
// claim's time would: with E2E_WRITE=fenced through PATCH with the fence
// and the revision it claimed at; with E2E_WRITE=unfenced (the control)
// with an UPDATE without the fence condition on E2E_DSN. It prints
// "RESULT <status> <code>" ("RESULT 200 -" for an UPDATE that changed a
// row, "RESULT 0 -" for one that did not).
func runBoardChild() int {
	node, board, id := os.Getenv("E2E_NODE"), os.Getenv("E2E_BOARD"), os.Getenv("E2E_RECORD")
	ctx := context.Background()
	c := pclient.New(node, runtimeToken, pclient.WithRetries(0))
	cl, err := c.ClaimRecord(ctx, board, id, pclient.ClaimRequest{Holder: fmt.Sprint("child-", os.Getpid())})
	if err != nil || cl == nil {
		fmt.Printf("ERROR claim: %v\n", err)
		return 1
	}
	fmt.Printf("CLAIMED %d %d\n", cl.Fence, cl.Record.Revision)
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Printf("ERROR stdin: %v\n", err)
		return 1
	}
	result := map[string]string{"by": "first"}
	if os.Getenv("E2E_WRITE") == "unfenced" {
		db, err := sql.Open("mysql", os.Getenv("E2E_DSN"))
		if err != nil {
			fmt.Printf("ERROR open: %v\n", err)
			return 1
		}
		defer db.Close()
		b, _ := json.Marshal(result)
		res, err := db.Exec(`UPDATE board_records SET state = 'done', payload = ?, owner = '', revision = revision + 1 WHERE board = ? AND id = ?`,
			string(b), board, id)
		if err != nil {
			fmt.Printf("ERROR update: %v\n", err)
			return 1
		}
		n, _ := res.RowsAffected()
		fmt.Printf("RESULT %d -\n", map[bool]int{true: 200, false: 0}[n == 1])
		return 0
	}
	_, err = c.UpdateRecord(ctx, board, id, pclient.RecordUpdate{ExpectedRevision: cl.Record.Revision, State: "done", Payload: result, Fence: cl.Fence})
	var e *pclient.Error
	switch {
	case err == nil:
		fmt.Println("RESULT 200 -")
	case errors.As(err, &e):
		fmt.Printf("RESULT %d %s\n", e.Status, e.Code)
	default:
		fmt.Printf("ERROR patch: %v\n", err)
		return 1
	}
	return 0
}

// boardChild is the claimer process seen from the test.
type boardChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

func startBoardChild(t *testing.T, node, board, id, write, dsn string) *boardChild {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), boardChildEnv+"=1", "E2E_NODE="+node, "E2E_BOARD="+board, "E2E_RECORD="+id, "E2E_WRITE="+write, "E2E_DSN="+dsn)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &boardChild{cmd: cmd, stdin: stdin, lines: make(chan string, 8)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return c
}

// line waits for the child's next line starting with prefix.
func (c *boardChild) line(t *testing.T, prefix string) []string {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				t.Fatalf("the claimer process ended before %s", prefix)
			}
			if strings.HasPrefix(l, "ERROR") {
				t.Fatalf("claimer process: %s", l)
			}
			if f := strings.Fields(l); len(f) > 0 && f[0] == prefix {
				return f[1:]
			}
		case <-timeout:
			t.Fatalf("no %s from the claimer process within 20 s", prefix)
		}
	}
}

// pausedPastTTL runs the scenario on record id: the child claims it and is
// SIGSTOPped; past the TTL the sweeper reclaims it and a second claimer (on
// another instance) claims it and completes it with {"by": "second"};
// then the child resumes and writes its result its way. It returns the
// child's RESULT fields, the child's fence, the second's claim and the
// record as it ends.
func pausedPastTTL(t *testing.T, c *cluster, board, id, write string) ([]string, int64, *pclient.Claim, *pclient.Record) {
	ctx := context.Background()
	second := pclient.New(c.nodes[1].URL, runtimeToken)
	if _, _, err := second.CreateRecord(ctx, board, pclient.NewRecord{ID: id, Payload: "work"}); err != nil {
		t.Fatal(err)
	}
	child := startBoardChild(t, c.nodes[0].URL, board, id, write, c.dsn)
	f := child.line(t, "CLAIMED")
	_ = child.cmd.Process.Signal(syscall.SIGSTOP)
	stopped := time.Now()
	var fence int64
	fmt.Sscan(f[0], &fence)
	if _, err := io.WriteString(child.stdin, "go\n"); err != nil { // read after SIGCONT
		t.Fatal(err)
	}
	// the second claimer waits; the sweeper's reclaim wakes it
	var cl *pclient.Claim
	for cl == nil && time.Since(stopped) < 15*time.Second {
		var err error
		if cl, err = second.ClaimNext(ctx, board, pclient.ClaimRequest{Holder: "second", Wait: 5 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	if cl == nil || cl.Record.ID != id {
		t.Fatalf("the second claimer got %+v, want %s reclaimed", cl, id)
	}
	if _, err := second.UpdateRecord(ctx, board, id, pclient.RecordUpdate{ExpectedRevision: cl.Record.Revision, State: "done",
		Payload: map[string]string{"by": "second"}, Fence: cl.Fence}); err != nil {
		t.Fatalf("the second claimer's completion: %v", err)
	}
	paused := time.Since(stopped)
	_ = child.cmd.Process.Signal(syscall.SIGCONT)
	res := child.line(t, "RESULT")
	r, err := second.GetRecord(ctx, board, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: the first claimer (fence %d) was stopped for %s (TTL 1 s); the second claimed with fence %d and completed; "+
		"the first's late write: %v; the record holds %s", write, fence, paused.Round(time.Millisecond), cl.Fence, res, r.Payload)
	return res, fence, cl, r
}

// TestBoard_claimerProcessStoppedPastItsTTL_lateWriteIsStaleFence: a
// claimer process SIGSTOPped past its claim's TTL is reclaimed by the
// sweeper and its record claimed and completed by another claimer on
// another instance; resumed, its PATCH with the old fence is 409
// stale_fence and the record holds the second's result. The control does
// the same with a write that lacks the fence condition (a bare UPDATE of
// the row): the paused claimer's stale result overwrites the second's.
func TestBoard_claimerProcessStoppedPastItsTTL_lateWriteIsStaleFence(t *testing.T) {
	c := startCluster(t, 2, nil)
	ctx := context.Background()
	const board = "e2e-fence"
	def := pclient.BoardDefinition{States: []string{"pending", "claimed", "done", "failed"}, Initial: "pending",
		Transitions: map[string][]string{"pending": {"claimed"}, "claimed": {"done", "pending"}},
		Claim:       pclient.ClaimRule{From: "pending", To: "claimed", TTLMs: 1000, ReclaimTo: "pending", MaxAttempts: 5, Exhausted: "failed"},
		Terminal:    []string{"done", "failed"}}
	if _, err := pclient.New(c.nodes[0].URL, adminToken).PutBoard(ctx, board, def, 0); err != nil {
		t.Fatal(err)
	}

	res, fence, cl, r := pausedPastTTL(t, c, board, "job", "fenced")
	if cl.Fence <= fence {
		t.Errorf("the second claim's fence %d is not above the first's %d", cl.Fence, fence)
	}
	if len(res) != 2 || res[0] != "409" || res[1] != string(pclient.ErrStaleFence) {
		t.Errorf("the resumed claimer's write answered %v, want 409 stale_fence", res)
	}
	if r.State != "done" || string(r.Payload) != `{"by":"second"}` {
		t.Errorf("record = %s %s, want done with the second's result", r.State, r.Payload)
	}

	// control: the same pause, and a write without the fence condition
	res, _, _, r = pausedPastTTL(t, c, board, "job-control", "unfenced")
	if len(res) != 2 || res[0] != "200" || string(r.Payload) != `{"by":"first"}` {
		t.Errorf("control: the unfenced late write answered %v and the record holds %s; want it to overwrite the second's result "+
			"(else this test could not tell a fenced write from none)", res, r.Payload)
	}
}
