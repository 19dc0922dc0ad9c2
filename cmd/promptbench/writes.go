package main

import (
	"context"
	"fmt"
	"time"
)

// benchImport posts 10,000 items in one all_or_nothing import.
func benchImport(ctx context.Context, c config, t *table) error {
	const n = 10000
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"agent": fmt.Sprintf("%s-imp-%d", c.prefix, i%2000), "base_version": i / 2000,
			"config": map[string]any{"system": fmt.Sprintf("imported config %d", i)}, "message": "bench"}
	}
	start := time.Now()
	var res struct{ Summary struct{ Created int } }
	err := do(ctx, "POST", c.url+"/v1/import", c.admin, map[string]any{"mode": "all_or_nothing", "items": items}, 200, &res)
	d := time.Since(start)
	if err != nil {
		return err
	}
	if res.Summary.Created != n {
		return fmt.Errorf("created %d of %d", res.Summary.Created, n)
	}
	t.add(result{name: "import 10,000 items all_or_nothing (2,000 agents x 5)", ops: n, elapsed: d, p50: d, p99: d,
		unit: "rows/s", rate: n / d.Seconds()}, result{}, ">= 5,000 rows/s")
	return nil
}

// benchCreate: each writer publishes versions of its own agent.
func benchCreate(ctx context.Context, c config, t *table) error {
	next := make([]int, c.conns)
	r := load(ctx, "version create (one agent per writer)", c.conns, c.duration, func(ctx context.Context, w, _ int) error {
		agent := fmt.Sprintf("%s-create-%d", c.prefix, w)
		err := do(ctx, "POST", c.url+"/v1/agents/"+agent+"/versions", c.admin, map[string]any{
			"base_version": next[w], "config": map[string]any{"system": fmt.Sprintf("v%d", next[w]+1)}}, 201, nil)
		if err == nil {
			next[w]++
		}
		return err
	})
	t.add(r, result{}, "")
	return nil
}
