package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// seed creates a runtime token per client (the per-token bound on heavy
// requests would otherwise answer most of many clients 429, and what is
// measured is requests served), the agents with their prod pointers and
// the board's records, then takes the bundle's ETag.
func (m *memBench) seed(ctx context.Context, rep *memReport) error {
	n := max(m.manyClients, m.listClients, 1)
	for i := range n {
		var tok struct{ Secret string }
		if err := do(ctx, "POST", m.url+"/v1/tokens", m.admin, map[string]any{"name": fmt.Sprintf("%s-rt-%d", m.prefix, i), "role": "runtime"}, 201, &tok); err != nil {
			return fmt.Errorf("token: %w", err)
		}
		m.tokens = append(m.tokens, tok.Secret)
	}
	filler := strings.Repeat("You are a careful support agent; answer briefly. ", m.configBytes/49+1)
	for i := range m.agents {
		agent := m.agent(i)
		system := agent + " " + filler[:m.configBytes-len(agent)-1] // distinct content: no two configs share a hash
		if err := do(ctx, "POST", m.url+"/v1/agents/"+agent+"/versions", m.admin, map[string]any{
			"base_version": 0, "config": map[string]any{"system": system, "model": map[string]any{"name": "m"}}}, 201, nil); err != nil {
			return fmt.Errorf("seed agent: %w", err)
		}
		if err := do(ctx, "PUT", m.url+"/v1/agents/"+agent+"/envs/prod", m.admin, map[string]any{"version": 1, "expected_revision": 0}, 201, nil); err != nil {
			return fmt.Errorf("seed pointer: %w", err)
		}
	}
	blob := strings.Repeat("x", m.payloadBytes)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < m.records; i += 4 {
				if err := do(ctx, "POST", m.url+"/v1/boards/"+m.board()+"/records", m.tokens[0], map[string]any{"payload": map[string]any{"i": i, "blob": blob}}, 201, nil); err != nil {
					errs <- fmt.Errorf("seed record: %w", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	page := hit(ctx, "GET", m.recordsURL(), m.tokens[0])
	if page.code != http.StatusOK {
		return fmt.Errorf("GET records: %d %s", page.code, page.problem)
	}
	// The ETag last: it digests the feed's position, which each record moved.
	bundle := hit(ctx, "GET", m.url+"/v1/bundle", m.tokens[0])
	if bundle.code != http.StatusOK || bundle.etag == "" {
		return fmt.Errorf("GET /v1/bundle: %d %s, ETag %q", bundle.code, bundle.problem, bundle.etag)
	}
	m.etag = bundle.etag
	rep.add(fmt.Sprintf("bundle: %d agents x %d B configs, whole GET /v1/bundle", m.agents, m.configBytes), fmt.Sprintf("%.1f MiB", mib(bundle.size)), "")
	rep.add(fmt.Sprintf("records: one page of limit=500 of %d records x %d B payloads", m.records, m.payloadBytes), fmt.Sprintf("%.1f MiB", mib(page.size)), "")
	return nil
}

func (m *memBench) agent(i int) string { return fmt.Sprintf("%s-mem-%d", m.prefix, i) }
func (m *memBench) board() string      { return m.prefix + "-mem" }
func (m *memBench) recordsURL() string {
	return m.url + "/v1/boards/" + m.board() + "/records?limit=500"
}

// bundlePhases: conditional bundle requests from few, then many, clients.
func (m *memBench) bundlePhases(ctx context.Context, rep *memReport) error {
	conditional := func(ctx context.Context, w int) answer {
		return hit(ctx, "GET", m.url+"/v1/bundle", m.tokens[w], "If-None-Match", m.etag)
	}
	warm := func(ctx context.Context) error {
		if a := conditional(ctx, 0); a.code != http.StatusNotModified {
			return fmt.Errorf("GET /v1/bundle with its ETag: %d %s, want 304", a.code, a.problem)
		}
		return nil
	}
	var few, many *statuses
	pFew, err := m.measure(ctx, warm, func(ctx context.Context) error {
		few = clients(ctx, m.fewClients, m.duration, conditional)
		return nil
	})
	if err != nil {
		return err
	}
	pMany, err := m.measure(ctx, warm, func(ctx context.Context) error {
		many = clients(ctx, m.manyClients, m.duration, conditional)
		return nil
	})
	if err != nil {
		return err
	}
	rep.add(fmt.Sprintf("bundle If-None-Match, %d clients: peak RSS", m.fewClients), pFew.String(), "reference")
	rep.add(fmt.Sprintf("bundle If-None-Match, %d clients: answers", m.fewClients), few.of(304, 200, 429, 503), "")
	rep.add(fmt.Sprintf("bundle If-None-Match, %d clients: peak RSS", m.manyClients), pMany.String(), "")
	rep.add(fmt.Sprintf("bundle If-None-Match, %d clients: answers", m.manyClients), many.of(304, 200, 429, 503), "")
	rep.add(fmt.Sprintf("bundle If-None-Match: peak@%d / peak@%d", m.manyClients, m.fewClients), ratio(pMany, pFew), "<= 1.25x")
	return nil
}

// recordPhases: the board's largest page from one client, then many.
func (m *memBench) recordPhases(ctx context.Context, rep *memReport) error {
	list := func(ctx context.Context, w int) answer {
		return hit(ctx, "GET", m.recordsURL(), m.tokens[w])
	}
	warm := func(ctx context.Context) error {
		if a := hit(ctx, "GET", m.url+"/v1/boards/"+m.board()+"/records?limit=1", m.tokens[0]); a.code != http.StatusOK {
			return fmt.Errorf("GET records: %d %s", a.code, a.problem)
		}
		return nil
	}
	var one, many *statuses
	pOne, err := m.measure(ctx, warm, func(ctx context.Context) error {
		one = clients(ctx, 1, m.duration, list)
		return nil
	})
	if err != nil {
		return err
	}
	pMany, err := m.measure(ctx, warm, func(ctx context.Context) error {
		many = clients(ctx, m.listClients, m.duration, list)
		return nil
	})
	if err != nil {
		return err
	}
	rep.add("records limit=500, 1 client: peak RSS", pOne.String(), "reference")
	rep.add("records limit=500, 1 client: answers", one.of(200, 429, 503), "")
	rep.add(fmt.Sprintf("records limit=500, %d clients: peak RSS", m.listClients), pMany.String(), "")
	rep.add(fmt.Sprintf("records limit=500, %d clients: answers", m.listClients), many.of(200, 429, 503), "")
	rep.add(fmt.Sprintf("records: peak@%d / peak@1", m.listClients), ratio(pMany, pOne), "")
	return nil
}

// floodPhases: an admin's read of one env pointer alone, then while one
// runtime token floods whole bundles.
func (m *memBench) floodPhases(ctx context.Context, rep *memReport) error {
	var alone, flooded []time.Duration
	var floodSt *statuses
	var failed statuses // the admin's reads that were not 200, under the flood
	read := func(ctx context.Context, d time.Duration) []time.Duration {
		var lat []time.Duration
		for end := time.Now().Add(d); ctx.Err() == nil && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			t0 := time.Now()
			if a := hit(ctx, "GET", m.url+"/v1/agents/"+m.agent(0)+"/envs/prod", m.admin); a.code != http.StatusOK {
				failed.add(a)
				continue
			}
			lat = append(lat, time.Since(t0))
		}
		return lat
	}
	warm := func(ctx context.Context) error {
		read(ctx, 200*time.Millisecond)
		return nil
	}
	if _, err := m.measure(ctx, warm, func(ctx context.Context) error {
		alone = read(ctx, m.duration)
		return nil
	}); err != nil {
		return err
	}
	failed = statuses{}
	pFlood, err := m.measure(ctx, warm, func(ctx context.Context) error {
		done := make(chan struct{})
		go func() {
			defer close(done)
			floodSt = clients(ctx, m.flood, m.duration, func(ctx context.Context, _ int) answer {
				return hit(ctx, "GET", m.url+"/v1/bundle", m.tokens[0])
			})
		}()
		time.Sleep(m.duration / 10) // the flood under way before the first timed read
		flooded = read(ctx, m.duration*8/10)
		<-done
		return nil
	})
	if err != nil {
		return err
	}
	a50, a99 := pct(alone)
	f50, f99 := pct(flooded)
	rep.add("admin GET env pointer, no flood: p50 / p99", fmt.Sprintf("%s / %s (%d reads)", a50, a99, len(alone)), "reference")
	rep.add(fmt.Sprintf("admin GET env pointer, %d-connection bundle flood: p50 / p99", m.flood), fmt.Sprintf("%s / %s (%d reads; not 200: %s)", f50, f99, len(flooded), failed.of(503, 0)), "p99 < 100ms")
	rep.add("flood: answers (one runtime token, whole bundles)", floodSt.of(200, 429, 503), "")
	rep.add("flood: peak RSS", pFlood.String(), "")
	return nil
}

// pct is the p50 and p99 of lat, rounded for the table.
func pct(lat []time.Duration) (p50, p99 time.Duration) {
	if len(lat) == 0 {
		return 0, 0
	}
	s := slices.Sorted(slices.Values(lat))
	return s[len(s)/2].Round(100 * time.Microsecond), s[len(s)*99/100].Round(100 * time.Microsecond)
}
