package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/sqlstore"
	"gorm.io/gorm"
)

// bundle is GET /v1/bundle decoded.
type bundle struct {
	Cursor string `json:"cursor"`
	Agents map[string]struct {
		Versions map[string]struct {
			ContentHash string          `json:"content_hash"`
			Config      json.RawMessage `json:"config"`
		} `json:"versions"`
		Envs map[string]bundleEnv `json:"envs"`
	} `json:"agents"`
}

type bundleEnv struct {
	Version  int   `json:"version"`
	Revision int64 `json:"revision"`
	Revoked  []int `json:"revoked"`
	Release  *struct {
		ID               string `json:"id"`
		State            string `json:"state"`
		Revision         int64  `json:"revision"`
		BaselineVersion  int    `json:"baseline_version"`
		CandidateVersion int    `json:"candidate_version"`
		BasisPoints      int    `json:"basis_points"`
		Stickiness       string `json:"stickiness"`
		Overrides        struct {
			Candidate []string `json:"candidate"`
			Baseline  []string `json:"baseline"`
		} `json:"overrides"`
	} `json:"release"`
}

func (a *app) bundle(query string) (bundle, string) {
	a.t.Helper()
	rec := a.do("GET", "/v1/bundle"+query, runtime, "")
	if rec.Code != 200 {
		a.t.Fatalf("GET /v1/bundle%s: %d %s", query, rec.Code, rec.Body)
	}
	conforms(a.t, "Bundle", rec.Body.Bytes())
	var b bundle
	if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
		a.t.Fatal(err)
	}
	return b, rec.Header().Get("ETag")
}

