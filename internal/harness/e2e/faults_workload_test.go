package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// workload is the mixed client load of the fault suite. Its workers spread
// requests over nodes (URLs read through a function: a restarted promptd
// keeps its address) and record every op in h.
type workload struct {
	nodes  func() []string
	h      *history
	stop   chan struct{}
	prefix string // makes written values unique across processes
	seq    atomic.Int64
	client atomic.Int64
}

func (w *workload) stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

func (w *workload) node(i int) (int, string) {
	ns := w.nodes()
	n := ((i % len(ns)) + len(ns)) % len(ns)
	return n, ns[n]
}

func (w *workload) unique(what string) string {
	return fmt.Sprintf("%s %s %d", w.prefix, what, w.seq.Add(1))
}

func (w *workload) newClient() int { return int(w.client.Add(1)) }

// do is call, recording every 5xx other than 503 (even one a retry
// recovered from) as a kHTTP500 op: the suite's "no 500" count.
func (w *workload) do(method, url, token string, body any, hdr ...string) (resp, error) {
	r, err := call(method, url, token, body, hdr...)
	if err == nil && r.Status >= 500 && r.Status != 503 {
		w.h.add(op{Kind: kHTTP500, Status: r.Status, Text: fmt.Sprintf("%s %s: %.300s", method, url, r.Body), Call: now(), Ret: now()})
	}
	return r, err
}

// pause after a failed request, so a down store is not hammered.
func (w *workload) backoff() { time.Sleep(time.Duration(20+rand.IntN(30)) * time.Millisecond) }

// write sends a write with an Idempotency-Key, resending it (same key, same
// body, next node) after a transport error or a 5xx, at most three times.
func (w *workload) write(o *op, start int, method, path string, body any, hdr ...string) resp {
	key := newKey()
	hdr = append(hdr, "Idempotency-Key", key)
	var r resp
	var err error
	ambiguous := false // an earlier try may have committed
	o.Call = now()
	for try := 0; try < 3; try++ {
		n, url := w.node(start + try)
		o.Node = n
		r, err = w.do(method, url+path, runtimeTokenFor(path), body, hdr...)
		if err == nil && r.Status < 500 {
			break
		}
		ambiguous = true
		if w.stopped() {
			break
		}
		w.backoff()
	}
	o.finish(r, err)
	if ambiguous && !o.Unknown && r.Status >= 400 && method == "PATCH" {
		// A PATCH takes no Idempotency-Key (it is a compare-and-set on
		// the revision): when the try whose answer was lost committed,
		// the retry is refused by that very write (409), so the
		// refusal does not say the write did not happen.
		o.Unknown = true
	}
	return r
}

// runtimeTokenFor picks the role a path needs.
func runtimeTokenFor(path string) string {
	if strings.HasPrefix(path, "/v1/sessions") || strings.HasPrefix(path, "/v1/leases") {
		return runtimeToken
	}
	return adminToken
}

// read sends one GET and records its op (reads are not retried).
func (w *workload) read(o *op, n int, path string) resp {
	_, url := w.node(n)
	o.Node, o.Call = n, now()
	r, err := w.do("GET", url+path, runtimeToken, nil)
	o.finish(r, err)
	return r
}

type sessionView struct {
	Revision  int64
	Fence     int64
	NextSince *int64 `json:"next_since"`
	Turns     []struct {
		Seq     int64
		Content string
	}
}

// readSession records a kRead of session id with turns after since.
func (w *workload) readSession(client, n int, id string, since int64, withFence bool) (sessionView, bool) {
	o := op{Kind: kRead, Key: id, Client: client, Since: since}
	r := w.read(&o, n, fmt.Sprintf("/v1/sessions/%s?since=%d&limit=500", id, since))
	var v sessionView
	if o.ok() {
		if err := json.Unmarshal(r.Body, &v); err != nil {
			o.Unknown = true
		}
		o.Rev, o.Partial = v.Revision, v.NextSince != nil
		o.Texts = []string{}
		for _, t := range v.Turns {
			o.Texts = append(o.Texts, t.Content)
		}
		if withFence {
			o.Fence = v.Fence
		}
	}
	w.h.add(o)
	return v, o.ok()
}

