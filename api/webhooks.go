package api

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/webhook"
)

// webhookResponse is a webhook as the API shows it. Secret is set only in
// the answers of create and rotate-secret; their stored outcome (an
// Idempotency-Key replay) has "secret": null, "secret_redacted": true.
type webhookResponse struct {
	ID                       string     `json:"id"`
	URL                      string     `json:"url"`
	Actions                  []string   `json:"actions"`
	Agents                   []string   `json:"agents"`
	Description              string     `json:"description"`
	Enabled                  bool       `json:"enabled"`
	Revision                 int64      `json:"revision"`
	CreatedAt                timestamp  `json:"created_at"`
	UpdatedAt                timestamp  `json:"updated_at"`
	PreviousSecretSignsUntil *timestamp `json:"previous_secret_signs_until,omitempty"`
}

// webhookWithSecret is the answer of create and rotate-secret: "secret"
// is always present (null when redacted).
type webhookWithSecret struct {
	webhookResponse
	Secret         *string `json:"secret"`
	SecretRedacted bool    `json:"secret_redacted"`
}

func webhookBody(w *webhook.Webhook) webhookResponse {
	out := webhookResponse{ID: w.ID, URL: w.URL, Actions: w.Actions, Agents: w.Agents, Description: w.Description,
		Enabled: w.Enabled, Revision: w.Revision, CreatedAt: timestamp(w.CreatedAt), UpdatedAt: timestamp(w.UpdatedAt)}
	if w.OldSecretUntil != nil {
		t := timestamp(*w.OldSecretUntil)
		out.PreviousSecretSignsUntil = &t
	}
	return out
}

// redactedWebhook is what an Idempotency-Key stores for create and
// rotate-secret: never the secret.
func redactedWebhook(w *webhook.WithSecret) any {
	return webhookWithSecret{webhookResponse: webhookBody(w.Webhook), SecretRedacted: true}
}

// createWebhookRequest is the body of POST /v1/webhooks.
type createWebhookRequest struct {
	URL         *string  `json:"url"`
	Actions     []string `json:"actions"`
	Agents      []string `json:"agents"`
	Description string   `json:"description"`
}

func (r *createWebhookRequest) validate() error {
	if r.URL == nil {
		return invalidField("url", "url is required")
	}
	if r.Actions == nil {
		return invalidField("actions", "actions is required: the event names or patterns to deliver, such as release.*")
	}
	return nil
}

// handleCreateWebhook: POST /v1/webhooks.
func (s *Server) handleCreateWebhook(c echo.Context) error {
	hs := s.rt.Webhooks
	var req createWebhookRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	w, err := hs.Create(c.Request().Context(), webhook.CreateInput{URL: *req.URL, Actions: req.Actions, Agents: req.Agents, Description: req.Description},
		recordAnswer(s, c, http.StatusCreated, redactedWebhook))
	if err != nil {
		return err
	}
	return s.sendWebhookSecret(c, http.StatusCreated, w)
}

// sendWebhookSecret answers with the new secret, also when the write
// recorded its (redacted) outcome for an Idempotency-Key.
func (s *Server) sendWebhookSecret(c echo.Context, status int, w *webhook.WithSecret) error {
	c.Response().Header().Set("ETag", revisionETag(w.Revision))
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	b, err := encodeJSON(webhookWithSecret{webhookResponse: webhookBody(w.Webhook), Secret: &w.Secret})
	if err != nil {
		return err
	}
	return c.Blob(status, echo.MIMEApplicationJSON, b)
}

// webhookOf is the service and the {id} of a route on one webhook.
func (s *Server) webhookOf(c echo.Context) (*webhook.Service, string, error) {
	hs := s.rt.Webhooks
	id, err := webhookID(c)
	return hs, id, err
}

func webhookID(c echo.Context) (string, error) {
	id, err := param(c, "id")
	if err != nil {
		return "", err
	}
	if err := ident.Validate("id", id); err != nil {
		return "", err
	}
	return id, nil
}

// handleListWebhooks: GET /v1/webhooks, newest first, paginated like
// every list (limit, cursor, next).
func (s *Server) handleListWebhooks(c echo.Context) error {
	hs := s.rt.Webhooks
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	ws, next, err := hs.List(c.Request().Context(), page.Cursor, page.Limit)
	if err != nil {
		return err
	}
	items := make([]webhookResponse, len(ws))
	for i, w := range ws {
		items[i] = webhookBody(w)
	}
	return s.send(c, http.StatusOK, list[webhookResponse]{Items: items, Next: cursor(next)})
}

// handleGetWebhook: GET /v1/webhooks/{id}.
func (s *Server) handleGetWebhook(c echo.Context) error {
	hs, id, err := s.webhookOf(c)
	if err != nil {
		return err
	}
	w, err := hs.Get(c.Request().Context(), id)
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", revisionETag(w.Revision))
	return s.send(c, http.StatusOK, webhookBody(w))
}

// patchWebhookRequest is the body of PATCH /v1/webhooks/{id}.
type patchWebhookRequest struct {
	URL              *string   `json:"url"`
	Actions          *[]string `json:"actions"`
	Agents           *[]string `json:"agents"`
	Description      *string   `json:"description"`
	Enabled          *bool     `json:"enabled"`
	ExpectedRevision *int64    `json:"expected_revision"`
}

