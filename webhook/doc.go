// Package webhook delivers the change feed to HTTP receivers: webhooks
// (a URL, the actions and agents it wants, a signing secret stored
// encrypted), a dispatcher that reads the feed by seq from a persisted
// cursor and creates one delivery per (webhook, event), and deliverers
// that send them at least once, signed as Standard Webhooks, with
// exponential backoff and full jitter.
//
// Everything is in SQL: a delivery survives restarts and failovers. The
// dispatcher runs on one instance at a time (a job lease) and moves its
// cursor by compare-and-set in the transaction that creates the
// deliveries, so a second dispatcher is slower, never wrong. Each attempt
// is leased by compare-and-set on the delivery's attempts counter, so of
// several instances one sends a given delivery at a time; the receiver
// dedupes by webhook-id, the same on every attempt.
//
// No dial ever reaches a refused address: URLs are checked at creation,
// and every connection's actual IP is checked in the dialer's Control hook
// (so DNS rebinding cannot pass). The package has no HTTP handlers; the
// api package serves /v1/webhooks over Service.
package webhook
