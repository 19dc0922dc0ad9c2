package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	promptd "github.com/promptd/promptd"
	"github.com/promptd/promptd/api"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/prompt"
	"github.com/promptd/promptd/release"
)

const (
	adminToken   = "conformance-admin-secret-0123456789"
	runtimeToken = "conformance-runtime-secret-0123456789"
)

// skipOnServer lists vectors the server test may skip, with why. Empty:
// the overrides the data engineer landed are on the server.
var skipOnServer = map[string]string{}

// Every vector, materialised into a real promptd (versions, pointers,
// revocations, a release with the vector's id, sessions pinned to the
// vector's pin, their turns) on SQLite and MariaDB, answers over HTTP
// what the vector expects: the same JSON, the same bytes as the Go
// evaluator, and the Promptd-Version/Promptd-Release headers of its
// resolution.
func TestVectors_server_answersEveryVector(t *testing.T) {
	f, err := Load(vectorsPath)
	if err != nil {
		t.Fatal(err)
	}
	var passed, total atomic.Int64
	for _, v := range f.Vectors {
		t.Run(v.Name, func(t *testing.T) {
			if why, ok := skipOnServer[v.Name]; ok {
				t.Skip(why)
			}
			testenv.ForEachDialect(t, promptd.Migrations(), func(t *testing.T, db *gorm.DB) {
				total.Add(1)
				serverVector(t, db, v)
				if !t.Failed() {
					passed.Add(1)
				}
			})
		})
	}
	t.Logf("server: %d/%d vector runs (%d vectors, each on SQLite and MariaDB)", passed.Load(), total.Load(), len(f.Vectors))
}

type server struct {
	t   *testing.T
	url string
	db  *gorm.DB
}

func startServer(t *testing.T, db *gorm.DB, ro release.Options) *server {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	rt := promptd.New(db, promptd.Options{Instance: "conformance", Logger: logger, EventFlush: 20 * time.Millisecond, Releases: ro})
	t.Cleanup(func() { _ = rt.Close() })
	reg := prometheus.NewRegistry()
	srv := api.New(api.Config{Logger: logger, Registerer: reg, Gatherer: reg,
		Tokens:  []api.Token{{Name: "ops", Role: api.RoleAdmin, Secret: adminToken}, {Name: "agent", Role: api.RoleRuntime, Secret: runtimeToken}},
		Runtime: rt})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &server{t: t, url: hs.URL, db: db}
}

func serverVector(t *testing.T, db *gorm.DB, v Vector) {
	ids := []string{}
	for _, a := range v.Bundle.Agents {
		for _, e := range a.Envs {
			if e.Release != nil {
				ids = append(ids, e.Release.ID)
			}
		}
	}
	next := 0
	newID := func() string { next++; return ids[next-1] }
	// One promptd writes the bundle's state; a second one, with cold
	// caches, answers (as another instance would): what the API cannot
	// write (a revocation while a release is active, a session's pin) is
	// written in SQL in between.
	s := startServer(t, db, release.Options{NewID: newID})
	if s.materialise(v) {
		return // the publish refused the config with the error assemble expects
	}
	s = startServer(t, db, release.Options{})

	want, err := Answers(v) // the Go evaluator's bytes, not re-indented
	if err != nil {
		t.Fatal(err)
	}
	r := v.Request
	q := url.Values{}
	if r.UserID != "" {
		q.Set("user_id", r.UserID)
	}
	if r.SessionID != "" {
		q.Set("session_id", r.SessionID)
	}
	status, hdr, body := s.do("GET", "/v1/agents/"+url.PathEscape(r.Agent)+"/envs/"+url.PathEscape(r.Env)+"/prompt?"+q.Encode(), runtimeToken, nil)
	s.check("resolve", v, want.Resolve, v.Expect.Resolve, status, hdr, body)

	in := map[string]any{}
	if r.UserID != "" {
		in["user_id"] = r.UserID
	}
	if r.SessionID != "" {
		in["session_id"], in["history"] = r.SessionID, true
	}
	if r.Variables != nil {
		in["variables"] = r.Variables
	}
	if r.MaxHistoryTurns != 0 {
		in["max_history_turns"] = r.MaxHistoryTurns
	}
	if r.Format != "" {
		in["format"] = r.Format
	}
	status, hdr, body = s.do("POST", "/v1/agents/"+url.PathEscape(r.Agent)+"/envs/"+url.PathEscape(r.Env)+"/assemble", runtimeToken, in)
	s.check("assemble", v, want.Assembled, v.Expect.Assembled, status, hdr, body)
}

