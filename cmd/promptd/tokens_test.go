package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestEmbeddedTokens_generatedOnce_mode0600_reused(t *testing.T) {
	dir := t.TempDir()
	first, path, created, err := embeddedTokens(dir)
	if err != nil || !created || path != filepath.Join(dir, "tokens") {
		t.Fatalf("first: %v, %s, %v", err, path, created)
	}
	if len(first) != 2 || first[0].Role != RoleAdmin || first[1].Role != RoleRuntime {
		t.Fatalf("tokens = %+v", first)
	}
	for _, tok := range first {
		if !strings.HasPrefix(tok.Secret, "pd_") || len(tok.Secret) != 3+43 {
			t.Errorf("secret of %s has the wrong form", tok.Name)
		}
	}
	if first[0].Secret == first[1].Secret {
		t.Fatal("both tokens share a secret")
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("tokens file: %v, %v", fi, err)
	}
	again, _, created, err := embeddedTokens(dir)
	if err != nil || created || !slices.Equal(again, first) {
		t.Fatalf("second start: %+v, %v, created %v", again, err, created)
	}
}

func TestEmbeddedTokens_badFile_isAnErrorWithoutSecrets(t *testing.T) {
	dir := t.TempDir()
	const secret = "short"
	if err := os.WriteFile(filepath.Join(dir, "tokens"), []byte("ops:admin:"+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, _, err := embeddedTokens(dir)
	if err == nil || strings.Contains(err.Error(), ":"+secret) {
		t.Fatalf("err = %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokens"), []byte("# nothing\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := embeddedTokens(dir); err == nil {
		t.Fatal("an empty tokens file was accepted")
	}
}
