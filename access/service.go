package access

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/sqlstore"
)

// Options configure a Service.
type Options struct {
	DB *gorm.DB
	// Bus carries revocations to every instance; nil: this one only (the
	// cache TTL reaches the others).
	Bus *events.Bus
	// Instance names this process in audit events.
	Instance string
	// Reserved are the bootstrap token names (PROMPTD_TOKENS): no managed
	// token may take one, and they cannot be revoked.
	Reserved []string
	// MaxTokens caps the live managed tokens; zero means DefaultMaxTokens.
	MaxTokens int
	// CacheTTL is how long a check is trusted; zero means DefaultCacheTTL.
	CacheTTL time.Duration
	// MaxConsoleSessions caps the console sessions of one token; a login
	// past it ends the token's oldest. Zero means DefaultMaxConsoleSessions.
	MaxConsoleSessions int
	Now                func() time.Time
	Logger             *slog.Logger
}

// Service keeps managed tokens. Safe for concurrent use.
type Service struct {
	o        Options
	log      audit.Log
	reserved map[string]bool

	mu    sync.RWMutex
	cache map[hashOf]*entry
	byID  map[string]hashOf
	// used receives tokens to stamp last_used_at for (Run writes them).
	used chan string
	// sessions caches live console sessions by their stored key, each
	// trusted for CacheTTL (an open console stream re-checks its session
	// every 200 ms); ended ones are dropped here and on the bus.
	sessions map[string]*sessionEntry
}

// entry is a cached check: the token as SQL had it at checked, and its
// creators (lineage.go).
type entry struct {
	id      string // the token's id
	tok     *Token // effective: as wide as its creators allow
	chain   []string
	checked time.Time
	used    time.Time // when last_used_at was last queued
}

// New returns a service over o.DB, which must be migrated (Migrations).
// Run writes last_used_at; without it nothing is stamped.
func New(o Options) *Service {
	o.MaxTokens = cmp.Or(o.MaxTokens, DefaultMaxTokens)
	o.CacheTTL = cmp.Or(o.CacheTTL, DefaultCacheTTL)
	o.MaxConsoleSessions = cmp.Or(o.MaxConsoleSessions, DefaultMaxConsoleSessions)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	s := &Service{o: o, log: audit.Log{Instance: o.Instance, Now: o.Now}, reserved: map[string]bool{},
		cache: map[hashOf]*entry{}, byID: map[string]hashOf{}, used: make(chan string, 1024), sessions: map[string]*sessionEntry{}}
	for _, n := range o.Reserved {
		s.reserved[n] = true
	}
	if o.Bus != nil {
		o.Bus.Subscribe(busKind, func(_ context.Context, ev events.Event) { s.forget(ev.ID) })
		o.Bus.Subscribe(sessionBusKind, func(_ context.Context, ev events.Event) { s.forgetSession(ev.ID) })
	}
	return s
}

// forget drops the cached check of token id and of every token it made
// (directly or not): their next use re-reads SQL.
func (s *Service) forget(id string) {
	s.mu.Lock()
	if h, ok := s.byID[id]; ok {
		delete(s.cache, h)
		delete(s.byID, id)
	}
	for h, e := range s.cache {
		if slices.Contains(e.chain, id) {
			delete(s.cache, h)
			delete(s.byID, e.id)
		}
	}
	s.mu.Unlock()
}

// Authenticate returns the live managed token whose secret is presented,
// as wide as its creators allow now (lineage.go): ErrUnknown when there
// is none (or it or one of its creators is revoked or expired), and
// ErrUnavailable when SQL cannot confirm it and the last check is older
// than CacheTTL. The secret is found by its SHA-256 (a map key, then an
// indexed column) and the stored hash compared in constant time.
func (s *Service) Authenticate(ctx context.Context, secret string) (*Token, error) {
	if !plausible(secret) {
		return nil, ErrUnknown
	}
	return s.AuthenticateHash(ctx, hash(secret))
}

// AuthenticateHash is Authenticate for a secret known only by its SHA-256
// (a console session's token): the same cache, checks and errors.
func (s *Service) AuthenticateHash(ctx context.Context, sum [sha256.Size]byte) (*Token, error) {
	return s.authenticate(ctx, sum, true)
}

// CachedHash is AuthenticateHash from this instance's cache alone: the
// live token of sum if it was checked within CacheTTL, else nil. It never
// reads SQL, so a caller that must not (a client over its budget of
// failed authentications) can still admit the tokens it knows.
func (s *Service) CachedHash(sum [sha256.Size]byte) *Token {
	t, _ := s.authenticate(context.Background(), sum, false)
	return t
}

