package promptstore

import (
	"context"
	"encoding/json"

	"github.com/promptd/promptd/ident"
	"github.com/promptd/promptd/prompt"
)

// PreviewInput asks for a dry-run assembly of an agent's config: Config
// (validated as a version create validates it, its fragments pinned as a
// publish would pin them) or, when Config is empty, the stored Version.
// History is given turns (no session is read).
type PreviewInput struct {
	Agent     string
	Config    json.RawMessage
	Version   int
	Variables map[string]json.RawMessage
	History   []prompt.Message
}

// Preview assembles in's config exactly as Assemble assembles a resolved
// version (the same binding of typed variables, the same size limit, the
// same renderer), with no env, no release and nothing written. A config's
// answer has the version number and content hash a publish would give
// it now (the agent's latest version + 1).
func (s *Store) Preview(ctx context.Context, in PreviewInput) (*prompt.Assembled, error) {
	if err := ident.Validate("agent", in.Agent); err != nil {
		return nil, invalidID(err)
	}
	var (
		cfg     *prompt.Config
		version int
		hash    string
	)
	if len(in.Config) > 0 {
		p, err := prepare(CreateVersionInput{Agent: in.Agent, Config: in.Config})
		if err != nil {
			return nil, err
		}
		sctx, cancel := s.sqlCtx(ctx)
		defer cancel()
		db := s.db.WithContext(sctx)
		if p, err = p.pinIn(db); err != nil {
			return nil, storeErr(err)
		}
		latest, err := latestVersion(db, in.Agent)
		if err != nil {
			return nil, err
		}
		cfg, version, hash = p.parsed, latest+1, p.hash
	} else {
		snap, err := s.Snapshot(ctx, in.Agent, in.Version)
		if err != nil {
			return nil, err
		}
		cfg, version, hash = snap.Parsed, snap.Version.Version, snap.ContentHash
	}
	vars, err := cfg.Bind(in.Variables)
	if err != nil {
		return nil, err
	}
	size := cfg.FixedSize(vars)
	for _, t := range in.History {
		size += int64(len(t.Content) + len(t.ToolCalls) + len(t.Name) + len(t.ToolCallID) + 64)
	}
	if limit := s.o.Limits.AssembleMaxBytes; size > limit {
		return nil, limitError(LimitAssembledBytes, limit)
	}
	return prompt.Assemble(cfg, version, hash, vars, in.History), nil
}
