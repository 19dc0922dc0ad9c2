package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
)

// sqliteFile is the SQLite database's name in the data directory.
const sqliteFile = "promptd.db"

// privateFiles are the data directory's files that hold data or secrets:
// the database, its WAL and shared-memory files, and the tokens file.
var privateFiles = []string{sqliteFile, sqliteFile + "-wal", sqliteFile + "-shm", tokensFile, secretKeyFile}

// prepareDataDir makes the data directory private whatever it was before
// (mode 0700: MkdirAll leaves an existing directory's mode alone) and
// creates the database file with mode 0600 before SQLite opens it, so the
// WAL and shared-memory files SQLite creates beside it get 0600 too (they
// take the database file's mode). Files a former run left with looser
// modes are made 0600. A directory promptd cannot chmod (not its owner) is
// logged and used: its files are private all the same. It returns the
// database's path.
func prepareDataDir(dir string, log *slog.Logger) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("data directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		log.Warn("cannot make the data directory private (mode 0700); its files are made 0600", "data_dir", dir, "err", err)
	}
	path := filepath.Join(dir, sqliteFile)
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return "", fmt.Errorf("data directory: %w", err)
	}
	_ = f.Close()
	return path, makePrivate(dir)
}

// makePrivate sets mode 0600 on those of privateFiles that exist in dir.
func makePrivate(dir string) error {
	for _, name := range privateFiles {
		if err := os.Chmod(filepath.Join(dir, name), 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("data directory: %w", err)
		}
	}
	return nil
}