// authenticate finds the token of sum in the cache, or, when the cached
// check is missing or old and lookup allows, in SQL.
func (s *Service) authenticate(ctx context.Context, sum [sha256.Size]byte, lookup bool) (*Token, error) {
	h, now := hashOf(sum), s.o.Now()
	s.mu.RLock()
	e := s.cache[h]
	s.mu.RUnlock()
	if e == nil || now.Sub(e.checked) >= s.o.CacheTTL {
		if !lookup {
			return nil, ErrUnknown
		}
		var err error
		if e, err = s.check(ctx, h, now); err != nil {
			return nil, err
		}
	}
	if e.tok == nil || !e.tok.Live(now) {
		return nil, ErrUnknown
	}
	if now.Sub(e.used) >= lastUsedEvery {
		s.mu.Lock()
		stamp := now.Sub(e.used) >= lastUsedEvery
		e.used = now
		s.mu.Unlock()
		if stamp {
			select {
			case s.used <- e.tok.ID:
			default: // the writer is behind: the next use queues it again
			}
		}
	}
	return e.tok, nil
}

// check re-reads the token of h and its creators from SQL and caches
// what it found.
func (s *Service) check(ctx context.Context, h hashOf, now time.Time) (*entry, error) {
	var rs []row
	err := s.o.DB.WithContext(ctx).Raw(`SELECT `+tokenCols+` FROM access_tokens WHERE secret_hash = ?`, h.hex()).Scan(&rs).Error
	if err != nil {
		return nil, errors.Join(ErrUnavailable, sqlstore.Translate(err))
	}
	if len(rs) == 0 || subtle.ConstantTimeCompare([]byte(rs[0].SecretHash), []byte(h.hex())) != 1 {
		return &entry{}, nil // not cached: only tokens that exist take memory
	}
	tok := rs[0].token()
	creators, err := s.creators(ctx, s.o.DB, []*Token{tok})
	if err != nil {
		return nil, errors.Join(ErrUnavailable, err)
	}
	e := &entry{id: tok.ID, checked: now}
	e.tok, e.chain = s.effective(tok, creators, now)
	s.mu.Lock()
	if old := s.cache[h]; old != nil {
		e.used = old.used
	}
	s.cache[h], s.byID[e.id] = e, h
	s.mu.Unlock()
	return e, nil
}

// Run writes last_used_at stamps and refreshes the cached checks every
// half CacheTTL (one query for every cached token), so that requests find
// a fresh check and stay off the database; until ctx ends. While SQL
// fails, checks age past CacheTTL and requests re-read it themselves
// (ErrUnavailable when it still fails).
func (s *Service) Run(ctx context.Context) {
	refresh := time.NewTicker(s.o.CacheTTL / 2)
	defer refresh.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-refresh.C:
			if err := s.refresh(ctx); err != nil && ctx.Err() == nil {
				s.o.Logger.Warn("token checks not refreshed; requests re-read SQL after the cache TTL", "err", err)
			}
		case id := <-s.used:
			err := s.o.DB.WithContext(ctx).Exec(`UPDATE access_tokens SET last_used_at_ms = ? WHERE token_id = ?`,
				s.o.Now().UnixMilli(), id).Error
			if err != nil && ctx.Err() == nil {
				s.o.Logger.Warn("token last_used_at not written", "token_id", id, "err", err)
			}
		}
	}
}

// refreshBatch is how many cached checks one refresh query re-reads.
const refreshBatch = 500

// refresh re-reads every cached token and its creators from SQL and marks
// its check fresh as of the query's start.
func (s *Service) refresh(ctx context.Context) error {
	s.mu.RLock()
	hashes := make([]string, 0, len(s.cache))
	for h := range s.cache {
		hashes = append(hashes, h.hex())
	}
	s.mu.RUnlock()
	for len(hashes) > 0 {
		chunk := hashes[:min(refreshBatch, len(hashes))]
		hashes = hashes[len(chunk):]
		at := s.o.Now()
		var rs []row
		if err := s.o.DB.WithContext(ctx).Raw(`SELECT `+tokenCols+` FROM access_tokens WHERE secret_hash IN ?`, chunk).Scan(&rs).Error; err != nil {
			return sqlstore.Translate(err)
		}
		found := make(map[string]*Token, len(rs))
		toks := make([]*Token, len(rs))
		for i := range rs {
			toks[i] = rs[i].token()
			found[rs[i].SecretHash] = toks[i]
		}
		creators, err := s.creators(ctx, s.o.DB, toks)
		if err != nil {
			return err
		}
		s.mu.Lock()
		for _, hx := range chunk {
			var h hashOf
			_, _ = hex.Decode(h[:], []byte(hx))
			e := s.cache[h]
			if e == nil || e.checked.After(at) {
				continue // forgotten, or checked since
			}
			t := found[hx]
			if t == nil {
				delete(s.cache, h)
				delete(s.byID, e.id)
				continue
			}
			ne := &entry{id: t.ID, checked: at, used: e.used}
			ne.tok, ne.chain = s.effective(t, creators, at)
			s.cache[h] = ne
		}
		s.mu.Unlock()
	}
	return nil
}

