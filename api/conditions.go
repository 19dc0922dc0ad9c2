package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/promptd/promptd/problem"
)

// precondition combines the body's expected_revision with If-Match (or,
// where allowCreate, If-None-Match: *, revision 0) into the expected
// revision (nil: none given), and says whether a header gave it: a stale
// header precondition is 412 precondition_failed rather than 409.
func precondition(r *http.Request, body *int64, allowCreate bool) (*int64, bool, error) {
	ifMatch, ifNone := r.Header.Values("If-Match"), r.Header.Values("If-None-Match")
	var header *int64
	switch {
	case len(ifNone) > 0 && !allowCreate:
		return nil, false, invalidField("If-None-Match", "this route takes If-Match, not If-None-Match")
	case len(ifMatch) > 0 && len(ifNone) > 0:
		return nil, false, invalidField("If-Match", "send If-Match or If-None-Match, not both")
	case len(ifMatch) > 0:
		n, ok := parseRevisionETag(ifMatch)
		if !ok {
			return nil, false, invalidField("If-Match", `If-Match must be one revision ETag, such as "3"`)
		}
		header = &n
	case len(ifNone) > 0:
		if len(ifNone) != 1 || ifNone[0] != "*" {
			return nil, false, invalidField("If-None-Match", "If-None-Match must be * (expected revision 0: create)")
		}
		zero := int64(0)
		header = &zero
	}
	switch {
	case header == nil:
		return body, false, nil
	case body != nil && *body != *header:
		return nil, false, invalidField("expected_revision",
			"expected_revision %d does not agree with the header's revision %d", *body, *header)
	}
	return header, true, nil
}

// requirePrecondition is precondition for writes that must name the
// revision they are based on: none at all is 428 precondition_required.
func requirePrecondition(r *http.Request, body *int64, allowCreate bool) (int64, bool, error) {
	expected, viaHeader, err := precondition(r, body, allowCreate)
	if err != nil {
		return 0, false, err
	}
	if expected == nil {
		return 0, false, Errorf(CodePreconditionRequired, `send expected_revision in the body or If-Match: "<revision>"`)
	}
	return *expected, viaHeader, nil
}

// headerErr marks err as caused by a header precondition (If-Match), so a
// revision conflict is answered 412 precondition_failed.
func headerErr(err error, viaHeader bool) error {
	if err != nil && viaHeader {
		return problem.FromHeader(err)
	}
	return err
}

// parseRevisionETag reads If-Match: "<n>" (one strong ETag, n >= 0).
func parseRevisionETag(vs []string) (int64, bool) {
	if len(vs) != 1 {
		return 0, false
	}
	v := vs[0]
	if len(v) < 3 || v[0] != '"' || v[len(v)-1] != '"' {
		return 0, false
	}
	digits := v[1 : len(v)-1]
	if digits == "0" {
		return 0, true
	}
	n, ok := positive(digits, 1<<53)
	return int64(n), ok
}

// headerLeaseToken is the header that carries a lease's token; tokens never
// travel in URLs and are never logged.
const headerLeaseToken = "Lease-Token"

// leaseToken reads the Lease-Token header: exactly one non-empty value of
// printable ASCII, else 400 invalid_field naming the header.
func leaseToken(c echo.Context) (string, error) {
	vs := c.Request().Header.Values(headerLeaseToken)
	if len(vs) != 1 || vs[0] == "" || len(vs[0]) > 256 {
		return "", invalidField(headerLeaseToken, "send the lease's token in one Lease-Token header")
	}
	for i := 0; i < len(vs[0]); i++ {
		if vs[0][i] <= 0x20 || vs[0][i] > 0x7e {
			return "", invalidField(headerLeaseToken, "Lease-Token must be printable ASCII without spaces")
		}
	}
	return vs[0], nil
}
