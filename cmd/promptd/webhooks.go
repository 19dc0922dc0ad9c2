package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/promptd/promptd/webhook"
)

// secretKeyFile holds the key generated in embedded mode for webhook
// secrets (PROMPTD_SECRET_KEY's format: base64 of 32 bytes).
const secretKeyFile = "secret_key"

// webhookOptions configures webhook deliveries: the address guard, the
// retry schedule, metrics and the cipher of their secrets, under
// PROMPTD_SECRET_KEY or, in embedded mode, a key generated into the data
// directory (mode 0600). With MySQL and no key, webhooks cannot be
// created (503 secret_key_required) and nothing is delivered.
func (m *Main) webhookOptions() (webhook.Options, error) {
	cfg := m.Config
	o := webhook.Options{Guard: webhook.Guard{AllowHTTP: cfg.WebhookAllowHTTP, AllowPrivate: cfg.WebhookAllowPrivate},
		Backoff: cfg.WebhookBackoff, Metrics: webhook.NewMetrics(m.registry)}
	key := cfg.SecretKey
	if key == nil && cfg.MySQLDSN == "" {
		var err error
		if key, err = embeddedSecretKey(cfg.DataDir); err != nil {
			return o, err
		}
	}
	if key == nil {
		m.Logger.Info("webhooks are off: set PROMPTD_SECRET_KEY (32 bytes, base64) to create and deliver them")
		return o, nil
	}
	c, err := webhook.NewCipher(key)
	if err != nil {
		return o, fmt.Errorf("PROMPTD_SECRET_KEY: %w", err)
	}
	o.Cipher = c
	return o, nil
}

// embeddedSecretKey reads dataDir/secret_key, generating it (mode 0600)
// at the first start.
func embeddedSecretKey(dataDir string) ([]byte, error) {
	path := filepath.Join(dataDir, secretKeyFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		f, cerr := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if cerr == nil {
			_, werr := f.WriteString(webhook.NewKey() + "\n")
			if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
				_ = os.Remove(path)
				return nil, fmt.Errorf("secret key file: %w", err)
			}
		} else if !errors.Is(cerr, fs.ErrExist) {
			return nil, fmt.Errorf("secret key file: %w", cerr)
		}
		raw, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("secret key file: %w", err)
	}
	key, err := webhook.ParseKey(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("secret key file %s: %w", path, err)
	}
	return key, nil
}
