package main

import (
	"io/fs"

	"github.com/promptd/promptd/console"
)

// consoleAssets are the web console's files when PROMPTD_CONSOLE is on,
// nil (no console, no session cookies) when it is off.
func consoleAssets(on bool) fs.FS {
	if !on {
		return nil
	}
	return console.Assets()
}
