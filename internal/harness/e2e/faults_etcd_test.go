package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/promptd/promptd/internal/harness/testenv"
)

// startEtcdFaultCluster is three promptd processes on MySQL and a private
// three-member etcd cluster that holds every lease, with no Redis. Nodes 0
// and 2 reach every member directly; node 1 reaches them through one
// toxiproxy proxy per member, so its connections can be cut.
func startEtcdFaultCluster(t *testing.T) *faultCluster {
	t.Helper()
	dsn := testenv.MySQLDSN(t)
	ec := testenv.StartEtcdCluster(t, 3)
	tp := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	c := &faultCluster{etcd: ec}
	var cut []string
	for i, m := range ec.Members {
		p := toxiproxy.NewProxy(tp, fmt.Sprint("etcd-", i), "127.0.0.1:0", m.Addr())
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
		c.etcdCut = append(c.etcdCut, p)
		cut = append(cut, "http://"+p.Listen)
	}
	for i := 0; i < 3; i++ {
		eps := ec.Endpoints()
		if i == 1 {
			eps = cut
		}
		c.nodes = append(c.nodes, testenv.StartPromptd(t, map[string]string{
			"PROMPTD_MYSQL_DSN": dsn, "PROMPTD_ETCD_ENDPOINTS": strings.Join(eps, ","),
			"PROMPTD_TOKENS": tokens, "PROMPTD_INSTANCE_ID": fmt.Sprint("node-", i), "PROMPTD_RECONCILE_EVERY": "1s"}))
	}
	return c
}

// cutEtcd black-holes every link of node 1 to etcd for d (connections stay
// open, nothing passes either way), then lets traffic through again.
func cutEtcd(t *testing.T, c *faultCluster, d time.Duration) {
	for _, p := range c.etcdCut {
		for _, js := range []string{
			`{"name":"fault","type":"timeout","stream":"downstream","attributes":{"timeout":0}}`,
			`{"name":"fault-up","type":"timeout","stream":"upstream","attributes":{"timeout":0}}`,
		} {
			if _, err := p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
				t.Errorf("toxic %s: %v", js, err)
			}
		}
	}
	time.Sleep(d)
	for _, p := range c.etcdCut {
		for _, name := range []string{"fault", "fault-up"} {
			if err := p.Toxics.RemoveToxic(context.Background(), name); err != nil {
				t.Errorf("remove toxic: %v", err)
			}
		}
	}
}

// The faults of the lock store when it is etcd; lease TTLs in the
// workload are 1 s.
var etcdFaults = []fault{
	{name: "etcd leader kill -9, restart after 2s", redis: true,
		inject: func(t *testing.T, c *faultCluster, _ *leaseClient) {
			l := c.etcd.Leader(t)
			l.Kill()
			time.Sleep(2 * time.Second)
			l.Restart()
		}},
	{name: "etcd leader SIGSTOP 3s (> lease TTLs)", redis: true,
		inject: func(t *testing.T, c *faultCluster, _ *leaseClient) {
			l := c.etcd.Leader(t)
			l.Pause()
			time.Sleep(3 * time.Second)
			l.Resume()
		}},
	{name: "etcd connections of node-1 cut 3s (> lease TTLs)", redis: true,
		inject: func(t *testing.T, c *faultCluster, _ *leaseClient) { cutEtcd(t, c, 3*time.Second) }},
	{name: "etcd: lease-holding client SIGSTOP 2s (> 1s TTL)", redis: true, client: true,
		inject: func(t *testing.T, c *faultCluster, child *leaseClient) {
			child.pauseHolding(t)
			time.Sleep(2 * time.Second)
			child.resume()
		}},
}

// TestFaults on MySQL + etcd (three members) with no Redis: the same
// workload, checks and table as TestFaults, under etcd's faults.
// PROMPTD_FAULT_ROUNDS repeats them (scripts/faults.sh).
func TestFaultsEtcd(t *testing.T) {
	rounds := faultRounds(t)
	var rows []faultRow
	for round := 1; round <= rounds; round++ {
		for _, f := range etcdFaults {
			if rounds > 1 {
				f.name = fmt.Sprintf("%s, round %d", f.name, round)
			}
			runOne(t, f, startEtcdFaultCluster, &rows)
		}
	}
	writeFaultReport(t, "MySQL + etcd (three members), no Redis", faultTable(rows))
}
