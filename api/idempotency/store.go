package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/sqlstore"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrInProgress: a request with the same key is being handled by this
	// process right now.
	ErrInProgress = problem.New(problem.IdempotencyBusy, "idempotency: a request with this key is in progress",
		"a request with this Idempotency-Key is still in progress; retry shortly")
	// ErrKeyReused: the key was used before with another request body.
	ErrKeyReused = problem.New(problem.IdempotencyReused, "idempotency: key reused with another request body",
		"this Idempotency-Key was used with another request body").With("field", "Idempotency-Key")
	// ErrExists: Insert found a live record for the key (another request
	// with the key won the race). Roll back and Lookup.
	ErrExists = errors.New("idempotency: an outcome is already stored for this key")
)

// DefaultTTL is how long outcomes are kept when Options.TTL is zero.
const DefaultTTL = 24 * time.Hour

// Key identifies a request: Scope is the hex SHA-256 of the request's
// scope parts (see NewKey), BodyHash the hex SHA-256 of its body.
type Key struct {
	Scope    string
	BodyHash string
}

// NewKey scopes the client's key to the caller's name (a token name, never
// a secret), the method, the route template and the values of its path
// parameters (unescaped), and binds it to bodyHash. Every part is
// length-prefixed, so no choice of names, path values or keys can make two
// different requests share a scope ("k|x" + "y" and "k" + "x|y" do not).
func NewKey(name, method, route string, params []string, key, bodyHash string) Key {
	h := sha256.New()
	part := func(s string) {
		var n [20]byte
		h.Write(strconv.AppendInt(n[:0], int64(len(s)), 10))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	part(name)
	part(method)
	part(route)
	part(strconv.Itoa(len(params)))
	for _, p := range params {
		part(p)
	}
	part(key)
	return Key{Scope: hex.EncodeToString(h.Sum(nil)), BodyHash: bodyHash}
}

// HashBody is the hex SHA-256 of b, the usual BodyHash.
func HashBody(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Response is a stored outcome, replayed byte for byte.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
}

// Options configure a Store.
type Options struct {
	// TTL is how long an outcome is kept (PROMPTD_IDEMPOTENCY_TTL);
	// zero means DefaultTTL.
	TTL time.Duration
	Now func() time.Time
}

// Store records outcomes in SQL and tracks the keys in progress in this
// process. Safe for concurrent use.
type Store struct {
	db  *gorm.DB
	ttl time.Duration
	now func() time.Time

	mu       sync.Mutex
	inflight map[string]string // scope -> body hash
}

// New returns a Store over db (migrated with Migrations).
func New(db *gorm.DB, o Options) *Store {
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Store{db: db, ttl: o.TTL, now: o.Now, inflight: map[string]string{}}
}

// Begin marks k in progress until end is called. A request with the same
// scope already in progress is ErrInProgress (the same body) or
// ErrKeyReused (another body).
func (s *Store) Begin(k Key) (end func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, busy := s.inflight[k.Scope]; busy {
		if h != k.BodyHash {
			return nil, ErrKeyReused
		}
		return nil, ErrInProgress
	}
	s.inflight[k.Scope] = k.BodyHash
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.inflight, k.Scope)
			s.mu.Unlock()
		})
	}, nil
}

type record struct {
	BodyHash    string
	Status      int
	ContentType string
	Body        string
}

// Lookup returns the live outcome stored for k, nil when there is none, or
// ErrKeyReused when it was stored for another body.
func (s *Store) Lookup(ctx context.Context, k Key) (*Response, error) {
	var rows []record
	err := s.db.WithContext(ctx).Raw(`SELECT body_hash, status, content_type, body FROM `+table+`
		WHERE scope = ? AND expires_at_ms > ?`, k.Scope, s.now().UnixMilli()).Scan(&rows).Error
	if err != nil {
		return nil, sqlstore.Translate(err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	if rows[0].BodyHash != k.BodyHash {
		return nil, ErrKeyReused
	}
	return &Response{Status: rows[0].Status, ContentType: rows[0].ContentType, Body: []byte(rows[0].Body)}, nil
}

// Insert records r for k within tx, the transaction of the write r
// answers (call it from a sqlstore.Then handed to the write). An expired
// record of the scope is replaced; a live one is ErrExists (the caller
// rolls back and replays it).
func (s *Store) Insert(ctx context.Context, tx *gorm.DB, k Key, r Response) error {
	now := s.now().UnixMilli()
	if err := tx.WithContext(ctx).Exec(`DELETE FROM `+table+` WHERE scope = ? AND expires_at_ms <= ?`, k.Scope, now).Error; err != nil {
		return sqlstore.Translate(err)
	}
	err := tx.WithContext(ctx).Exec(`INSERT INTO `+table+` (scope, body_hash, status, content_type, body, created_at_ms, expires_at_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, k.Scope, k.BodyHash, r.Status, r.ContentType, string(r.Body), now, now+s.ttl.Milliseconds()).Error
	if sqlstore.IsDuplicate(err) {
		return fmt.Errorf("%w: %w", ErrExists, sqlstore.Translate(err))
	}
	return sqlstore.Translate(err)
}

// Save records r for k in a transaction of its own (outcomes that wrote
// nothing, such as validation errors). When a live record already exists
// it is kept and Save reports success.
func (s *Store) Save(ctx context.Context, k Key, r Response) error {
	_, err := sqlstore.Transact(ctx, s.db, func(tx *gorm.DB) (struct{}, error) {
		return struct{}{}, s.Insert(ctx, tx, k, r)
	})
	if errors.Is(err, ErrExists) {
		return nil
	}
	return err
}

// sweepBatch bounds one DELETE of Sweep.
const sweepBatch = 1000

// Sweep deletes expired records, in batches, and returns how many. Run it
// periodically on one instance (cmd takes a job lease for it).
func (s *Store) Sweep(ctx context.Context) (int64, error) {
	var total int64
	for {
		now := s.now().UnixMilli()
		var scopes []string
		db := s.db.WithContext(ctx)
		if err := db.Raw(`SELECT scope FROM `+table+` WHERE expires_at_ms <= ? ORDER BY expires_at_ms LIMIT ?`, now, sweepBatch).
			Scan(&scopes).Error; err != nil {
			return total, sqlstore.Translate(err)
		}
		if len(scopes) == 0 {
			return total, nil
		}
		res := db.Exec(`DELETE FROM `+table+` WHERE scope IN ? AND expires_at_ms <= ?`, scopes, now)
		if res.Error != nil {
			return total, sqlstore.Translate(res.Error)
		}
		total += res.RowsAffected
		if len(scopes) < sweepBatch {
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}
