package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"gorm.io/gorm"

	"github.com/promptd/promptd/api/idempotency"
	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/sqlstore"
)

// Idempotency headers (api/openapi.yaml, Conventions).
const (
	headerIdempotencyKey = "Idempotency-Key"
	headerReplayed       = "Idempotent-Replayed"
	maxIdempotencyKey    = 255
	ctxIdempotency       = "promptd.idempotency"
)

// idemState is the Idempotency-Key of a request in progress and, once the
// write's transaction recorded it, the answer.
type idemState struct {
	key    idempotency.Key
	stored *idempotency.Response
	// noStore: the handler's answer depends on timing (a claim's 204) and
	// is not recorded.
	noStore bool
}

func idemOf(c echo.Context) *idemState {
	st, _ := c.Get(ctxIdempotency).(*idemState)
	return st
}

// idempotent wraps a route that creates or appends (POST, and the state
// entry PUT). With an
// Idempotency-Key header, scoped to the token's name, the method and the
// concrete path and bound to the SHA-256 of the canonical body:
//
//  1. a repeat while the first is in this process: 409 idempotency_in_progress
//     (422 idempotency_key_reused if its body differs);
//  2. a stored outcome: replayed byte for byte with Idempotent-Replayed: true,
//     or 422 idempotency_key_reused for another body;
//  3. otherwise the handler runs; its write records the 2xx answer in the
//     write's own transaction (recordAnswer), and a validation answer (400,
//     404, 413, 422) is recorded afterwards in a transaction of its own;
//     409, 412, 423, 429 and 5xx depend on timing and are not recorded.
//
// When the write fails because another instance with the same key won (a
// duplicate key in the recorded answer, or the conflict its write caused), the
// winner's stored answer is replayed.
func (s *Server) idempotent(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		key := r.Header.Get(headerIdempotencyKey)
		if len(r.Header.Values(headerIdempotencyKey)) == 0 {
			return next(c)
		}
		if c.QueryParam("dry_run") == "true" { // writes nothing, so nothing is recorded under the key
			return next(c)
		}
		if !validIdempotencyKey(key) || len(r.Header.Values(headerIdempotencyKey)) > 1 {
			return invalidField(headerIdempotencyKey, "Idempotency-Key must be one value of 1..%d printable ASCII characters", maxIdempotencyKey)
		}
		// The body is read and checked before it is hashed: what cannot be
		// received whole or is not strict JSON is refused here (413, 400),
		// never canonicalised.
		body, read, err := readBodyRaw(c)
		if err != nil && !read.complete {
			return err // 413, or a body cut short: never bound to the key
		}
		hash := idempotency.HashBody(read.body) // refused content: bound to its bytes
		if err == nil {
			hash = bodyHash(body)
		}
		params, err := pathValues(c)
		if err != nil {
			return err
		}
		k := idempotency.NewKey(actorOf(c), r.Method, c.Path(), params, key, hash)
		store := s.rt.Idempotency
		end, err := store.Begin(k)
		if err != nil {
			return err
		}
		defer end()
		ctx := r.Context()
		if rec, err := store.Lookup(ctx, k); err != nil || rec != nil {
			if err != nil {
				return err
			}
			return replay(c, rec)
		}
		st := &idemState{key: k}
		c.Set(ctxIdempotency, st)
		tee := &teeWriter{ResponseWriter: c.Response().Writer}
		c.Response().Writer = tee

		if err := next(c); err != nil {
			st.stored = nil // recorded by a transaction that rolled back, if any
			if !storable(problemFor(err).Status()) {
				rec, lerr := store.Lookup(context.WithoutCancel(ctx), k)
				switch {
				case rec != nil:
					return replay(c, rec)
				case errors.Is(lerr, idempotency.ErrKeyReused):
					return lerr
				}
				return err
			}
			c.Error(err)
		}
		res := c.Response()
		if st.stored == nil && !st.noStore && storable(res.Status) {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			rec := idempotency.Response{Status: res.Status, ContentType: res.Header().Get(echo.HeaderContentType), Body: tee.buf.Bytes()}
			if err := store.Save(sctx, k, rec); err != nil {
				s.log.WarnContext(ctx, "storing the outcome of an Idempotency-Key failed", "request_id", requestIDOf(c), "err", err)
			}
		}
		return nil
	}
}

// storable: the outcomes recorded for an Idempotency-Key.
func storable(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return true
	}
	return status >= 200 && status < 300
}

// recordAnswer is the Then of a write whose result T is answered with
// status and body(T), handed to the write explicitly: with an
// Idempotency-Key the answer is rendered and recorded inside the write's
// own transaction (nil without one). send then writes those bytes.
func recordAnswer[T any](s *Server, c echo.Context, status int, body func(T) any) sqlstore.Then[T] {
	ctx := c.Request().Context()
	st := idemOf(c)
	if st == nil {
		return nil
	}
	return func(tx *gorm.DB, result T) error {
		b, err := encodeJSON(body(result))
		if err != nil {
			return err
		}
		r := idempotency.Response{Status: status, ContentType: echo.MIMEApplicationJSON, Body: b}
		if err := s.rt.Idempotency.Insert(ctx, tx, st.key, r); err != nil {
			return err
		}
		st.stored = &r // the last run is the committed one: a write that fails does not answer with it
		return nil
	}
}

// replay answers with a stored outcome.
func replay(c echo.Context, r *idempotency.Response) error {
	h := c.Response().Header()
	h.Set(headerReplayed, "true")
	if r.Status >= 400 {
		h.Set(echo.HeaderCacheControl, "no-store")
	}
	if r.Status == http.StatusAccepted { // a gated write's answer: its Location is the change request's
		var filed struct {
			ChangeRequest struct{ ID string } `json:"change_request"`
		}
		if json.Unmarshal(r.Body, &filed) == nil && filed.ChangeRequest.ID != "" {
			h.Set("Location", "/v1/change-requests/"+filed.ChangeRequest.ID)
		}
	}
	return c.Blob(r.Status, r.ContentType, r.Body)
}

// bodyHash binds a key to the canonical form of a JSON body (so spacing
// and key order do not matter), or to the raw bytes of anything else.
func bodyHash(body []byte) string {
	if canon, err := promptstore.Canonical(body); err == nil {
		return idempotency.HashBody(canon)
	}
	return idempotency.HashBody(body)
}

// pathValues are the request's path parameters, unescaped, in route order.
func pathValues(c echo.Context) ([]string, error) {
	names := c.ParamNames()
	vals := make([]string, len(names))
	for i, n := range names {
		v, err := param(c, n)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

func validIdempotencyKey(k string) bool {
	if k == "" || len(k) > maxIdempotencyKey {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// teeWriter keeps a copy of the response body, for recording it.
type teeWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	return w.ResponseWriter.Write(p)
}

func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
