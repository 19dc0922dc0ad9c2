package browsertest

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVendoredTokenizer_isTheLockedPackage_byteForByte: the console's
// copy of gpt-tokenizer (vendor-tokenizer.sh) is the package that
// package-lock.json pins, file for file (_virtual/_rolldown/ renamed virtual/rolldown/), and holds the encoding the
// draft editor imports.
func TestVendoredTokenizer_isTheLockedPackage_byteForByte(t *testing.T) {
	vendored := filepath.Join("..", "..", "..", "console", "assets", "vendor", "gpt-tokenizer")
	n := 0
	err := filepath.WalkDir(vendored, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(vendored, p)
		// vendor-tokenizer.sh renames _virtual/_rolldown/ virtual/rolldown/ (go:embed skips
		// names that begin with "_"), in paths and in imports.
		from := filepath.Join("node_modules", "gpt-tokenizer", strings.Replace(filepath.ToSlash(rel), "virtual/rolldown/", "_virtual/_rolldown/", 1))
		if rel == "LICENSE.txt" {
			from = filepath.Join("node_modules", "gpt-tokenizer", "LICENSE")
		}
		want, err := os.ReadFile(from)
		if err != nil {
			t.Errorf("%s: not in the npm package (%v): run vendor-tokenizer.sh", rel, err)
			return nil
		}
		got, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		want = bytes.ReplaceAll(bytes.ReplaceAll(want, []byte("_virtual/_rolldown/"), []byte("virtual/rolldown/")), []byte("_virtual/"), []byte("virtual/"))
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the locked package: run vendor-tokenizer.sh", rel)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(vendored, "esm", "encoding", "o200k_base.js")); err != nil || n < 10 {
		t.Fatalf("vendored %d files; the o200k encoding: %v", n, err)
	}
}
