package promptstore

import (
	"context"
	"fmt"

	"github.com/pmezard/go-difflib/difflib"
)

// Diff is a unified diff of two versions' configs as sorted-key,
// 2-space-indented JSON; a is the old side.
func (s *Store) Diff(ctx context.Context, agent string, a, b int) (string, error) {
	va, err := s.GetVersion(ctx, agent, a)
	if err != nil {
		return "", err
	}
	vb, err := s.GetVersion(ctx, agent, b)
	if err != nil {
		return "", err
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        difflib.SplitLines(string(Pretty(va.Config))),
		B:        difflib.SplitLines(string(Pretty(vb.Config))),
		FromFile: fmt.Sprintf("%s/v%d", agent, a),
		ToFile:   fmt.Sprintf("%s/v%d", agent, b),
		Context:  3,
	})
}
