package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// The board part of the fault workload: a producer creates records, and
// claimers take them (claim -> running -> done, each write under the
// claim's fence) on a board with a 1 s claim TTL, so that a fault that
// outlasts a claim makes the sweeper or the next claim reclaim it.
const (
	kBCreate = "bcreate" // POST /boards/{b}/records
	kBClaim  = "bclaim"  // POST /boards/{b}/claim (200: Key is the record, Fence the claim's)
	kBPatch  = "bpatch"  // PATCH /boards/{b}/records/{id} with the claim's fence (Text: the new state)
)

// faultBoard is the fault suite's board: the default machine, created by
// the first record.
const faultBoard = "faults"

// boardProducer creates records with ids unique across processes.
func (w *workload) boardProducer(i0 int) {
	client := w.newClient()
	for i := i0; !w.stopped(); i++ {
		id := fmt.Sprintf("%s-rec-%d", w.prefix, w.seq.Add(1))
		o := op{Kind: kBCreate, Key: id, Client: client}
		w.write(&o, i, "POST", "/v1/boards/"+faultBoard+"/records", map[string]any{"id": id, "payload": map[string]any{"i": i}})
		w.h.add(o)
		if !o.ok() {
			w.backoff()
			continue
		}
		time.Sleep(time.Duration(5+rand.IntN(15)) * time.Millisecond)
	}
}

// boardClaimer claims the next record and completes it, each write under
// the claim's fence and on the revision it last saw.
func (w *workload) boardClaimer(holder string, i0 int) {
	client := w.newClient()
	for i := i0; !w.stopped(); i++ {
		c := op{Kind: kBClaim, Client: client}
		r := w.write(&c, i, "POST", "/v1/boards/"+faultBoard+"/claim", map[string]any{"holder": holder, "ttl_ms": 1000, "wait_ms": 200})
		if !c.ok() || c.Status == 204 {
			if c.Status != 204 {
				w.h.add(c)
				w.backoff()
			}
			continue
		}
		var got struct {
			Record struct {
				ID       string
				Revision int64
			}
			Fence int64
		}
		if err := json.Unmarshal(r.Body, &got); err != nil {
			c.Unknown = true
		}
		c.Key, c.Fence, c.Rev = got.Record.ID, got.Fence, got.Record.Revision
		w.h.add(c)
		rev := got.Record.Revision
		for _, state := range []string{"running", "done"} {
			p := op{Kind: kBPatch, Key: c.Key, Client: client, Fence: c.Fence, Text: state, ExpRev: rev}
			pr := w.write(&p, i+1, "PATCH", "/v1/boards/"+faultBoard+"/records/"+c.Key,
				map[string]any{"expected_revision": rev, "state": state, "fence": c.Fence})
			if p.ok() {
				var rr struct{ Revision int64 }
				if err := json.Unmarshal(pr.Body, &rr); err != nil {
					p.Unknown = true
				}
				p.Rev, rev = rr.Revision, rr.Revision
			}
			w.h.add(p)
			if !p.ok() {
				break
			}
		}
	}
}

// boardRecord is a record as read after the run.
type boardRecord struct {
	State string
	Fence int64
	Owner string
}

// checkBoard checks the board ops against the board as it ended: every
// acknowledged create is there; a record acknowledged done is done, its
// claim ended right after the fence that completed it, and it was
// acknowledged done once; no two claims of one record were granted the
// same fence.
func checkBoard(t *testing.T, base string, ops []op, row *faultRow) {
	ex := func(s string) { row.examples = append(row.examples, s) }
	final := map[string]boardRecord{}
	read := func(id string) boardRecord {
		if r, ok := final[id]; ok {
			return r
		}
		var r boardRecord
		got := mustEventually(t, 200, "GET", base+"/v1/boards/"+faultBoard+"/records/"+id, runtimeToken)
		got.json(t, &r)
		final[id] = r
		return r
	}
	done := map[string]op{}
	granted := map[string]map[int64]int{} // record -> fence -> client
	for _, o := range ops {
		if !o.ok() {
			continue
		}
		switch o.Kind {
		case kBCreate:
			row.acked["board records"]++
			read(o.Key)
		case kBClaim:
			row.acked["board claims"]++
			if granted[o.Key] == nil {
				granted[o.Key] = map[int64]int{}
			}
			if c, dup := granted[o.Key][o.Fence]; dup && c != o.Client {
				row.stale++
				ex(fmt.Sprintf("board record %s: fence %d granted to clients %d and %d", o.Key, o.Fence, c, o.Client))
			}
			granted[o.Key][o.Fence] = o.Client
		case kBPatch:
			if o.Text != "done" {
				continue
			}
			row.acked["board dones"]++
			if prev, twice := done[o.Key]; twice {
				row.stale++
				ex(fmt.Sprintf("board record %s acknowledged done twice (fences %d and %d)", o.Key, prev.Fence, o.Fence))
			}
			done[o.Key] = o
			// entering a terminal state ends the claim: the owner is
			// cleared and the fence raised once more, so no holder of that
			// claim can write again
			if r := read(o.Key); r.State != "done" || r.Fence != o.Fence+1 || r.Owner != "" {
				row.lost++
				ex(fmt.Sprintf("board record %s acknowledged done under fence %d; it ends %s under fence %d, owner %q", o.Key, o.Fence, r.State, r.Fence, r.Owner))
			}
		}
	}
}
