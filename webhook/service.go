package webhook

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/locks"
	"github.com/promptd/promptd/problem"
	"github.com/promptd/promptd/sqlstore"
)

// Limits and defaults (api/openapi.yaml, Webhooks).
const (
	DefaultMaxWebhooks = 100
	DefaultMaxPending  = 10000 // pending deliveries per webhook; past it a delivery is recorded failed (queue_full)
	DefaultLease       = 15 * time.Second
	DefaultTimeout     = 10 * time.Second // an attempt's answer must come within it
	DefaultPerWebhook  = 4                // attempts in flight per webhook per instance
	DefaultWorkers     = 32               // attempts in flight per instance
	MaxRetryAfter      = time.Hour
	RotationOverlap    = 24 * time.Hour // the old secret signs beside the new one for this long
	maxActions         = 32
	maxAgents          = 100
	maxDescription     = 1024
	responseReadLimit  = 4 << 10
)

// DefaultBackoff is the retry schedule: the wait before retry n is drawn
// uniformly from [0, DefaultBackoff[n-1]] (full jitter); after the last,
// the delivery is failed.
var DefaultBackoff = []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute,
	30 * time.Minute, time.Hour, 3 * time.Hour, 6 * time.Hour}

// Delivery states.
const (
	Pending   = "pending"
	Delivered = "delivered"
	Failed    = "failed"
)

// ErrQueueFull is the last_error of a delivery recorded failed because its
// webhook already had MaxPending pending deliveries.
const ErrQueueFull = "queue_full"

// Sentinel errors; test with errors.Is.
var (
	ErrNotFound         = problem.New(problem.WebhookNotFound, "webhook: not found", "no such webhook")
	ErrDeliveryNotFound = problem.New(problem.DeliveryNotFound, "webhook: delivery not found", "no such delivery of this webhook")
	// ErrNoSecretKey: no PROMPTD_SECRET_KEY, so no secret can be stored.
	ErrNoSecretKey = problem.New(problem.SecretKeyRequired, "webhook: no secret key configured (PROMPTD_SECRET_KEY)",
		"webhooks need PROMPTD_SECRET_KEY (32 bytes, base64) to store their secrets encrypted; nothing was changed")
)

// Options configure a Service.
type Options struct {
	DB     *gorm.DB
	Feed   *events.Feed // wakes the dispatcher when the feed moves; nil: it polls
	Locker locks.Locker // the dispatcher's job lease
	Keys   locks.Keys
	// Cipher encrypts secrets at rest; nil: creating a webhook or
	// rotating its secret is ErrNoSecretKey and nothing is delivered.
	Cipher   *Cipher
	Guard    Guard
	Instance string
	Logger   *slog.Logger
	Metrics  *Metrics
	// Backoff is the retry schedule; nil means DefaultBackoff (tests
	// shorten it; PROMPTD_WEBHOOK_BACKOFF).
	Backoff     []time.Duration
	MaxWebhooks int           // zero: DefaultMaxWebhooks
	MaxPending  int           // zero: DefaultMaxPending
	Lease       time.Duration // zero: DefaultLease
	Timeout     time.Duration // zero: DefaultTimeout; must be below Lease
	PerWebhook  int           // zero: DefaultPerWebhook
	Workers     int           // zero: DefaultWorkers
	Poll        time.Duration // how often due deliveries are looked for; zero: 250ms
	// Client sends deliveries; nil means Guard.Client(Timeout).
	Client *http.Client
	Now    func() time.Time
}

// Service keeps webhooks and delivers to them. Safe for concurrent use.
type Service struct {
	o     Options
	log   audit.Log
	wake  chan struct{}
	mu    sync.Mutex
	busy  map[string]int // attempts in flight per webhook
	slots chan struct{}
	wg    sync.WaitGroup
}

