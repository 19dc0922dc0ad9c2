package api_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// Issue 14: one token may hold at most PROMPTD_LEASE_MAX_PER_TOKEN (1,000
// by default) live generic leases; the next acquire is 429 quota_exceeded
// with Retry-After, another token is not affected, and a release frees a
// place.
func TestLeases_perTokenLiveCap_isQuotaExceededWithRetryAfter(t *testing.T) {
	const defaultCap = 1000
	forEachLocker(t, func(t *testing.T, a *app) {
		var first map[string]any
		for i := 0; i < defaultCap; i++ {
			rec := a.do("POST", "/v1/leases", runtime, fmt.Sprintf(`{"resources": ["flood:%d"], "holder": "h", "ttl_ms": 60000}`, i))
			if rec.Code != 200 {
				t.Fatalf("lease %d of the cap: %d %s", i, rec.Code, rec.Body)
			}
			if i == 0 {
				first = a.ok(rec, 200)
			}
		}
		rec := a.do("POST", "/v1/leases", runtime, `{"resources": ["flood:over"], "holder": "h", "ttl_ms": 60000}`)
		if rec.Code != 429 {
			t.Fatalf("live generic lease %d of one token: %d %s, want 429 quota_exceeded", defaultCap+1, rec.Code, rec.Body)
		}
		problem(t, rec, 429, "quota_exceeded")
		if s, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || s < 1 || s > 60 {
			t.Fatalf("Retry-After = %q", rec.Header().Get("Retry-After"))
		}
		// Another token still gets leases.
		a.ok(a.do("POST", "/v1/leases", admin, `{"resources": ["other:1"], "holder": "h", "ttl_ms": 60000}`), 200)
		// A release frees a place.
		if rec := a.do("DELETE", "/v1/leases/"+first["lease_id"].(string), runtime, "", "Lease-Token", first["token"].(string)); rec.Code != 204 {
			t.Fatalf("release = %d %s", rec.Code, rec.Body)
		}
		a.ok(a.do("POST", "/v1/leases", runtime, `{"resources": ["flood:over"], "holder": "h", "ttl_ms": 60000}`), 200)
	})
}

// Issue 14: the audit rows of lease.* events stay small whatever the
// request: no copy of the holder, the resource list, the fences or the
// lease id (which encodes every resource) beyond a few bounded fields.
func TestLeases_auditRows_stayUnderAByteBound(t *testing.T) {
	const bound = 1024 // bytes of resource + details + actor of one row
	forEachLocker(t, func(t *testing.T, a *app) {
		var rs []string
		for i := 0; i < 16; i++ {
			rs = append(rs, fmt.Sprintf("%q", fmt.Sprintf("r%02d", i)+strings.Repeat("x", 253)))
		}
		holder := strings.Repeat("h", 256)
		l := a.leases(fmt.Sprintf(`{"resources": [%s], "holder": %q, "ttl_ms": 60000}`, strings.Join(rs, ", "), holder))
		id, token := l["lease_id"].(string), l["token"].(string)
		problem(t, a.do("POST", "/v1/leases/"+id+"/renew", runtime, `{"ttl_ms": 1000}`, "Lease-Token", "not-the-token"), 409, "lease_lost")
		if rec := a.do("DELETE", "/v1/leases/"+id, runtime, "", "Lease-Token", token); rec.Code != 204 {
			t.Fatalf("release = %d %s", rec.Code, rec.Body)
		}
		a.events.Close() // flush the batcher
		var rows []struct {
			Action string
			Size   int
		}
		if err := a.db.Raw(`SELECT action, LENGTH(resource) + LENGTH(details) + LENGTH(actor) AS size FROM audit_events WHERE action LIKE 'lease.%'`).
			Scan(&rows).Error; err != nil {
			t.Fatal(err)
		}
		if len(rows) < 3 {
			t.Fatalf("lease audit rows = %v, want acquired, renew_failed and released", rows)
		}
		for _, r := range rows {
			if r.Size > bound {
				t.Errorf("a %s audit row is %d bytes (over %d) for a lease of 16 resources of 256 bytes and a 256-byte holder", r.Action, r.Size, bound)
			}
		}
	})
}
