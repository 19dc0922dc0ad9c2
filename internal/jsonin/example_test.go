package jsonin_test

import (
	"errors"
	"fmt"

	"github.com/promptd/promptd/internal/jsonin"
)

// Check refuses what encoding/json would quietly accept or repair, naming
// the member at fault.
func Example() {
	for _, doc := range []string{
		`{"turns": [{"content": "hi"}]}`,
		"{\"turns\": [{\"content\": \"caf\xe9\"}]}",
		`{"metadata": {"k": "\ud800"}}`,
		`{"a": 1, "a": 2}`,
	} {
		err := jsonin.Check([]byte(doc), 0)
		var e *jsonin.Error
		if errors.As(err, &e) {
			fmt.Printf("refused at %q: %s\n", e.Path, e.Reason)
			continue
		}
		fmt.Println("accepted")
	}
	// Output:
	// accepted
	// refused at "turns[0].content": invalid UTF-8 in a string
	// refused at "metadata.k": lone high surrogate \u escape (not valid UTF-16, not Unicode text)
	// refused at "": duplicate key "a"
}
