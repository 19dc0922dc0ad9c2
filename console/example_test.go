package console_test

import (
	"fmt"
	"io/fs"

	"github.com/promptd/promptd/console"
)

// The console's files are an fs.FS; package api serves them at /ui/.
func ExampleAssets() {
	_, err := fs.Stat(console.Assets(), "index.html")
	fmt.Println("index.html embedded:", err == nil)
	// Output: index.html embedded: true
}