// appender: unfenced appends with expected_revision on session id, reading
// the revision (a kRead) before each.
func (w *workload) appender(id string, i0 int) {
	client := w.newClient()
	var known int64
	for i := i0; !w.stopped(); i++ {
		v, ok := w.readSession(client, i, id, max(known-3, 0), false)
		if !ok {
			w.backoff()
			continue
		}
		known = v.Revision
		o := op{Kind: kAppend, Key: id, Client: client, ExpRev: v.Revision, Text: w.unique(id)}
		r := w.write(&o, i+1, "POST", "/v1/sessions/"+id+"/turns",
			map[string]any{"expected_revision": v.Revision, "turns": []map[string]any{{"role": "user", "content": o.Text}}})
		if o.ok() {
			var out struct {
				Revision int64
				Seqs     []int64
			}
			_ = json.Unmarshal(r.Body, &out)
			o.Rev = out.Revision
			if len(out.Seqs) == 1 {
				o.Seq = out.Seqs[0]
			}
		}
		w.h.add(o)
	}
}

// leaseWorker takes the session lease (wait, sometimes preempt), appends up
// to four turns with its fence, and lets go; its grants, reads (with the
// row fence) and fenced appends are recorded.
func (w *workload) leaseWorker(id, holder string, i0 int) {
	client := w.newClient()
	for i := i0; !w.stopped(); i++ {
		mode := "wait"
		if rand.IntN(5) == 0 {
			mode = "preempt"
		}
		g := op{Kind: kGrant, Key: id, Client: client}
		n, url := w.node(i)
		g.Node, g.Call = n, now()
		r, err := w.do("POST", url+"/v1/sessions/"+id+"/lease", runtimeToken,
			map[string]any{"holder": holder, "ttl_ms": 1000, "wait_ms": 1500, "mode": mode})
		g.finish(r, err)
		var l struct {
			Token string
			Fence int64
		}
		if g.ok() {
			_ = json.Unmarshal(r.Body, &l)
			g.Fence = l.Fence
		}
		w.h.add(g)
		if !g.ok() {
			w.backoff()
			continue
		}
		for k := 0; k < 4 && !w.stopped(); k++ {
			v, ok := w.readSession(client, i+k, id, 0, true)
			if !ok {
				w.backoff()
				continue
			}
			o := op{Kind: kAppend, Key: id, Client: client, ExpRev: v.Revision, Fence: l.Fence, Text: w.unique(id)}
			r := w.write(&o, i+k+1, "POST", "/v1/sessions/"+id+"/turns", map[string]any{"expected_revision": v.Revision,
				"fence": l.Fence, "turns": []map[string]any{{"role": "assistant", "content": o.Text}}})
			if o.ok() {
				var out struct {
					Revision int64
					Seqs     []int64
				}
				_ = json.Unmarshal(r.Body, &out)
				o.Rev = out.Revision
				if len(out.Seqs) == 1 {
					o.Seq = out.Seqs[0]
				}
			}
			w.h.add(o)
			if o.Code == "stale_fence" || o.Code == "lease_lost" {
				break
			}
		}
		rel := op{Kind: kOther, Key: "release " + id, Client: client}
		_, url = w.node(i + 1)
		rel.Call = now()
		rr, err := w.do("DELETE", url+"/v1/sessions/"+id+"/lease", runtimeToken, nil, "Lease-Token", l.Token)
		rel.finish(rr, err)
		w.h.add(rel)
	}
}

