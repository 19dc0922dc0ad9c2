package events

import (
	"context"
	_ "embed"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed mirror.lua
	mirrorLua    string
	mirrorScript = redis.NewScript(mirrorLua)
)

// SnapshotTTL keeps mirrored snapshots for a week; an evicted one falls
// through to SQL.
const SnapshotTTL = 7 * 24 * time.Hour

// Mirror is the Redis read mirror: immutable snapshots and the latest
// pointer states, as the documents their owner encodes. Every call is
// bounded and best effort; a nil Mirror (or one without Redis) mirrors
// nothing. Safe for concurrent use.
type Mirror struct{ o Options }

// NewMirror returns a mirror over o.Redis.
func NewMirror(o Options) *Mirror {
	o.defaults()
	return &Mirror{o: o}
}

func (m *Mirror) usable() bool { return m != nil && m.o.Redis != nil && !m.o.Health.Down() }

// failed records a Redis error other than a missing key.
func (m *Mirror) failed(err error) {
	if err != nil && !errors.Is(err, redis.Nil) {
		m.o.Health.Fail()
	}
}

func (m *Mirror) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), m.o.Timeout)
}

func (m *Mirror) snapKey(agent string, version int) string {
	return m.o.Prefix + ":snap:{" + agent + "}:" + strconv.Itoa(version)
}

func (m *Mirror) ptrKey(agent, env string) string {
	return m.o.Prefix + ":ptr:{" + agent + "}:" + env
}

// PutSnapshot stores an immutable snapshot document (set once, kept
// SnapshotTTL).
func (m *Mirror) PutSnapshot(ctx context.Context, agent string, version int, doc []byte) {
	if !m.usable() {
		return
	}
	cctx, cancel := m.bounded(ctx)
	defer cancel()
	m.failed(m.o.Redis.SetNX(cctx, m.snapKey(agent, version), doc, SnapshotTTL).Err())
}

// Snapshot reads a mirrored snapshot document, nil when missing or
// unreachable.
func (m *Mirror) Snapshot(ctx context.Context, agent string, version int) []byte {
	if !m.usable() {
		return nil
	}
	cctx, cancel := m.bounded(ctx)
	defer cancel()
	raw, err := m.o.Redis.Get(cctx, m.snapKey(agent, version)).Bytes()
	if err != nil {
		m.failed(err)
		return nil
	}
	return raw
}

// PutPointer writes a pointer document at revision unless Redis has a
// newer one (compare-on-revision in one script). It reports whether it
// wrote nothing because of an error.
func (m *Mirror) PutPointer(ctx context.Context, agent, env string, revision int64, doc []byte) error {
	if !m.usable() {
		return nil
	}
	cctx, cancel := m.bounded(ctx)
	defer cancel()
	err := mirrorScript.Run(cctx, m.o.Redis, []string{m.ptrKey(agent, env)}, revision, doc).Err()
	m.failed(err)
	return err
}

// Pointer reads a mirrored pointer document, nil when missing or
// unreachable.
func (m *Mirror) Pointer(ctx context.Context, agent, env string) []byte {
	if !m.usable() {
		return nil
	}
	cctx, cancel := m.bounded(ctx)
	defer cancel()
	raw, err := m.o.Redis.HGet(cctx, m.ptrKey(agent, env), "doc").Bytes()
	if err != nil {
		m.failed(err)
		return nil
	}
	return raw
}
