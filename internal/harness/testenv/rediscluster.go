package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// StartRedisCluster starts a three-master Redis Cluster on loopback
// (redis-cli --cluster create) and returns its node addresses. The nodes
// are killed when t ends.
func StartRedisCluster(t testing.TB) []string {
	t.Helper()
	bin := os.Getenv(envRedisServer)
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("redis-server"); err != nil {
			unavailable(t, "redis-server not found")
		}
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		unavailable(t, "redis-cli not found")
	}
	var addrs []string
	for i := 0; i < 3; i++ {
		addrs = append(addrs, startClusterNode(t, bin))
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("testenv: redis-cli --cluster create: %v\n%s", err, out)
	}
	// Wait until every node agrees the cluster is ok.
	deadline := time.Now().Add(20 * time.Second)
	for _, a := range addrs {
		for {
			out, _ := exec.Command(cli, "-h", "127.0.0.1", "-p", a[strings.LastIndex(a, ":")+1:], "cluster", "info").Output()
			if strings.Contains(string(out), "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("testenv: cluster not ok on %s: %s", a, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return addrs
}

// ClusterClient returns a client of the cluster, closed when t ends.
func ClusterClient(t testing.TB, addrs []string) *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true,
		DialTimeout: time.Second, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// ClusterURL returns addrs as one Redis Cluster URL in the form of
// redis.ParseClusterURL (promptd's PROMPTD_REDIS_URL with
// PROMPTD_REDIS_CLUSTER=true): the first node as the host, the others as
// addr parameters.
func ClusterURL(addrs []string) string {
	u := "redis://" + addrs[0]
	for i, a := range addrs[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + a
	}
	return u
}

// startClusterNode starts one cluster-enabled redis-server and waits until
// it answers as itself. A free port can be taken by another process before
// the server binds it (the server then exits): up to three ports are tried.
func startClusterNode(t testing.TB, bin string) string {
	t.Helper()
	for attempt := 1; ; attempt++ {
		dir := t.TempDir()
		port := FreePort(t)
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--cluster-node-timeout", "2000",
			"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
		cmd.SysProcAttr = procAttr()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
		addr := "127.0.0.1:" + strconv.Itoa(port)
		deadline := time.Now().Add(20 * time.Second)
		for {
			if pid, err := serverPID(addr); err == nil && pid == cmd.Process.Pid {
				return addr
			}
			select {
			case <-exited:
			default:
				if time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				_ = cmd.Process.Kill()
				<-exited
			}
			break
		}
		if attempt == 3 {
			t.Fatalf("testenv: cluster node %s not ready after %d attempts: %s", addr, attempt, tail(filepath.Join(dir, "redis.log")))
		}
		t.Logf("testenv: cluster node on %s did not start (attempt %d), trying another port", addr, attempt)
	}
}
