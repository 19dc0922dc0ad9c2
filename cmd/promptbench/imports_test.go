package main

import (
	"errors"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
)

// memRows is a board in memory: a compare-and-set on the revision, as
// promptd's, and the blind write of the naive control.
type memRows map[string]*boardRow

func (m memRows) read(id string) boardRow {
	r := *m[id]
	r.Payload.Fields = maps.Clone(r.Payload.Fields)
	return r
}

func (m memRows) cas(id string, expected int64, p rowPayload) bool {
	if m[id].Revision != expected {
		return false
	}
	m[id].Revision++
	m[id].Payload = p
	return true
}

func (m memRows) final() map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for id, r := range m {
		out[id] = r.Payload.Fields
	}
	return out
}

func newMemRows(ids ...string) memRows {
	m := memRows{}
	for _, id := range ids {
		m[id] = &boardRow{ID: id, Revision: 1, Payload: rowPayload{ID: id, Fields: map[string]int64{}}}
	}
	return m
}

// Two agents snapshot the same row; the first writes its field; the
// second writes its snapshot plus its own field over the current revision
// (the control's last write wins): the first agent's acknowledged write
// is gone, and the ledger says so.
func TestLedger_overwriteFromAStaleSnapshot_isALostUpdate(t *testing.T) {
	rows, led := newMemRows("c000001"), ledger{}
	snap0, snap1 := rows.read("c000001"), rows.read("c000001")
	if !rows.cas("c000001", snap0.Revision, snap0.Payload.with("a0", 7)) {
		t.Fatal("first write refused")
	}
	led.ack("c000001", 0, 7)
	cur := rows.read("c000001") // the control re-reads only the revision
	if !rows.cas("c000001", cur.Revision, snap1.Payload.with("a1", 9)) {
		t.Fatal("second write refused")
	}
	led.ack("c000001", 1, 9)
	n, examples := led.lost(rows.final())
	if n != 1 || len(examples) != 1 || !strings.Contains(examples[0], "c000001 a0: acknowledged 7, missing") {
		t.Fatalf("lost = %d %q, want a0's write lost", n, examples)
	}
}

// The same two agents with the compare-and-set on the snapshot's
// revision: the second is refused, re-reads and writes over the fresh
// payload; nothing is lost.
func TestLedger_compareAndSetFromTheSnapshot_losesNothing(t *testing.T) {
	rows, led := newMemRows("c000001"), ledger{}
	snap0, snap1 := rows.read("c000001"), rows.read("c000001")
	rows.cas("c000001", snap0.Revision, snap0.Payload.with("a0", 7))
	led.ack("c000001", 0, 7)
	if rows.cas("c000001", snap1.Revision, snap1.Payload.with("a1", 9)) {
		t.Fatal("a write on a stale revision was taken")
	}
	fresh := rows.read("c000001")
	rows.cas("c000001", fresh.Revision, fresh.Payload.with("a1", 9))
	led.ack("c000001", 1, 9)
	if n, examples := led.lost(rows.final()); n != 0 {
		t.Fatalf("lost = %d %q, want none", n, examples)
	}
}

// An overwrite that brings back an agent's older value loses its newer
// one; a value newer than the last acknowledged (a write whose answer was
// lost) is not a loss; the ledger keeps the last (largest) value.
func TestLedger_olderValueIsLost_newerIsNot(t *testing.T) {
	led := ledger{}
	led.ack("c1", 0, 2)
	led.ack("c1", 0, 1) // an answer arriving late does not lower it
	led.ack("c2", 0, 5)
	other := ledger{}
	other.ack("c2", 3, 4)
	led.merge(other)
	n, examples := led.lost(map[string]map[string]int64{"c1": {"a0": 1}, "c2": {"a0": 6, "a3": 4}})
	if n != 1 || !strings.Contains(examples[0], "c1 a0: acknowledged 2, found 1") {
		t.Fatalf("lost = %d %q, want c1 a0 only", n, examples)
	}
	if n, _ := led.lost(map[string]map[string]int64{}); n != 3 {
		t.Fatalf("rows gone: lost = %d, want every acknowledged cell (3)", n)
	}
}

func TestVerdict_failsOnALossOutsideTheControl_andOnAControlThatLostNothing(t *testing.T) {
	proofs := importStrategies[2]
	control := importStrategies[4]
	ok := []strategyResult{{s: proofs, t: tally{acked: 10}}, {s: control, t: tally{acked: 10}, lost: 3}}
	if err := verdict(ok); err != nil {
		t.Fatalf("verdict(ok) = %v", err)
	}
	for name, rs := range map[string][]strategyResult{
		"proofs lost one":   {{s: proofs, t: tally{acked: 10}, lost: 1}, {s: control, t: tally{acked: 10}, lost: 3}},
		"control lost none": {{s: proofs, t: tally{acked: 10}}, {s: control, t: tally{acked: 10}}},
		"errors":            {{s: proofs, t: tally{acked: 10, errors: 1, firstErr: errors.New("500")}}},
		"nothing written":   {{s: proofs}},
	} {
		if err := verdict(rs); err == nil {
			t.Errorf("%s: verdict passed", name)
		}
	}
}

func TestPick_drawsDistinctIds_theHotShareFromTheHotRange(t *testing.T) {
	b := &importBench{rows: 100_000, batch: 50, hot: 2000, hotShare: 0.6}
	a := &importAgent{b: b, rng: rand.New(rand.NewPCG(1, 2))}
	for range 100 {
		ids := a.pick()
		seen, hot := map[string]bool{}, 0
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("%s twice in %v", id, ids)
			}
			seen[id] = true
			if id < rowID(b.hot) {
				hot++
			}
		}
		if len(ids) != 50 || hot < 30 {
			t.Fatalf("%d ids, %d hot, want 50 with at least 30 hot", len(ids), hot)
		}
	}
}
