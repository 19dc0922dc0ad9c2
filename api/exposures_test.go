package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promptd/promptd"
)

const exposuresPath = "/v1/agents/support/envs/prod/exposures"

func at(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339Nano) }

func (a *app) rowCount(table string) int64 {
	a.t.Helper()
	var n int64
	if err := a.db.Raw("SELECT COUNT(*) FROM " + table).Scan(&n).Error; err != nil {
		a.t.Fatal(err)
	}
	return n
}

// exposureSums reads an env's exposures (every page) summed by
// "release_id/version/arm".
func (a *app) exposureSums(query string) map[string]int64 {
	a.t.Helper()
	out := map[string]int64{}
	next := ""
	for {
		q := exposuresPath + "?limit=2" + query
		if next != "" {
			q += "&cursor=" + next
		}
		l := a.ok(a.do("GET", q, runtime, ""), 200)
		for _, it := range l["items"].([]any) {
			m := it.(map[string]any)
			out[fmt.Sprintf("%v/%v/%v", m["release_id"], m["version"], m["arm"])] += int64(m["count"].(float64))
		}
		n, _ := l["next"].(string)
		if n == "" {
			return out
		}
		next = n
	}
}

func TestExposures_concurrentReports_sumExactly(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(2)
		id := a.createRelease(`{"candidate_version": 2, "percent": 10}`)["id"].(string)
		// item i: the candidate (v2), the baseline (v1), or v1 without the release
		kinds := []struct {
			version  int
			rel, arm string
		}{{2, `"release_id": "` + id + `", "arm": "candidate", `, "candidate"}, {1, `"release_id": "` + id + `", "arm": "baseline", `, "baseline"}, {1, "", ""}}
		const workers, batches = 6, 8
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for b := range batches {
					items := make([]string, 0, 50)
					for i := range 50 {
						k := kinds[i%3]
						items = append(items, fmt.Sprintf(`{"agent": "support", "env": "prod", "version": %d, %s"count": %d, "at": %q}`,
							k.version, k.rel, 1+i, at(-time.Duration(i%2)*time.Minute)))
					}
					rec := httptest.NewRecorder()
					a.h.ServeHTTP(rec, req("POST", "/v1/exposures", runtime, `{"items": [`+strings.Join(items, ",")+`]}`,
						"Idempotency-Key", fmt.Sprintf("w%d-b%d", w, b)))
					if rec.Code != 200 || rec.Body.String() != "{\"accepted\":50}\n" {
						t.Errorf("report: %d %s", rec.Code, rec.Body)
						return
					}
				}
			})
		}
		wg.Wait()
		want := map[string]int64{}
		for i := range 50 {
			k, rel, arm := kinds[i%3], id, kinds[i%3].arm
			if k.arm == "" {
				rel, arm = "<nil>", "<nil>"
			}
			want[fmt.Sprintf("%s/%d/%s", rel, k.version, arm)] += int64(workers * batches * (1 + i))
		}
		if got := a.exposureSums("&from=" + at(-time.Hour)); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("sums = %v, want %v", got, want)
		}
		if n := a.rowCount("exposures"); n > 6 { // 3 versions x at most 2 minutes (3 when a minute turns mid-test)
			if n > 9 {
				t.Fatalf("%d rows: not aggregated per minute", n)
			}
		}
	})
}

