package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const faultChildEnv = "PROMPTD_E2E_FAULT_CHILD"

// A test binary started with faultChildEnv is the lease-holding client
// process of the fault suite, not a test run (init runs before TestMain).
func init() {
	if os.Getenv(faultChildEnv) != "" {
		runFaultChild()
		os.Exit(0)
	}
}

// runFaultChild runs one session lease worker against the nodes in
// E2E_NODES on session E2E_SESSION, printing each op as "OP <json>", until
// its stdin closes.
func runFaultChild() {
	nodes := strings.Split(os.Getenv("E2E_NODES"), ",")
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	w := &workload{
		nodes:  func() []string { return nodes },
		stop:   make(chan struct{}),
		prefix: fmt.Sprint("child-", os.Getpid()),
		h: &history{emit: func(o op) {
			b, _ := json.Marshal(o)
			mu.Lock()
			fmt.Fprintf(out, "OP %s\n", b)
			_ = out.Flush()
			mu.Unlock()
		}},
	}
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(w.stop) }()
	w.leaseWorker(os.Getenv("E2E_SESSION"), "client-process", 0)
}

// leaseClient is the child process seen from the test.
type leaseClient struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
	ops   int
	// granted gets a value (without blocking) each time the client
	// reports a lease grant.
	granted chan struct{}
}

// startLeaseClient starts the child on session id; its ops go to h with
// client ids offset by 10000.
func startLeaseClient(t *testing.T, nodes []string, id string, h *history) *leaseClient {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), faultChildEnv+"=1", "E2E_NODES="+strings.Join(nodes, ","), "E2E_SESSION="+id)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &leaseClient{cmd: cmd, stdin: stdin, done: make(chan struct{}), granted: make(chan struct{}, 1)}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "OP ")
			if !ok {
				continue
			}
			var o op
			if err := json.Unmarshal([]byte(line), &o); err != nil {
				t.Errorf("lease client: %q: %v", line, err)
				continue
			}
			o.Client += 10000
			h.add(o)
			c.ops++
			if o.Kind == kGrant && o.ok() {
				select {
				case c.granted <- struct{}{}:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return c
}

func (c *leaseClient) pause() { _ = c.cmd.Process.Signal(syscall.SIGSTOP) }

// pauseHolding stops the client right after it reports a new grant (it is
// then holding the lease and about to write), or after 15 s regardless
// (a loaded 2-core CI machine once took longer than 5 s to report one).
func (c *leaseClient) pauseHolding(t *testing.T) {
	select {
	case <-c.granted: // an old report
	default:
	}
	select {
	case <-c.granted:
	case <-time.After(15 * time.Second):
		t.Errorf("the lease client reported no grant within 15 s")
	}
	c.pause()
}
func (c *leaseClient) resume() { _ = c.cmd.Process.Signal(syscall.SIGCONT) }

// stop closes its stdin and waits for its last op (killing it after 10 s).
func (c *leaseClient) stop(t *testing.T) {
	c.resume()
	_ = c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		t.Errorf("lease client did not stop; killed")
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	_ = c.cmd.Wait()
}
