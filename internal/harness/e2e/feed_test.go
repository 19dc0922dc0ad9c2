package e2e

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
)

// TestE2E_feed_resumingReadersMissNothing: three promptd processes on
// MariaDB and Redis, 16 writers spread over them, and 4 SSE readers that
// disconnect at random and resume with Last-Event-ID on a random
// instance. Every reader receives exactly the audit table's events in seq
// order: no gap, no duplicate. The same with Redis killed (the sequencer
// stamps without its lease, instances learn of new events from the
// store). A naive reader that resumes after the largest audit id it saw
// runs beside them, and its misses are reported (the forced control that
// must miss is events' TestFeed_slowTransaction_isMissedByAnIDCursor).
func TestE2E_feed_resumingReadersMissNothing(t *testing.T) {
	t.Run("redis", func(t *testing.T) { feedCompleteness(t, false) })
	t.Run("redis-killed", func(t *testing.T) { feedCompleteness(t, true) })
}

func feedCompleteness(t *testing.T, killRedis bool) {
	c := startCluster(t, 3, map[string]string{"PROMPTD_REDIS_TIMEOUT": "50ms"})
	db, err := sql.Open("mysql", c.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if killRedis {
		c.redis.Kill()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Readers: from the start of the feed, in random short connections.
	type got struct {
		mu   sync.Mutex
		seqs []int64
		ids  []int64
	}
	readers := make([]*got, 4)
	var rwg sync.WaitGroup
	var reconnects atomic.Int64
	for r := range readers {
		readers[r] = &got{}
		rwg.Go(func() {
			g := readers[r]
			last := "0"
			for ctx.Err() == nil {
				node := c.nodes[rand.IntN(len(c.nodes))]
				// Connections last 0.2..1.5 s: long enough to get events on a
				// loaded machine, short enough to resume many times.
				cctx, ccancel := context.WithTimeout(ctx, time.Duration(200+rand.IntN(1300))*time.Millisecond)
				err := sseRead(cctx, node.URL, last, func(seq, id int64) {
					g.mu.Lock()
					g.seqs, g.ids = append(g.seqs, seq), append(g.ids, id)
					g.mu.Unlock()
					last = strconv.FormatInt(seq, 10)
				})
				ccancel()
				if err != nil && ctx.Err() == nil && cctx.Err() == nil {
					t.Logf("reader %d: %v (resuming)", r, err)
					time.Sleep(50 * time.Millisecond)
				}
				reconnects.Add(1)
			}
		})
	}
	// The naive reader: WHERE id > the largest id seen.
	var naiveSeen sync.Map
	var nwg sync.WaitGroup
	nwg.Go(func() {
		var cursor int64
		for ctx.Err() == nil {
			rows, err := db.QueryContext(ctx, `SELECT id FROM audit_events WHERE id > ? ORDER BY id`, cursor)
			if err != nil {
				continue
			}
			for rows.Next() {
				var id int64
				_ = rows.Scan(&id)
				naiveSeen.Store(id, true)
				cursor = id
			}
			rows.Close()
			time.Sleep(time.Millisecond)
		}
	})

	// Writers: 16, over 8 agents, each on its own instance.
	const writers, ops = 16, 25
	var wwg sync.WaitGroup
	var written, refused atomic.Int64
	for w := range writers {
		wwg.Go(func() {
			base := c.nodes[w%len(c.nodes)].URL
			agent := fmt.Sprint("feed-", w%8)
			for i := range ops {
				r, err := call("POST", base+"/v1/agents/"+agent+"/versions", adminToken, map[string]any{
					"base_version": -1, "config": map[string]any{"system": fmt.Sprint(w, "/", i)}})
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				switch r.Status {
				case 201:
					written.Add(1)
				case 400: // base_version -1 is refused: use the latest instead
					var latest struct {
						Items []struct{ Version int } `json:"items"`
					}
					lr, _ := call("GET", base+"/v1/agents/"+agent+"/versions?limit=1", adminToken, nil)
					_ = json.Unmarshal(lr.Body, &latest)
					v := 0
					if len(latest.Items) > 0 {
						v = latest.Items[0].Version
					}
					r2, err := call("POST", base+"/v1/agents/"+agent+"/versions", adminToken, map[string]any{
						"base_version": v, "config": map[string]any{"system": fmt.Sprint(w, "/", i)}})
					if err == nil && r2.Status == 201 {
						written.Add(1)
					} else {
						refused.Add(1)
					}
				default:
					refused.Add(1)
				}
			}
		})
	}
	wwg.Wait()

	// Wait until every committed event is stamped and every reader has it.
	var total int64
	deadline := time.Now().Add(120 * time.Second)
	for {
		var unstamped int64
		_ = db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(seq IS NULL), 0) FROM audit_events`).Scan(&total, &unstamped)
		done := unstamped == 0
		for _, g := range readers {
			g.mu.Lock()
			done = done && int64(len(g.seqs)) >= total
			g.mu.Unlock()
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			behind := make([]int, len(readers))
			for i, g := range readers {
				g.mu.Lock()
				behind[i] = len(g.seqs)
				g.mu.Unlock()
			}
			t.Fatalf("after 120 s: %d events, %d unstamped; readers have %v", total, unstamped, behind)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // let the naive reader catch up too
	cancel()
	rwg.Wait()
	nwg.Wait()

	var want []int64
	rows, err := db.Query(`SELECT id FROM audit_events ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		_ = rows.Scan(&id)
		want = append(want, id)
	}
	rows.Close()
	for r, g := range readers {
		for i, s := range g.seqs {
			if s != int64(i)+1 {
				t.Fatalf("reader %d: event %d has seq %d, want %d (gap or duplicate)", r, i, s, i+1)
			}
		}
		if !slices.Equal(g.ids, want) {
			t.Fatalf("reader %d received %d events, not the table's %d in seq order", r, len(g.ids), len(want))
		}
	}
	missed, outOfOrder := 0, 0
	for i, id := range want {
		if _, ok := naiveSeen.Load(id); !ok {
			missed++
		}
		if i > 0 && id < want[i-1] {
			outOfOrder++
		}
	}
	t.Logf("redis killed %v: %d writes (%d refused), %d events; 4 readers, %d reconnects, each received all %d in order; "+
		"commit order differed from id order at %d places; the id-cursor reader missed %d",
		killRedis, written.Load(), refused.Load(), total, reconnects.Load(), len(want), outOfOrder, missed)
}

// sseRead reads /v1/events from since as an admin until ctx ends, calling
// fn for each event.
func sseRead(ctx context.Context, base, since string, fn func(seq, id int64)) error {
	var derr error
	err := sseStream(ctx, base+"/v1/events?since="+since, adminToken, func() {}, func(data []byte) {
		var e struct{ Seq, ID int64 }
		if err := json.Unmarshal(data, &e); err != nil {
			derr = err
			return
		}
		fn(e.Seq, e.ID)
	})
	if derr != nil {
		return derr
	}
	return err
}

var jsonUnmarshal = json.Unmarshal

// statusError: a stream was refused with Status (and Body, a problem).
type statusError struct {
	Status int
	Body   []byte
}

func (e *statusError) Error() string { return fmt.Sprintf("status %d: %s", e.Status, e.Body) }

// sseStream reads a Server-Sent Events stream until ctx ends or it
// closes: open is called once it is open, fn with each event's data
// (progress events skipped).
func sseStream(ctx context.Context, url, token string, open func(), fn func(data []byte)) error {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		return &statusError{Status: res.StatusCode, Body: b}
	}
	open()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var event, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if event != "" && event != "progress" {
				fn([]byte(data))
			}
			event, data = "", ""
		case strings.HasPrefix(line, "event: "):
			event = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		}
	}
	return sc.Err()
}