// New returns a service; Run runs its dispatcher and deliverers.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Backoff == nil {
		o.Backoff = DefaultBackoff
	}
	if o.MaxWebhooks <= 0 {
		o.MaxWebhooks = DefaultMaxWebhooks
	}
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.PerWebhook <= 0 {
		o.PerWebhook = DefaultPerWebhook
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Poll <= 0 {
		o.Poll = 250 * time.Millisecond
	}
	if o.Client == nil {
		o.Client = o.Guard.Client(o.Timeout)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{o: o, log: audit.Log{Instance: o.Instance, Now: o.Now}, wake: make(chan struct{}, 1),
		busy: map[string]int{}, slots: make(chan struct{}, o.Workers)}
}

// Webhook is a registered receiver. Its secret is never part of it.
type Webhook struct {
	ID          string
	URL         string
	Actions     []string // event names or patterns (path.Match syntax)
	Agents      []string // empty: every agent
	Description string
	Enabled     bool
	Revision    int64
	// AfterSeq is the feed position at creation: events after it are
	// delivered.
	AfterSeq  int64
	CreatedAt time.Time
	UpdatedAt time.Time
	// OldSecretUntil is when the secret replaced by the last rotation
	// stops signing (nil: none signs).
	OldSecretUntil *time.Time
}

// WithSecret is a webhook and its new secret: the answer of Create and
// RotateSecret, the only times a secret is shown.
type WithSecret struct {
	*Webhook
	Secret string
}

// CreateInput is a new webhook.
type CreateInput struct {
	URL         string
	Actions     []string
	Agents      []string
	Description string
}

// UpdateInput changes the fields that are set, at ExpectedRevision.
type UpdateInput struct {
	URL              *string
	Actions          *[]string
	Agents           *[]string
	Description      *string
	Enabled          *bool
	ExpectedRevision int64
}

func invalid(field, format string, args ...any) error {
	return &problem.InvalidError{Code: problem.InvalidField, Field: field, Detail: fmt.Sprintf(format, args...)}
}

func validPattern(a string) bool {
	if a == "" || len(a) > 64 {
		return false
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '*') {
			return false
		}
	}
	return true
}

func checkActions(as []string) error {
	if len(as) == 0 || len(as) > maxActions {
		return invalid("actions", "actions must name 1..%d event names or patterns such as release.*", maxActions)
	}
	for i, a := range as {
		if !validPattern(a) {
			return invalid(fmt.Sprintf("actions[%d]", i), "an action is an event name or pattern of [a-z0-9._*], up to 64 bytes")
		}
	}
	return nil
}

func checkAgents(as []string) error {
	if len(as) > maxAgents {
		return invalid("agents", "at most %d agents", maxAgents)
	}
	for i, a := range as {
		if err := ident.Validate(fmt.Sprintf("agents[%d]", i), a); err != nil {
			return err
		}
	}
	return nil
}

func checkDescription(d string) error {
	if len(d) > maxDescription || !utf8.ValidString(d) {
		return invalid("description", "description is at most %d bytes of UTF-8", maxDescription)
	}
	return nil
}

func newID() string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return "wh_" + hex.EncodeToString(b)
}

// row is a webhooks row.
type row struct {
	ID, URL, Actions, Agents, Description string
	Enabled                               int
	Revision, AfterSeq                    int64
	Secret, OldSecret                     string
	OldSecretUntilMs                      int64
	CreatedAtMs, UpdatedAtMs              int64
}

const webhookCols = `id, url, actions, agents, description, enabled, revision, after_seq, secret, old_secret, old_secret_until_ms, created_at_ms, updated_at_ms`