func TestExposures_whenBad_are4xxAndWriteNothing(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(1)
		item := func(over string) string {
			base := map[string]any{"agent": "support", "env": "prod", "version": 1, "count": 1, "at": at(0)}
			var o map[string]any
			_ = json.Unmarshal([]byte(over), &o)
			for k, v := range o {
				if v == nil {
					delete(base, k)
				} else {
					base[k] = v
				}
			}
			b, _ := json.Marshal(base)
			return string(b)
		}
		p := problem(t, a.do("POST", "/v1/exposures", runtime, `{"items": [`+item(`{}`)+`]}`), 400, "invalid_field")
		if p["field"] != "Idempotency-Key" {
			t.Fatalf("without a key: %v", p)
		}
		many := strings.TrimSuffix(strings.Repeat(item(`{}`)+",", 1001), ",")
		for i, c := range []struct{ body, code, field string }{
			{`{"items": []}`, "invalid_field", "items"},
			{`{"items": [` + many + `]}`, "invalid_field", "items"},
			{`{"items": [` + item(`{}`) + `,` + item(`{"count": 0}`) + `]}`, "invalid_field", "items[1].count"},
			{`{"items": [` + item(`{"count": 1000001}`) + `]}`, "invalid_field", "items[0].count"},
			{`{"items": [` + item(`{"at": "`+at(-25*time.Hour)+`"}`) + `]}`, "invalid_field", "items[0].at"},
			{`{"items": [` + item(`{"at": "`+at(6*time.Minute)+`"}`) + `]}`, "invalid_field", "items[0].at"},
			{`{"items": [` + item(`{"at": "yesterday"}`) + `]}`, "invalid_field", "items[0].at"},
			{`{"items": [` + item(`{"arm": "candidate"}`) + `]}`, "invalid_field", "items[0].release_id"},
			{`{"items": [` + item(`{"release_id": "rel_1", "arm": "treatment"}`) + `]}`, "invalid_field", "items[0].arm"},
			{`{"items": [` + item(`{"version": 0}`) + `]}`, "invalid_field", "items[0].version"},
			{`{"items": [` + item(`{"agent": "no{pe}"}`) + `]}`, "invalid_id", "items[0].agent"},
			{`{"items": [` + item(`{"env": null}`) + `]}`, "invalid_id", "items[0].env"},
			{`{"items": [` + item(`{"colour": "red"}`) + `]}`, "invalid_field", "items[0].colour"},
		} {
			p := problem(t, a.do("POST", "/v1/exposures", runtime, c.body, "Idempotency-Key", fmt.Sprintf("bad-%d", i)), 400, c.code)
			if p["field"] != c.field {
				t.Errorf("case %d: field %v, want %s", i, p["field"], c.field)
			}
		}
		if n := a.rowCount("exposures"); n != 0 {
			t.Fatalf("%d rows written", n)
		}
		problem(t, a.do("GET", exposuresPath+"?from="+at(-8*24*time.Hour), runtime, ""), 400, "invalid_field")
		problem(t, a.do("GET", exposuresPath+"?from="+at(time.Hour), runtime, ""), 400, "invalid_field")
		problem(t, a.do("GET", exposuresPath+"?to=soon", runtime, ""), 400, "invalid_field")
		problem(t, a.do("GET", exposuresPath+"?cursor=zzz", runtime, ""), 400, "invalid_field")
	})
}

func TestExposures_replayWithTheSameKey_countsOnce(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(1)
		body := `{"items": [{"agent": "support", "env": "prod", "version": 1, "count": 7, "at": "` + at(0) + `"}]}`
		first := a.do("POST", "/v1/exposures", runtime, body, "Idempotency-Key", "k1")
		a.ok(first, 200)
		again := a.do("POST", "/v1/exposures", runtime, body, "Idempotency-Key", "k1")
		if again.Code != 200 || again.Header().Get("Idempotent-Replayed") != "true" || again.Body.String() != first.Body.String() {
			t.Fatalf("replay = %d %v %s", again.Code, again.Header(), again.Body)
		}
		problem(t, a.do("POST", "/v1/exposures", runtime, strings.Replace(body, `"count": 7`, `"count": 8`, 1),
			"Idempotency-Key", "k1"), 422, "idempotency_key_reused")
		if got := a.exposureSums(""); got["<nil>/1/<nil>"] != 7 || len(got) != 1 {
			t.Fatalf("sums = %v", got)
		}
	})
}

func TestExposures_serverResolves_areCountedWithTheirArm(t *testing.T) {
	a := sqliteApp(t)
	a.withVersions(2)
	rel := a.createRelease(`{"candidate_version": 2, "percent": 100}`)
	for range 5 {
		a.ok(a.do("GET", prodPath+"/prompt?user_id=u1", runtime, ""), 200)
	}
	a.ok(a.do("POST", prodPath+"/assemble", runtime, `{"user_id": "u1"}`), 200)
	a.ok(a.do("GET", prodPath+"/prompt", runtime, ""), 200) // no key: baseline
	if err := a.rt.Exposures.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := a.exposureSums("")
	if got[rel["id"].(string)+"/2/candidate"] != 6 || got[rel["id"].(string)+"/1/baseline"] != 1 {
		t.Fatalf("sums = %v", got)
	}
}

