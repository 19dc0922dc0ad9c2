package ident_test

import (
	"errors"
	"fmt"

	"github.com/promptd/promptd/ident"
)

// Identifiers are checked once, where they enter; the error names the
// field and says what is wrong.
func Example() {
	fmt.Println(ident.Validate("agent", "support-bot.v2"))
	err := ident.Validate("env", "{prod}")
	fmt.Println(err, errors.Is(err, ident.ErrInvalid))
	fmt.Println(ident.ValidateResource("resources[0]", "order:42/line:1"))
	// Output:
	// <nil>
	// invalid env: must start with a letter or digit true
	// <nil>
}
