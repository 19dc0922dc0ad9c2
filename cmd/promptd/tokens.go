package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tokensFile is the file in the data directory that holds the tokens
// generated in embedded mode.
const tokensFile = "tokens"

// embeddedTokens returns the tokens of dataDir/tokens, generating an admin
// and a runtime token into it (mode 0600) on the first start. The file has
// PROMPTD_TOKENS' format, one name:role:secret per line, so an operator can
// copy a line into PROMPTD_TOKENS later. created reports a new file.
func embeddedTokens(dataDir string) (tokens []Token, path string, created bool, err error) {
	path = filepath.Join(dataDir, tokensFile)
	tokens, err = readTokens(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return tokens, path, false, err
	}
	tokens = []Token{{Name: "admin", Role: RoleAdmin, Secret: newSecret()}, {Name: "runtime", Role: RoleRuntime, Secret: newSecret()}}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // another process just wrote it
		tokens, err = readTokens(path)
		return tokens, path, false, err
	}
	if err != nil {
		return nil, path, false, fmt.Errorf("tokens file: %w", err)
	}
	var b strings.Builder
	b.WriteString("# promptd tokens generated at first start (name:role:secret); keep this file private.\n")
	for _, t := range tokens {
		fmt.Fprintf(&b, "%s:%s:%s\n", t.Name, t.Role, t.Secret)
	}
	_, werr := f.WriteString(b.String())
	serr := f.Sync()
	if err := errors.Join(werr, serr, f.Close()); err != nil {
		_ = os.Remove(path)
		return nil, path, false, fmt.Errorf("tokens file: %w", err)
	}
	return tokens, path, true, nil
}

// readTokens parses a tokens file: PROMPTD_TOKENS entries, one a line;
// blank lines and # comments are skipped. Errors never quote a secret.
func readTokens(path string) ([]Token, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var entries []string
	for _, line := range strings.Split(string(raw), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			entries = append(entries, line)
		}
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("tokens file %s has no tokens", path)
	}
	tokens, err := parseTokens(strings.Join(entries, ","))
	if err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
	}
	return tokens, nil
}

// newSecret is "pd_" and 32 random bytes, base64url.
func newSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails
	return "pd_" + base64.RawURLEncoding.EncodeToString(b[:])
}
