package testenv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// quietZap keeps the etcd client's own logging (reconnects while a member
// is down) out of test output.
func quietZap() *zap.Logger { return zap.NewNop() }

const (
	envEtcdEndpoints = "PROMPTD_TEST_ETCD_ENDPOINTS"
	envEtcdServer    = "PROMPTD_TEST_ETCD_SERVER"
)

// Raft timing of the members started here: a 50 ms heartbeat and a 500 ms
// election timeout, so a leader change takes about a second and the
// cluster's minimum lease TTL (1.5 election timeouts) rounds up to 1 s.
const (
	etcdHeartbeatMS = 50
	etcdElectionMS  = 500
)

// EtcdEndpoints returns the client endpoints of the shared test etcd
// (PROMPTD_TEST_ETCD_ENDPOINTS, a single member started by
// scripts/test.sh). Tests share it, so they must use keys of their own.
func EtcdEndpoints(t testing.TB) []string {
	t.Helper()
	v := os.Getenv(envEtcdEndpoints)
	if v == "" {
		unavailable(t, envEtcdEndpoints+" not set")
	}
	return strings.Split(v, ",")
}

// EtcdClient returns a client of endpoints that gives up quickly, closed
// when t ends.
func EtcdClient(t testing.TB, endpoints []string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          2 * time.Second,
		DialKeepAliveTime:    time.Second,
		DialKeepAliveTimeout: time.Second,
		Logger:               quietZap(),
	})
	if err != nil {
		t.Fatalf("testenv: etcd client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// EtcdMember is one private etcd process. Its data stays in its directory,
// so after Kill (SIGKILL) and Restart it comes back with what it had
// committed and rejoins its cluster.
//
// Pause, Resume and Kill may be called from any goroutine; Restart, like
// t.Fatal, only from the test's.
type EtcdMember struct {
	t          testing.TB
	bin        string
	name       string
	dir        string
	clientPort int
	peerPort   int
	cluster    string // --initial-cluster
	token      string // --initial-cluster-token, one per cluster

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// EtcdCluster is a set of private etcd members on loopback.
type EtcdCluster struct {
	Members []*EtcdMember
}

// StartEtcd starts a private single-member etcd and waits until it serves.
// It is killed when the test ends.
func StartEtcd(t testing.TB) *EtcdMember {
	t.Helper()
	return StartEtcdCluster(t, 1).Members[0]
}

// StartEtcdCluster starts n members (StartEtcdCluster(t, 3): a three-member
// cluster) on free loopback ports and waits until it has a leader. Members
// are killed when the test ends.
func StartEtcdCluster(t testing.TB, n int) *EtcdCluster {
	t.Helper()
	bin := os.Getenv(envEtcdServer)
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("etcd"); err != nil {
			unavailable(t, "etcd not found (set "+envEtcdServer+"; Debian: apt-get install etcd-server)")
		}
	}
	var lastErr error
	for range 3 { // a free port may be taken before etcd binds it
		c := &EtcdCluster{}
		var peers []string
		base := etcdDir(t)
		for i := range n {
			m := &EtcdMember{t: t, bin: bin, name: fmt.Sprintf("m%d", i), dir: filepath.Join(base, fmt.Sprintf("m%d", i)),
				clientPort: FreePort(t), peerPort: FreePort(t)}
			peers = append(peers, m.name+"="+m.peerURL())
			c.Members = append(c.Members, m)
		}
		lastErr = nil
		token := "promptd-test-" + randomHex(4)
		for _, m := range c.Members {
			m.cluster, m.token = strings.Join(peers, ","), token
			t.Cleanup(m.Kill)
			if err := m.spawn(); err != nil {
				lastErr = err
			}
		}
		if lastErr == nil {
			if lastErr = c.waitHealthy(20 * time.Second); lastErr == nil {
				return c
			}
		}
		for _, m := range c.Members {
			m.Kill()
		}
	}
	t.Fatalf("testenv: etcd: %v", lastErr)
	return nil
}

// Endpoints are the client URLs of every member.
func (c *EtcdCluster) Endpoints() []string {
	var out []string
	for _, m := range c.Members {
		out = append(out, m.Endpoint())
	}
	return out
}

// Leader returns the member that is leader now, waiting up to 10 s for one.
func (c *EtcdCluster) Leader(t testing.TB) *EtcdMember {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range c.Members {
			if m.PID() == 0 {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			st, err := m.status(ctx)
			cancel()
			if err == nil && st.Leader != 0 && st.Header.MemberId == st.Leader {
				return m
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("testenv: etcd: no leader within 10s")
	return nil
}

func (c *EtcdCluster) waitHealthy(d time.Duration) error {
	deadline := time.Now().Add(d)
	for _, m := range c.Members {
		if err := m.waitHealthy(deadline); err != nil {
			return err
		}
	}
	return nil
}

// Endpoint is the member's client URL.
func (m *EtcdMember) Endpoint() string { return "http://" + m.Addr() }

// Addr is the member's client host:port.
func (m *EtcdMember) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.clientPort))
}

func (m *EtcdMember) peerURL() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(m.peerPort))
}

