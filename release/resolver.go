package release

import (
	"context"
	"errors"

	"github.com/promptd/promptd/events"
	"github.com/promptd/promptd/promptstore"
)

// Resolver puts the active release's arm in front of Next (the env
// pointer): bucket = murmur3("<release_id>:<key>") mod 10000, candidate
// iff bucket < basis points; key is the user id (the session id for
// session stickiness or when there is no user id); no key: baseline. The
// release is the one Next's resolution names (the pointer row's
// active_release_id). With warm caches it makes no network call.
type Resolver struct {
	S    *Service
	Next promptstore.Resolver
}

// Resolve implements promptstore.Resolver.
func (r Resolver) Resolve(ctx context.Context, req promptstore.Request) (promptstore.Resolution, error) {
	res, err := r.Next.Resolve(ctx, req)
	if err != nil || res.ActiveReleaseID == "" {
		return res, err
	}
	rel, err := r.S.active(ctx, res.ActiveReleaseID)
	if err != nil || !rel.State.Active() {
		// SQL down with a cold cache, or a release that just ended and
		// whose pointer event is on its way: the pointer's version is the
		// baseline either way.
		if err != nil && !errors.Is(err, promptstore.ErrUnavailable) && !errors.Is(err, ErrNotFound) {
			return promptstore.Resolution{}, err
		}
		return res, nil
	}
	arm, version, bucket := Arm(rel, req.UserID, req.SessionID)
	reason := ReasonBucket
	if forced, ok := Override(rel, StickyKey(rel, req.UserID, req.SessionID)); ok {
		arm, version, reason = forced, rel.versionOf(forced), ReasonOverride
	}
	if version == rel.CandidateVersion && res.Revoked[version] {
		arm, version = ArmBaseline, rel.BaselineVersion
	}
	res.Version = version
	res.Release = &promptstore.Trace{ID: rel.ID, Arm: arm, Bucket: bucket, Percent: rel.Percent, Reason: reason}
	return res, nil
}

// versionOf is the version of an arm of rel.
func (rel *Release) versionOf(arm string) int {
	if arm == ArmCandidate {
		return rel.CandidateVersion
	}
	return rel.BaselineVersion
}

// Resolve is Resolver{S: s, Next: the store's env pointer}: the release
// arm in front of the pointer.
func (s *Service) Resolve(ctx context.Context, req promptstore.Request) (promptstore.Resolution, error) {
	return Resolver{S: s, Next: s.store}.Resolve(ctx, req)
}

// Arm buckets a caller into a release: the arm, its version and the
// bucket (nil without a key).
func Arm(rel *Release, userID, sessionID string) (arm string, version int, bucket *int) {
	key := StickyKey(rel, userID, sessionID)
	if key == "" {
		return "baseline", rel.BaselineVersion, nil
	}
	b := Bucket(rel.ID, key)
	if b < rel.BasisPoints {
		return "candidate", rel.CandidateVersion, &b
	}
	return "baseline", rel.BaselineVersion, &b
}

// active returns an active release from the cache, else SQL.
func (s *Service) active(ctx context.Context, id string) (*Release, error) {
	s.mu.RLock()
	rel := s.cache[id]
	s.mu.RUnlock()
	if rel != nil {
		return rel, nil
	}
	rel, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	s.offer(rel)
	return rel, nil
}

// ActiveFor returns the env's active release, or nil.
func (s *Service) ActiveFor(ctx context.Context, releaseID string) (*Release, error) {
	if releaseID == "" {
		return nil, nil
	}
	return s.Get(ctx, releaseID)
}

// onEvent refreshes a cached release when an event names a newer revision.
func (s *Service) onEvent(ctx context.Context, ev events.Event) {
	s.mu.RLock()
	cur, ok := s.cache[ev.ID]
	s.mu.RUnlock()
	if !ok || cur.Revision >= ev.Revision {
		return
	}
	rel, err := s.Get(ctx, ev.ID)
	if err != nil {
		s.log.Warn("release refresh failed; the reconciler will retry", "release", ev.ID, "err", err)
		return
	}
	s.offer(rel)
}

// Reconcile compares the cached releases' revisions with SQL and reloads
// stale ones, so a lost event leaves this instance stale for at most one
// reconciler period. Run it on every instance, with the store's.
func (s *Service) Reconcile(ctx context.Context) error {
	s.mu.RLock()
	ids := make([]string, 0, len(s.cache))
	revs := make(map[string]int64, len(s.cache))
	for id, r := range s.cache {
		ids = append(ids, id)
		revs[id] = r.Revision
	}
	s.mu.RUnlock()
	if len(ids) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.SQLTimeout)
	defer cancel()
	var rows []struct {
		ID       string
		Revision int64
	}
	if err := s.db.WithContext(ctx).Raw(`SELECT id, revision FROM releases WHERE id IN ?`, ids).Scan(&rows).Error; err != nil {
		return storeErr(err)
	}
	for _, r := range rows {
		if r.Revision > revs[r.ID] {
			rel, err := s.Get(ctx, r.ID)
			if err != nil {
				return err
			}
			s.offer(rel)
		}
	}
	return nil
}
