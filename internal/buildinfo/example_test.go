package buildinfo_test

import (
	"fmt"

	"github.com/promptd/promptd/internal/buildinfo"
)

// A version set at link time wins over the VERSION file's.
func ExampleVersion() {
	fmt.Println(buildinfo.Version("1.2.3"))
	// Output: 1.2.3
}
