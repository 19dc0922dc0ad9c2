package api

import "testing"

// Generated request ids are 32 lowercase hex digits, unique, and a sane
// client id is kept.
func TestRequestID_generatedUniqueHex(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := requestIDFor("")
		if len(id) != 32 || !validRequestID(id) || seen[id] {
			t.Fatalf("id %q (seen before: %v)", id, seen[id])
		}
		for _, c := range id {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				t.Fatalf("id %q is not lowercase hex", id)
			}
		}
		seen[id] = true
	}
	if id := requestIDFor("req-1"); id != "req-1" {
		t.Fatalf("client id replaced by %q", id)
	}
	if id := requestIDFor("bad id"); id == "bad id" || len(id) != 32 {
		t.Fatalf("bad client id kept: %q", id)
	}
}