// CreateInput is a token to create. Scopes nil means unscoped.
type CreateInput struct {
	Name      string
	Role      string
	Scopes    *Scopes
	ExpiresAt *time.Time
}

// Create makes a token for creator, no wider than creator in role, scopes
// or expiry, and returns it with its secret (shown once).
func (s *Service) Create(ctx context.Context, creator *Token, in CreateInput, then ...sqlstore.Then[*WithSecret]) (*WithSecret, error) {
	if err := ident.Validate("name", in.Name); err != nil {
		return nil, err
	}
	if in.Role != RoleAdmin && in.Role != RoleRuntime {
		return nil, invalid("role", "role is admin or runtime")
	}
	if err := in.Scopes.Validate(); err != nil {
		return nil, err
	}
	now := s.o.Now()
	if in.ExpiresAt != nil {
		if !in.ExpiresAt.After(now) {
			return nil, invalid("expires_at", "expires_at must be in the future")
		}
		if in.ExpiresAt.Sub(now) > MaxLifetime {
			return nil, invalid("expires_at", "expires_at is at most one year ahead")
		}
	}
	if in.Role == RoleAdmin && creator.Role != RoleAdmin {
		return nil, &WiderError{Scope: "role"}
	}
	if ok, kind := in.Scopes.Within(creator.Scopes); !ok {
		return nil, &WiderError{Scope: kind + "s"}
	}
	if creator.ExpiresAt != nil && (in.ExpiresAt == nil || in.ExpiresAt.After(*creator.ExpiresAt)) {
		return nil, &WiderError{Scope: "expires_at"}
	}
	if s.reserved[in.Name] {
		return nil, ErrExists
	}
	if in.Scopes.Unscoped() {
		in.Scopes = nil
	}
	secret := NewSecret()
	t := &Token{ID: newID(), Name: in.Name, Role: in.Role, Scopes: in.Scopes, Principal: cmp.Or(creator.Principal, creator.Name),
		CreatedBy: creator.Name, CreatedAt: now.UTC().Truncate(time.Millisecond), ExpiresAt: in.ExpiresAt}
	if t.ExpiresAt != nil {
		at := t.ExpiresAt.UTC().Truncate(time.Millisecond)
		t.ExpiresAt = &at
	}
	return sqlstore.Transact(ctx, s.o.DB, func(tx *gorm.DB) (*WithSecret, error) {
		// Serialise creates (the row lock, held to commit), then count.
		if err := tx.Exec(`UPDATE access_meta SET n = n + 1 WHERE name = ?`, createsRow).Error; err != nil {
			return nil, err
		}
		var n int64
		if err := tx.Raw(`SELECT COUNT(*) FROM access_tokens WHERE revoked_at_ms = 0 AND (expires_at_ms = 0 OR expires_at_ms > ?)`,
			now.UnixMilli()).Scan(&n).Error; err != nil {
			return nil, err
		}
		if n >= int64(s.o.MaxTokens) {
			return nil, &problem.LimitError{Name: "tokens", Limit: int64(s.o.MaxTokens)}
		}
		r := rowOf(t, hash(secret).hex())
		err := tx.Exec(`INSERT INTO access_tokens (`+tokenCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.TokenID, r.Name, r.Role, r.Scopes, r.SecretHash, r.Principal, r.CreatedBy, r.CreatedAtMs, r.ExpiresAtMs, r.RevokedAtMs, r.LastUsedAtMs).Error
		if sqlstore.IsDuplicate(err) {
			return nil, ErrExists
		}
		if err != nil {
			return nil, err
		}
		if err := s.audit(ctx, tx, "token.created", t); err != nil {
			return nil, err
		}
		return &WithSecret{Token: t, Secret: secret}, nil
	}, then...)
}

func (s *Service) audit(ctx context.Context, tx *gorm.DB, action string, t *Token) error {
	return s.log.Append(ctx, tx, audit.Event{Action: action, Resource: "token/" + t.Name},
		map[string]any{"id": t.ID, "name": t.Name, "role": t.Role, "scopes": t.Scopes, "principal": t.Principal,
			"created_by": t.CreatedBy, "expires_at": t.ExpiresAt})
}

