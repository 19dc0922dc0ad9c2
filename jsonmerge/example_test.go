package jsonmerge_test

import (
	"fmt"

	"github.com/promptd/promptd/jsonmerge"
)

// An agent edited a prompt config from revision 3 while revision 4 landed:
// its change and the other one touch different places, so both are kept.
func Example() {
	base := `{"model":"m-1","temperature":0.70,"tools":[{"name":"search","description":"Find things"},{"name":"fetch"}]}`
	ours := `{"model":"m-1","temperature":0.70,"tools":[{"name":"search","description":"Find documents"},{"name":"fetch"}]}`
	theirs := `{"model":"m-2","temperature":0.70,"tools":[{"name":"search","description":"Find things"},{"name":"fetch"},{"name":"calc"}]}`

	merged, conflicts, err := jsonmerge.Merge([]byte(base), []byte(ours), []byte(theirs), jsonmerge.Options{Keys: []string{"name"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(conflicts))
	fmt.Println(string(merged))
	// Output:
	// 0
	// {"model":"m-2","temperature":0.70,"tools":[{"description":"Find documents","name":"search"},{"name":"fetch"},{"name":"calc"}]}
}

// Both sides changed the same tool's description, and one side deleted a
// tool the other changed: two conflicts, nothing merged.
func Example_conflict() {
	base := `{"tools":[{"name":"search","description":"Find things"},{"name":"fetch","timeout":5}]}`
	ours := `{"tools":[{"name":"search","description":"Find documents"}]}`
	theirs := `{"tools":[{"name":"search","description":"Find anything"},{"name":"fetch","timeout":10}]}`

	merged, conflicts, err := jsonmerge.Merge([]byte(base), []byte(ours), []byte(theirs), jsonmerge.Options{Keys: []string{"name"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(merged == nil)
	for _, c := range conflicts {
		fmt.Printf("%s: base %s, ours %s, theirs %s\n", c.Path, orAbsent(c.Base), orAbsent(c.Ours), orAbsent(c.Theirs))
	}
	// Output:
	// true
	// tools[name=search].description: base "Find things", ours "Find documents", theirs "Find anything"
	// tools[name=fetch]: base {"name":"fetch","timeout":5}, ours (absent), theirs {"name":"fetch","timeout":10}
}

func orAbsent(v []byte) string {
	if v == nil {
		return "(absent)"
	}
	return string(v)
}
