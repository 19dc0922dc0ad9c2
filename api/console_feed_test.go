package api_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/promptd/promptd/api"
)

// seedLongFeed writes 350 versions, then defines board "tasks" with one
// record: 353 events, of which the board's are the last two. It returns
// the feed's head.
func seedLongFeed(t *testing.T, a *app) int64 {
	t.Helper()
	items := make([]string, 350)
	for i := range items {
		items[i] = fmt.Sprintf(`{"agent": "bot", "base_version": %d, "config": {"system": "v%d"}}`, i, i+1)
	}
	a.ok(a.do("POST", "/v1/import", admin, `{"mode": "partial", "items": [`+strings.Join(items, ",")+`]}`, "Idempotency-Key", "seed"), 200)
	a.ok(a.do("POST", "/v1/boards/tasks/records", runtime, `{"payload": {}}`, "Idempotency-Key", "r1"), 201)
	deadline := time.Now().Add(10 * time.Second)
	// 350 versions, the import, the board's definition, the record. The
	// feed reads the store in the background: wait until it has read all
	// of them, or the head this returns is one the answer has passed.
	for a.rt.Feed.Head() < 353 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	head := a.rt.Feed.Head()
	if head != 353 {
		t.Fatalf("feed head %d, want 353 events", head)
	}
	return head
}

// The console's board page asks the feed for the board's changes since
// the oldest kept event (GET /v1/boards/{board}/changes?since=0): the
// board's events are read by the board's index, not found among the
// others, so one answer has them all and reaches the head.
func TestBoardChanges_overALongFeed_readOnlyTheBoardsEvents_inOneAnswer(t *testing.T) {
	a := sqliteApp(t, func(cfg *api.Config) { cfg.FeedScanMax = 100 })
	head := seedLongFeed(t, a)
	page := a.ok(a.do("GET", "/v1/boards/tasks/changes?since=0&wait_ms=0", runtime, ""), 200)
	var found []string
	for _, e := range page["items"].([]any) {
		found = append(found, e.(map[string]any)["action"].(string))
	}
	if strings.Join(found, ",") != "board.defined,board.record_created" || page["next"] != fmt.Sprint(head) {
		t.Fatalf("one answer = %v, next %v; want the board's definition and its record's creation, next %d (the head)",
			found, page["next"], head)
	}
}

// A filter that matches little over the whole feed (an action) looks at a
// bounded slice of the feed per answer, and next still advances.
func TestEvents_actionFilterOverALongFeed_scansABoundedSliceAndAdvances(t *testing.T) {
	a := sqliteApp(t, func(cfg *api.Config) { cfg.FeedScanMax = 100 })
	head := seedLongFeed(t, a)
	var found []string
	next, answers := "0", 0
	for answers < 20 {
		page := a.ok(a.do("GET", "/v1/events?since="+next+"&wait_ms=0&actions=board.*", runtime, ""), 200)
		answers++
		var n int64
		fmt.Sscan(page["next"].(string), &n)
		var prev int64
		fmt.Sscan(next, &prev)
		if n-prev > 100 {
			t.Fatalf("one answer scanned from %d to %d: more than FeedScanMax (100) events", prev, n)
		}
		for _, e := range page["items"].([]any) {
			found = append(found, e.(map[string]any)["action"].(string))
		}
		next = page["next"].(string)
		if n >= head {
			break
		}
	}
	if strings.Join(found, ",") != "board.defined,board.record_created" {
		t.Errorf("the board events = %v, want the definition and the record's creation, once each", found)
	}
	if answers < 4 {
		t.Errorf("%d answers covered %d events with FeedScanMax 100", answers, head)
	}
}
