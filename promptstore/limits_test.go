package promptstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/prompt"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

// sqliteStore is a store over a fresh SQLite file, with agent "a" at v1
// of config published to prod.
func sqliteStore(t *testing.T, o promptstore.Options, config string) *promptstore.Store {
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "p.db")}, migrations())
	s := newStore(t, db, o)
	ctx := ctxT(t)
	if _, err := s.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "a", Config: json.RawMessage(config)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SwitchPointer(ctx, promptstore.SwitchInput{Agent: "a", Env: "prod", Version: 1, ExpectedRevision: new(int64)}); err != nil {
		t.Fatal(err)
	}
	return s
}

func wantLimit(t *testing.T, err error, name string, limit int64) {
	t.Helper()
	var le *promptstore.LimitError
	if !errors.As(err, &le) || le.Name != name || le.Limit != limit {
		t.Fatalf("err = %v, want limit %s (%d)", err, name, limit)
	}
}

// The review's case: 300 placeholders and a 1 MB variable would render a
// 300 MB system message. The size is known before rendering, so the
// refusal allocates a small fraction of that.
func TestAssemble_manyPlaceholdersTimesLargeVariable_isRefusedBeforeRendering(t *testing.T) {
	config := fmt.Sprintf(`{"system": %q, "variables": {"v": {"required": true}}}`, strings.Repeat("{{v}} ", 300))
	s := sqliteStore(t, promptstore.Options{}, config)
	ctx := ctxT(t)
	value, _ := json.Marshal(strings.Repeat("x", 1_000_000))
	in := promptstore.AssembleInput{Request: promptstore.Request{Agent: "a", Env: "prod"}, Variables: map[string]json.RawMessage{"v": value}}
	if _, err := s.Assemble(ctx, s, nil, in); err != nil { // warm the caches
		wantLimit(t, err, promptstore.LimitAssembledBytes, promptstore.DefaultAssembleMaxBytes)
	}
	// TotalAlloc is the process's: other goroutines only add to it, so the
	// least of three runs is the closest to the call's own.
	grew := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := s.Assemble(ctx, s, nil, in)
		runtime.ReadMemStats(&after)
		wantLimit(t, err, promptstore.LimitAssembledBytes, promptstore.DefaultAssembleMaxBytes)
		grew = min(grew, after.TotalAlloc-before.TotalAlloc)
	}
	const wouldBe = 300 * 1_000_000
	t.Logf("the refusal allocated %d bytes; the answer would have been %d", grew, wouldBe)
	if grew > wouldBe/10 {
		t.Fatalf("the refusal allocated %d bytes; the answer would have been %d", grew, wouldBe)
	}
	// Below the limit the same config assembles.
	small, _ := json.Marshal(strings.Repeat("x", 1000))
	in.Variables["v"] = small
	if a, err := s.Assemble(ctx, s, nil, in); err != nil || len(a.Messages[0].Content) < 300_000 {
		t.Fatalf("small value: %v", err)
	}
}

// SystemMessageSize is exact: the bytes json.Marshal gives the rendered
// system message, escapes included.
func TestSystemMessageSize_isTheEncodedLengthOfTheRenderedMessage(t *testing.T) {
	values := []string{"", "plain", `<b>&"quoted"\</b>`, "tab\tnl\ncr\r\x01\x1f", "é ü 日本 \u2028 \u2029 🎉", "{{v}} {{ w }}", "{ {{"}
	for _, system := range []string{"Hi {{v}}!", "{{v}}{{w}}{{v}} < & > {{ v }} {{nope", "{{ {{v}} }}", "é {{w}} \u2028"} {
		for _, v := range values {
			for _, w := range values {
				config := fmt.Sprintf(`{"system": %q, "skills": [{"name": "s<1>", "instructions": "do {{w}} & {{v}}"}],
					"memory": ["m {{v}}", "\u2029"], "variables": {"v": {}, "w": {}}}`, system)
				c, _, err := prompt.ParseConfig([]byte(config))
				if err != nil {
					t.Fatal(err)
				}
				vars := map[string]string{"v": v, "w": w}
				enc, _ := json.Marshal(c.SystemMessage(vars))
				if got := c.SystemMessageSize(vars); got != int64(len(enc)) {
					t.Fatalf("system %q, v %q, w %q: size %d, encoded %d", system, v, w, got, len(enc))
				}
			}
		}
	}
}

// history records what Assemble asks of a session's history.
type history struct {
	max      int
	maxBytes int64
}

func (h *history) Turns(_ context.Context, _ string, max int, maxBytes int64) ([]prompt.Message, error) {
	h.max, h.maxBytes = max, maxBytes
	return []prompt.Message{{Role: "user", Content: json.RawMessage(`"hi"`)}}, nil
}