// Name is the member's name (m0, m1, ...).
func (m *EtcdMember) Name() string { return m.name }

// PID returns the member's process id, or 0 when it is not running.
func (m *EtcdMember) PID() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// Pause stops the member with SIGSTOP: connections stay open, nothing is
// answered, its peers elect a leader without it.
func (m *EtcdMember) Pause() { m.signal(syscall.SIGSTOP) }

// Resume continues a paused member with SIGCONT.
func (m *EtcdMember) Resume() { m.signal(syscall.SIGCONT) }

func (m *EtcdMember) signal(sig os.Signal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		m.t.Errorf("testenv: %v to etcd %s: not running", sig, m.name)
		return
	}
	if err := m.cmd.Process.Signal(sig); err != nil {
		m.t.Errorf("testenv: %v to etcd %s: %v", sig, m.name, err)
	}
}

// Kill kills the member with SIGKILL and waits for it to exit. Killing a
// member that is not running does nothing.
func (m *EtcdMember) Kill() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGCONT)
	_ = m.cmd.Process.Kill()
	<-m.exited
	m.cmd = nil
}

// Restart kills the member if it is running and starts it again on the
// same ports and data, waiting until it serves.
func (m *EtcdMember) Restart() {
	m.t.Helper()
	m.Kill()
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := m.spawn()
		if err == nil {
			err = m.waitHealthy(deadline)
		}
		if err == nil {
			return
		}
		m.Kill()
		if time.Now().After(deadline) {
			m.t.Fatalf("testenv: etcd restart: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// spawn starts the process; an existing data directory makes it rejoin.
func (m *EtcdMember) spawn() error {
	if err := os.MkdirAll(m.dir, 0o700); err != nil {
		return err
	}
	logPath := filepath.Join(m.dir, "etcd.log")
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(m.bin,
		"--name", m.name,
		"--data-dir", filepath.Join(m.dir, "data"),
		"--listen-client-urls", m.Endpoint(),
		"--advertise-client-urls", m.Endpoint(),
		"--listen-peer-urls", m.peerURL(),
		"--initial-advertise-peer-urls", m.peerURL(),
		"--initial-cluster", m.cluster,
		"--initial-cluster-state", "new",
		"--initial-cluster-token", m.token,
		"--heartbeat-interval", strconv.Itoa(etcdHeartbeatMS),
		"--election-timeout", strconv.Itoa(etcdElectionMS),
		"--logger", "zap", "--log-level", "warn",
	)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", m.bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	m.mu.Lock()
	m.cmd, m.exited = cmd, exited
	m.mu.Unlock()
	return nil
}

// waitHealthy waits until the member answers /health with a leader known.
func (m *EtcdMember) waitHealthy(deadline time.Time) error {
	hc := &http.Client{Timeout: 300 * time.Millisecond}
	for {
		m.mu.Lock()
		exited := m.exited
		m.mu.Unlock()
		select {
		case <-exited:
			return fmt.Errorf("etcd %s on %s exited: %s", m.name, m.Addr(), tail(filepath.Join(m.dir, "etcd.log")))
		default:
		}
		resp, err := hc.Get(m.Endpoint() + "/health")
		if err == nil {
			var b [64]byte
			n, _ := resp.Body.Read(b[:])
			resp.Body.Close()
			if strings.Contains(string(b[:n]), `"true"`) {
				// a member whose ports were taken exits at once; a healthy
				// answer then came from another test's etcd
				select {
				case <-exited:
					continue
				case <-time.After(100 * time.Millisecond):
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd %s on %s not healthy (%v): %s", m.name, m.Addr(), err, tail(filepath.Join(m.dir, "etcd.log")))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (m *EtcdMember) status(ctx context.Context) (*clientv3.StatusResponse, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{m.Endpoint()}, DialTimeout: 300 * time.Millisecond, Logger: quietZap()})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Status(ctx, m.Endpoint())
}

// etcdDir is a directory for members' data, in memory (/dev/shm) when the
// machine has it: raft fsyncs every write, which a shared disk makes slow.
func etcdDir(t testing.TB) string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "promptd-etcd-"); err == nil {
			t.Cleanup(func() { _ = os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}