// check compares one answer with the vector's expectation.
func (s *server) check(what string, v Vector, goBytes, expect json.RawMessage, status int, hdr http.Header, body []byte) {
	t := s.t
	t.Helper()
	var exp map[string]json.RawMessage
	if err := json.Unmarshal(expect, &exp); err != nil {
		t.Fatalf("%s: expectation %s: %v", what, expect, err)
	}
	switch {
	case exp["error"] != nil:
		var p Problem
		_ = json.Unmarshal(exp["error"], &p)
		var got map[string]any
		_ = json.Unmarshal(body, &got)
		if status != p.Status || got["code"] != p.Code || (p.Field != "" && got["field"] != p.Field) || (p.Variable != "" && got["variable"] != p.Variable) {
			t.Errorf("%s: %d %s, want %+v", what, status, body, p)
		}
	case exp["server"] != nil:
		// Only the server can answer; it does, with the session's pin
		// (re-pinned when it was revoked).
		var got struct {
			Version      int  `json:"version"`
			Pinned       bool `json:"pinned"`
			RepinnedFrom *int `json:"repinned_from"`
		}
		_ = json.Unmarshal(body, &got)
		var reason string
		_ = json.Unmarshal(exp["reason"], &reason)
		ok := status == 200 && got.Pinned
		switch reason {
		case "format_unknown": // the server knows every format it writes
			ok = status == 200
		case "pin_revoked":
			ok = ok && (what == "assemble" || got.RepinnedFrom != nil && *got.RepinnedFrom == v.Request.PinnedVersion)
		case "version_missing":
			ok = ok && got.Version == v.Request.PinnedVersion
		}
		if !ok {
			t.Errorf("%s (%s): the server answered %d %s", what, reason, status, body)
		}
	default:
		if status != 200 {
			t.Fatalf("%s: %d %s", what, status, body)
		}
		if !sameJSON(body, expect) {
			t.Errorf("%s: got %s\nwant %s", what, body, expect)
		}
		if !bytes.Equal(bytes.TrimSuffix(body, []byte("\n")), goBytes) {
			t.Errorf("%s: same JSON, other bytes than the Go evaluator:\n server %s\n     go %s", what, body, goBytes)
		}
		var res struct {
			Version int           `json:"version"`
			Release *prompt.Trace `json:"release"`
		}
		_ = json.Unmarshal(v.Expect.Resolve, &res)
		if want := prompt.VersionHeader(v.Request.Agent, v.Request.Env, res.Version); hdr.Get("Promptd-Version") != want {
			t.Errorf("%s: Promptd-Version %q, want %q", what, hdr.Get("Promptd-Version"), want)
		}
		if want := res.Release.ReleaseHeader(); hdr.Get("Promptd-Release") != want {
			t.Errorf("%s: Promptd-Release %q, want %q", what, hdr.Get("Promptd-Release"), want)
		}
	}
}