// handlePatchWebhook: PATCH /v1/webhooks/{id}, at expected_revision (or
// If-Match).
func (s *Server) handlePatchWebhook(c echo.Context) error {
	hs, id, err := s.webhookOf(c)
	if err != nil {
		return err
	}
	var req patchWebhookRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	expected, viaHeader, err := requirePrecondition(c.Request(), req.ExpectedRevision, false)
	if err != nil {
		return err
	}
	w, err := hs.Update(c.Request().Context(), id, webhook.UpdateInput{URL: req.URL, Actions: req.Actions, Agents: req.Agents,
		Description: req.Description, Enabled: req.Enabled, ExpectedRevision: expected})
	if err != nil {
		return headerErr(err, viaHeader)
	}
	c.Response().Header().Set("ETag", revisionETag(w.Revision))
	return s.send(c, http.StatusOK, webhookBody(w))
}

// handleDeleteWebhook: DELETE /v1/webhooks/{id}, with its deliveries.
func (s *Server) handleDeleteWebhook(c echo.Context) error {
	hs, id, err := s.webhookOf(c)
	if err != nil {
		return err
	}
	if err := hs.Delete(c.Request().Context(), id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// rotateSecretRequest is the body of POST /v1/webhooks/{id}/rotate-secret.
type rotateSecretRequest struct {
	ExpectedRevision *int64 `json:"expected_revision"`
}

// handleRotateSecret: POST /v1/webhooks/{id}/rotate-secret; the old
// secret signs beside the new one for 24 h.
func (s *Server) handleRotateSecret(c echo.Context) error {
	hs, id, err := s.webhookOf(c)
	if err != nil {
		return err
	}
	var req rotateSecretRequest
	if err := decodeOptional(c, &req); err != nil {
		return err
	}
	expected, viaHeader, err := requirePrecondition(c.Request(), req.ExpectedRevision, false)
	if err != nil {
		return err
	}
	w, err := hs.RotateSecret(c.Request().Context(), id, expected, recordAnswer(s, c, http.StatusOK, redactedWebhook))
	if err != nil {
		return headerErr(err, viaHeader)
	}
	return s.sendWebhookSecret(c, http.StatusOK, w)
}

// deliveryResponse is a delivery as the API shows it.
type deliveryResponse struct {
	ID            string     `json:"id"`
	Seq           int64      `json:"seq"`
	Action        string     `json:"action"`
	State         string     `json:"state"`
	Attempts      int        `json:"attempts"`
	LastStatus    *int       `json:"last_status"`
	LastError     *string    `json:"last_error"`
	NextAttemptAt *timestamp `json:"next_attempt_at"`
	CreatedAt     timestamp  `json:"created_at"`
	UpdatedAt     timestamp  `json:"updated_at"`
}

func deliveryBody(d webhook.Delivery) deliveryResponse {
	out := deliveryResponse{ID: strconv.FormatInt(d.ID, 10), Seq: d.Seq, Action: d.Action, State: d.State, Attempts: d.Attempts,
		CreatedAt: timestamp(d.CreatedAt), UpdatedAt: timestamp(d.UpdatedAt)}
	if d.LastStatus != 0 {
		out.LastStatus = &d.LastStatus
	}
	if d.LastError != "" {
		out.LastError = &d.LastError
	}
	if d.NextAttemptAt != nil {
		t := timestamp(*d.NextAttemptAt)
		out.NextAttemptAt = &t
	}
	return out
}

// handleListDeliveries: GET /v1/webhooks/{id}/deliveries, newest first.
func (s *Server) handleListDeliveries(c echo.Context) error {
	hs, id, err := s.webhookOf(c)
	if err != nil {
		return err
	}
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	var after int64
	if page.Cursor != "" {
		n, ok := webhook.ParseDeliveryID(page.Cursor)
		if !ok {
			return invalidField("cursor", "cursor must be the next of a previous page")
		}
		after = n
	}
	ds, next, err := hs.Deliveries(c.Request().Context(), id, after, page.Limit)
	if err != nil {
		return err
	}
	items := make([]deliveryResponse, len(ds))
	for i, d := range ds {
		items[i] = deliveryBody(d)
	}
	var n string
	if next > 0 {
		n = strconv.FormatInt(next, 10)
	}
	return s.send(c, http.StatusOK, list[deliveryResponse]{Items: items, Next: cursor(n)})
}

// handleRetryDelivery: POST /v1/webhooks/{id}/deliveries/{delivery}/retry
// queues the delivery again, now, with a fresh retry schedule.
func (s *Server) handleRetryDelivery(c echo.Context) error {
	hs, id, err := s.webhookOf(c)
	if err != nil {
		return err
	}
	raw, err := param(c, "delivery")
	if err != nil {
		return err
	}
	n, ok := webhook.ParseDeliveryID(raw)
	if !ok {
		return webhook.ErrDeliveryNotFound
	}
	d, err := hs.Retry(c.Request().Context(), id, n)
	if err != nil {
		return err
	}
	return s.send(c, http.StatusAccepted, deliveryBody(d))
}
