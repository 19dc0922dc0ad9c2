package api

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/labstack/echo/v4"
)

// The web console (package console's files) is served at /ui/: a single
// page app whose routes are client-side, so every /ui/<path> that names no
// asset answers index.html. The console's data comes from the /v1 routes,
// with the session cookie of console_auth.go, through the same auth and
// scope checks as a bearer token's.

// consoleCSP is the Content-Security-Policy of every /ui/ response: the
// console's own scripts and styles only, no inline code, no framing.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"font-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// consoleFile is one asset, read once at New.
type consoleFile struct {
	body  []byte
	etag  string // a strong ETag: the content's SHA-256
	ctype string
}

// consoleFiles are the console's assets by path ("index.html",
// "pages/agents.js").
type consoleFiles map[string]*consoleFile

// assetExtensions are the extensions of files the console is made of: a
// missing /ui/ path with one is a missing asset (404). Any other path is a
// client-side route, even one with a dot (an agent named "support.v2").
var assetExtensions = map[string]string{
	".html":  "text/html; charset=utf-8",
	".js":    "text/javascript; charset=utf-8",
	".mjs":   "text/javascript; charset=utf-8",
	".css":   "text/css; charset=utf-8",
	".map":   "application/json",
	".json":  "application/json",
	".svg":   "image/svg+xml",
	".png":   "image/png",
	".ico":   "image/x-icon",
	".woff2": "font/woff2",
	".txt":   "text/plain; charset=utf-8",
	".md":    "text/plain; charset=utf-8",
}

// loadConsole reads every file of fsys; nil fsys is no console. A console
// without index.html is a build mistake.
func loadConsole(fsys fs.FS) consoleFiles {
	if fsys == nil {
		return nil
	}
	files := consoleFiles{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ext := path.Ext(p)
		ctype, ok := assetExtensions[ext]
		if !ok {
			ctype = mime.TypeByExtension(ext)
		}
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		files[p] = &consoleFile{body: body, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`, ctype: ctype}
		return nil
	})
	if err != nil {
		panic(fmt.Sprintf("api: reading the console's files: %v", err))
	}
	if files["index.html"] == nil {
		panic("api: the console's files have no index.html")
	}
	return files
}

// consoleHeaders sets the security headers of every /ui/ response, errors
// included.
func consoleHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", consoleCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		return next(c)
	}
}

// errConsoleNotFound answers /ui/ when the console is turned off
// (PROMPTD_CONSOLE=false), and a missing asset.
func errConsoleNotFound() *Error { return Errorf(CodeNotFound, "no such console page or file") }

// handleConsoleRoot redirects /ui to /ui/.
func (s *Server) handleConsoleRoot(c echo.Context) error {
	if s.console == nil {
		return errConsoleNotFound()
	}
	return c.Redirect(http.StatusMovedPermanently, "/ui/")
}

// handleConsoleFile serves /ui/<path>: the asset it names, 404 for a
// missing asset, and index.html for anything else (a client-side route).
func (s *Server) handleConsoleFile(c echo.Context) error {
	if s.console == nil {
		return errConsoleNotFound()
	}
	name := strings.TrimPrefix(c.Request().URL.Path, "/ui/")
	f := s.console[name]
	if f == nil {
		if _, asset := assetExtensions[path.Ext(name)]; asset || strings.HasSuffix(name, "/index.html") {
			return errConsoleNotFound()
		}
		f = s.console["index.html"]
	}
	h := c.Response().Header()
	h.Set(echo.HeaderCacheControl, "no-cache")
	h.Set("ETag", f.etag)
	if etagMatches(c.Request().Header.Get("If-None-Match"), f.etag) {
		return c.NoContent(http.StatusNotModified)
	}
	return c.Blob(http.StatusOK, f.ctype, f.body)
}