func TestAssemble_history_isBoundedByTurnsAndByWhatTheAnswerLeaves(t *testing.T) {
	s := sqliteStore(t, promptstore.Options{Limits: promptstore.Limits{AssembleMaxBytes: 1000, MaxHistoryTurns: 50}},
		`{"system": "Hello", "model": {"name": "m"}}`)
	ctx := ctxT(t)
	size := int64(len(`"Hello"`) + len(`{"name":"m"}`))
	for requested, want := range map[int]int{0: 50, 10: 10, 50: 50, 5000: 50} {
		h := &history{}
		a, err := s.Assemble(ctx, s, h, promptstore.AssembleInput{Request: promptstore.Request{Agent: "a", Env: "prod", SessionID: "s1"},
			History: true, MaxHistoryTurns: requested})
		if err != nil || len(a.Messages) != 2 {
			t.Fatalf("assemble: %v", err)
		}
		if h.max != want || h.maxBytes != 1000-size {
			t.Errorf("max_history_turns %d: asked for %d turns within %d bytes, want %d within %d", requested, h.max, h.maxBytes, want, 1000-size)
		}
	}
}

func TestDiff_overTheInputLimits_isRefused(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "d.db")}, migrations())
	s := newStore(t, db, promptstore.Options{Limits: promptstore.Limits{DiffMaxBytes: 4000, DiffMaxLines: 100}})
	ctx := ctxT(t)
	for i, system := range []string{"one", "two", strings.Repeat("x", 3000), strings.Repeat("y", 3000)} {
		if _, err := s.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "a", BaseVersion: i, Config: cfg(system)}); err != nil {
			t.Fatal(err)
		}
	}
	memory, _ := json.Marshal(map[string]any{"system": "m", "memory": strings.Split(strings.Repeat("a,", 60), ",")})
	if _, err := s.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "a", BaseVersion: 4, Config: memory}); err != nil {
		t.Fatal(err)
	}
	if d, err := s.Diff(ctx, "a", 1, 2); err != nil || !strings.Contains(d, "+  \"system\": \"two\"") {
		t.Fatalf("small diff: %q %v", d, err)
	}
	_, err := s.Diff(ctx, "a", 3, 4)
	wantLimit(t, err, promptstore.LimitDiffBytes, 4000)
	_, err = s.Diff(ctx, "a", 1, 5) // 60 memory items: 65 lines
	if err != nil {
		t.Fatalf("65 lines: %v", err)
	}
	_, err = s.Diff(ctx, "a", 5, 5) // 130 lines
	wantLimit(t, err, promptstore.LimitDiffLines, 100)
}

func TestDiff_repeated_isServedFromTheCache(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "c.db")}, migrations())
	reg := prometheus.NewRegistry()
	s := newStore(t, db, promptstore.Options{Metrics: promptstore.NewMetrics(reg)})
	ctx := ctxT(t)
	for i, system := range []string{"one", "two"} {
		if _, err := s.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "a", BaseVersion: i, Config: cfg(system)}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := s.Diff(ctx, "a", 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if again, err := s.Diff(ctx, "a", 1, 2); err != nil || again != first {
			t.Fatalf("repeat: %q %v", again, err)
		}
	}
	if _, err := s.Diff(ctx, "a", 2, 1); err != nil {
		t.Fatal(err)
	}
	computed, hits := diffCount(t, reg, "miss"), diffCount(t, reg, "hit")
	if computed != 2 || hits != 5 {
		t.Fatalf("%v diffs computed, %v served from the cache; want 2 and 5", computed, hits)
	}
}

// diffCount is promptd_cache_requests_total{cache="diff", result}: a
// miss is one difflib run.
func diffCount(t *testing.T, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "promptd_cache_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["cache"] == "diff" && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// A page of versions carries at most PageMaxBytes of configs (plus the
// one that passes it): ten versions of 900 KB each used to come in one
// answer of 9 MB whatever their size.
func TestListVersions_largeConfigs_pageEndsPastPageMaxBytes(t *testing.T) {
	testenv.ForEachDialect(t, migrations(), func(t *testing.T, db *gorm.DB) {
		s := newStore(t, db, promptstore.Options{})
		ctx := ctxT(t)
		for i := range 10 {
			if _, err := s.CreateVersion(ctx, promptstore.CreateVersionInput{Agent: "big", BaseVersion: i,
				Config: cfg(fmt.Sprintf("%d %s", i, strings.Repeat("x", 900_000)))}); err != nil {
				t.Fatal(err)
			}
		}
		var pages [][]int
		cursor := ""
		for {
			vs, next, err := s.ListVersions(ctx, "big", promptstore.Page{Limit: 100, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			var page []int
			size := 0
			for _, v := range vs {
				page, size = append(page, v.Version), size+len(v.Config)
			}
			if size > promptstore.PageMaxBytes+1_000_000 {
				t.Fatalf("a page of %d bytes: %v", size, page)
			}
			pages = append(pages, page)
			if next == "" {
				break
			}
			cursor = next
		}
		var all []int
		for _, p := range pages {
			all = append(all, p...)
		}
		if len(pages) < 2 || len(all) != 10 || all[0] != 10 || all[9] != 1 {
			t.Fatalf("pages %v; want every version once, newest first, over at least 2 pages", pages)
		}
	})
}
