package webhook

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// runDeliverer looks for due deliveries every Poll (and when woken) and
// starts their attempts: at most PerWebhook per webhook and Workers in all
// on this instance, so a receiver that is down or slow holds only its own
// few slots, never another webhook's or the API's.
func (s *Service) runDeliverer(ctx context.Context) {
	tick := time.NewTicker(s.o.Poll)
	defer tick.Stop()
	var gauged time.Time
	for {
		if err := s.deliverDue(ctx); err != nil && ctx.Err() == nil {
			s.o.Logger.Warn("webhook: looking for due deliveries failed; retrying", "err", err)
		}
		if time.Since(gauged) > 5*time.Second {
			gauged = time.Now()
			s.gaugeOldest(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.wake:
		}
	}
}

func (s *Service) gaugeOldest(ctx context.Context) {
	if s.o.Metrics == nil {
		return
	}
	var r struct{ Oldest *int64 }
	if err := s.o.DB.WithContext(ctx).Raw(`SELECT MIN(created_at_ms) AS oldest FROM webhook_deliveries WHERE state = ?`, Pending).
		Scan(&r).Error; err != nil {
		return
	}
	age := 0.0
	if r.Oldest != nil {
		age = max(0, s.o.Now().Sub(time.UnixMilli(*r.Oldest)).Seconds())
	}
	s.o.Metrics.setOldest(age)
}

// target is what an attempt needs of its webhook.
type target struct {
	id, url  string
	secrets  []string // the current one first
	disabled bool
}

func (s *Service) deliverDue(ctx context.Context) error {
	if s.o.Cipher == nil {
		return nil
	}
	db := s.o.DB.WithContext(ctx)
	now := s.o.Now()
	ms, err := s.clock(ctx)
	if err != nil {
		return err
	}
	var ids []string
	if err := db.Raw(`SELECT DISTINCT webhook_id FROM webhook_deliveries WHERE state = ? AND next_attempt_at_ms <= ? AND lease_until_ms <= ?`,
		Pending, ms, ms).Scan(&ids).Error; err != nil {
		return sqlstore.Translate(err)
	}
	for _, id := range ids {
		s.mu.Lock()
		free := s.o.PerWebhook - s.busy[id]
		s.mu.Unlock()
		if free <= 0 {
			continue
		}
		r, err := s.read(db, id, false)
		if errors.Is(err, ErrNotFound) {
			// Created by a dispatch that raced the webhook's deletion.
			if err := db.Exec(`DELETE FROM webhook_deliveries WHERE webhook_id = ? AND NOT EXISTS (SELECT 1 FROM webhooks WHERE id = ?)`,
				id, id).Error; err != nil {
				return sqlstore.Translate(err)
			}
			continue
		} else if err != nil {
			return err
		}
		if r.Enabled == 0 {
			continue // its deliveries wait until it is enabled again
		}
		t, err := s.target(r, now)
		if err != nil {
			s.o.Logger.Error("webhook: cannot open its secret; not delivering", "webhook", id, "err", err)
			continue
		}
		var due []deliveryRow
		if err := db.Raw(`SELECT `+deliveryCols+` FROM webhook_deliveries WHERE webhook_id = ? AND state = ? AND next_attempt_at_ms <= ?
			AND lease_until_ms <= ? ORDER BY next_attempt_at_ms LIMIT ?`, id, Pending, ms, ms, free).Scan(&due).Error; err != nil {
			return sqlstore.Translate(err)
		}
		for _, d := range due {
			select {
			case s.slots <- struct{}{}:
			default:
				return nil // every worker is busy
			}
			ok, err := s.claim(ctx, d, ms)
			if err != nil || !ok {
				<-s.slots
				if err != nil {
					return err
				}
				continue
			}
			d.Attempts++
			s.mu.Lock()
			s.busy[id]++
			s.mu.Unlock()
			s.wg.Go(func() {
				defer func() {
					s.mu.Lock()
					if s.busy[id]--; s.busy[id] <= 0 {
						delete(s.busy, id)
					}
					s.mu.Unlock()
					<-s.slots
				}()
				s.attempt(ctx, t, d)
			})
		}
	}
	return nil
}

func (s *Service) target(r *row, now time.Time) (target, error) {
	t := target{id: r.ID, url: r.URL}
	cur, err := s.o.Cipher.open(r.Secret, r.ID)
	if err != nil {
		return t, err
	}
	t.secrets = []string{cur}
	if r.OldSecret != "" && r.OldSecretUntilMs > now.UnixMilli() {
		if old, err := s.o.Cipher.open(r.OldSecret, r.ID); err == nil {
			t.secrets = append(t.secrets, old)
		}
	}
	return t, nil
}

// clock is the time leases are reckoned in: the SQL server's on MySQL
// (every instance compares against one clock, so a skewed instance clock
// cannot take over a lease early), this process's on SQLite (one process).
func (s *Service) clock(ctx context.Context) (int64, error) {
	if sqlstore.Dialect(s.o.DB) != sqlstore.MySQL {
		return s.o.Now().UnixMilli(), nil
	}
	var ms int64
	if err := s.o.DB.WithContext(ctx).Raw(`SELECT CAST(ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000) AS SIGNED)`).Scan(&ms).Error; err != nil {
		return 0, sqlstore.Translate(err)
	}
	return ms, nil
}

// claim leases one attempt of d: compare-and-set on attempts, so of the
// instances that saw d due, one sends this attempt. now is the lease
// clock's time of this pass; the lease ends Lease after it, at least
// Lease - Timeout after the attempt's own deadline.
func (s *Service) claim(ctx context.Context, d deliveryRow, now int64) (bool, error) {
	res := s.o.DB.WithContext(ctx).Exec(`UPDATE webhook_deliveries SET attempts = attempts + 1, lease_until_ms = ?, updated_at_ms = ?
		WHERE id = ? AND attempts = ? AND state = ? AND lease_until_ms <= ?`,
		now+s.o.Lease.Milliseconds(), now, d.ID, d.Attempts, Pending, now)
	if res.Error != nil {
		return false, sqlstore.Translate(res.Error)
	}
	return res.RowsAffected == 1, nil
}

// attempt sends d once and records the outcome under its attempt number.
// It runs to its end (at most Timeout) even when ctx ends, so an attempt
// that got its answer is recorded.
func (s *Service) attempt(ctx context.Context, t target, d deliveryRow) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.Timeout)
	defer cancel()
	var body []byte
	var b []struct{ Body string }
	if err := s.o.DB.WithContext(ctx).Raw(`SELECT body FROM webhook_deliveries WHERE id = ?`, d.ID).Scan(&b).Error; err != nil || len(b) == 0 {
		return // gone (deleted) or the store is down: the lease runs out and it is tried again
	}
	body = []byte(b[0].Body)
	ctx, span := s.deliverySpan(ctx, t, d)
	start := time.Now()
	status, retryAfter, failure := s.send(ctx, t, d, body)
	s.o.Metrics.observe(time.Since(start).Seconds())
	endDelivery(span, status, failure, s.record(t, d, status, retryAfter, failure))
}

