package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// subscribers are n open SSE streams of the change feed (runtime token,
// every event it may see); received counts the events they read.
type subscribers struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	received atomic.Int64
	opened   atomic.Int64
}

func openSubscribers(ctx context.Context, c config, n int) (*subscribers, error) {
	ctx, cancel := context.WithCancel(ctx)
	s := &subscribers{cancel: cancel}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n + 8}}
	ready := make(chan error, n)
	for range n {
		s.wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", c.url+"/v1/events", nil)
			req.Header.Set("Authorization", "Bearer "+c.runtime)
			req.Header.Set("Accept", "text/event-stream")
			res, err := hc.Do(req)
			if err != nil {
				ready <- err
				return
			}
			defer res.Body.Close()
			if res.StatusCode != 200 {
				ready <- fmt.Errorf("stream: status %d (PROMPTD_STREAMS_PER_TOKEN too low?)", res.StatusCode)
				return
			}
			s.opened.Add(1)
			ready <- nil
			sc := bufio.NewScanner(res.Body)
			sc.Buffer(make([]byte, 64<<10), 8<<20)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data: ") && sc.Text() != "data: {}" {
					s.received.Add(1)
				}
			}
		})
	}
	for range n {
		if err := <-ready; err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

func (s *subscribers) close() {
	s.cancel()
	s.wg.Wait()
}

// benchFeed measures the change feed: events written (version creates at
// c.conns connections) and streamed to one subscriber, then what 100 open
// subscribers cost resolve and version-create throughput, in alternating
// slices with and without them.
func benchFeed(ctx context.Context, c config, t *table) error {
	create := func(tag string) func(context.Context, int, int) error {
		next := make([]int, c.conns) // one agent per writer and tag
		return func(ctx context.Context, w, _ int) error {
			agent := fmt.Sprintf("%s-feed%s-%d", c.prefix, tag, w)
			err := do(ctx, "POST", c.url+"/v1/agents/"+agent+"/versions", c.admin, map[string]any{
				"base_version": next[w], "config": map[string]any{"system": fmt.Sprintf("v%d", next[w]+1)}}, 201, nil)
			if err == nil {
				next[w]++
			}
			return err
		}
	}
	// Events written and streamed.
	one, err := openSubscribers(ctx, c, 1)
	if err != nil {
		return err
	}
	start := time.Now()
	w := load(ctx, "version create, 1 SSE subscriber (events written)", c.conns, c.duration, create("w"))
	written := int64(w.ops)
	deadline := time.Now().Add(10 * time.Second)
	for one.received.Load() < written && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	streamed := result{name: fmt.Sprintf("events streamed to the subscriber (%d of %d)", one.received.Load(), written),
		ops: int(one.received.Load()), elapsed: time.Since(start), unit: "events/s"}
	streamed.rate = float64(streamed.ops) / streamed.elapsed.Seconds()
	one.close()
	t.add(w, result{}, "events/s written = creates/s")
	t.also(streamed, w, "until the last written event arrived")

	// The cost of 100 subscribers, alternating slices.
	agent := c.prefix + "-feedresolve"
	if err := do(ctx, "POST", c.url+"/v1/agents/"+agent+"/versions", c.admin, map[string]any{
		"base_version": 0, "config": map[string]any{"system": "You are helpful."}}, 201, nil); err != nil {
		return err
	}
	if err := do(ctx, "PUT", c.url+"/v1/agents/"+agent+"/envs/prod", c.admin, map[string]any{"version": 1, "expected_revision": 0}, 201, nil); err != nil {
		return err
	}
	resolveURL := c.url + "/v1/agents/" + agent + "/envs/prod/prompt"
	resolve := func(ctx context.Context, _, _ int) error { _, err := fetch(ctx, resolveURL, c.runtime); return err }
	rw, r0 := newCollector("resolve, 100 SSE subscribers open", c.conns), newCollector("resolve, no subscriber", c.conns)
	cw, c0 := newCollector("version create, 100 SSE subscribers open", c.conns), newCollector("version create, no subscriber", c.conns)
	slice := c.duration / time.Duration(max(c.rounds, 1))
	var streamedTo int64
	createW, create0 := create("c1"), create("c0")
	for r := 0; r < max(c.rounds, 1) && ctx.Err() == nil; r++ {
		with := func() error {
			subs, err := openSubscribers(ctx, c, 100)
			if err != nil {
				return err
			}
			rw.run(ctx, slice, resolve)
			cw.run(ctx, slice, createW)
			time.Sleep(200 * time.Millisecond)
			streamedTo += subs.received.Load()
			subs.close()
			return nil
		}
		without := func() error {
			r0.run(ctx, slice, resolve)
			c0.run(ctx, slice, create0)
			return nil
		}
		first, second := with, without
		if r%2 == 1 {
			first, second = without, with
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
	}
	t.add(rw.result(), r0.result(), "feed cost on resolve: ratio with/without 100 subscribers")
	cr := cw.result()
	t.add(cr, c0.result(), fmt.Sprintf("feed cost on creates (%d events delivered to the subscribers)", streamedTo))
	return nil
}