// stateWriter: blackboard puts with expected_revision on session/key,
// reading the entry (a kSRead per key) before each.
func (w *workload) stateWriter(id string, keys []string, i0 int) {
	client := w.newClient()
	for i := i0; !w.stopped(); i++ {
		entries, ok := w.readState(client, i, id, keys)
		if !ok {
			w.backoff()
			continue
		}
		key := keys[rand.IntN(len(keys))]
		o := op{Kind: kPut, Key: id + "/" + key, Client: client, ExpRev: entries[key], Text: w.unique(key)}
		r := w.write(&o, i+1, "PUT", "/v1/sessions/"+id+"/state/"+key,
			map[string]any{"expected_revision": o.ExpRev, "value": o.Text})
		if o.ok() {
			var out struct{ Revision int64 }
			_ = json.Unmarshal(r.Body, &out)
			o.Rev = out.Revision
		}
		w.h.add(o)
	}
}

// readState records one kSRead per key (absent: revision 0, "").
func (w *workload) readState(client, n int, id string, keys []string) (map[string]int64, bool) {
	o := op{Kind: kSRead, Client: client}
	r := w.read(&o, n, "/v1/sessions/"+id+"/state")
	var all map[string]struct {
		Value    json.RawMessage
		Revision int64
	}
	if o.ok() {
		if err := json.Unmarshal(r.Body, &all); err != nil {
			o.Unknown = true
		}
	}
	revs := map[string]int64{}
	for _, k := range keys {
		ko := o
		ko.Key = id + "/" + k
		if e, found := all[k]; found && o.ok() {
			var s string
			_ = json.Unmarshal(e.Value, &s)
			ko.Rev, ko.Text = e.Revision, s
		}
		revs[k] = ko.Rev
		w.h.add(ko)
	}
	return revs, o.ok()
}

// switcher moves agent/env to random versions 1..n with expected_revision,
// reading the pointer from SQL (a kPRead) first, and resolves on the same
// node right after each acknowledged move (read-your-writes).
func (w *workload) switcher(agent, env string, n, i0 int) {
	client := w.newClient()
	key := agent + "/" + env
	for i := i0; !w.stopped(); i++ {
		p := op{Kind: kPRead, Key: key, Client: client}
		r := w.read(&p, i, "/v1/agents/"+agent+"/envs/"+env)
		var e struct{ Version, Revision int64 }
		if p.ok() {
			_ = json.Unmarshal(r.Body, &e)
			p.Rev, p.Version = e.Revision, int(e.Version)
		}
		w.h.add(p)
		if !p.ok() {
			w.backoff()
			continue
		}
		to := 1 + rand.IntN(n-1)
		if to >= int(e.Version) {
			to++
		}
		o := op{Kind: kCAS, Key: key, Client: client, ExpRev: e.Revision, Version: to}
		// Pointer moves are not idempotent by key; a resend after an unknown
		// outcome would only meet its own revision, so send once.
		nd, url := w.node(i + 1)
		o.Node, o.Call = nd, now()
		cr, err := w.do("PUT", url+"/v1/agents/"+agent+"/envs/"+env, adminToken,
			map[string]any{"version": to, "expected_revision": e.Revision})
		o.finish(cr, err)
		if o.ok() {
			var out struct{ Revision int64 }
			_ = json.Unmarshal(cr.Body, &out)
			o.Rev = out.Revision
		}
		w.h.add(o)
		if o.ok() {
			w.resolve(client, nd, agent, env, fmt.Sprint("ryw-", i), o.Rev)
		} else if o.Unknown {
			w.backoff()
		}
	}
}

// resolve records one resolve of agent/env on node n.
func (w *workload) resolve(client, n int, agent, env, user string, ryw int64) op {
	o := op{Kind: kResolve, Key: agent + "/" + env, Client: client, RYW: ryw}
	o.Call = now()
	var r resp
	var err error
	// A runtime with several promptd addresses tries the next one when a
	// connection fails (a killed node); read-your-writes probes stay on the
	// node that made the change.
	for try := 0; try < 3; try++ {
		var url string
		o.Node, url = w.node(n + try)
		r, err = w.do("GET", url+"/v1/agents/"+agent+"/envs/"+env+"/prompt?user_id="+user, runtimeToken, nil)
		if err == nil || ryw > 0 || w.stopped() {
			break
		}
	}
	o.finish(r, err)
	if o.ok() {
		var p prompt
		_ = json.Unmarshal(r.Body, &p)
		o.Version = p.Version
	}
	w.h.add(o)
	return o
}

