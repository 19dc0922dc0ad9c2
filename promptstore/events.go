package promptstore

import (
	"context"
	"encoding/json"

	"github.com/promptd/promptd/events"
)

// KindPointer is the event kind the store publishes when an env pointer
// row changed (version, active release, revocations).
const KindPointer = "pointer"

// mirrorSnapshot stores an immutable snapshot in the Redis mirror (best
// effort).
func (s *Store) mirrorSnapshot(ctx context.Context, v *Version) {
	if s.mirror == nil {
		return
	}
	raw, _ := json.Marshal(v)
	s.mirror.PutSnapshot(ctx, v.Agent, v.Version, raw)
}

// mirroredSnapshot reads a mirrored snapshot, nil when missing, unreachable or
// not the version it claims to be (its hash is checked).
func (s *Store) mirroredSnapshot(ctx context.Context, agent string, version int) *Version {
	raw := s.mirror.Snapshot(ctx, agent, version)
	if raw == nil {
		return nil
	}
	var v Version
	if json.Unmarshal(raw, &v) != nil || v.Agent != agent || v.Version != version || ContentHash(v.Config) != v.ContentHash {
		return nil
	}
	return &v
}

// mirrorPointer writes a pointer state unless the mirror has a newer one.
func (s *Store) mirrorPointer(ctx context.Context, p *PointerState) {
	if s.mirror == nil {
		return
	}
	raw, _ := json.Marshal(p)
	if err := s.mirror.PutPointer(ctx, p.Agent, p.Env, p.Revision, raw); err != nil {
		s.log.Debug("pointer mirror not written", "agent", p.Agent, "env", p.Env, "err", err)
	}
}

// mirroredPointer reads a mirrored pointer state, nil when missing or
// unreachable.
func (s *Store) mirroredPointer(ctx context.Context, agent, env string) *PointerState {
	raw := s.mirror.Pointer(ctx, agent, env)
	if raw == nil {
		return nil
	}
	var p PointerState
	if json.Unmarshal(raw, &p) != nil || p.Agent != agent || p.Env != env {
		return nil
	}
	return &p
}

// publishPointer tells every instance the pointer's new revision.
func (s *Store) publishPointer(ctx context.Context, st *PointerState) {
	s.bus.Publish(ctx, events.Event{Kind: KindPointer, Agent: st.Agent, Env: st.Env, Revision: st.Revision})
}
