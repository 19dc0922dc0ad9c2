package e2e

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/go-sql-driver/mysql"
	"github.com/rs/zerolog"

	"github.com/promptd/promptd/internal/harness/testenv"
)

// faultCluster is three promptd processes on a private redis-server and a
// private MariaDB, each reached through an in-process toxiproxy proxy, so
// every fault can be injected: signals to the servers, latency and dropped
// connections on the links.
type faultCluster struct {
	nodes      []*testenv.Promptd
	redis      *testenv.RedisServer
	db         *testenv.MariaDB
	redisProxy *toxiproxy.Proxy
	dbProxy    *toxiproxy.Proxy
	// On etcd (faults_etcd_test.go), redis and redisProxy are nil.
	etcd    *testenv.EtcdCluster
	etcdCut []*toxiproxy.Proxy // node 1's links to every member
}

func startFaultCluster(t *testing.T) *faultCluster {
	t.Helper()
	return startFaultClusterWith(t, nil)
}

// startFaultClusterWith is startFaultCluster with extra variables for
// every node.
func startFaultClusterWith(t *testing.T, extra map[string]string) *faultCluster {
	t.Helper()
	db := testenv.StartMariaDB(t)
	srv := testenv.StartRedis(t)
	tp := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	proxy := func(name, upstream string) *toxiproxy.Proxy {
		p := toxiproxy.NewProxy(tp, name, "127.0.0.1:0", upstream)
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
		return p
	}
	cfg, err := mysql.ParseDSN(db.DSN())
	if err != nil {
		t.Fatal(err)
	}
	c := &faultCluster{redis: srv, db: db, redisProxy: proxy("redis", srv.Addr()), dbProxy: proxy("mariadb", cfg.Addr)}
	cfg.Addr = c.dbProxy.Listen
	for i := 0; i < 3; i++ {
		vars := map[string]string{
			"PROMPTD_MYSQL_DSN": cfg.FormatDSN(), "PROMPTD_REDIS_URL": "redis://" + c.redisProxy.Listen + "/0",
			"PROMPTD_TOKENS": tokens, "PROMPTD_INSTANCE_ID": fmt.Sprint("node-", i), "PROMPTD_RECONCILE_EVERY": "1s"}
		for k, v := range extra {
			vars[k] = v
		}
		c.nodes = append(c.nodes, testenv.StartPromptd(t, vars))
	}
	return c
}

func (c *faultCluster) urls() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.URL
	}
	return out
}

// toxic adds a toxiproxy toxic to p for d, then removes it.
func toxic(t *testing.T, p *toxiproxy.Proxy, d time.Duration, js string) {
	if _, err := p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
		t.Errorf("toxic %s: %v", js, err)
		return
	}
	time.Sleep(d)
	if err := p.Toxics.RemoveToxic(context.Background(), "fault"); err != nil {
		t.Errorf("remove toxic: %v", err)
	}
}

// drop closes every connection through p and refuses new ones for d.
func drop(t *testing.T, p *toxiproxy.Proxy, d time.Duration) {
	p.Stop()
	time.Sleep(d)
	if err := p.Start(); err != nil {
		t.Errorf("restart proxy: %v", err)
	}
}

type fault struct {
	name   string
	redis  bool // a lock-store-side fault (Redis or etcd): resolve availability must be 100 %
	client bool // the lease client is paused: its late writes must meet stale_fence
	inject func(t *testing.T, c *faultCluster, child *leaseClient)
}

