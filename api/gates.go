package api

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/changes"
	"github.com/promptd/promptd/release"
)

// Gated writes (a pointer switch, an env rollback to a chosen version, a
// lift, release create, patch, resume, promote, a weakened protection) run
// through package changes, which decides inside each write's transaction
// whether the env's protection covers it and files the change request.
// The handlers only answer: the write's result, or 202 with the request.

// caller is the requester of a gated write, with the request it shows;
// with an Idempotency-Key, the 202 is recorded in the transaction that
// files the change request.
func (s *Server) caller(c echo.Context, shown any) changes.Caller {
	return changes.Caller{Token: tokenOf(c), Request: shown,
		Filed: recordAnswer(s, c, http.StatusAccepted, func(cr *access.ChangeRequest) any {
			return map[string]any{"change_request": changeRequestBody(cr)}
		})}
}

// sendChangeRequest answers a gated write: 202 with the change request
// and its Location.
func (s *Server) sendChangeRequest(c echo.Context, cr *access.ChangeRequest) error {
	c.Response().Header().Set("Location", "/v1/change-requests/"+cr.ID)
	return s.send(c, http.StatusAccepted, map[string]any{"change_request": changeRequestBody(cr)}) // the recorded bytes, when there are
}

// settled answers a gated write that did not go ahead: its error (412
// when its precondition came from a header), or 202 with the change
// request it filed. done false: the write went ahead; answer its result.
func (s *Server) settled(c echo.Context, cr *access.ChangeRequest, err error, viaHeader bool) (done bool, _ error) {
	switch {
	case err != nil:
		return true, headerErr(err, viaHeader)
	case cr != nil:
		return true, s.sendChangeRequest(c, cr)
	}
	return false, nil
}

// gatedPatchShown is a gated PATCH of a release as its change request
// shows it (overrides hashed under the release id: raw ids are never
// stored, see release.Overrides).
type gatedPatchShown struct {
	ReleaseID string             `json:"release_id"`
	Percent   string             `json:"percent,omitempty"`
	Reason    string             `json:"reason,omitempty"`
	Overrides *release.Overrides `json:"overrides,omitempty"`
	Guard     json.RawMessage    `json:"guard,omitempty"`
}
