package locks_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/glebarez/go-sqlite"
	_ "github.com/go-sql-driver/mysql"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/locks"
)

// fencedUpdate is the storage side of fencing: the write carries the fence
// into its condition and a stale one changes nothing.
func fencedUpdate(db *sql.DB, fence int64, value string) error {
	res, err := db.Exec(`UPDATE fenced SET value = ?, fence = ? WHERE id = 1 AND fence <= ?`, value, fence, fence)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var cur int64
		_ = db.QueryRow(`SELECT fence FROM fenced WHERE id = 1`).Scan(&cur)
		return &locks.StaleFenceError{Fence: fence, Current: cur}
	}
	return nil
}

// unfencedUpdate is the control: the same write without the fence condition.
func unfencedUpdate(db *sql.DB, _ int64, value string) error {
	_, err := db.Exec(`UPDATE fenced SET value = ? WHERE id = 1`, value)
	return err
}

const fenceChildEnv = "PROMPTD_FENCE_CHILD"

// TestMain runs holder A instead of the tests when the test binary is
// started as a child process of TestFencing_pausedHolder_lateWriteRejected.
func TestMain(m *testing.M) {
	if os.Getenv(fenceChildEnv) != "" {
		holderA()
	}
	os.Exit(m.Run())
}

// holderA takes the lease, reports its fence, waits on stdin (the parent
// stops it in between) and then writes with that fence.
func holderA() {
	fail := func(err error) { fmt.Println("ERROR", err); os.Exit(1) }
	opt, err := newRedisClient(os.Getenv("FENCE_REDIS"))
	if err != nil {
		fail(err)
	}
	db, err := sql.Open(os.Getenv("FENCE_DRIVER"), os.Getenv("FENCE_DSN"))
	if err != nil {
		fail(err)
	}
	m := locks.NewRedis(opt, locks.RedisOptions{}, locks.Options{Holder: "A"})
	ttl, _ := time.ParseDuration(os.Getenv("FENCE_TTL"))
	l, err := m.Acquire(context.Background(), os.Getenv("FENCE_KEY"), ttl)
	if err != nil {
		fail(err)
	}
	if l.Err() != nil { // the check a careful holder makes before writing
		fail(l.Err())
	}
	fmt.Println("FENCE", l.Fence())
	// ... and here the process pauses (GC, a stalled VM); the parent stops it.
	bufio.NewReader(os.Stdin).ReadString('\n')
	write := fencedUpdate
	if os.Getenv("FENCE_MODE") == "unfenced" {
		write = unfencedUpdate
	}
	err = write(db, l.Fence(), "A")
	switch {
	case err == nil:
		fmt.Println("RESULT ok")
	case errorsIsStale(err):
		fmt.Println("RESULT stale_fence")
	default:
		fail(err)
	}
	os.Exit(0)
}

func TestFencing_pausedHolder_lateWriteRejected(t *testing.T) {
	type store struct{ name, driver, dsn string }
	stores := []store{{"sqlite", "sqlite", filepath.Join(t.TempDir(), "f.db") + "?_pragma=busy_timeout(5000)"}}
	stores = append(stores, store{"mariadb", "mysql", testenv.MySQLDSN(t)})
	for _, st := range stores {
		for _, mode := range []string{"fenced", "unfenced"} {
			t.Run(st.name+"/"+mode, func(t *testing.T) {
				value := runPausedHolder(t, st.driver, st.dsn, mode)
				switch {
				case mode == "fenced" && value != "B":
					t.Fatalf("fenced: row value %q, want B's write to survive", value)
				case mode == "unfenced" && value != "A":
					t.Fatalf("control without the fence condition: row value %q, want A's late write to overwrite B (else this test cannot fail)", value)
				}
			})
		}
	}
}

// runPausedHolder plays Kleppmann's scenario and returns the row's final value.
func runPausedHolder(t *testing.T, driver, dsn, mode string) string {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`DROP TABLE IF EXISTS fenced`,
		`CREATE TABLE fenced (id INTEGER PRIMARY KEY, value VARCHAR(16) NOT NULL, fence BIGINT NOT NULL)`,
		`INSERT INTO fenced (id, value, fence) VALUES (1, 'init', 0)`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	redisURL := testenv.RedisURL(t)
	key, _ := locks.Keys{Prefix: "fence" + strconv.FormatInt(time.Now().UnixNano(), 36)}.Key("session", "s-1")
	const ttl = 500 * time.Millisecond

	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), fenceChildEnv+"=1", "FENCE_REDIS="+redisURL, "FENCE_DRIVER="+driver,
		"FENCE_DSN="+dsn, "FENCE_KEY="+key, "FENCE_TTL="+ttl.String(), "FENCE_MODE="+mode)
	stdin, _ := child.StdinPipe()
	stdout, _ := child.StdoutPipe()
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	out := bufio.NewScanner(stdout)
	f1, err := strconv.ParseInt(mustLine(t, out, "FENCE"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}

	// A is paused past its TTL: its work and its keepalive stop alike.
	if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl + 100*time.Millisecond)
	mB := locks.NewRedis(quickURLClient(t, redisURL), locks.RedisOptions{}, locks.Options{Holder: "B"})
	defer mB.Close(context.Background())
	lB, err := mB.Acquire(ctxT(t), key, 5*time.Second, locks.WithWait(2*time.Second))
	if err != nil {
		t.Fatalf("B acquire: %v", err)
	}
	f2 := lB.Fence()
	if f2 <= f1 {
		t.Fatalf("B's fence %d not above A's %d", f2, f1)
	}
	if err := fencedUpdate(db, f2, "B"); err != nil {
		t.Fatalf("B write: %v", err)
	}
	_ = child.Process.Signal(syscall.SIGCONT)
	fmt.Fprintln(stdin, "write")
	result := mustLine(t, out, "RESULT")
	var value string
	var fence int64
	if err := db.QueryRow(`SELECT value, fence FROM fenced WHERE id = 1`).Scan(&value, &fence); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s: A (fence %d) paused past TTL %v; B (fence %d) wrote; A's late write: %s; row = %q fence %d",
		driver, mode, f1, ttl, f2, result, value, fence)
	if mode == "fenced" && result != "stale_fence" {
		t.Fatalf("A's late fenced write: %s, want stale_fence", result)
	}
	return value
}

func mustLine(t *testing.T, s *bufio.Scanner, prefix string) string {
	t.Helper()
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "ERROR") {
			t.Fatalf("child: %s", line)
		}
		if rest, ok := strings.CutPrefix(line, prefix+" "); ok {
			return rest
		}
	}
	t.Fatalf("child ended before %s", prefix)
	return ""
}