var faults = []fault{
	{"redis SIGSTOP 2s (> lease TTLs)", true, false, func(t *testing.T, c *faultCluster, _ *leaseClient) {
		c.redis.Pause()
		time.Sleep(2 * time.Second)
		c.redis.Resume()
	}},
	{"redis kill -9, restart empty", true, false, func(t *testing.T, c *faultCluster, _ *leaseClient) {
		c.redis.Kill()
		time.Sleep(time.Second)
		c.redis.Restart()
	}},
	{"redis +300ms latency 2s", true, false, func(t *testing.T, c *faultCluster, _ *leaseClient) {
		toxic(t, c.redisProxy, 2*time.Second, `{"name":"fault","type":"latency","stream":"downstream","attributes":{"latency":300}}`)
	}},
	{"redis connections dropped 1.5s", true, false, func(t *testing.T, c *faultCluster, _ *leaseClient) {
		drop(t, c.redisProxy, 1500*time.Millisecond)
	}},
	{"mariadb SIGSTOP 2s", false, false, func(t *testing.T, c *faultCluster, _ *leaseClient) {
		c.db.Pause()
		time.Sleep(2 * time.Second)
		c.db.Resume()
	}},
	{"mariadb kill -9, restart", false, false, func(t *testing.T, c *faultCluster, _ *leaseClient) {
		c.db.Kill()
		c.db.Restart()
	}},
	{"mariadb +200ms latency 2s", false, false, func(t *testing.T, c *faultCluster, _ *leaseClient) {
		toxic(t, c.dbProxy, 2*time.Second, `{"name":"fault","type":"latency","stream":"downstream","attributes":{"latency":200}}`)
	}},
	{"mariadb connections dropped 1.5s", false, false, func(t *testing.T, c *faultCluster, _ *leaseClient) {
		drop(t, c.dbProxy, 1500*time.Millisecond)
	}},
	{"promptd kill -9 mid-writes, restart", false, false, func(t *testing.T, c *faultCluster, _ *leaseClient) {
		c.nodes[1].Kill()
		time.Sleep(time.Second)
		c.nodes[1].Restart()
	}},
	{"lease-holding client SIGSTOP 2s (> 1s TTL)", true, true, func(t *testing.T, c *faultCluster, child *leaseClient) {
		child.pauseHolding(t)
		time.Sleep(2 * time.Second)
		child.resume()
	}},
}

// faultRow is what one fault run measured.
type faultRow struct {
	name                               string
	acked                              map[string]int
	lost, stale, regress, fivexx       int
	lin                                []string
	linOK                              bool
	worstLag                           time.Duration
	overBound, ryw, rywChecked         int
	availOK, availN, allOK, allN       int
	okN, rejectedN, unknownN, childOps int
	staleRejected, clientStale         int
	examples                           []string
}

// The faults of the design's table, one at a time, each on a fresh cluster
// under the mixed workload. After each: nothing acknowledged lost, no
// stale fence accepted, no fence regression, turn logs, state entries and
// env pointers linearizable (porcupine), resolve bounded-stale and
// read-your-writes, no 500, resolve availability during the fault.
func TestFaults(t *testing.T) {
	rounds := faultRounds(t)
	var rows []faultRow
	for round := 1; round <= rounds; round++ {
		for _, f := range faults {
			if rounds > 1 {
				f.name = fmt.Sprintf("%s, round %d", f.name, round)
			}
			runOne(t, f, startFaultCluster, &rows)
		}
	}
	writeFaultReport(t, "MySQL + Redis", faultTable(rows))
}

// faultRounds is PROMPTD_FAULT_ROUNDS, 1 when unset (scripts/faults.sh
// sets more).
func faultRounds(t *testing.T) int {
	v := os.Getenv("PROMPTD_FAULT_ROUNDS")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("PROMPTD_FAULT_ROUNDS=%q: want a positive integer", v)
	}
	return n
}

// writeFaultReport logs table and appends it, under title, to the file
// PROMPTD_FAULTS_REPORT names (scripts/test.sh prints it at the end).
func writeFaultReport(t *testing.T, title, table string) {
	t.Log("\n" + table)
	p := os.Getenv("PROMPTD_FAULTS_REPORT")
	if p == "" {
		return
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "\n%s\n\n%s", title, table); err != nil {
		t.Error(err)
	}
}

