package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The board part of the fault workload: a producer creates records, and
// claimers take them (claim -> running -> done, each write under the
// claim's fence) on a board with a 1 s claim TTL, so that a fault that
// outlasts a claim makes the sweeper or the next claim reclaim it.
const (
	kBCreate = "bcreate" // POST /boards/{b}/records
	kBClaim  = "bclaim"  // POST /boards/{b}/claim (200: Key is the record, Fence the claim's)
	kBPatch  = "bpatch"  // PATCH /boards/{b}/records/{id} with the claim's fence (Text: the new state)
	kBRead   = "bread"   // GET /boards/{b}/records/{id} after the run (Text: state, Fence, Rev)
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
	State    string
	Fence    int64
	Owner    string
	Revision int64
}

// recordState is one board record in the linearizability model.
type recordState struct {
	exists bool
	state  string
	fence  int64
	rev    int64
}

// Of the default machine: the states a record can reach by a change no
// client op shows (the sweeper's reclaim, to reclaim_to or, after
// max_attempts, to the exhausted state; a claim whose answer was lost),
// and the terminal states, after which nothing changes.
var (
	boardUnseenStates = []string{"pending", "claimed", "failed"}
	boardTerminal     = []string{"done", "failed", "cancelled"}
)

// boardModel: one record of the fault board. Creates; claims (granted:
// the record existed, was not terminal, and the claim raised its fence and
// revision; reclaims and lost claims in between are unseen changes, which
// only raise both); fenced PATCHes with expected_revision (acknowledged:
// the claim's fence and revision were still the record's, nothing unseen
// happened since; done ends the claim, fence + 1); and the reads after the
// run (same revision: same state and fence; a higher one: only unseen
// changes, so never out of a terminal state, and into one of
// boardUnseenStates). A rejection changes nothing (an unseen reclaim
// explains any).
var boardModel = porcupine.Model{
	Partition: byKey,
	Init:      func() interface{} { return recordState{} },
	Step: func(state, input, _ interface{}) (bool, interface{}) {
		st, o := state.(recordState), input.(op)
		live := st.exists && !slices.Contains(boardTerminal, st.state)
		switch o.Kind {
		case kBCreate:
			return casStep(o, st, recordState{true, "pending", 0, 1}, !st.exists, true, false)
		case kBClaim: // only granted claims carry their record's id
			return live && o.Fence > st.fence && o.Rev > st.rev, recordState{true, "claimed", o.Fence, o.Rev}
		case kBPatch:
			from := map[string]string{"running": "claimed", "done": "running"}[o.Text]
			next := recordState{true, o.Text, o.Fence, st.rev + 1}
			if slices.Contains(boardTerminal, o.Text) {
				next.fence++
			}
			applies := live && st.state == from && st.fence == o.Fence && st.rev == o.ExpRev
			return casStep(o, st, next, applies, o.Rev == st.rev+1, false)
		case kBRead:
			switch {
			case o.Rev == st.rev:
				return st.exists && o.Text == st.state && o.Fence == st.fence, st
			case o.Rev > st.rev:
				return live && o.Fence > st.fence && slices.Contains(boardUnseenStates, o.Text),
					recordState{true, o.Text, o.Fence, o.Rev}
			}
		}
		return false, st
	},
	DescribeOperation: func(input, _ interface{}) string { o := input.(op); return o.describe() },
}

// checkBoard checks the board ops against the board as it ended: every
// acknowledged create is there; a record acknowledged done is done, its
// claim ended right after the fence that completed it, and it was
// acknowledged done once; no two claims of one record were granted the
// same fence. It returns its reads as ops (kBRead), for boardModel.
func checkBoard(t *testing.T, base string, ops []op, row *faultRow) []op {
	ex := func(s string) { row.examples = append(row.examples, s) }
	final := map[string]boardRecord{}
	var reads []op
	read := func(id string) boardRecord {
		if r, ok := final[id]; ok {
			return r
		}
		var r boardRecord
		call := now()
		got := mustEventually(t, 200, "GET", base+"/v1/boards/"+faultBoard+"/records/"+id, runtimeToken)
		got.json(t, &r)
		final[id] = r
		reads = append(reads, op{Kind: kBRead, Key: id, Client: -1, Call: call, Ret: now(), Status: 200,
			Text: r.State, Fence: r.Fence, Rev: r.Revision})
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
			read(o.Key)
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
	return reads
}

// boardOps is the board's history for boardModel: a claim not granted
// carries no record id (it changed nothing, or it is a lost claim, which
// the model takes as an unseen change).
func boardOps(ops []op) []op {
	return slices.DeleteFunc(slices.Clone(ops), func(o op) bool { return o.Kind == kBClaim && !o.ok() })
}
