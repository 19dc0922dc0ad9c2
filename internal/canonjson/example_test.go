package canonjson_test

import (
	"fmt"

	"github.com/promptd/promptd/internal/canonjson"
)

// Key order and whitespace do not change the canonical form or the hash;
// numbers stay as written.
func Example() {
	a, _ := canonjson.Canonical([]byte(`{"b": 0.50, "a": "<x>"}`))
	b, _ := canonjson.Canonical([]byte("{\"a\":\"<x>\",\n \"b\":0.50}"))
	fmt.Println(string(a))
	fmt.Println(canonjson.Hash(a) == canonjson.Hash(b))
	// Output:
	// {"a":"<x>","b":0.50}
	// true
}