func TestExposures_countedBeforeACleanClose_areWritten(t *testing.T) {
	a := sqliteApp(t)
	rt := promptd.New(a.db, promptd.Options{Instance: "closing"})
	for range 1000 {
		rt.Exposures.Count("support", "prod", 3, "", "")
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	var n int64
	a.db.Raw(`SELECT COALESCE(SUM(count), 0) FROM exposures WHERE version = 3`).Scan(&n)
	if n != 1000 {
		t.Fatalf("after Close: %d of 1000 written", n)
	}
}

func TestOutcomes_validReports_areStoredOnceWithTheirPeriod(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(2)
		rel := a.createRelease(`{"candidate_version": 2, "percent": 10}`)
		id := rel["id"].(string)
		item := func(oid, arm string, v int, when string) string {
			return fmt.Sprintf(`{"outcome_id": %q, "agent": "support", "env": "prod", "release_id": %q, "arm": %q, "version": %d,
				"reason": "bucket", "success": true, "score": 0.5, "latency_ms": 120, "at": %q}`, oid, id, arm, v, when)
		}
		rec := a.do("POST", "/v1/outcomes", runtime, `{"items": [`+item("o1", "candidate", 2, at(0))+`,`+item("o2", "baseline", 1, at(0))+`]}`)
		if got := a.ok(rec, 200); got["accepted"] != float64(2) || got["duplicates"] != float64(0) {
			t.Fatalf("first = %v", got)
		}
		time.Sleep(5 * time.Millisecond)
		a.ok(a.do("PATCH", "/v1/releases/"+id, admin, `{"percent": 50, "expected_revision": 1}`), 200)
		time.Sleep(5 * time.Millisecond)
		rec = a.do("POST", "/v1/outcomes", runtime, `{"items": [`+item("o1", "candidate", 2, at(0))+`,`+item("o3", "candidate", 2, at(0))+`,`+
			`{"agent": "support", "env": "prod", "release_id": "`+id+`", "arm": "baseline", "version": 1, "reason": "override", "success": false, "at": "`+at(0)+`"}]}`,
			"Idempotency-Key", "out-1")
		if got := a.ok(rec, 200); got["accepted"] != float64(2) || got["duplicates"] != float64(1) {
			t.Fatalf("second = %v", got)
		}
		var rows []struct {
			OutcomeID *string
			Period    int
			PeriodBp  int
			Success   int
			Token     string
		}
		a.db.Raw(`SELECT outcome_id, period, period_bp, success, token FROM release_outcomes ORDER BY id`).Scan(&rows)
		if len(rows) != 4 || rows[0].Period != 0 || rows[0].PeriodBp != 1000 || rows[2].Period != 1 || rows[2].PeriodBp != 5000 ||
			rows[3].OutcomeID != nil || rows[3].Success != 0 || rows[0].Token != "agent" {
			t.Fatalf("rows = %+v", rows)
		}
	})
}

func TestOutcomes_whenAnItemIsInvalid_rejectTheBatch(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(2)
		a.publish("support", "staging", 1, 0)
		id := a.createRelease(`{"candidate_version": 2, "percent": 10}`)["id"].(string)
		good := fmt.Sprintf(`{"agent": "support", "env": "prod", "release_id": %q, "arm": "candidate", "version": 2, "reason": "bucket", "success": true, "at": %q}`, id, at(0))
		for i, c := range []struct{ bad, field string }{
			{strings.Replace(good, `"env": "prod"`, `"env": "staging"`, 1), "items[1].release_id"},
			{strings.Replace(good, id, "rel_nope", 1), "items[1].release_id"},
			{strings.Replace(good, `"version": 2`, `"version": 1`, 1), "items[1].version"},
			{strings.Replace(good, at(0)[:4], "2020", 1), "items[1].at"},
			{strings.Replace(good, `"reason": "bucket"`, `"reason": "luck"`, 1), "items[1].reason"},
			{strings.Replace(good, `"success": true`, `"score": 1.5, "success": true`, 1), "items[1].score"},
			{strings.Replace(good, `"success": true, `, ``, 1), "items[1].success"},
			{strings.Replace(good, `"arm": "candidate", `, ``, 1), "items[1].arm"},
		} {
			p := problem(t, a.do("POST", "/v1/outcomes", runtime, `{"items": [`+good+`,`+c.bad+`]}`), 400, "invalid_field")
			if p["field"] != c.field {
				t.Errorf("case %d: field %v, want %s (%s)", i, p["field"], c.field, p["detail"])
			}
		}
		if n := a.rowCount("release_outcomes"); n != 0 {
			t.Fatalf("%d rows written", n)
		}
	})
}

