package api

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync/atomic"

	"github.com/labstack/echo/v4"
)

// headerRequestID carries the request id, from the client or generated,
// and is echoed in every response.
const headerRequestID = "X-Request-Id"

// maxRequestID bounds a client-chosen request id.
const maxRequestID = 128

// requestIDFor returns the client's request id when it is sane (1..128
// characters of [A-Za-z0-9._-]: safe in logs and headers), else a new one.
func requestIDFor(given string) string {
	if validRequestID(given) {
		return given
	}
	return newRequestID()
}

// Generated request ids are 32 hex digits: 16 random ones drawn when the
// process starts, then a counter. Ids must be unique, not secret; the
// counter makes a new one cheap on every request without an id.
var (
	requestIDPrefix = func() [8]byte {
		var b [8]byte
		_, _ = rand.Read(b[:]) // never fails
		return b
	}()
	requestIDCounter atomic.Uint64
)

func newRequestID() string {
	var b [16]byte
	copy(b[:8], requestIDPrefix[:])
	binary.BigEndian.PutUint64(b[8:], requestIDCounter.Add(1))
	return hex.EncodeToString(b[:])
}

func validRequestID(s string) bool {
	if s == "" || len(s) > maxRequestID {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// requestIDOf is the id of the request c.
func requestIDOf(c echo.Context) string {
	id, _ := c.Get(ctxRequestID).(string)
	return id
}
