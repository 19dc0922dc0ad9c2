package main

import (
	"context"
	"fmt"
)

// The whole program, in process: its output is checked by go test.
func Example() {
	if err := run(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// published support v1 sha256:55df9734dfbb
	// published support v2 sha256:7f982d935b7e
	// stale publish refused: latest is v2
	// release running at 50%: 1000 users -> v1 501, v2 499
	// stale append refused: session is at revision 2
	// chat-1 (pinned true) assembled from v2:
	//   system: "You are a helpful assistant for ACME. Answer in two sentences."
	//   user: "Where is my order?"
	//   user: "It is order 1234."
	// switch of support/eu to v2 gated: change request pending, 1 approval needed
	// approved by lead: applied; support/eu serves v2
	// billing release stepped by the scheduler: 10% -> 50%
	// triage release rolled_back by its guard (tripped)
}
