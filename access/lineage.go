package access

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/promptd/promptd/sqlstore"
)

// MaxLineage is how many managed creators may stand above a token (its
// creator, the creator's creator, ... up to a bootstrap token); a token
// deeper than that is refused.
const MaxLineage = 32

// A token is no wider than its creator when it is used, not only when it
// is created: its check reads the chain of creators above it (each
// managed token names its creator, up to a bootstrap token) and the token
// it answers is effective:
//   - refused when a creator is revoked or expired (managed tokens are
//     never deleted, so a creator that is no managed token is a bootstrap
//     token, or the embedding program's own: the root of the chain);
//   - its expiry the earliest along the chain;
//   - its role the narrowest (a runtime creator makes every token under it
//     runtime);
//   - its scopes the intersection of the scopes along the chain.
// The chain is cached with the token's check, for as long (CacheTTL), and
// a revocation on the bus drops the checks of every token under the
// revoked one.

// creators reads the managed tokens named by the CreatedBy of toks and,
// level by level, their own creators, up to names that are no managed
// token (the bootstrap names are not looked up: no managed token takes
// one) or MaxLineage levels: the tokens found, by name.
func (s *Service) creators(ctx context.Context, db *gorm.DB, toks []*Token) (map[string]*Token, error) {
	found := map[string]*Token{}
	asked, want := map[string]bool{}, map[string]bool{}
	add := func(t *Token) {
		if n := t.CreatedBy; !s.reserved[n] && !asked[n] {
			asked[n], want[n] = true, true
		}
	}
	for _, t := range toks {
		add(t)
	}
	// One level more than MaxLineage: effective must see that a chain is
	// longer, never take its cut end for a root.
	for level := 0; level <= MaxLineage && len(want) > 0; level++ {
		names := make([]string, 0, len(want))
		for n := range want {
			names = append(names, n)
		}
		clear(want)
		for len(names) > 0 {
			chunk := names[:min(refreshBatch, len(names))]
			names = names[len(chunk):]
			var rs []row
			if err := db.WithContext(ctx).Raw(`SELECT `+tokenCols+` FROM access_tokens WHERE name IN ?`, chunk).Scan(&rs).Error; err != nil {
				return nil, sqlstore.Translate(err)
			}
			for i := range rs {
				t := rs[i].token()
				found[t.Name] = t
			}
		}
		for _, t := range found {
			add(t)
		}
	}
	return found, nil
}

// effective is t as its creators (read by creators) allow it, and the ids
// of those creators, nearest first.
func (s *Service) effective(t *Token, creators map[string]*Token, now time.Time) (*Token, []string) {
	eff := *t
	var chain []string
	for cur, depth := t, 0; ; depth++ {
		p := creators[cur.CreatedBy]
		if p == nil {
			return &eff, chain // the root: no managed token made cur
		}
		if depth >= MaxLineage {
			eff.RevokedAt = &now // a chain too long to follow: refused
			return &eff, chain
		}
		chain = append(chain, p.ID)
		if p.RevokedAt != nil && eff.RevokedAt == nil {
			eff.RevokedAt = p.RevokedAt
		}
		if p.ExpiresAt != nil && (eff.ExpiresAt == nil || p.ExpiresAt.Before(*eff.ExpiresAt)) {
			eff.ExpiresAt = p.ExpiresAt
		}
		if p.Role != RoleAdmin {
			eff.Role = p.Role
		}
		eff.Scopes = eff.Scopes.Intersect(p.Scopes)
		cur = p
	}
}
