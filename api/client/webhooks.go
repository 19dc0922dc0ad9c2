package client

import (
	"context"
	"net/http"
	"time"
)

// The codes of the webhook routes.
const (
	ErrWebhookNotFound   Code = "webhook_not_found"
	ErrDeliveryNotFound  Code = "delivery_not_found"
	ErrInvalidURL        Code = "invalid_url" // Fields["reason"] says why
	ErrSecretKeyRequired Code = "secret_key_required"
)

// Webhook is a receiver of the change feed. Secret is set only in the
// answers of CreateWebhook and RotateWebhookSecret (and null, with
// SecretRedacted, when that answer is an Idempotency-Key replay).
type Webhook struct {
	ID                       string     `json:"id"`
	URL                      string     `json:"url"`
	Actions                  []string   `json:"actions"`
	Agents                   []string   `json:"agents"`
	Description              string     `json:"description"`
	Enabled                  bool       `json:"enabled"`
	Revision                 int64      `json:"revision"`
	CreatedAt                time.Time  `json:"created_at"`
	UpdatedAt                time.Time  `json:"updated_at"`
	PreviousSecretSignsUntil *time.Time `json:"previous_secret_signs_until"`
	Secret                   *string    `json:"secret"`
	SecretRedacted           bool       `json:"secret_redacted"`
}

// CreateWebhookRequest registers a webhook: Actions are event names or
// patterns ("release.*"); Agents, when set, limits it to their events.
type CreateWebhookRequest struct {
	URL         string   `json:"url"`
	Actions     []string `json:"actions"`
	Agents      []string `json:"agents,omitempty"`
	Description string   `json:"description,omitempty"`
}

// UpdateWebhookRequest changes the members that are set, at
// ExpectedRevision.
type UpdateWebhookRequest struct {
	URL              *string   `json:"url,omitempty"`
	Actions          *[]string `json:"actions,omitempty"`
	Agents           *[]string `json:"agents,omitempty"`
	Description      *string   `json:"description,omitempty"`
	Enabled          *bool     `json:"enabled,omitempty"`
	ExpectedRevision int64     `json:"expected_revision"`
}

// Delivery is one event to one webhook.
type Delivery struct {
	ID            string     `json:"id"`
	Seq           int64      `json:"seq"`
	Action        string     `json:"action"`
	State         string     `json:"state"` // pending, delivered, failed
	Attempts      int        `json:"attempts"`
	LastStatus    *int       `json:"last_status"`
	LastError     *string    `json:"last_error"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

// CreateWebhook registers a webhook (admin, idempotent); the answer holds
// its secret, shown this once. A refused URL is ErrInvalidURL.
func (c *Client) CreateWebhook(ctx context.Context, req CreateWebhookRequest) (*Webhook, error) {
	var w Webhook
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/webhooks", body: req, idempotent: true}, &w)
	return ret(&w, err)
}

// ListWebhooks lists the webhooks, newest first (one page: at most 100 exist).
func (c *Client) ListWebhooks(ctx context.Context) ([]Webhook, error) {
	var p Page[Webhook]
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/webhooks"}, &p)
	return p.Items, err
}

// GetWebhook reads a webhook (without its secret).
func (c *Client) GetWebhook(ctx context.Context, id string) (*Webhook, error) {
	var w Webhook
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/webhooks/" + seg(id)}, &w)
	return ret(&w, err)
}

// UpdateWebhook changes a webhook at req.ExpectedRevision (ErrRevisionConflict otherwise).
func (c *Client) UpdateWebhook(ctx context.Context, id string, req UpdateWebhookRequest) (*Webhook, error) {
	var w Webhook
	_, err := c.do(ctx, call{method: http.MethodPatch, path: "/v1/webhooks/" + seg(id), body: req}, &w)
	return ret(&w, err)
}

// DeleteWebhook deletes a webhook and its deliveries.
func (c *Client) DeleteWebhook(ctx context.Context, id string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: "/v1/webhooks/" + seg(id)}, nil)
	return err
}

// RotateWebhookSecret gives a webhook a new secret (idempotent); the old
// one signs beside it for 24 h.
func (c *Client) RotateWebhookSecret(ctx context.Context, id string, expectedRevision int64) (*Webhook, error) {
	var w Webhook
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/webhooks/" + seg(id) + "/rotate-secret",
		body: map[string]int64{"expected_revision": expectedRevision}, idempotent: true}, &w)
	return ret(&w, err)
}

// ListDeliveries lists a webhook's deliveries, newest first.
func (c *Client) ListDeliveries(ctx context.Context, id string, o ListOptions) (*Page[Delivery], error) {
	var p Page[Delivery]
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/v1/webhooks/" + seg(id) + "/deliveries", query: o.query()}, &p)
	return ret(&p, err)
}

// RetryDelivery queues a delivery again, now.
func (c *Client) RetryDelivery(ctx context.Context, id, delivery string) (*Delivery, error) {
	var d Delivery
	_, err := c.do(ctx, call{method: http.MethodPost, path: "/v1/webhooks/" + seg(id) + "/deliveries/" + seg(delivery) + "/retry"}, &d)
	return ret(&d, err)
}