// Revoke revokes the managed token name at once on this instance, and on
// the others through the bus (or, without it, within CacheTTL). Revoking
// a revoked token changes nothing.
func (s *Service) Revoke(ctx context.Context, name string) (*Token, error) {
	if err := ident.Validate("name", name); err != nil {
		return nil, err
	}
	if s.reserved[name] {
		return nil, ErrBootstrap
	}
	now := s.o.Now()
	t, err := sqlstore.Transact(ctx, s.o.DB, func(tx *gorm.DB) (*Token, error) {
		var rs []row
		if err := tx.Raw(`SELECT `+tokenCols+` FROM access_tokens WHERE name = ?`+sqlstore.ForUpdate(tx), name).Scan(&rs).Error; err != nil {
			return nil, err
		}
		if len(rs) == 0 {
			return nil, ErrNotFound
		}
		t := rs[0].token()
		if t.RevokedAt != nil {
			return t, nil
		}
		if err := tx.Exec(`UPDATE access_tokens SET revoked_at_ms = ? WHERE token_id = ? AND revoked_at_ms = 0`, now.UnixMilli(), t.ID).Error; err != nil {
			return nil, err
		}
		at := now.UTC().Truncate(time.Millisecond)
		t.RevokedAt = &at
		return t, s.audit(ctx, tx, "token.revoked", t)
	})
	if err != nil {
		return nil, err
	}
	s.forget(t.ID)
	if s.o.Bus != nil {
		s.o.Bus.Publish(ctx, events.Event{Kind: busKind, ID: t.ID})
	}
	return t, nil
}

// List returns managed tokens newest first, after cursor (0: from the
// newest), and the cursor of the next page (0 when there is none).
func (s *Service) List(ctx context.Context, cursor int64, limit int) ([]*Token, int64, error) {
	q := s.o.DB.WithContext(ctx).Table("access_tokens").Select("id, " + tokenCols)
	if cursor > 0 {
		q = q.Where("id < ?", cursor)
	}
	var rs []row
	if err := q.Order("id DESC").Limit(limit + 1).Scan(&rs).Error; err != nil {
		return nil, 0, sqlstore.Translate(err)
	}
	var next int64
	if len(rs) > limit {
		rs = rs[:limit]
		next = rs[len(rs)-1].ID
	}
	out := make([]*Token, len(rs))
	for i := range rs {
		out[i] = rs[i].token()
	}
	return out, next, nil
}

// row is an access_tokens row.
type row struct {
	ID           int64
	TokenID      string
	Name         string
	Role         string
	Scopes       string
	SecretHash   string
	Principal    string
	CreatedBy    string
	CreatedAtMs  int64
	ExpiresAtMs  int64
	RevokedAtMs  int64
	LastUsedAtMs int64
}

const tokenCols = `token_id, name, role, scopes, secret_hash, principal, created_by, created_at_ms, expires_at_ms, revoked_at_ms, last_used_at_ms`

func rowOf(t *Token, secretHash string) row {
	r := row{TokenID: t.ID, Name: t.Name, Role: t.Role, SecretHash: secretHash, Principal: t.Principal, CreatedBy: t.CreatedBy,
		CreatedAtMs: t.CreatedAt.UnixMilli()}
	if t.Scopes != nil {
		b, _ := json.Marshal(t.Scopes)
		r.Scopes = string(b)
	}
	if t.ExpiresAt != nil {
		r.ExpiresAtMs = t.ExpiresAt.UnixMilli()
	}
	return r
}

func msTime(ms int64) *time.Time {
	if ms == 0 {
		return nil
	}
	t := time.UnixMilli(ms).UTC()
	return &t
}

func (r *row) token() *Token {
	t := &Token{ID: r.TokenID, Name: r.Name, Role: r.Role, Principal: r.Principal, CreatedBy: r.CreatedBy,
		CreatedAt: time.UnixMilli(r.CreatedAtMs).UTC(), ExpiresAt: msTime(r.ExpiresAtMs), RevokedAt: msTime(r.RevokedAtMs),
		LastUsed: msTime(r.LastUsedAtMs)}
	if r.Scopes != "" {
		t.Scopes = &Scopes{}
		if err := json.Unmarshal([]byte(r.Scopes), t.Scopes); err != nil {
			t.Scopes = &Scopes{Agents: []string{}, Envs: []string{}, Boards: []string{}} // unreadable: nothing
		}
	}
	return t
}
