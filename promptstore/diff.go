package promptstore

import (
	"bytes"
	"context"
	"fmt"

	"github.com/pmezard/go-difflib/difflib"
)

// Diff is a unified diff of two versions' configs as sorted-key,
// 2-space-indented JSON; a is the old side. Versions are immutable, so a
// computed diff is cached (Limits.DiffCacheBytes) and a repeat costs a map
// lookup. Before computing one, the inputs are bounded: over
// Limits.DiffMaxBytes of pretty-printed configs together, or
// Limits.DiffMaxLines lines (the line matcher is quadratic at worst), it
// is a *LimitError (diff_bytes, diff_lines).
func (s *Store) Diff(ctx context.Context, agent string, a, b int) (string, error) {
	k := diffKey{agent: agent, a: a, b: b}
	if d, ok := s.diffs.get(k); ok {
		s.o.Metrics.cache("diff", "hit")
		return d, nil
	}
	va, err := s.GetVersion(ctx, agent, a)
	if err != nil {
		return "", err
	}
	vb, err := s.GetVersion(ctx, agent, b)
	if err != nil {
		return "", err
	}
	lim := s.o.Limits
	// Pretty-printing never shortens a config: refuse before it when the
	// stored forms are already too large.
	if int64(len(va.Config)+len(vb.Config)) > lim.DiffMaxBytes {
		return "", limitError(LimitDiffBytes, lim.DiffMaxBytes)
	}
	pa, pb := Pretty(va.Config), Pretty(vb.Config)
	if int64(len(pa)+len(pb)) > lim.DiffMaxBytes {
		return "", limitError(LimitDiffBytes, lim.DiffMaxBytes)
	}
	if bytes.Count(pa, []byte{'\n'})+bytes.Count(pb, []byte{'\n'})+2 > lim.DiffMaxLines {
		return "", limitError(LimitDiffLines, int64(lim.DiffMaxLines))
	}
	s.o.Metrics.cache("diff", "miss")
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        difflib.SplitLines(string(pa)),
		B:        difflib.SplitLines(string(pb)),
		FromFile: fmt.Sprintf("%s/v%d", agent, a),
		ToFile:   fmt.Sprintf("%s/v%d", agent, b),
		Context:  3,
	})
	if err != nil {
		return "", err
	}
	s.diffs.put(k, d)
	return d, nil
}
