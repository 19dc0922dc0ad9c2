package webhook

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// KeySize is the length of PROMPTD_SECRET_KEY (AES-256).
const KeySize = 32

// secretPrefix starts every signing secret (Standard Webhooks).
const secretPrefix = "whsec_"

// ErrBadKey: PROMPTD_SECRET_KEY is not 32 bytes of base64.
var ErrBadKey = errors.New("webhook: the secret key must be 32 bytes, base64")

// ParseKey decodes a base64 (standard or URL alphabet, padded or not)
// 32-byte key.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == KeySize {
			return b, nil
		}
	}
	return nil, ErrBadKey
}

// NewKey returns a fresh key, base64.
func NewKey() string {
	b := make([]byte, KeySize)
	_, _ = rand.Read(b) // never fails
	return base64.StdEncoding.EncodeToString(b)
}

// Cipher encrypts signing secrets at rest: AES-256-GCM, a random nonce
// per secret, the webhook's id as additional data (a sealed secret moved
// to another row does not open).
type Cipher struct{ aead cipher.AEAD }

// NewCipher returns a Cipher for a 32-byte key.
func NewCipher(key []byte) (*Cipher, error) {
	if len(key) != KeySize {
		return nil, ErrBadKey
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Cipher{aead: aead}, nil
}

func (c *Cipher) seal(plain, aad string) string {
	nonce := make([]byte, c.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.StdEncoding.EncodeToString(c.aead.Seal(nonce, nonce, []byte(plain), []byte(aad)))
}

// errOpen: a sealed secret does not open under this key.
var errOpen = errors.New("webhook: a stored secret does not open under PROMPTD_SECRET_KEY (was the key changed?)")

func (c *Cipher) open(sealed, aad string) (string, error) {
	b, err := base64.StdEncoding.DecodeString(sealed)
	if err != nil || len(b) < c.aead.NonceSize() {
		return "", errOpen
	}
	n := c.aead.NonceSize()
	plain, err := c.aead.Open(nil, b[:n], b[n:], []byte(aad))
	if err != nil {
		return "", errOpen
	}
	return string(plain), nil
}

// NewSecret is a signing secret: "whsec_" and base64 of 32 random bytes.
func NewSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return secretPrefix + base64.StdEncoding.EncodeToString(b)
}

// Sign is one Standard Webhooks signature, "v1,<base64 HMAC-SHA256 of
// "<id>.<timestamp>.<body>">", keyed by the base64-decoded part of secret
// after "whsec_".
func Sign(secret, msgID string, timestamp int64, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	if err != nil {
		return "", errors.New("webhook: a signing secret is not whsec_ and base64")
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msgID + "." + strconv.FormatInt(timestamp, 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}

// MessageID is a delivery's webhook-id: the same on every attempt.
func MessageID(seq int64, webhookID string) string {
	return "msg_" + strconv.FormatInt(seq, 10) + "_" + webhookID
}
