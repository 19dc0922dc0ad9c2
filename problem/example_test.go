package problem_test

import (
	"fmt"

	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/session"
)

// Of gives any promptd error its stable code, status and members: the
// same for a call over HTTP and one in process.
func ExampleOf() {
	for _, err := range []error{
		&promptstore.RevisionConflict{Expected: 3, Current: 4},
		session.ErrNotFound,
		fmt.Errorf("reading: %w", session.ErrClosed),
	} {
		p := problem.Of(err)
		fmt.Println(p.Code, p.Status(), p.Fields)
	}
	// Output:
	// revision_conflict 409 map[current_revision:4]
	// session_not_found 404 map[]
	// session_closed 409 map[state:closed]
}