func runOne(t *testing.T, f fault, start func(*testing.T) *faultCluster, rows *[]faultRow) {
	t.Run(f.name, func(t *testing.T) {
		row := runFault(t, f, start)
		*rows = append(*rows, row)
		if row.lost != 0 || row.stale != 0 || row.regress != 0 || !row.linOK || row.overBound != 0 || row.ryw != 0 || row.fivexx != 0 {
			t.Errorf("%s: %+v", f.name, row)
		}
		avail := 100 * float64(row.availOK) / float64(max(row.availN, 1))
		if row.availN == 0 || avail < 99.9 || (f.redis && row.availOK != row.availN) {
			t.Errorf("resolve availability during the fault: %d of %d", row.availOK, row.availN)
		}
		for _, e := range row.examples {
			t.Log(e)
		}
	})
}

func faultTable(rows []faultRow) string {
	var b strings.Builder
	b.WriteString("| fault | acknowledged writes | lost | stale-fence accepted | fence regressions | linearizable (partitions/ops) | resolve lag max (> 3 s) | read-your-writes misses | stale_fence rejections (paused client's) | 500s | resolve availability during fault | all resolves | writes ok/rejected/unknown |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		var acked []string
		for _, k := range []string{"versions", "releases", "turns", "fenced turns", "state", "pointer", "grants", "board records", "board claims", "board dones"} {
			acked = append(acked, fmt.Sprintf("%d %s", r.acked[k], k))
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %s | %v (%d) | %d of %d | %d (%d) | %d | %.2f%% of %d | %.2f%% of %d | %d/%d/%d |\n",
			r.name, strings.Join(acked, ", "), r.lost, r.stale, r.regress, strings.Join(r.lin, "; "),
			r.worstLag, r.overBound, r.ryw, r.rywChecked, r.staleRejected, r.clientStale, r.fivexx,
			100*float64(r.availOK)/float64(max(r.availN, 1)), r.availN,
			100*float64(r.allOK)/float64(max(r.allN, 1)), r.allN, r.okN, r.rejectedN, r.unknownN)
	}
	return b.String()
}

