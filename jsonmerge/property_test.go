package jsonmerge

import (
	"cmp"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The property test: a random base document, two random sets of edits (one
// per side), and what Merge must make of them.
//
// A document is an object of nested objects, keyed arrays (elements with a
// unique "name"), scalars and unkeyed arrays (of scalars, or of objects
// without a name). An edit sets a leaf (a scalar or an unkeyed array) to a
// different value, deletes a member or an element (never a "name"), adds a
// member (n1 or n2, with a scalar or an array of scalars) or adds an
// element at a random place in a keyed array. A side's edits are on base
// paths or new children of base containers, and no path of a side is a
// prefix of another of the same side. Added element keys are the side's
// own (o0, t0...): two sides adding the same key merge it member by member
// (rule 3), which the table tests cover.
//
// An edit at p of one side and one at q of the other overlap when p is a
// prefix of q or equal; their place is the shorter path. Properties:
//
//	(a) conflicts are exactly the places of overlaps where the two sides'
//	    documents differ (by canonical form); no overlap, or overlaps with
//	    equal values only: no conflict, and the merged document is the base
//	    with both sides' edits applied, the additions to each keyed array
//	    ordered after the nearest base element before them on their side,
//	    ours' before theirs' at one place;
//	(b) no conflict is outside those places (part of the equality of (a));
//	(c) an edit with no overlap keeps its side's value in the merged
//	    document, and, when there are conflicts, no conflict path is a
//	    prefix or an extension of its path;
//	(d) swapping ours and theirs gives the same conflict paths and, when
//	    clean, the same document once each keyed array is sorted by name
//	    (the ours-first tie at one place flips), and exactly the document
//	    of (a) with the sides' roles swapped.
var (
	propertyCases = flag.Int("jsonmerge.cases", 2000, "cases of the jsonmerge property test")
	propertySeed  = flag.Uint64("jsonmerge.seed", 1, "seed of the first case of the jsonmerge property test")
)

type mergeFunc func(base, ours, theirs []byte, opts Options) ([]byte, []Conflict, error)

func TestMerge_properties(t *testing.T) {
	start := time.Now()
	var conflicted int
	for i := range *propertyCases {
		seed := *propertySeed + uint64(i)
		c, err := checkCase(Merge, seed)
		if err != nil {
			t.Fatalf("seed %d (rerun with -jsonmerge.seed=%d -jsonmerge.cases=1): %v", seed, seed, err)
		}
		if c {
			conflicted++
		}
	}
	t.Logf("%d cases (%d with conflicts) in %v", *propertyCases, conflicted, time.Since(start))
	// The generator must exercise both outcomes, or the properties say little.
	if n := *propertyCases; n >= 100 && (conflicted < n/10 || conflicted > n*9/10) {
		t.Errorf("%d of %d cases conflicted: the generator is lopsided", conflicted, n)
	}
}

// The control: the same checker catches a merge that drops theirs' changes.
func TestMerge_properties_catchAMergeThatDropsTheirs(t *testing.T) {
	dropTheirs := func(base, ours, _ []byte, opts Options) ([]byte, []Conflict, error) {
		return Merge(base, ours, base, opts)
	}
	for seed := range uint64(200) {
		if _, err := checkCase(dropTheirs, seed); err != nil {
			t.Logf("caught at seed %d: %v", seed, err)
			return
		}
	}
	t.Fatal("the property checker passed a merge that drops theirs' changes")
}

// checkCase generates the case of seed and checks merge's answers to it;
// conflicted says whether the case has expected conflicts.
func checkCase(merge mergeFunc, seed uint64) (conflicted bool, err error) {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	base := g.object(0)
	nodes := walk(base, Path{}, nil)
	ours, theirs := g.side(base, nodes, "o"), g.side(base, nodes, "t")
	want := expectedConflicts(ours, theirs)
	desc := func() string {
		return fmt.Sprintf("\nbase   %s\nours   %s %v\ntheirs %s %v", canon(base), canon(ours.doc), ours.edits, canon(theirs.doc), theirs.edits)
	}

	opts := Options{Keys: []string{"name"}}
	merged, conflicts, err := merge(marshal(base), marshal(ours.doc), marshal(theirs.doc), opts)
	if err != nil {
		return false, err
	}
	swapped, swappedConflicts, err := merge(marshal(base), marshal(theirs.doc), marshal(ours.doc), opts)
	if err != nil {
		return false, err
	}
	got, gotSwapped := conflictPaths(conflicts), conflictPaths(swappedConflicts)
	if !slices.Equal(got, want) {
		return false, fmt.Errorf("(a, b) conflicts at %q, want %q%s", got, want, desc())
	}
	if !slices.Equal(gotSwapped, want) {
		return false, fmt.Errorf("(d) swapped, conflicts at %q, want %q%s", gotSwapped, want, desc())
	}
	if len(want) > 0 {
		if merged != nil {
			return true, fmt.Errorf("merged = %s with conflicts", merged)
		}
		for _, s := range [][2]sideEdits{{ours, theirs}, {theirs, ours}} {
			for _, e := range s[0].edits {
				for _, c := range conflicts {
					if !overlapped(e, s[1]) && (isPrefix(c.Path, e.path) || isPrefix(e.path, c.Path)) {
						return true, fmt.Errorf("(c) a conflict at %s touches the edit %v, which nothing overlaps%s", c.Path, e, desc())
					}
				}
			}
		}
		return true, nil
	}
	doc, err := parse(merged)
	if err != nil {
		return false, fmt.Errorf("merged %s: %v", merged, err)
	}
	if w := expectedDoc(base, ours, theirs); canon(doc) != canon(w) {
		return false, fmt.Errorf("(a) merged %s\n       want %s%s", canon(doc), canon(w), desc())
	}
	for _, s := range [][2]sideEdits{{ours, theirs}, {theirs, ours}} {
		for _, e := range s[0].edits {
			if overlapped(e, s[1]) {
				continue
			}
			gv, gok := lookup(doc, e.path)
			wv, wok := lookup(s[0].doc, e.path)
			if gok != wok || canon(gv) != canon(wv) {
				return false, fmt.Errorf("(c) the edit %v is lost: merged has %s%s", e, canon(gv), desc())
			}
		}
	}
	sdoc, err := parse(swapped)
	if err != nil {
		return false, fmt.Errorf("swapped %s: %v", swapped, err)
	}
	if canon(sortKeyed(doc)) != canon(sortKeyed(sdoc)) {
		return false, fmt.Errorf("(d) swapped, merged %s\n     unswapped %s%s", swapped, merged, desc())
	}
	if w := expectedDoc(base, theirs, ours); canon(sdoc) != canon(w) {
		return false, fmt.Errorf("(d) swapped, merged %s\n       want %s%s", swapped, canon(w), desc())
	}
	return false, nil
}

// overlapPlace is where e and an edit f of the other side overlap: the
// shorter of their paths, or nil when neither is a prefix of the other.
func overlapPlace(e, f edit) Path {
	switch {
	case isPrefix(e.path, f.path):
		return e.path
	case isPrefix(f.path, e.path):
		return f.path
	}
	return nil
}

// overlapped reports whether an edit of other overlaps e.
func overlapped(e edit, other sideEdits) bool {
	return slices.ContainsFunc(other.edits, func(f edit) bool { return overlapPlace(e, f) != nil })
}

// expectedConflicts returns, sorted, the places of the overlaps where the
// two sides' documents differ.
func expectedConflicts(ours, theirs sideEdits) []string {
	places := map[string]bool{}
	for _, e := range ours.edits {
		for _, f := range theirs.edits {
			if p := overlapPlace(e, f); p != nil {
				ov, ook := lookup(ours.doc, p)
				tv, tok := lookup(theirs.doc, p)
				if ook != tok || canon(ov) != canon(tv) {
					places[p.String()] = true
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(places))
}

func conflictPaths(cs []Conflict) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Path.String())
	}
	slices.Sort(out)
	return out
}

// expectedDoc is base with the edits of first and then second applied,
// each keyed array's additions ordered by the base element before them on
// their side, then by side (first's first), then by their place there.
func expectedDoc(base any, first, second sideEdits) any {
	doc := clone(base)
	arrays := map[string]Path{}
	for _, s := range []sideEdits{first, second} {
		for _, e := range s.edits {
			switch e.op {
			case opSet, opAddMember:
				setAt(doc, e.path, e.value)
			case opDelete:
				if _, ok := lookup(doc, e.path); ok {
					deleteAt(doc, e.path)
				}
			case opAddElement:
				arrays[e.path[:len(e.path)-1].String()] = e.path[:len(e.path)-1]
			}
		}
	}
	type entry struct {
		anchor, side, rank int
		elem               any
	}
	for _, ap := range arrays {
		b, _ := lookup(base, ap)
		baseAt := map[string]int{}
		for i, e := range b.([]any) {
			baseAt[nameOf(e)] = i
		}
		var entries []entry
		cur, _ := lookup(doc, ap)
		for _, e := range cur.([]any) {
			entries = append(entries, entry{baseAt[nameOf(e)], 0, 0, e})
		}
		for side, s := range []sideEdits{first, second} {
			arr, _ := lookup(s.doc, ap)
			for i, e := range arr.([]any) {
				if !slices.ContainsFunc(s.edits, func(f edit) bool { return f.op == opAddElement && slices.Equal(f.path, ap.element("name", nameOf(e))) }) {
					continue
				}
				anchor := -1
				for j := i - 1; j >= 0; j-- {
					if at, ok := baseAt[nameOf(arr.([]any)[j])]; ok {
						anchor = at
						break
					}
				}
				entries = append(entries, entry{anchor, 1 + side, i, e})
			}
		}
		slices.SortFunc(entries, func(a, b entry) int {
			return cmp.Or(cmp.Compare(a.anchor, b.anchor), cmp.Compare(a.side, b.side), cmp.Compare(a.rank, b.rank))
		})
		out := []any{}
		for _, e := range entries {
			out = append(out, e.elem)
		}
		setAt(doc, ap, out)
	}
	return doc
}
