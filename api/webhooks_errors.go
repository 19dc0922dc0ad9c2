package api

import (
	"errors"

	"github.com/promptd/promptd/webhook"
)

// webhookProblem maps the webhook package's errors (nil for any other).
func webhookProblem(err error) *Error {
	var (
		e  *Error
		ue *webhook.URLError
	)
	switch {
	case errors.As(err, &e):
		return nil
	case errors.As(err, &ue):
		return (&Error{Code: "invalid_url", Detail: ue.Detail, Err: err}).With("field", "url").With("reason", ue.Reason)
	case errors.Is(err, webhook.ErrNotFound):
		return &Error{Code: "webhook_not_found", Detail: "no such webhook", Err: err}
	case errors.Is(err, webhook.ErrDeliveryNotFound):
		return &Error{Code: "delivery_not_found", Detail: "no such delivery of this webhook", Err: err}
	case errors.Is(err, webhook.ErrNoSecretKey):
		return &Error{Code: "secret_key_required", Err: err,
			Detail: "webhooks need PROMPTD_SECRET_KEY (32 bytes, base64) to store their secrets encrypted; nothing was changed"}
	}
	return nil
}