// An exposure names what was really served: an existing agent and env,
// the release of that agent and env with the arm's own version, or,
// without a release, the version the env's pointer served. One item that
// does not is a 400 naming it, and nothing of the batch is written.
func TestExposures_notMatchingRealData_areRefusedWhole(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(3) // support v1..v3, prod at 1
		a.publish("support", "staging", 1, 0)
		id := a.createRelease(`{"candidate_version": 2, "percent": 10}`)["id"].(string)
		now := at(0)
		plain := `{"agent": "support", "env": "prod", "version": 1, "count": 5, "at": "` + now + `"}`
		cand := `{"agent": "support", "env": "prod", "version": 2, "release_id": "` + id + `", "arm": "candidate", "count": 3, "at": "` + now + `"}`
		base := strings.Replace(strings.Replace(cand, `"version": 2`, `"version": 1`, 1), "candidate", "baseline", 1)
		for i, c := range []struct{ bad, code, field string }{
			{strings.Replace(plain, `"support"`, `"ghost"`, 1), "invalid_field", "items[1].agent"},
			{strings.Replace(plain, `"prod"`, `"dev"`, 1), "invalid_field", "items[1].env"},
			{strings.Replace(plain, `"version": 1`, `"version": 3`, 1), "invalid_field", "items[1].version"},
			{strings.Replace(plain, `"version": 1`, `"version": 99`, 1), "invalid_field", "items[1].version"},
			{strings.Replace(cand, id, "rel_nope", 1), "invalid_field", "items[1].release_id"},
			{strings.Replace(cand, `"prod"`, `"staging"`, 1), "invalid_field", "items[1].release_id"},
			{strings.Replace(cand, `"version": 2`, `"version": 1`, 1), "invalid_field", "items[1].version"},
			{strings.Replace(base, `"version": 1`, `"version": 3`, 1), "invalid_field", "items[1].version"},
			{strings.Replace(plain, `"count": 5`, `"count": 1000000000`, 1), "invalid_field", "items[1].count"},
			{strings.Replace(plain, `"count": 5`, `"count": 1e9`, 1), "invalid_field", "items[1].count"},
		} {
			p := problem(t, a.do("POST", "/v1/exposures", runtime, `{"items": [`+plain+`,`+c.bad+`]}`,
				"Idempotency-Key", fmt.Sprintf("real-%d", i)), 400, c.code)
			if p["field"] != c.field {
				t.Errorf("case %d: field %v, want %s (%s)", i, p["field"], c.field, p["detail"])
			}
		}
		if n := a.rowCount("exposures"); n != 0 {
			t.Fatalf("%d rows written by refused batches", n)
		}
		// The control: the same items, all real, are counted.
		a.ok(a.do("POST", "/v1/exposures", runtime, `{"items": [`+plain+`,`+cand+`,`+base+`]}`, "Idempotency-Key", "real-ok"), 200)
		if got := a.exposureSums(""); got["<nil>/1/<nil>"] != 5 || got[id+"/2/candidate"] != 3 || got[id+"/1/baseline"] != 3 {
			t.Fatalf("sums = %v", got)
		}
	})
}

// A version the env's pointer left after the item's at was served then:
// an SDK's late report of it is counted.
func TestExposures_ofAVersionThePointerLeftSinceAt_areCounted(t *testing.T) {
	a := sqliteApp(t)
	a.withVersions(2) // prod at 1
	before := at(-time.Minute)
	a.publish("support", "prod", 2, 1)
	old := `{"agent": "support", "env": "prod", "version": 1, "count": 2, "at": "` + before + `"}`
	cur := `{"agent": "support", "env": "prod", "version": 2, "count": 1, "at": "` + at(0) + `"}`
	a.ok(a.do("POST", "/v1/exposures", runtime, `{"items": [`+old+`,`+cur+`]}`, "Idempotency-Key", "late"), 200)
	// The control: a version the pointer never held since at is refused.
	// (at 2 min ahead: past the 30 s of clock skew allowed after the move)
	stale := `{"agent": "support", "env": "prod", "version": 1, "count": 2, "at": "` + at(2*time.Minute) + `"}`
	p := problem(t, a.do("POST", "/v1/exposures", runtime, `{"items": [`+stale+`]}`, "Idempotency-Key", "stale"), 400, "invalid_field")
	if p["field"] != "items[0].version" {
		t.Fatalf("stale version: %v", p)
	}
}
