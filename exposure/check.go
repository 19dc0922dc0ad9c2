package exposure

import (
	"context"
	"errors"
	"time"

	"github.com/promptd/promptd/promptstore"
	"github.com/promptd/promptd/release"
)

// Envs is where Record reads what an env's pointer served
// (*promptstore.Store).
type Envs interface {
	GetEnv(ctx context.Context, agent, env string) (*promptstore.Env, error)
}

// checker checks a report's items against the stored agents, envs and
// releases, reading each env and release once per report.
type checker struct {
	s    *Service
	envs map[[2]string]*promptstore.Env // nil: the env has no pointer
	bad  map[[2]string]error            // the agent or env's refusal
	rels map[string]*release.Release    // nil: no such release
}

func newChecker(s *Service) *checker {
	return &checker{s: s, envs: map[[2]string]*promptstore.Env{}, bad: map[[2]string]error{}, rels: map[string]*release.Release{}}
}

// check refuses (items[i].x, the whole report) an item that names what
// was not served: a release that does not exist or is of another agent or
// env, a version that is not the release arm's, or, without a release, an
// agent without versions, an env without a pointer, or a version the
// env's pointer did not hold at it.At: its current one, or one it moved
// off at or after it.At minus ClockSkew (among its last
// promptstore.HistoryLength moves).
func (c *checker) check(ctx context.Context, p string, it Item) error {
	if it.ReleaseID != "" {
		rel, ok := c.rels[it.ReleaseID]
		if !ok {
			var err error
			if rel, err = c.s.o.Releases.Get(ctx, it.ReleaseID); err != nil && !errors.Is(err, release.ErrNotFound) {
				return err
			}
			c.rels[it.ReleaseID] = rel
		}
		if rel == nil || rel.Agent != it.Agent || rel.Env != it.Env {
			return invalid(p+"release_id", "no release %s of this agent and env", it.ReleaseID)
		}
		if want := armVersion(rel, it.Arm); it.Version != want {
			return invalid(p+"version", "the release's %s is version %d", it.Arm, want)
		}
		return nil
	}
	k := [2]string{it.Agent, it.Env}
	if err, ok := c.bad[k]; ok {
		return relabel(err, p)
	}
	e, ok := c.envs[k]
	if !ok {
		var err error
		e, err = c.s.o.Envs.GetEnv(ctx, it.Agent, it.Env)
		switch {
		case errors.Is(err, promptstore.ErrAgentNotFound):
			c.bad[k] = invalid("agent", "no agent %s", it.Agent)
			return relabel(c.bad[k], p)
		case errors.Is(err, promptstore.ErrNoPointer):
			c.bad[k] = invalid("env", "env %s of %s has no pointer", it.Env, it.Agent)
			return relabel(c.bad[k], p)
		case err != nil:
			return err
		}
		c.envs[k] = e
	}
	if !servedAt(e, it.Version, it.At.Add(-c.s.o.ClockSkew)) {
		return invalid(p+"version", "env %s of %s did not serve version %d then (it serves %d)", it.Env, it.Agent, it.Version, e.Version)
	}
	return nil
}

// servedAt reports whether e's pointer held version at or after since.
func servedAt(e *promptstore.Env, version int, since time.Time) bool {
	if version == e.Version {
		return true
	}
	for _, m := range e.History { // newest first
		if m.At.Before(since) {
			break
		}
		if m.FromVersion == version {
			return true
		}
	}
	return false
}

// relabel is err (an agent or env refusal) with its field under prefix p.
func relabel(err error, p string) error {
	var inv *promptstore.InvalidError
	if errors.As(err, &inv) {
		c := *inv
		c.Field = p + inv.Field
		return &c
	}
	return err
}
