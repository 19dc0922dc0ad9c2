// Package console holds the web console's static assets: the HTML, CSS and
// JavaScript promptd serves at /ui/. They are embedded in the binary, so the
// console works offline and needs no CDN. The package knows nothing of HTTP
// or authentication; package api serves the files and guards the console's
// calls exactly as it guards the API's.
package console

import (
	"embed"
	"io/fs"
)

//go:embed assets
var assets embed.FS

// Assets returns the console's files, rooted where index.html is.
func Assets() fs.FS {
	sub, err := fs.Sub(assets, "assets")
	if err != nil { // only if the embed directive above is changed
		panic(err)
	}
	return sub
}