// send posts body to t, signed; it returns the status (0: no answer),
// Retry-After and, when it did not succeed, why.
func (s *Service) send(ctx context.Context, t target, d deliveryRow, body []byte) (int, time.Duration, string) {
	msgID, ts := MessageID(d.Seq, t.id), s.o.Now().Unix()
	sigs := make([]string, 0, len(t.secrets))
	for _, sec := range t.secrets {
		sig, err := Sign(sec, msgID, ts, body)
		if err != nil {
			return 0, 0, "connect"
		}
		sigs = append(sigs, sig)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return 0, 0, "connect"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "promptd-webhooks/1")
	req.Header.Set("webhook-id", msgID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", strings.Join(sigs, " "))
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return 0, 0, classify(err)
	}
	// The status line is the answer: a 2xx that came in time is a delivery
	// even when its body then trickles in past the timeout (counting it as
	// a timeout would deliver it again). The body is read only to reuse
	// the connection, and never stored.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, responseReadLimit))
	_ = resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, 0, ""
	}
	return resp.StatusCode, retryAfter(resp.Header.Get("Retry-After"), s.o.Now()), "http_" + strconv.Itoa(resp.StatusCode)
}

// retryAfter reads Retry-After (seconds or an HTTP date), at most
// MaxRetryAfter.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n > 0 {
		d = time.Duration(min(n, int64(MaxRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), MaxRetryAfter)
}