// resolver resolves the given agent/env pairs round robin, and sometimes
// assembles (with a session's history).
func (w *workload) resolver(targets [][2]string, assembleSession string, i0 int) {
	client := w.newClient()
	for i := i0; !w.stopped(); i++ {
		t := targets[i%len(targets)]
		if assembleSession != "" && i%7 == 0 {
			o := op{Kind: kOther, Key: "assemble", Client: client}
			n, url := w.node(i)
			o.Node, o.Call = n, now()
			r, err := w.do("POST", url+"/v1/agents/"+t[0]+"/envs/"+t[1]+"/assemble", runtimeToken,
				map[string]any{"user_id": fmt.Sprint("u", i), "variables": map[string]any{}})
			o.finish(r, err)
			w.h.add(o)
			continue
		}
		w.resolve(client, i, t[0], t[1], fmt.Sprint("u", i), 0)
	}
}

// publisher creates versions of agent with base_version; it learns the
// latest version again after a conflict or an unknown outcome.
func (w *workload) publisher(agent string, i0 int, acked *sync.Map) {
	client := w.newClient()
	base := 0
	for i := i0; !w.stopped(); i++ {
		text := w.unique(agent)
		o := op{Kind: kOther, Key: "create " + agent, Client: client, ExpRev: int64(base), Text: text}
		r := w.write(&o, i, "POST", "/v1/agents/"+agent+"/versions",
			map[string]any{"base_version": base, "config": map[string]any{"system": text}})
		var v struct {
			Version       int
			LatestVersion int `json:"latest_version"`
		}
		_ = json.Unmarshal(r.Body, &v)
		switch {
		case o.ok():
			o.Version = v.Version
			acked.Store(agent+"\x00"+text, v.Version)
			base = v.Version
		case o.Code == "version_conflict":
			base = v.LatestVersion
		case o.Unknown:
			base = w.latest(i, agent, base)
		default:
			w.backoff()
		}
		w.h.add(o)
	}
}

// latest reads an agent's latest version (or keeps base when it cannot).
func (w *workload) latest(i int, agent string, base int) int {
	for try := 0; try < 20 && !w.stopped(); try++ {
		_, url := w.node(i + try)
		lr, err := w.do("GET", url+"/v1/agents", runtimeToken, nil)
		if err == nil && lr.Status == 200 {
			var list struct {
				Items []struct {
					Agent         string
					LatestVersion int `json:"latest_version"`
				}
			}
			_ = json.Unmarshal(lr.Body, &list)
			for _, a := range list.Items {
				if a.Agent == agent {
					return a.LatestVersion
				}
			}
			return base
		}
		w.backoff()
	}
	return base
}

