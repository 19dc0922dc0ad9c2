// Command promptbench is promptd's end-to-end load tool. Against a running
// promptd it measures throughput and p50/p99 latency of the runtime and
// write paths, each beside a reference measured in the same run on the same
// machine:
//
//	resolve  GET .../prompt of a 4 KB config   vs a bare Echo handler serving the same bytes
//	import   10,000 items, all_or_nothing      (rows/s; reference: none, target 5,000 rows/s)
//	append   turn appends, 1,000 sessions      vs a bare conditional UPDATE + INSERT in MariaDB
//	append-leased  the same on sessions that held a lease once (each append checks the lease)
//	lease    session lease acquire+release      vs SET NX PX + DEL on the same Redis
//	create   version creates, one agent each writer
//
// Usage:
//
//	promptbench -url http://127.0.0.1:8080 -admin-token T -runtime-token R [-scenario all] [-duration 10s] [-conns 64] [-rounds 5]
//	            [-mysql-dsn DSN] [-redis-url URL] [-metrics-token T]
//	promptbench slowloris -url http://127.0.0.1:8080 [-conns 20000] [-pid PID] [-wait 2m]
//	promptbench memory -promptd ./promptd | -url URL -admin-token T -pid PID [-duration 5s]
//	promptbench imports -url URL -admin-token T -runtime-token R [-strategies a,b,c,d,e] [-rows 100000] [-agents 64] [-batch 50] [-duration 20s] [-think 50ms]
//
// slowloris opens that many slow or idle connections and reports whether
// /healthz kept answering, promptd's RSS and when promptd closed them.
//
// imports reproduces the field report on agent batch imports: agents
// writing overlapping batches of board rows under a global lease, row
// leases, commit proofs, intents, or none (the control), each strategy's
// throughput, latency, retries and lost updates (imports.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == serveBareArg { // the resolve scenario's own-process reference
		if err := serveBare(os.Args[2], os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "promptbench:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	runner := run
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "slowloris" {
		runner, args = runSlowloris, args[1:]
	}
	if len(args) > 0 && args[0] == "memory" {
		runner, args = runMemory, args[1:]
	}
	if len(args) > 0 && args[0] == "imports" {
		runner, args = runImports, args[1:]
	}
	if err := runner(ctx, args, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "promptbench:", err)
		os.Exit(1)
	}
}

type config struct {
	url, admin, runtime string
	scenarios           []string
	duration            time.Duration
	conns               int
	rounds              int
	mysqlDSN, redisURL  string
	metricsToken        string
	prefix              string
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("promptbench", flag.ContinueOnError)
	var c config
	var scen string
	fs.StringVar(&c.url, "url", "http://127.0.0.1:8080", "promptd base URL")
	fs.StringVar(&c.admin, "admin-token", os.Getenv("PROMPTD_BENCH_ADMIN_TOKEN"), "admin token")
	fs.StringVar(&c.runtime, "runtime-token", os.Getenv("PROMPTD_BENCH_RUNTIME_TOKEN"), "runtime token")
	fs.StringVar(&scen, "scenario", "all", "comma-separated: resolve, import, append, append-leased, lease, create, feed, or all")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "duration of each timed scenario")
	fs.IntVar(&c.conns, "conns", 64, "concurrent connections (writers)")
	fs.IntVar(&c.rounds, "rounds", 5, "a scenario and its reference run in turns, this many slices each of duration/rounds")
	fs.StringVar(&c.mysqlDSN, "mysql-dsn", "", "MariaDB DSN of promptd's database, for the append reference")
	fs.StringVar(&c.redisURL, "redis-url", "", "promptd's Redis, for the lease reference")
	fs.StringVar(&c.metricsToken, "metrics-token", os.Getenv("PROMPTD_METRICS_TOKEN"), "promptd's metrics token, if it has one (promptd's CPU time is read from /metrics)")
	fs.StringVar(&c.prefix, "prefix", fmt.Sprintf("b%d", time.Now().Unix()%100000), "prefix of the agents and sessions it creates")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.admin == "" || c.runtime == "" {
		return fmt.Errorf("-admin-token and -runtime-token are required")
	}
	meter = cpuMeter{metricsURLs: []string{strings.TrimSuffix(c.url, "/") + "/metrics"}, token: c.metricsToken}
	c.scenarios = strings.Split(scen, ",")
	if scen == "all" {
		c.scenarios = []string{"resolve", "import", "append", "append-leased", "lease", "create", "feed"}
	}
	t := &table{}
	for _, s := range c.scenarios {
		var err error
		switch s {
		case "resolve":
			err = benchResolve(ctx, c, t)
		case "import":
			err = benchImport(ctx, c, t)
		case "append":
			err = benchAppend(ctx, c, t, false)
		case "append-leased":
			err = benchAppend(ctx, c, t, true)
		case "lease":
			err = benchLease(ctx, c, t)
		case "create":
			err = benchCreate(ctx, c, t)
		case "feed":
			err = benchFeed(ctx, c, t)
		default:
			err = fmt.Errorf("unknown scenario %q", s)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	t.print(out)
	return nil
}
