package buildinfo_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promptd/promptd/internal/buildinfo"
)

// The embedded VERSION is the repository's: `cp VERSION internal/buildinfo/VERSION`
// after changing it.
func TestRelease_isTheRepositorysVersionFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := buildinfo.Release(), strings.TrimSpace(string(b)); got != want || want == "" {
		t.Fatalf("embedded %q, VERSION %q: cp VERSION internal/buildinfo/VERSION", got, want)
	}
}

func TestVersion_unlinked_startsWithTheRelease(t *testing.T) {
	if v := buildinfo.Version(""); !strings.HasPrefix(v, buildinfo.Release()) || v == "devel" {
		t.Fatalf("Version = %q", v)
	}
}

// The SDKs carry the same version as the server.
func TestSDKs_carryTheRepositorysVersion(t *testing.T) {
	py, err := os.ReadFile(filepath.Join("..", "..", "sdk", "python", "pyproject.toml"))
	if err != nil {
		t.Fatal(err)
	}
	ts, err := os.ReadFile(filepath.Join("..", "..", "sdk", "typescript", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	v := buildinfo.Release()
	if !strings.Contains(string(py), "\nversion = \""+v+"\"\n") {
		t.Errorf("sdk/python/pyproject.toml does not say version = %q", v)
	}
	if !strings.Contains(string(ts), "\"version\": \""+v+"\",") {
		t.Errorf("sdk/typescript/package.json does not say \"version\": %q", v)
	}
}