// settled waits until the sequencer stamped every committed event: the
// bundle's cursor is part of its body, so it moves with every stamp.
func (a *app) settled() {
	a.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int64
		if err := a.db.Raw(`SELECT COUNT(*) FROM audit_events WHERE seq IS NULL`).Scan(&n).Error; err != nil {
			a.t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("%d events still unstamped", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func hashOf(releaseID, key string) string {
	sum := sha256.Sum256([]byte(releaseID + ":" + key))
	return hex.EncodeToString(sum[:])
}

func TestBundle_withPointersAndARelease_holdsWhatLocalResolutionNeeds(t *testing.T) {
	forEachDialect(t, func(t *testing.T, a *app) {
		a.withVersions(3) // support v1..v3, prod at 1
		a.publish("support", "staging", 3, 0)
		a.createVersion("billing", 0, "bill")
		a.publish("billing", "prod", 1, 0)
		a.ok(a.do("POST", prodPath+"/revocations", admin, `{"version": 3, "reason": "bad"}`), 200)
		rel := a.createRelease(`{"candidate_version": 2, "percent": 12.5, "stickiness": "session",
			"overrides": {"candidate": ["alice", "bob"], "baseline": ["carol"]}}`)
		id := rel["id"].(string)

		a.settled()
		b, etag := a.bundle("")
		if !strings.HasPrefix(etag, `"`) || b.Cursor == "" {
			t.Fatalf("etag %q cursor %q", etag, b.Cursor)
		}
		sup := b.Agents["support"]
		prod, staging := sup.Envs["prod"], sup.Envs["staging"]
		if prod.Version != 1 || prod.Revision != a.pointerRevision("support", "prod") || len(prod.Revoked) != 1 || prod.Revoked[0] != 3 || prod.Release == nil {
			t.Fatalf("prod = %+v", prod)
		}
		r := prod.Release
		if r.ID != id || r.State != "running" || r.Revision != 1 || r.BaselineVersion != 1 || r.CandidateVersion != 2 ||
			r.BasisPoints != 1250 || r.Stickiness != "session" {
			t.Fatalf("release = %+v", r)
		}
		wantCand := []string{hashOf(id, "alice"), hashOf(id, "bob")}
		if wantCand[0] > wantCand[1] {
			wantCand[0], wantCand[1] = wantCand[1], wantCand[0]
		}
		if fmt.Sprint(r.Overrides.Candidate) != fmt.Sprint(wantCand) || fmt.Sprint(r.Overrides.Baseline) != fmt.Sprint([]string{hashOf(id, "carol")}) {
			t.Fatalf("overrides = %+v, want candidate %v", r.Overrides, wantCand)
		}
		if staging.Version != 3 || staging.Release != nil || len(staging.Revoked) != 0 {
			t.Fatalf("staging = %+v", staging)
		}
		// Every version a pointer or the release names, and only those.
		if len(sup.Versions) != 3 || sup.Versions["1"].ContentHash == "" || !strings.Contains(string(sup.Versions["2"].Config), `"v2"`) {
			t.Fatalf("versions = %v", sup.Versions)
		}
		if len(b.Agents["billing"].Versions) != 1 {
			t.Fatalf("billing = %+v", b.Agents["billing"])
		}

		// Filters: unknown names are absent.
		f, _ := a.bundle("?agents=support,nobody&envs=staging,qa")
		if len(f.Agents) != 1 || len(f.Agents["support"].Envs) != 1 || len(f.Agents["support"].Versions) != 1 ||
			f.Agents["support"].Envs["staging"].Version != 3 {
			t.Fatalf("filtered = %+v", f)
		}

		// 304 while nothing changes; a change changes the ETag.
		rec := a.do("GET", "/v1/bundle", runtime, "", "If-None-Match", etag)
		if rec.Code != 304 || rec.Body.Len() != 0 || rec.Header().Get("ETag") != etag ||
			rec.Header().Get("Vary") != "Authorization" || rec.Header().Get("Cache-Control") != "private, no-cache" {
			t.Fatalf("If-None-Match = %d %v %q", rec.Code, rec.Header(), rec.Body)
		}
		a.publish("support", "staging", 2, 1)
		a.settled()
		if rec := a.do("GET", "/v1/bundle", runtime, "", "If-None-Match", etag); rec.Code != 200 {
			t.Fatalf("after a switch: %d", rec.Code)
		}
	})
}

func TestBundle_whenANameIsMalformed_is400InvalidID(t *testing.T) {
	a := sqliteApp(t)
	for _, q := range []string{"?agents=a,,b", "?envs=pr%20od", "?agents=", "?envs={x}"} {
		problem(t, a.do("GET", "/v1/bundle"+q, runtime, ""), 400, "invalid_id")
	}
	problem(t, a.do("GET", "/v1/bundle?agents=a&agents=b", runtime, ""), 400, "invalid_field")
	problem(t, a.do("GET", "/v1/bundle", "", ""), 401, "unauthorized")
}

func TestBundle_whenLargerThanTheLimit_is422BundleTooLarge(t *testing.T) {
	a := sqliteApp(t, func(c *apiConfig) { c.BundleMaxBytes = 2048 })
	a.createVersion("support", 0, strings.Repeat("x", 1500))
	a.publish("support", "prod", 1, 0)
	a.bundle("") // about 1.7 KB: fits
	a.createVersion("support", 1, strings.Repeat("y", 1500))
	a.publish("support", "staging", 2, 0)
	p := problem(t, a.do("GET", "/v1/bundle", runtime, ""), 422, "bundle_too_large")
	if p["limit"] != float64(2048) {
		t.Fatalf("problem = %v", p)
	}
	if f, _ := a.bundle("?envs=prod"); len(f.Agents["support"].Versions) != 1 {
		t.Fatalf("prod only = %+v", f)
	}
}

// envState is what a bundle says of the two envs the writer moves.
type envState struct {
	ProdVersion, ProdRelBP, StagingVersion int
	ProdRevision, ProdRelRev, StagingRev   int64
	ProdRelease                            string
}

func stateOf(b bundle) envState {
	sup := b.Agents["support"]
	p, s := sup.Envs["prod"], sup.Envs["staging"]
	st := envState{ProdVersion: p.Version, ProdRevision: p.Revision, StagingVersion: s.Version, StagingRev: s.Revision}
	if p.Release != nil {
		st.ProdRelease, st.ProdRelRev, st.ProdRelBP = p.Release.ID, p.Release.Revision, p.Release.BasisPoints
	}
	return st
}

// TestBundle_underConcurrentWrites_isAlwaysOneStateThatExisted: one writer
// moves a release (create, percent, promote) and two pointers while
// readers fetch bundles. The writer's changes are serial, so the states
// that existed are the ones it saw after each write; every bundle must be
// exactly one of them (no pointer of one moment with a release of
// another), and reflect every event at or below its cursor.
func TestBundle_underConcurrentWrites_isAlwaysOneStateThatExisted(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{MySQLDSN: testenv.MySQLDSN(t)}, migrations())
	a := newApp(t, db)
	a.createVersion("support", 0, "v1")
	a.createVersion("support", 1, "v2")
	a.publish("support", "prod", 1, 0)
	a.publish("support", "staging", 1, 0)

	existed := map[envState]bool{}
	record := func() {
		b, _ := a.bundle("?agents=support") // nobody else writes: this is the state now
		existed[stateOf(b)] = true
	}
	record()
	stop := make(chan struct{})
	var (
		mu       sync.Mutex
		observed []bundle
		wg       sync.WaitGroup
	)
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				rec := httptest.NewRecorder() // not validated against openapi here: the writer's reads are
				a.h.ServeHTTP(rec, req("GET", "/v1/bundle?agents=support", runtime, ""))
				if rec.Code != 200 {
					t.Errorf("bundle: %d %s", rec.Code, rec.Body)
					return
				}
				var b bundle
				if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				observed = append(observed, b)
				mu.Unlock()
			}
		})
	}
	for i := range 12 {
		a.publish("support", "staging", 2-i%2, int64(i+1))
		record()
		env := a.ok(a.do("GET", prodPath, runtime, ""), 200)
		version := int(env["version"].(float64))
		rel := a.ok(a.do("POST", releasesPath, admin, fmt.Sprintf(`{"candidate_version": %d, "percent": 10}`, 3-version)), 201)
		record()
		id := rel["id"].(string)
		a.ok(a.do("PATCH", "/v1/releases/"+id, admin, `{"percent": 50, "expected_revision": 1}`), 200)
		record()
		a.ok(a.do("POST", "/v1/releases/"+id+"/promote", admin, `{"expected_revision": 2}`), 200)
		record()
	}
	close(stop)
	wg.Wait()

	events, _ := a.pollUntil("&agent=support", admin, "0", 12*4)
	for _, b := range observed {
		st := stateOf(b)
		if !existed[st] {
			t.Fatalf("bundle state %+v never existed (cursor %s)", st, b.Cursor)
		}
		var cursor float64
		fmt.Sscan(b.Cursor, &cursor)
		for _, ev := range events {
			if ev["seq"].(float64) > cursor {
				continue
			}
			d, _ := ev["details"].(map[string]any)
			rev, _ := d["revision"].(float64)
			switch {
			case ev["action"] == "pointer.switched" && ev["env"] == "staging" && int64(rev) > st.StagingRev:
				t.Fatalf("bundle at cursor %s has staging revision %d, but event seq %v set %v", b.Cursor, st.StagingRev, ev["seq"], rev)
			case strings.HasPrefix(ev["action"].(string), "release.") && d["release_id"] == st.ProdRelease && int64(rev) > st.ProdRelRev:
				t.Fatalf("bundle at cursor %s has release revision %d, but event seq %v set %v", b.Cursor, st.ProdRelRev, ev["seq"], rev)
			}
		}
	}
	if len(observed) < 10 {
		t.Fatalf("only %d bundles read", len(observed))
	}
	t.Logf("%d bundles read, %d states existed", len(observed), len(existed))
}