func runFault(t *testing.T, f fault, start func(*testing.T) *faultCluster) faultRow {
	c := start(t)
	a := c.nodes[0].URL
	seed(t, a, "pub-0", "prod", 1)
	seed(t, a, "ptr", "prod", 5)
	seed(t, a, "rel", "prod", 1)
	for _, id := range []string{"faults-0", "faults-1", "leased-0", "leased-1"} {
		must(t, 201, "POST", a+"/v1/sessions", runtimeToken, map[string]any{"session_id": id, "agent": "pub-0", "env": "prod"})
	}

	h := &history{}
	w := &workload{nodes: c.urls, h: h, stop: make(chan struct{}), prefix: "p"}
	var acked sync.Map // agent\x00text -> version; release\x00id -> candidate
	var wg sync.WaitGroup
	goRun := func(fn func()) { wg.Add(1); go func() { defer wg.Done(); fn() }() }
	for i := 0; i < 2; i++ {
		goRun(func() { w.appender("faults-0", i) })
		goRun(func() { w.appender("faults-1", i+1) })
		goRun(func() { w.leaseWorker("leased-0", fmt.Sprint("worker-", i), i) })
		goRun(func() { w.leaseWorker("leased-1", fmt.Sprint("worker-", i), i+1) })
		goRun(func() { w.stateWriter("faults-0", []string{"k0", "k1"}, i) })
		goRun(func() { w.switcher("ptr", "prod", 5, i) })
		goRun(func() { w.publisher(fmt.Sprint("pub-", i), i, &acked) })
		goRun(func() { w.leaser([]string{"order-1", "order-2", "order-3"}, fmt.Sprint("tool-", i), i) })
		goRun(func() { w.boardClaimer(fmt.Sprint("claimer-", i), i) })
	}
	goRun(func() { w.boardProducer(0) })
	goRun(func() { w.boardProducer(1) })
	targets := [][2]string{{"ptr", "prod"}, {"pub-0", "prod"}, {"rel", "prod"}}
	goRun(func() { w.resolver(targets, "", 0) })
	goRun(func() { w.resolver(targets, "faults-1", 1) })
	goRun(func() { w.releaser("rel", "prod", &acked) })
	child := startLeaseClient(t, c.urls(), "leased-0", h)

	time.Sleep(1500 * time.Millisecond)
	faultStart := now()
	f.inject(t, c, child)
	faultEnd := now()
	time.Sleep(2 * time.Second) // recovery under load
	close(w.stop)
	wg.Wait()
	child.stop(t)

	ops := h.all()
	row := faultRow{name: f.name, acked: map[string]int{}, childOps: child.ops}
	ex := func(s ...string) { row.examples = append(row.examples, s...) }

	// Acknowledged versions and releases.
	acked.Range(func(k, v any) bool {
		kind, name, _ := strings.Cut(k.(string), "\x00")
		if kind == "release" {
			row.acked["releases"]++
			var rel struct {
				CandidateVersion int `json:"candidate_version"`
			}
			mustEventually(t, 200, "GET", a+"/v1/releases/"+name, adminToken).json(t, &rel)
			if rel.CandidateVersion != v.(int) {
				row.lost++
				ex(fmt.Sprintf("release %s names candidate %d, acknowledged %d", name, rel.CandidateVersion, v))
			}
			return true
		}
		row.acked["versions"]++
		var got struct{ Config struct{ System string } }
		mustEventually(t, 200, "GET", fmt.Sprintf("%s/v1/agents/%s/versions/%d", a, kind, v), runtimeToken).json(t, &got)
		if got.Config.System != name {
			row.lost++
			ex(fmt.Sprintf("acknowledged %s v%d holds %q, not %q", kind, v, got.Config.System, name))
		}
		return true
	})

	// Acknowledged turns: at their seq, once; fenced turns in fence order.
	fenceOf := map[string]int64{}
	for _, o := range ops {
		if o.Kind == kAppend && o.Fence > 0 {
			fenceOf[o.Text] = o.Fence
		}
	}
	for _, id := range []string{"faults-0", "faults-1", "leased-0", "leased-1"} {
		log := finalTurns(t, a, id)
		pos := map[string]int64{}
		var high int64
		for i, text := range log {
			if _, dup := pos[text]; dup {
				row.lost++
				ex(fmt.Sprintf("%s: %q appears twice", id, text))
			}
			pos[text] = int64(i + 1)
			if f := fenceOf[text]; f > 0 {
				if f < high {
					row.stale++
					ex(fmt.Sprintf("%s: turn %d %q has fence %d after fence %d", id, i+1, text, f, high))
				}
				high = max(high, f)
			}
		}
		for _, o := range ops {
			if o.Kind == kAppend && o.Key == id && o.ok() {
				if o.Fence > 0 {
					row.acked["fenced turns"]++
				} else {
					row.acked["turns"]++
				}
				if pos[o.Text] != o.Seq {
					row.lost++
					ex(fmt.Sprintf("acknowledged %q (seq %d) is at %d", o.Text, o.Seq, pos[o.Text]))
				}
			}
		}
	}

	// Acknowledged state entries and pointer moves: the final revision is at
	// least the highest acknowledged; at that revision, the same value.
	var state map[string]struct {
		Value    any
		Revision int64
	}
	mustEventually(t, 200, "GET", a+"/v1/sessions/faults-0/state", runtimeToken).json(t, &state)
	var ptr struct{ Version, Revision int64 }
	mustEventually(t, 200, "GET", a+"/v1/agents/ptr/envs/prod", runtimeToken).json(t, &ptr)
	for _, o := range ops {
		switch {
		case o.Kind == kPut && o.ok():
			row.acked["state"]++
			e := state[strings.TrimPrefix(o.Key, "faults-0/")]
			if e.Revision < o.Rev || (e.Revision == o.Rev && e.Value != o.Text) {
				row.lost++
				ex(fmt.Sprintf("acknowledged %s rev %d %q; final rev %d %v", o.Key, o.Rev, o.Text, e.Revision, e.Value))
			}
		case o.Kind == kCAS && o.ok():
			row.acked["pointer"]++
			if ptr.Revision < o.Rev || (ptr.Revision == o.Rev && int(ptr.Version) != o.Version) {
				row.lost++
				ex(fmt.Sprintf("acknowledged pointer rev %d v%d; final rev %d v%d", o.Rev, o.Version, ptr.Revision, ptr.Version))
			}
		case (o.Kind == kGrant || o.Kind == kLGrant) && o.ok():
			row.acked["grants"]++
		}
	}

	boardReads := checkBoard(t, a, ops, &row)

	var e []string
	row.regress, e = fenceRegressions(ops)
	ex(e...)
	n, e := staleFenceAccepted(ops)
	row.stale += n
	ex(e...)

	row.linOK = true
	for _, chk := range []struct {
		name string
		r    linResult
	}{
		{"turns", checkLinearizable(turnModel, ops, kAppend, kRead)},
		{"state", checkLinearizable(stateModel, ops, kPut, kSRead)},
		{"pointer", checkLinearizable(pointerModel, ops, kCAS, kPRead)},
		{"board", checkLinearizable(boardModel, append(boardOps(ops), boardReads...), kBCreate, kBClaim, kBPatch, kBRead)},
	} {
		row.lin = append(row.lin, fmt.Sprintf("%s %s (%d/%d)", chk.name, chk.r.result, chk.r.partitions, chk.r.ops))
		if chk.r.result != "Ok" {
			row.linOK = false
		}
		if len(chk.r.illegal) > 0 {
			t.Logf("%s: the %s history of the first key found not linearizable:\n  %s", f.name, chk.name, strings.Join(chk.r.illegal, "\n  "))
		}
	}

	row.worstLag, row.overBound, row.ryw, _ = staleness(ops, "ptr/prod", 3*time.Second)
	for _, o := range ops {
		if o.Code == "stale_fence" {
			row.staleRejected++
			if o.Client >= 10000 && o.Call >= faultStart {
				row.clientStale++
			}
		}
	}
	for _, o := range ops {
		switch {
		case o.Kind == kHTTP500:
			row.fivexx++
			ex("500: " + o.Text)
		case o.Kind == kResolve:
			row.allN++
			if o.ok() {
				row.allOK++
			}
			if o.Call >= faultStart && o.Call <= faultEnd {
				row.availN++
				if o.ok() {
					row.availOK++
				}
			}
		case o.Kind == kAppend || o.Kind == kPut || o.Kind == kCAS || o.Kind == kGrant || o.Kind == kLGrant ||
			o.Kind == kBCreate || o.Kind == kBClaim || o.Kind == kBPatch ||
			(o.Kind == kOther && o.Key != "assemble"):
			switch {
			case o.Unknown:
				row.unknownN++
			case o.ok():
				row.okN++
			default:
				row.rejectedN++
			}
		}
	}
	rywOps := 0
	for _, o := range ops {
		if o.Kind == kResolve && o.RYW > 0 && o.ok() {
			rywOps++
		}
	}
	row.rywChecked = rywOps
	if f.client && row.clientStale == 0 {
		t.Errorf("the paused lease client's late writes met no stale_fence")
	}
	if row.childOps == 0 {
		t.Errorf("the lease-holding client process recorded no ops")
	}
	sort.Strings(row.examples)
	return row
}

// finalTurns reads every turn text of a session, page by page.
func finalTurns(t *testing.T, base, id string) []string {
	var out []string
	var since int64
	for {
		var v sessionView
		mustEventually(t, 200, "GET", fmt.Sprintf("%s/v1/sessions/%s?since=%d&limit=500", base, id, since), runtimeToken).json(t, &v)
		for _, tr := range v.Turns {
			out = append(out, tr.Content)
		}
		if v.NextSince == nil {
			return out
		}
		since = *v.NextSince
	}
}

// mustEventually retries a GET for up to 15 s (a store may still be
// recovering from the fault) until it answers want.
func mustEventually(t *testing.T, want int, method, url, token string) resp {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		r, err := call(method, url, token, nil)
		if err == nil && r.Status == want {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s: %d %s %v, want %d", method, url, r.Status, r.Body, err, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