// materialise writes v's bundle into the server: every version up to the
// highest one named (versions the bundle lacks get a filler config),
// pointers, releases (with the vector's id, overrides and state),
// revocations, and the request's session with its pin and turns.
//
// A config that only a version stored before a publish rule can hold (a
// model without name, a bad model.extra) cannot be written through the
// API: materialise reports true when the publish refused it with the
// code and field the vector expects from assemble (the server says it
// earlier), and fails the test when it refused it otherwise.
func (s *server) materialise(v Vector) (refusedAtPublish bool) {
	if v.Setup != nil {
		// The fragments the configs pin, published first: each version in
		// order, then the env pointers (a config's env reference resolves
		// through them when it is published).
		for _, f := range v.Setup.Fragments {
			for i, body := range f.Versions {
				var in map[string]any
				if err := json.Unmarshal(body, &in); err != nil {
					s.t.Fatal(err)
				}
				in["base_version"] = i
				s.must(201, "POST", "/v1/fragments/"+f.Name+"/versions", adminToken, in)
			}
			for env, n := range f.Envs {
				s.must(201, "PUT", "/v1/fragments/"+f.Name+"/envs/"+env, adminToken, map[string]any{"version": n, "expected_revision": 0})
			}
		}
	}
	names := make([]string, 0, len(v.Bundle.Agents))
	for n := range v.Bundle.Agents {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		a := v.Bundle.Agents[name]
		top := 0
		for n := range a.Versions {
			top = max(top, n)
		}
		if v.Request.Agent == name {
			top = max(top, v.Request.PinnedVersion)
		}
		for n := 1; n <= top; n++ {
			config := json.RawMessage(fmt.Sprintf(`{"system": "filler v%d"}`, n))
			if bv, ok := a.Versions[n]; ok {
				config = bv.Config
			}
			status, _, b := s.do("POST", "/v1/agents/"+name+"/versions", adminToken, map[string]any{"base_version": n - 1, "config": config})
			var got map[string]any
			_ = json.Unmarshal(b, &got)
			if status == 422 && sameError(v.Expect.Assembled, got) {
				return true
			}
			if status != 201 {
				s.t.Fatalf("POST /v1/agents/%s/versions: %d %s, want 201", name, status, b)
			}
			if bv, ok := a.Versions[n]; ok && got["content_hash"] != bv.ContentHash {
				s.t.Fatalf("%s v%d: server content_hash %v, bundle %s", name, n, got["content_hash"], bv.ContentHash)
			}
		}
		for env, e := range a.Envs {
			base := "/v1/agents/" + name + "/envs/" + env
			if r := e.Release; r != nil {
				s.must(201, "PUT", base, adminToken, map[string]any{"version": r.BaselineVersion, "expected_revision": 0})
				body := map[string]any{"candidate_version": r.CandidateVersion, "percent": json.Number(prompt.FormatPercent(r.BasisPoints)),
					"stickiness": r.Stickiness}
				if v.Setup != nil {
					if ids, ok := v.Setup.Overrides[name][env]; ok {
						body["overrides"] = map[string][]string{"candidate": nonNil(ids.Candidate), "baseline": nonNil(ids.Baseline)}
					}
				}
				rel := s.must(201, "POST", base+"/releases", adminToken, body)
				if rel["id"] != r.ID {
					s.t.Fatalf("release id %v, want %s", rel["id"], r.ID)
				}
				if r.State == "paused" {
					s.must(200, "POST", "/v1/releases/"+r.ID+"/pause", adminToken, map[string]any{"expected_revision": 1})
				}
			} else {
				s.must(201, "PUT", base, adminToken, map[string]any{"version": e.Version, "expected_revision": 0})
			}
			for _, n := range e.Revoked {
				if e.Release == nil {
					s.must(200, "POST", base+"/revocations", adminToken, map[string]any{"version": n, "reason": "conformance"})
					continue
				}
				// The API refuses revocations while a release is active
				// (409 release_active); a bundle read in the window of a
				// rollback can still show one, and the resolver must serve
				// the baseline.
				if err := s.db.Exec(`INSERT INTO prompt_revocations (agent, env, version, reason, revoked_by, revoked_at_ms) VALUES (?, ?, ?, ?, ?, ?)`,
					name, env, n, "conformance", "ops", time.Now().UnixMilli()).Error; err != nil {
					s.t.Fatal(err)
				}
			}
		}
	}
	r := v.Request
	if r.SessionID == "" {
		return
	}
	in := map[string]any{"session_id": r.SessionID, "agent": r.Agent, "env": r.Env}
	if r.UserID != "" {
		in["user_id"] = r.UserID
	}
	s.must(201, "POST", "/v1/sessions", runtimeToken, in)
	if r.PinnedVersion > 0 {
		// The pin a session got at create depends on when it was made;
		// the vector names it.
		if err := s.db.Exec(`UPDATE sessions SET pinned_version = ? WHERE session_id = ?`, r.PinnedVersion, r.SessionID).Error; err != nil {
			s.t.Fatal(err)
		}
	}
	if len(r.History) > 0 {
		s.must(201, "POST", "/v1/sessions/"+r.SessionID+"/turns", runtimeToken, map[string]any{"expected_revision": 0, "turns": r.History})
	}
	return false
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *server) must(status int, method, path, token string, body any) map[string]any {
	s.t.Helper()
	got, _, b := s.do(method, path, token, body)
	if got != status {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, got, b, status)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

func (s *server) do(method, path, token string, body any) (int, http.Header, []byte) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // turns are stored as sent
		if err := enc.Encode(body); err != nil {
			s.t.Fatal(err)
		}
		rd = &buf
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// sameError: the problem got is the error expect names (its code and
// field).
func sameError(expect json.RawMessage, got map[string]any) bool {
	var e struct {
		Error *struct {
			Code  string `json:"code"`
			Field string `json:"field"`
		} `json:"error"`
	}
	if json.Unmarshal(expect, &e) != nil || e.Error == nil {
		return false
	}
	return got["code"] == e.Error.Code && got["field"] == e.Error.Field
}