// A conditional bundle request that matches is answered before any config
// is read: it costs the small rows only (40 concurrent ones used to build
// the whole body each and took RSS from 2.1 to 5.0 GB). The control: the
// unconditional request does read the configs.
func TestBundle_conditionalThatMatches_readsNoConfig(t *testing.T) {
	// The callback is registered before anything runs on the database
	// (gorm's registration is not safe beside queries).
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")}, migrations())
	var configReads atomic.Int32
	if err := db.Callback().Row().After("gorm:row").Register("test:config_reads", func(tx *gorm.DB) {
		if strings.Contains(tx.Statement.SQL.String(), "config FROM prompt_versions") {
			configReads.Add(1)
		}
	}); err != nil {
		t.Fatal(err)
	}
	a := newApp(t, db)
	a.withVersions(2)
	a.settled()
	_, etag := a.bundle("")
	if configReads.Load() == 0 {
		t.Fatal("the unconditional bundle read no config: the counter is blind")
	}
	configReads.Store(0)
	for range 5 {
		if rec := a.do("GET", "/v1/bundle", runtime, "", "If-None-Match", etag); rec.Code != 304 {
			t.Fatalf("If-None-Match = %d", rec.Code)
		}
	}
	if n := configReads.Load(); n != 0 {
		t.Fatalf("5 matching conditional requests read configs %d times; want 0", n)
	}
	// The same content again, unconditionally: this instance's body of it,
	// with no config read either (clients fetching one bundle share one body).
	first := a.do("GET", "/v1/bundle", runtime, "")
	rec := a.do("GET", "/v1/bundle", runtime, "", "If-None-Match", `"other"`)
	if rec.Code != 200 || rec.Body.String() != first.Body.String() || configReads.Load() != 0 {
		t.Fatalf("a conditional that does not match = %d (same body %v), config reads %d; want the kept body",
			rec.Code, rec.Body.String() == first.Body.String(), configReads.Load())
	}
	// Changed content: a new ETag, its configs read.
	a.publish("support", "staging", 2, 0)
	a.settled()
	if rec := a.do("GET", "/v1/bundle", runtime, ""); rec.Code != 200 || rec.Header().Get("ETag") == etag || configReads.Load() == 0 {
		t.Fatalf("after a change = %d, ETag %s (was %s), config reads %d", rec.Code, rec.Header().Get("ETag"), etag, configReads.Load())
	}
}
