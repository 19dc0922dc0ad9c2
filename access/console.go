package access

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/sqlstore"
)

// Console sessions: a browser logs in with a token once and is given a
// session id for a cookie. SQL keeps, per session, only the SHA-256 of its
// id, the SHA-256 of the token's secret (never the secret), a CSRF token
// and its expiry, so any instance can serve it and a database reader can
// neither use a session nor learn a token. Every request re-authenticates
// the token by its hash (AuthenticateHash): a revoked or expired token
// ends its sessions at once. A session read from SQL is trusted for
// CacheTTL on that instance (an open console stream re-checks it every
// 200 ms); ending one (logout, a login past the cap) drops it from every
// instance's cache through the bus, and without a bus within CacheTTL.

// DefaultSessionTTL is how long a console session lasts by default.
const DefaultSessionTTL = 12 * time.Hour

// ErrNoSession: no live console session has the presented id (never
// created, logged out or expired).
var ErrNoSession = errors.New("access: no such console session")

// ConsoleSession is one console login.
type ConsoleSession struct {
	// TokenHash is the SHA-256 of the secret of the token that logged in.
	TokenHash [sha256.Size]byte
	// CSRF is the value unsafe requests must carry in X-CSRF-Token.
	CSRF      string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// DefaultMaxConsoleSessions caps the live console sessions of one token:
// a login past it ends that token's oldest sessions, so a token cannot
// fill the table however often it logs in.
const DefaultMaxConsoleSessions = 32

// sessionBusKind is the bus event of an ended console session; its ID is
// the session's stored key (a hash: worth nothing without the id).
const sessionBusKind = "console_session"

// sessionCacheMax bounds the console sessions one instance caches.
const sessionCacheMax = 10000

// sessionEntry is a cached check of a live console session.
type sessionEntry struct {
	cs      ConsoleSession
	checked time.Time
}

// forgetSession drops the cached check of the session stored as key.
func (s *Service) forgetSession(key string) {
	s.mu.Lock()
	delete(s.sessions, key)
	s.mu.Unlock()
}

// cacheSession keeps cs, checked now, under key.
func (s *Service) cacheSession(key string, cs *ConsoleSession, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sessions) >= sessionCacheMax {
		for k, e := range s.sessions {
			if now.Sub(e.checked) >= s.o.CacheTTL {
				delete(s.sessions, k)
			}
		}
		if len(s.sessions) >= sessionCacheMax {
			clear(s.sessions)
		}
	}
	s.sessions[key] = &sessionEntry{cs: *cs, checked: now}
}

// ended drops the sessions stored as keys here and tells the other
// instances, after the transaction that deleted them committed.
func (s *Service) ended(ctx context.Context, keys []string) {
	for _, k := range keys {
		s.forgetSession(k)
		if s.o.Bus != nil {
			s.o.Bus.Publish(ctx, events.Event{Kind: sessionBusKind, ID: k})
		}
	}
}

// sessionPurgeBatch bounds the expired sessions one login deletes.
const sessionPurgeBatch = 1000

// randomToken is 32 random bytes, base64url without padding (256 bits).
func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// sessionKey is the stored form of a session id.
func sessionKey(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:])
}

// CreateSession starts a console session for the token whose secret hashes
// to tokenHash, lasting ttl but never past until (the token's own expiry;
// zero: none). It returns the session's id, which only the cookie holds.
// Expired sessions are deleted on the way, a batch at a time.
func (s *Service) CreateSession(ctx context.Context, tokenHash [sha256.Size]byte, ttl time.Duration, until time.Time) (string, *ConsoleSession, error) {
	now := s.o.Now().UTC().Truncate(time.Millisecond)
	exp := now.Add(ttl)
	if !until.IsZero() && until.Before(exp) {
		exp = until.UTC().Truncate(time.Millisecond)
	}
	id := randomToken()
	cs := &ConsoleSession{TokenHash: tokenHash, CSRF: randomToken(), CreatedAt: now, ExpiresAt: exp}
	if err := s.purgeSessions(s.o.DB.WithContext(ctx), now); err != nil {
		return "", nil, sqlstore.Translate(err)
	}
	var trimmed []string
	_, err := sqlstore.Transact(ctx, s.o.DB, func(tx *gorm.DB) (struct{}, error) {
		trimmed = nil
		err := tx.Exec(`INSERT INTO access_console_sessions (session_hash, token_hash, csrf, created_at_ms, expires_at_ms) VALUES (?, ?, ?, ?, ?)`,
			sessionKey(id), hex.EncodeToString(tokenHash[:]), cs.CSRF, now.UnixMilli(), exp.UnixMilli()).Error
		if err != nil {
			return struct{}{}, err
		}
		if trimmed, err = s.trimSessions(tx, cs.TokenHash, sessionKey(id)); err != nil {
			return struct{}{}, err
		}
		details := map[string]any{"expires_at": exp}
		if len(trimmed) > 0 {
			details["ended_oldest"] = len(trimmed)
		}
		return struct{}{}, s.log.Append(ctx, tx, audit.Event{Action: "console.login", Resource: "console/session"}, details)
	})
	if err != nil {
		return "", nil, err
	}
	s.ended(ctx, trimmed)
	return id, cs, nil
}

// trimSessions keeps the session kept (the one just created) and the
// newest MaxConsoleSessions-1 other sessions of tokenHash, ends the rest
// (oldest first, expired ones included) and returns their keys.
func (s *Service) trimSessions(tx *gorm.DB, tokenHash [sha256.Size]byte, kept string) ([]string, error) {
	var keys []string
	err := tx.Raw(`SELECT session_hash FROM access_console_sessions WHERE token_hash = ? AND session_hash <> ?
		ORDER BY created_at_ms DESC, session_hash DESC LIMIT ? OFFSET ?`,
		hex.EncodeToString(tokenHash[:]), kept, sessionPurgeBatch, s.o.MaxConsoleSessions-1).Scan(&keys).Error
	if err != nil || len(keys) == 0 {
		return nil, err
	}
	return keys, tx.Exec(`DELETE FROM access_console_sessions WHERE session_hash IN ?`, keys).Error
}