func (r row) webhook(now time.Time) *Webhook {
	w := &Webhook{ID: r.ID, URL: r.URL, Description: r.Description, Enabled: r.Enabled != 0, Revision: r.Revision,
		AfterSeq: r.AfterSeq, CreatedAt: time.UnixMilli(r.CreatedAtMs).UTC(), UpdatedAt: time.UnixMilli(r.UpdatedAtMs).UTC()}
	_ = json.Unmarshal([]byte(r.Actions), &w.Actions)
	_ = json.Unmarshal([]byte(r.Agents), &w.Agents)
	if w.Agents == nil {
		w.Agents = []string{}
	}
	if r.OldSecret != "" && r.OldSecretUntilMs > now.UnixMilli() {
		t := time.UnixMilli(r.OldSecretUntilMs).UTC()
		w.OldSecretUntil = &t
	}
	return w
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Create registers a webhook and returns it with its secret (shown this
// once). Its URL is checked (*URLError), at most MaxWebhooks exist
// (*problem.LimitError).
func (s *Service) Create(ctx context.Context, in CreateInput, then ...sqlstore.Then[*WithSecret]) (*WithSecret, error) {
	if s.o.Cipher == nil {
		return nil, ErrNoSecretKey
	}
	if err := checkActions(in.Actions); err != nil {
		return nil, err
	}
	if err := checkAgents(in.Agents); err != nil {
		return nil, err
	}
	if err := checkDescription(in.Description); err != nil {
		return nil, err
	}
	if _, err := s.o.Guard.CheckURL(ctx, in.URL); err != nil {
		return nil, err
	}
	if in.Agents == nil {
		in.Agents = []string{}
	}
	id, secret, now := newID(), NewSecret(), s.o.Now()
	return sqlstore.Transact(ctx, s.o.DB, func(tx *gorm.DB) (*WithSecret, error) {
		// Serialise creates (the row lock, held to commit), then count.
		if err := tx.Exec(`UPDATE webhook_cursor SET seq = seq + 1 WHERE name = ?`, createsRow).Error; err != nil {
			return nil, err
		}
		var n int64
		if err := tx.Raw(`SELECT COUNT(*) FROM webhooks`).Scan(&n).Error; err != nil {
			return nil, err
		}
		if n >= int64(s.o.MaxWebhooks) {
			return nil, &problem.LimitError{Name: "webhooks", Limit: int64(s.o.MaxWebhooks)}
		}
		head, err := audit.Head(ctx, tx)
		if err != nil {
			return nil, err
		}
		r := row{ID: id, URL: in.URL, Actions: mustJSON(in.Actions), Agents: mustJSON(in.Agents), Description: in.Description,
			Enabled: 1, Revision: 1, AfterSeq: head, Secret: s.o.Cipher.seal(secret, id), CreatedAtMs: now.UnixMilli(), UpdatedAtMs: now.UnixMilli()}
		if err := tx.Exec(`INSERT INTO webhooks (`+webhookCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.URL, r.Actions, r.Agents, r.Description, r.Enabled, r.Revision, r.AfterSeq, r.Secret, "", 0,
			r.CreatedAtMs, r.UpdatedAtMs).Error; err != nil {
			return nil, err
		}
		if err := s.audit(ctx, tx, "webhook.created", id, 1); err != nil {
			return nil, err
		}
		return &WithSecret{Webhook: r.webhook(now), Secret: secret}, nil
	}, then...)
}

func (s *Service) audit(ctx context.Context, tx *gorm.DB, action, id string, revision int64) error {
	return s.log.Append(ctx, tx, audit.Event{Action: action, Resource: "webhook/" + id},
		map[string]any{"id": id, "revision": revision})
}

func (s *Service) read(tx *gorm.DB, id string, lock bool) (*row, error) {
	q := `SELECT ` + webhookCols + ` FROM webhooks WHERE id = ?`
	if lock {
		q += sqlstore.ForUpdate(tx)
	}
	var rs []row
	if err := tx.Raw(q, id).Scan(&rs).Error; err != nil {
		return nil, sqlstore.Translate(err)
	}
	if len(rs) == 0 {
		return nil, ErrNotFound
	}
	return &rs[0], nil
}

// Get returns a webhook.
func (s *Service) Get(ctx context.Context, id string) (*Webhook, error) {
	r, err := s.read(s.o.DB.WithContext(ctx), id, false)
	if err != nil {
		return nil, err
	}
	return r.webhook(s.o.Now()), nil
}

// ErrBadCursor: a list cursor that no page returned.
var ErrBadCursor = problem.New(problem.InvalidField, "webhook: the cursor is not one a page returned",
	"cursor must be the next value of a previous page").With("field", "cursor")

// List returns up to limit webhooks newest first, after cursor ("": from
// the newest), and the cursor of the next page ("" at the end). The
// cursor is the last webhook's creation time and id, so a page goes on
// where the last one ended even when webhooks are created or deleted
// meanwhile.
func (s *Service) List(ctx context.Context, cursor string, limit int) ([]*Webhook, string, error) {
	q := s.o.DB.WithContext(ctx).Table("webhooks").Select(webhookCols)
	if cursor != "" {
		at, id, ok := parseCursor(cursor)
		if !ok {
			return nil, "", ErrBadCursor
		}
		q = q.Where("created_at_ms < ? OR (created_at_ms = ? AND id < ?)", at, at, id)
	}
	var rs []row
	if err := q.Order("created_at_ms DESC, id DESC").Limit(limit + 1).Scan(&rs).Error; err != nil {
		return nil, "", sqlstore.Translate(err)
	}
	next := ""
	if len(rs) > limit {
		rs = rs[:limit]
		last := rs[len(rs)-1]
		next = strconv.FormatInt(last.CreatedAtMs, 10) + "." + last.ID
	}
	now := s.o.Now()
	out := make([]*Webhook, len(rs))
	for i, r := range rs {
		out[i] = r.webhook(now)
	}
	return out, next, nil
}

// parseCursor reads a List cursor: "<created_at_ms>.<id>".
func parseCursor(c string) (int64, string, bool) {
	ms, id, ok := strings.Cut(c, ".")
	at, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || at < 0 || !strings.HasPrefix(id, "wh_") || len(id) > 64 {
		return 0, "", false
	}
	return at, id, true
}

// Update changes a webhook at in.ExpectedRevision (*problem.RevisionConflictError
// otherwise). Enabling it again delivers the events from then on.
func (s *Service) Update(ctx context.Context, id string, in UpdateInput) (*Webhook, error) {
	if in.Actions != nil {
		if err := checkActions(*in.Actions); err != nil {
			return nil, err
		}
	}
	if in.Agents != nil {
		if err := checkAgents(*in.Agents); err != nil {
			return nil, err
		}
	}
	if in.Description != nil {
		if err := checkDescription(*in.Description); err != nil {
			return nil, err
		}
	}
	if in.URL != nil {
		if _, err := s.o.Guard.CheckURL(ctx, *in.URL); err != nil {
			return nil, err
		}
	}
	now := s.o.Now()
	return sqlstore.Transact(ctx, s.o.DB, func(tx *gorm.DB) (*Webhook, error) {
		r, err := s.read(tx, id, false)
		if err != nil {
			return nil, err
		}
		if r.Revision != in.ExpectedRevision {
			return nil, &problem.RevisionConflictError{Expected: in.ExpectedRevision, Current: r.Revision}
		}
		if in.URL != nil {
			r.URL = *in.URL
		}
		if in.Actions != nil {
			r.Actions = mustJSON(*in.Actions)
		}
		if in.Agents != nil {
			r.Agents = mustJSON(*in.Agents)
		}
		if in.Description != nil {
			r.Description = *in.Description
		}
		if in.Enabled != nil {
			if *in.Enabled && r.Enabled == 0 {
				head, err := audit.Head(ctx, tx)
				if err != nil {
					return nil, err
				}
				r.AfterSeq = head // "while it is enabled": not the events of the pause
			}
			r.Enabled = 0
			if *in.Enabled {
				r.Enabled = 1
			}
		}
		r.Revision++
		r.UpdatedAtMs = now.UnixMilli()
		res := tx.Exec(`UPDATE webhooks SET url = ?, actions = ?, agents = ?, description = ?, enabled = ?, after_seq = ?,
			revision = ?, updated_at_ms = ? WHERE id = ? AND revision = ?`,
			r.URL, r.Actions, r.Agents, r.Description, r.Enabled, r.AfterSeq, r.Revision, r.UpdatedAtMs, id, in.ExpectedRevision)
		if res.Error != nil {
			return nil, res.Error
		}
		if res.RowsAffected != 1 {
			return nil, s.conflict(tx, id, in.ExpectedRevision)
		}
		if err := s.audit(ctx, tx, "webhook.updated", id, r.Revision); err != nil {
			return nil, err
		}
		return r.webhook(now), nil
	})
}

func (s *Service) conflict(tx *gorm.DB, id string, expected int64) error {
	r, err := s.read(tx, id, false)
	if err != nil {
		return err
	}
	return &problem.RevisionConflictError{Expected: expected, Current: r.Revision}
}

// Delete removes a webhook and its deliveries.
func (s *Service) Delete(ctx context.Context, id string) error {
	_, err := sqlstore.Transact(ctx, s.o.DB, func(tx *gorm.DB) (struct{}, error) {
		r, err := s.read(tx, id, false)
		if err != nil {
			return struct{}{}, err
		}
		if err := tx.Exec(`DELETE FROM webhook_deliveries WHERE webhook_id = ?`, id).Error; err != nil {
			return struct{}{}, err
		}
		if err := tx.Exec(`DELETE FROM webhooks WHERE id = ?`, id).Error; err != nil {
			return struct{}{}, err
		}
		return struct{}{}, s.audit(ctx, tx, "webhook.deleted", id, r.Revision)
	})
	return err
}

// RotateSecret gives a webhook a new secret at expected; the one it
// replaces signs beside it for RotationOverlap.
func (s *Service) RotateSecret(ctx context.Context, id string, expected int64, then ...sqlstore.Then[*WithSecret]) (*WithSecret, error) {
	if s.o.Cipher == nil {
		return nil, ErrNoSecretKey
	}
	secret, now := NewSecret(), s.o.Now()
	return sqlstore.Transact(ctx, s.o.DB, func(tx *gorm.DB) (*WithSecret, error) {
		r, err := s.read(tx, id, false)
		if err != nil {
			return nil, err
		}
		if r.Revision != expected {
			return nil, &problem.RevisionConflictError{Expected: expected, Current: r.Revision}
		}
		r.OldSecret, r.OldSecretUntilMs = r.Secret, now.Add(RotationOverlap).UnixMilli()
		r.Secret = s.o.Cipher.seal(secret, id)
		r.Revision++
		r.UpdatedAtMs = now.UnixMilli()
		res := tx.Exec(`UPDATE webhooks SET secret = ?, old_secret = ?, old_secret_until_ms = ?, revision = ?, updated_at_ms = ?
			WHERE id = ? AND revision = ?`, r.Secret, r.OldSecret, r.OldSecretUntilMs, r.Revision, r.UpdatedAtMs, id, expected)
		if res.Error != nil {
			return nil, res.Error
		}
		if res.RowsAffected != 1 {
			return nil, s.conflict(tx, id, expected)
		}
		if err := s.audit(ctx, tx, "webhook.secret_rotated", id, r.Revision); err != nil {
			return nil, err
		}
		return &WithSecret{Webhook: r.webhook(now), Secret: secret}, nil
	}, then...)
}

// Delivery is one event to one webhook.
type Delivery struct {
	ID            int64
	WebhookID     string
	Seq           int64
	Action        string
	State         string
	Attempts      int
	LastStatus    int    // 0: no answer
	LastError     string // refused_address, dns, connect, tls, timeout, http_<status>, queue_full; "" when none
	NextAttemptAt *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

type deliveryRow struct {
	ID                            int64
	WebhookID                     string
	Seq                           int64
	Action, State                 string
	Attempts, RetryBase           int
	NextAttemptAtMs, LeaseUntilMs int64
	LastStatus                    int
	LastError                     string
	CreatedAtMs, UpdatedAtMs      int64
}

const deliveryCols = `id, webhook_id, seq, action, state, attempts, retry_base, next_attempt_at_ms, lease_until_ms, last_status, last_error, created_at_ms, updated_at_ms`

func (r deliveryRow) delivery() Delivery {
	d := Delivery{ID: r.ID, WebhookID: r.WebhookID, Seq: r.Seq, Action: r.Action, State: r.State, Attempts: r.Attempts,
		LastStatus: r.LastStatus, LastError: r.LastError, CreatedAt: time.UnixMilli(r.CreatedAtMs).UTC(),
		UpdatedAt: time.UnixMilli(r.UpdatedAtMs).UTC()}
	if r.State == Pending {
		t := time.UnixMilli(max(r.NextAttemptAtMs, r.LeaseUntilMs)).UTC()
		d.NextAttemptAt = &t
	}
	return d
}

// Deliveries lists a webhook's deliveries, newest first, limit of them
// after cursor (an id; 0: from the newest); next is the next page's cursor
// (0 at the end).
func (s *Service) Deliveries(ctx context.Context, id string, cursor int64, limit int) ([]Delivery, int64, error) {
	db := s.o.DB.WithContext(ctx)
	if _, err := s.read(db, id, false); err != nil {
		return nil, 0, err
	}
	q := `SELECT ` + deliveryCols + ` FROM webhook_deliveries WHERE webhook_id = ?`
	args := []any{id}
	if cursor > 0 {
		q += ` AND id < ?`
		args = append(args, cursor)
	}
	var rs []deliveryRow
	if err := db.Raw(q+` ORDER BY id DESC LIMIT ?`, append(args, limit+1)...).Scan(&rs).Error; err != nil {
		return nil, 0, sqlstore.Translate(err)
	}
	var next int64
	if len(rs) > limit {
		rs = rs[:limit]
		next = rs[limit-1].ID
	}
	out := make([]Delivery, len(rs))
	for i, r := range rs {
		out[i] = r.delivery()
	}
	return out, next, nil
}

// Retry queues a delivery again, now, with a fresh retry schedule.
func (s *Service) Retry(ctx context.Context, id string, delivery int64) (Delivery, error) {
	now, err := s.clock(ctx)
	if err != nil {
		return Delivery{}, err
	}
	out, err := sqlstore.Transact(ctx, s.o.DB, func(tx *gorm.DB) (Delivery, error) {
		if _, err := s.read(tx, id, false); err != nil {
			return Delivery{}, err
		}
		res := tx.Exec(`UPDATE webhook_deliveries SET state = ?, retry_base = attempts, next_attempt_at_ms = ?, updated_at_ms = ?
			WHERE id = ? AND webhook_id = ?`, Pending, now, now, delivery, id)
		if res.Error != nil {
			return Delivery{}, res.Error
		}
		if res.RowsAffected != 1 {
			return Delivery{}, ErrDeliveryNotFound
		}
		var rs []deliveryRow
		if err := tx.Raw(`SELECT `+deliveryCols+` FROM webhook_deliveries WHERE id = ?`, delivery).Scan(&rs).Error; err != nil {
			return Delivery{}, err
		}
		return rs[0].delivery(), nil
	})
	if err == nil {
		s.nudge()
	}
	return out, err
}

func (s *Service) nudge() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// ParseDeliveryID reads a delivery id of the API ("123").
func ParseDeliveryID(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0 && strconv.FormatInt(n, 10) == s
}
