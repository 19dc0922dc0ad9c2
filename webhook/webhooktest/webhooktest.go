// Package webhooktest is a webhook receiver for tests: it records every
// delivery attempt, fails the first attempts of each message on request,
// can go down (connection refused) and come back on the same port, counts
// attempts of one message that overlap in time, and verifies signatures
// with the Standard Webhooks reference library (npm standardwebhooks,
// installed once into a cache directory by Verify).
package webhooktest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Attempt is one request the receiver got.
type Attempt struct {
	ID, Timestamp, Signature string
	Body                     []byte
	Status                   int // what the receiver answered
}

// Receiver is an HTTP receiver on 127.0.0.1.
type Receiver struct {
	// FailFirst is how many attempts of each message get a 500 before one
	// gets a 204.
	FailFirst int
	// Hold is how long each request is held before its answer (so that
	// overlapping attempts of one message are seen).
	Hold time.Duration

	t    testing.TB
	addr string
	mu   sync.Mutex
	srv  *http.Server
	seen map[string]int // attempts per message id
	// inflight counts the requests of each message being answered now.
	inflight  map[string]int
	overlaps  int
	attempts  []Attempt
	delivered map[string]bool
}

// NewReceiver starts a receiver; it stops when t ends.
func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{t: t, seen: map[string]int{}, inflight: map[string]int{}, delivered: map[string]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	r.serve(ln)
	t.Cleanup(func() {
		r.mu.Lock()
		srv := r.srv
		r.mu.Unlock()
		if srv != nil {
			_ = srv.Close()
		}
	})
	return r
}

// URL is the receiver's URL.
func (r *Receiver) URL() string { return "http://" + r.addr + "/hook" }

func (r *Receiver) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(r.handle), ReadHeaderTimeout: 5 * time.Second}
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// SetHold changes Hold while the receiver runs.
func (r *Receiver) SetHold(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Hold = d
}

// Down closes the receiver (connections are refused) for d, then listens
// on the same port again. It returns at once.
func (r *Receiver) Down(d time.Duration) {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	_ = srv.Close()
	go func() {
		time.Sleep(d)
		for i := 0; ; i++ {
			ln, err := net.Listen("tcp", r.addr)
			if err == nil {
				r.serve(ln)
				return
			}
			if i > 100 {
				r.t.Errorf("webhooktest: listening on %s again: %v", r.addr, err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
}

func (r *Receiver) handle(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	id := req.Header.Get("webhook-id")
	r.mu.Lock()
	r.seen[id]++
	n := r.seen[id]
	if r.inflight[id] > 0 {
		r.overlaps++
	}
	r.inflight[id]++
	hold := r.Hold
	r.mu.Unlock()
	time.Sleep(hold)
	status := http.StatusNoContent
	if n <= r.FailFirst {
		status = http.StatusInternalServerError
	}
	r.mu.Lock()
	r.inflight[id]--
	r.attempts = append(r.attempts, Attempt{ID: id, Timestamp: req.Header.Get("webhook-timestamp"),
		Signature: req.Header.Get("webhook-signature"), Body: body, Status: status})
	if status < 300 {
		r.delivered[id] = true
	}
	r.mu.Unlock()
	w.WriteHeader(status)
}

// Delivered is the number of messages answered 2xx at least once.
func (r *Receiver) Delivered() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.delivered)
}

// Attempts returns a copy of every attempt so far.
func (r *Receiver) Attempts() []Attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Attempt(nil), r.attempts...)
}

// InFlight is how many requests are being answered now.
func (r *Receiver) InFlight() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.inflight {
		n += c
	}
	return n
}

// Overlaps is how many requests arrived while another attempt of the same
// message was being answered.
func (r *Receiver) Overlaps() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.overlaps
}

//go:embed verify.js
var verifyJS []byte

// Result is what the reference library said.
type Result struct {
	Verified, Failed int
	Errors           []string
}

// Verify checks every attempt's signature against secret with the npm
// package standardwebhooks (installed once into
// $TMPDIR/promptd-standardwebhooks; needs node and npm).
func Verify(t testing.TB, secret string, attempts []Attempt) Result {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "promptd-standardwebhooks")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "standardwebhooks", "package.json")); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--silent", "standardwebhooks@1.1.1")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm install standardwebhooks: %v\n%s", err, out)
		}
	}
	script := filepath.Join(dir, "verify.js")
	if err := os.WriteFile(script, verifyJS, 0o644); err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, a := range attempts {
		_ = enc.Encode(map[string]string{"secret": secret, "id": a.ID, "timestamp": a.Timestamp, "signature": a.Signature, "body": string(a.Body)})
	}
	cmd := exec.Command("node", script)
	cmd.Dir = dir
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node verify.js: %v\n%s", err, out)
	}
	var res Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node verify.js said %q: %v", out, err)
	}
	return res
}

// String describes r.
func (r Result) String() string {
	return fmt.Sprintf("verified %d, failed %d %v", r.Verified, r.Failed, r.Errors)
}