// purgeSessions deletes up to sessionPurgeBatch expired sessions.
func (s *Service) purgeSessions(db *gorm.DB, now time.Time) error {
	var keys []string
	if err := db.Raw(`SELECT session_hash FROM access_console_sessions WHERE expires_at_ms <= ? ORDER BY expires_at_ms LIMIT ?`,
		now.UnixMilli(), sessionPurgeBatch).Scan(&keys).Error; err != nil || len(keys) == 0 {
		return err
	}
	return db.Exec(`DELETE FROM access_console_sessions WHERE session_hash IN ?`, keys).Error
}

// Session returns the live console session of id: ErrNoSession when there
// is none, ErrUnavailable when SQL cannot say. A session found is trusted
// for CacheTTL on this instance; one ended here or on another instance
// (logout, a login past the cap) is dropped from the cache at once, by
// the bus when there is one.
func (s *Service) Session(ctx context.Context, id string) (*ConsoleSession, error) {
	if len(id) != 43 { // randomToken's length: anything else was never issued
		return nil, ErrNoSession
	}
	key, now := sessionKey(id), s.o.Now()
	if cs := s.cachedSession(key, now); cs != nil {
		return cs, nil
	}
	var rs []struct {
		SessionHash string
		TokenHash   string
		Csrf        string
		CreatedAtMs int64
		ExpiresAtMs int64
	}
	err := s.o.DB.WithContext(ctx).Raw(`SELECT session_hash, token_hash, csrf, created_at_ms, expires_at_ms FROM access_console_sessions WHERE session_hash = ?`,
		key).Scan(&rs).Error
	if err != nil {
		return nil, errors.Join(ErrUnavailable, sqlstore.Translate(err))
	}
	if len(rs) == 0 || subtle.ConstantTimeCompare([]byte(rs[0].SessionHash), []byte(key)) != 1 {
		return nil, ErrNoSession
	}
	r := rs[0]
	cs := &ConsoleSession{CSRF: r.Csrf, CreatedAt: time.UnixMilli(r.CreatedAtMs).UTC(), ExpiresAt: time.UnixMilli(r.ExpiresAtMs).UTC()}
	if !now.Before(cs.ExpiresAt) {
		return nil, ErrNoSession
	}
	if n, err := hex.Decode(cs.TokenHash[:], []byte(r.TokenHash)); err != nil || n != sha256.Size {
		return nil, ErrNoSession // unreadable: nobody's
	}
	s.cacheSession(key, cs, now)
	return cs, nil
}

// CachedSession is Session from this instance's cache alone: the live
// session of id if it was read within CacheTTL, else nil. It never reads
// SQL.
func (s *Service) CachedSession(id string) *ConsoleSession {
	if len(id) != 43 {
		return nil
	}
	return s.cachedSession(sessionKey(id), s.o.Now())
}

// cachedSession is the live session cached under key, checked within
// CacheTTL, or nil.
func (s *Service) cachedSession(key string, now time.Time) *ConsoleSession {
	s.mu.RLock()
	e := s.sessions[key]
	s.mu.RUnlock()
	if e == nil || now.Sub(e.checked) >= s.o.CacheTTL || !now.Before(e.cs.ExpiresAt) {
		return nil
	}
	cs := e.cs
	return &cs
}

// EndSession deletes the console session of id (logout), audited as
// console.logout. Ending a session that does not exist changes nothing.
func (s *Service) EndSession(ctx context.Context, id string) error {
	key := sessionKey(id)
	_, err := sqlstore.Transact(ctx, s.o.DB, func(tx *gorm.DB) (struct{}, error) {
		res := tx.Exec(`DELETE FROM access_console_sessions WHERE session_hash = ?`, key)
		if res.Error != nil || res.RowsAffected == 0 {
			return struct{}{}, res.Error
		}
		return struct{}{}, s.log.Append(ctx, tx, audit.Event{Action: "console.logout", Resource: "console/session"}, map[string]any{})
	})
	if err == nil {
		s.ended(ctx, []string{key})
	}
	return err
}

// consoleMigrations create access_console_sessions and its index by token.
func consoleMigrations() []sqlstore.Migration {
	return []sqlstore.Migration{{Component: "access", Version: 3, Name: "access_console_sessions", Up: func(tx *gorm.DB) error {
		d := sqlstore.Dialect(tx)
		return sqlstore.CreateTable(tx, sqlstore.Table{
			Name: "access_console_sessions",
			Columns: []string{
				"session_hash " + sqlstore.KeyColumnType(d, 64) + " NOT NULL",
				"token_hash " + sqlstore.KeyColumnType(d, 64) + " NOT NULL",
				"csrf VARCHAR(64) NOT NULL",
				"created_at_ms BIGINT NOT NULL",
				"expires_at_ms BIGINT NOT NULL",
			},
			Primary: []string{"session_hash"},
			Indexes: map[string]string{"access_console_sessions_expiry": "expires_at_ms"},
		})
	}}, {Component: "access", Version: 4, Name: "access_console_sessions_token: a token's sessions, newest first", Up: func(tx *gorm.DB) error {
		if tx.Migrator().HasIndex("access_console_sessions", "access_console_sessions_token") {
			return nil
		}
		return tx.Exec(`CREATE INDEX access_console_sessions_token ON access_console_sessions (token_hash, created_at_ms)`).Error
	}}}
}
