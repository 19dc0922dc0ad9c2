package buildinfo_test

import (
	"fmt"

	"github.com/promptd/promptd/internal/buildinfo"
)

// A version set at link time wins over the module's.
func ExampleVersion() {
	fmt.Println(buildinfo.Version("v1.2.3"))
	// Output: v1.2.3
}