// record writes an attempt's outcome if d is still at this attempt
// (another instance may have taken it over after the lease ran out) and
// returns it (delivered, retry, failed; unrecorded when the write failed).
func (s *Service) record(t target, d deliveryRow, status int, retryAfter time.Duration, failure string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Retry times are written in the clock they are compared with (the
	// SQL server's on MySQL: see clock), so a skewed instance clock can
	// neither hurry a retry nor hold it back.
	ms, err := s.clock(ctx)
	if err != nil {
		s.o.Logger.Warn("webhook: recording an attempt failed; its lease runs out and it is tried again", "delivery", d.ID, "err", err)
		return "unrecorded"
	}
	now := time.UnixMilli(ms)
	state, next, outcome := Delivered, now, "delivered"
	disable := status == http.StatusGone
	switch {
	case failure == "":
	case disable:
		state, outcome = Failed, "failed"
	default:
		n := d.Attempts - d.RetryBase // attempts of this schedule so far (RetryBase as read before the claim: n >= 1)
		if n > len(s.o.Backoff) {
			state, outcome = Failed, "failed"
			break
		}
		state, outcome = Pending, "retry"
		wait := time.Duration(rand.Int64N(int64(s.o.Backoff[n-1]) + 1)) // full jitter
		next = now.Add(max(wait, retryAfter))
	}
	_, err = sqlstore.Transact(ctx, s.o.DB, func(tx *gorm.DB) (bool, error) {
		res := tx.Exec(`UPDATE webhook_deliveries SET state = ?, last_status = ?, last_error = ?, next_attempt_at_ms = ?, lease_until_ms = 0,
			updated_at_ms = ? WHERE id = ? AND attempts = ?`, state, status, failure, next.UnixMilli(), now.UnixMilli(), d.ID, d.Attempts)
		if res.Error != nil || res.RowsAffected != 1 {
			return false, res.Error
		}
		if disable {
			dis := tx.Exec(`UPDATE webhooks SET enabled = 0, revision = revision + 1, updated_at_ms = ? WHERE id = ? AND enabled = 1`,
				now.UnixMilli(), t.id)
			if dis.Error != nil {
				return false, dis.Error
			}
			if dis.RowsAffected == 1 {
				var rev int64
				if err := tx.Raw(`SELECT revision FROM webhooks WHERE id = ?`, t.id).Scan(&rev).Error; err != nil {
					return false, err
				}
				if err := s.audit(ctx, tx, "webhook.disabled", t.id, rev); err != nil {
					return false, err
				}
			}
		}
		return true, nil
	})
	if err != nil {
		s.o.Logger.Warn("webhook: recording an attempt failed; its lease runs out and it is tried again", "delivery", d.ID, "err", err)
		return "unrecorded"
	}
	s.o.Metrics.outcome(outcome, 1)
	if state == Pending {
		s.nudge()
	}
	return outcome
}

// pruneBatch bounds one DELETE of Prune.
const pruneBatch = 1000

// Prune deletes the delivered and failed deliveries created before
// cutoff (PROMPTD_WEBHOOK_DELIVERY_RETENTION), in batches of pruneBatch,
// and returns how many. Pending deliveries are never deleted. Run it on
// one instance (cmd takes a job lease for it); a run cut short by ctx is
// continued by the next.
func (s *Service) Prune(ctx context.Context, cutoff time.Time) (int64, error) {
	db := s.o.DB.WithContext(ctx)
	var total int64
	for _, state := range []string{Delivered, Failed} {
		for {
			var ids []int64
			if err := db.Raw(`SELECT id FROM webhook_deliveries WHERE state = ? AND created_at_ms < ? ORDER BY created_at_ms LIMIT ?`,
				state, cutoff.UnixMilli(), pruneBatch).Scan(&ids).Error; err != nil {
				return total, sqlstore.Translate(err)
			}
			if len(ids) == 0 {
				break
			}
			res := db.Exec(`DELETE FROM webhook_deliveries WHERE id IN ? AND state = ?`, ids, state)
			if res.Error != nil {
				return total, sqlstore.Translate(res.Error)
			}
			total += res.RowsAffected
			if len(ids) < pruneBatch {
				break
			}
			if err := ctx.Err(); err != nil {
				return total, err
			}
		}
	}
	return total, nil
}