// releaser runs release after release on agent/env: publish a candidate,
// start a release with a scheduled step, pause, resume, then promote or
// roll back (alternately). Every acknowledged release id is kept.
func (w *workload) releaser(agent, env string, acked *sync.Map) {
	client := w.newClient()
	base := 1
	for i := 0; !w.stopped(); i++ {
		base = w.latest(i, agent, base)
		c := op{Kind: kOther, Key: "create " + agent, Client: client}
		text := w.unique(agent)
		r := w.write(&c, i, "POST", "/v1/agents/"+agent+"/versions",
			map[string]any{"base_version": base, "config": map[string]any{"system": text}})
		w.h.add(c)
		if !c.ok() {
			w.backoff()
			continue
		}
		var v struct{ Version int }
		_ = json.Unmarshal(r.Body, &v)
		acked.Store(agent+"\x00"+text, v.Version)
		base = v.Version

		o := op{Kind: kOther, Key: "release create", Client: client}
		r = w.write(&o, i, "POST", "/v1/agents/"+agent+"/envs/"+env+"/releases", map[string]any{
			"candidate_version": v.Version, "percent": 20, "stickiness": "user",
			"steps": []map[string]any{{"percent": 40, "after": "1s"}}})
		w.h.add(o)
		var rel struct {
			ID       string
			Revision int64
		}
		if !o.ok() {
			if o.Code == "release_active" || o.Unknown {
				w.rollbackActive(client, i, agent, env)
			}
			w.backoff()
			continue
		}
		_ = json.Unmarshal(r.Body, &rel)
		acked.Store("release\x00"+rel.ID, v.Version)
		final := "promote"
		if i%2 == 1 {
			final = "rollback"
		}
		for _, act := range []string{"pause", "resume", final} {
			time.Sleep(150 * time.Millisecond)
			t := op{Kind: kOther, Key: "release " + act, Client: client}
			w.write(&t, i, "POST", "/v1/releases/"+rel.ID+"/"+act, map[string]any{"reason": "fault suite"})
			w.h.add(t)
		}
		w.rollbackActive(client, i, agent, env) // a lost final transition leaves nothing active
	}
}

// rollbackActive rolls back whatever release is active on agent/env.
func (w *workload) rollbackActive(client, i int, agent, env string) {
	for try := 0; try < 10 && !w.stopped(); try++ {
		_, url := w.node(i + try)
		r, err := w.do("GET", url+"/v1/agents/"+agent+"/envs/"+env+"/releases", runtimeToken, nil)
		if err != nil || r.Status != 200 {
			w.backoff()
			continue
		}
		var list struct{ Items []struct{ ID, State string } }
		_ = json.Unmarshal(r.Body, &list)
		for _, it := range list.Items {
			if it.State == "running" || it.State == "paused" {
				t := op{Kind: kOther, Key: "release rollback", Client: client}
				w.write(&t, i+try, "POST", "/v1/releases/"+it.ID+"/rollback", map[string]any{"reason": "fault suite cleanup"})
				w.h.add(t)
			}
		}
		return
	}
}

// leaser takes generic leases on two of the resources (all or nothing),
// records one kLGrant per resource with its fence, holds briefly, releases.
func (w *workload) leaser(resources []string, holder string, i0 int) {
	client := w.newClient()
	for i := i0; !w.stopped(); i++ {
		a := rand.IntN(len(resources))
		b := (a + 1 + rand.IntN(len(resources)-1)) % len(resources)
		set := []string{resources[a], resources[b]}
		n, url := w.node(i)
		call0 := now()
		r, err := w.do("POST", url+"/v1/leases", runtimeToken,
			map[string]any{"resources": set, "holder": holder, "ttl_ms": 1000, "wait_ms": 500})
		g := op{Kind: kLGrant, Client: client, Node: n, Call: call0}
		g.finish(r, err)
		var l struct {
			LeaseID string `json:"lease_id"`
			Token   string
			Fences  map[string]int64
		}
		if g.ok() {
			_ = json.Unmarshal(r.Body, &l)
		}
		for _, res := range set {
			ro := g
			ro.Key = "lease/" + res
			ro.Fence = l.Fences[res]
			w.h.add(ro)
		}
		if !g.ok() {
			w.backoff()
			continue
		}
		time.Sleep(time.Duration(5+rand.IntN(20)) * time.Millisecond)
		d := op{Kind: kOther, Key: "lease release", Client: client}
		_, url = w.node(i + 1)
		d.Call = now()
		dr, err := w.do("DELETE", url+"/v1/leases/"+l.LeaseID, runtimeToken, nil, "Lease-Token", l.Token)
		d.finish(dr, err)
		w.h.add(d)
	}
}
