package access_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/internal/harness/testenv"
	"github.com/promptd/promptd/sqlstore"
)

// TestConsoleSession_expiresAndIsPurged_storesNoSecret: a session lasts
// its TTL, never past its token's expiry; SQL holds only hashes of the
// session id and the token's secret; expired rows go at the next login.
func TestConsoleSession_expiresAndIsPurged_storesNoSecret(t *testing.T) {
	testenv.ForEachDialect(t, append(audit.Migrations(), access.Migrations()...), func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		c := &clock{t: time.Now()}
		s := access.New(access.Options{DB: db, Now: c.now})
		secret := "pd_the-token-secret-that-must-never-be-stored-x"
		sum := sha256.Sum256([]byte(secret))
		id, cs, err := s.CreateSession(ctx, sum, time.Hour, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		short, _, err := s.CreateSession(ctx, sum, time.Hour, c.now().Add(time.Minute)) // its token expires in a minute
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Session(ctx, id)
		if err != nil || got.TokenHash != sum || got.CSRF != cs.CSRF {
			t.Fatalf("Session = %+v, %v", got, err)
		}
		var stored []struct{ SessionHash, TokenHash, Csrf string }
		db.Raw(`SELECT session_hash, token_hash, csrf FROM access_console_sessions`).Scan(&stored)
		if len(stored) != 2 {
			t.Fatalf("%d session rows, want 2", len(stored))
		}
		for _, row := range stored {
			for _, bad := range []string{secret, id, short} {
				if strings.Contains(row.SessionHash+row.TokenHash+row.Csrf, bad) {
					t.Errorf("a session row holds a secret in clear: %+v", row)
				}
			}
		}
		c.add(2 * time.Minute)
		if _, err := s.Session(ctx, short); !errors.Is(err, access.ErrNoSession) {
			t.Errorf("past its token's expiry: %v, want ErrNoSession", err)
		}
		if _, err := s.Session(ctx, id); err != nil { // control: the other lives on
			t.Fatal(err)
		}
		c.add(time.Hour)
		if _, err := s.Session(ctx, id); !errors.Is(err, access.ErrNoSession) {
			t.Errorf("past its TTL: %v, want ErrNoSession", err)
		}
		if _, _, err := s.CreateSession(ctx, sum, time.Hour, time.Time{}); err != nil {
			t.Fatal(err)
		}
		var n int64
		db.Raw(`SELECT COUNT(*) FROM access_console_sessions`).Scan(&n)
		if n != 1 {
			t.Errorf("%d sessions kept after a login, want the new one only (expired ones purged)", n)
		}
		if _, err := s.Session(ctx, "not-an-issued-id"); !errors.Is(err, access.ErrNoSession) {
			t.Errorf("an unissued id: %v", err)
		}
	})
}

// TestConsoleSession_perTokenCap_endsTheOldest: a token's login past
// MaxConsoleSessions ends its oldest sessions, never the new one (even
// when all were made in the same millisecond) and never another token's;
// the login's audit event says how many it ended. Control: under the
// cap, every session lives.
func TestConsoleSession_perTokenCap_endsTheOldest(t *testing.T) {
	testenv.ForEachDialect(t, append(audit.Migrations(), access.Migrations()...), func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		c := &clock{t: time.Now()}
		s := access.New(access.Options{DB: db, Now: c.now, MaxConsoleSessions: 3})
		a, b := sha256.Sum256([]byte("pd_token-a")), sha256.Sum256([]byte("pd_token-b"))
		other, _, err := s.CreateSession(ctx, b, time.Hour, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for i := range 3 {
			id, _, err := s.CreateSession(ctx, a, time.Hour, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
			if i < 2 {
				c.add(time.Millisecond)
			}
		}
		for i, id := range ids { // control: at the cap, all live
			if _, err := s.Session(ctx, id); err != nil {
				t.Fatalf("session %d of 3 (cap 3): %v", i, err)
			}
		}
		c.add(time.Millisecond)
		fourth, _, err := s.CreateSession(ctx, a, time.Hour, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Session(ctx, ids[0]); !errors.Is(err, access.ErrNoSession) {
			t.Errorf("the oldest session past the cap: %v, want ErrNoSession", err)
		}
		for _, id := range []string{ids[1], ids[2], fourth, other} {
			if _, err := s.Session(ctx, id); err != nil {
				t.Errorf("a session that should live: %v", err)
			}
		}
		var details []string
		db.Raw(`SELECT details FROM audit_events WHERE action = 'console.login' ORDER BY id`).Scan(&details)
		if last := details[len(details)-1]; !strings.Contains(last, `"ended_oldest":1`) {
			t.Errorf("the login past the cap is audited as %s, want ended_oldest 1", last)
		}
		// Ten logins in one millisecond: each keeps its own session.
		for range 10 {
			id, _, err := s.CreateSession(ctx, a, time.Hour, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Session(ctx, id); err != nil {
				t.Fatalf("a login's own session was ended by its cap: %v", err)
			}
		}
		var n int64
		db.Raw(`SELECT COUNT(*) FROM access_console_sessions WHERE token_hash <> ?`, hex.EncodeToString(b[:])).Scan(&n)
		if n != 3 {
			t.Errorf("token a holds %d sessions, want the cap, 3", n)
		}
	})
}

// TestConsoleSession_cachedOnEachInstance_endedEverywhereByTheBus: two
// instances over one database and one Redis. An instance trusts a session
// it has read for CacheTTL (here a minute, so only the bus can end it
// sooner), and a logout or a login past the cap on the other instance
// ends it there within moments. Control: without the bus, the other
// instance still serves the logged-out session from its cache.
func TestConsoleSession_cachedOnEachInstance_endedEverywhereByTheBus(t *testing.T) {
	db := testenv.OpenDB(t, sqlstore.Config{SQLitePath: filepath.Join(t.TempDir(), "promptd.db")}, append(audit.Migrations(), access.Migrations()...))
	ctx := context.Background()
	sum := sha256.Sum256([]byte("pd_token-c"))
	prefix := fmt.Sprint("cs", time.Now().UnixNano())
	bus := func() *events.Bus {
		b := events.NewBus(events.Options{Redis: testenv.RedisClient(t), Prefix: prefix})
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	a := access.New(access.Options{DB: db, Bus: bus(), CacheTTL: time.Minute, MaxConsoleSessions: 2})
	b := access.New(access.Options{DB: db, Bus: bus(), CacheTTL: time.Minute, MaxConsoleSessions: 2})
	endedOnB := func(id, what string) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for {
			_, err := b.Session(ctx, id)
			if errors.Is(err, access.ErrNoSession) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s on instance a: instance b still serves the session after 3 s (%v)", what, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	id, _, err := a.CreateSession(ctx, sum, time.Hour, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Session(ctx, id); err != nil { // b caches it
		t.Fatal(err)
	}
	if err := a.EndSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	endedOnB(id, "a logout")

	first, _, err := a.CreateSession(ctx, sum, time.Hour, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Session(ctx, first); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second and the third, past the cap of 2: ends first
		time.Sleep(2 * time.Millisecond)
		if _, _, err := a.CreateSession(ctx, sum, time.Hour, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	endedOnB(first, "a login past the cap")

	// Control: an instance that does not hear the bus keeps its cached
	// check for its CacheTTL.
	deaf := access.New(access.Options{DB: db, CacheTTL: time.Minute})
	if id, _, err = a.CreateSession(ctx, sum, time.Hour, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := deaf.Session(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := a.EndSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := deaf.Session(ctx, id); err != nil {
		t.Fatalf("without the bus, the cached session = %v; want it still served (the cache is what the bus clears)", err)
	}
}
