package access

import "testing"

func TestScopes_within_comparesPatterns(t *testing.T) {
	parent := &Scopes{Agents: []string{"team-a-*"}, Envs: []string{"prod", "staging"}}
	for _, c := range []struct {
		child *Scopes
		ok    bool
		kind  string
	}{
		{&Scopes{Agents: []string{"team-a-bot"}, Envs: []string{"prod"}}, true, ""},
		{&Scopes{Agents: []string{"team-a-x*"}, Envs: []string{}}, true, ""},
		{&Scopes{Agents: []string{"team-*"}, Envs: []string{"prod"}}, false, KindAgent},
		{&Scopes{Agents: []string{"team-a-bot"}}, false, KindEnv}, // envs omitted: all, wider than two
		{nil, false, KindAgent},
		{&Scopes{Agents: []string{"team-a-bot"}, Envs: []string{"prod"}, Boards: []string{"b"}}, true, ""},
	} {
		ok, kind := c.child.Within(parent)
		if ok != c.ok || kind != c.kind {
			t.Errorf("%+v within %+v = %v %q, want %v %q", c.child, parent, ok, kind, c.ok, c.kind)
		}
	}
	if ok, _ := (&Scopes{Agents: []string{"x"}}).Within(nil); !ok {
		t.Error("anything is within unscoped")
	}
}

func TestScopes_allows_namesAndPrefixes(t *testing.T) {
	s := &Scopes{Agents: []string{"team-a-*", "shared"}, Envs: []string{}}
	for name, want := range map[string]bool{"team-a-bot": true, "shared": true, "shared2": false, "team-b-bot": false} {
		if got := s.Allows(KindAgent, name); got != want {
			t.Errorf("Allows(agent, %q) = %v", name, got)
		}
	}
	if s.Allows(KindEnv, "prod") || !s.Allows(KindBoard, "any") {
		t.Error("[] allows nothing, omitted everything")
	}
}

func TestScopes_intersect_allowsWhatBothAllow(t *testing.T) {
	a := &Scopes{Agents: []string{"team-*", "solo"}, Envs: []string{"prod"}}
	b := &Scopes{Agents: []string{"team-a-*", "team-b-x", "other"}, Boards: []string{"b1"}}
	got := a.Intersect(b)
	for _, c := range []struct {
		kind, name string
	}{{KindAgent, "team-a-1"}, {KindAgent, "team-b-x"}, {KindAgent, "team-b-y"}, {KindAgent, "solo"}, {KindAgent, "other"},
		{KindEnv, "prod"}, {KindEnv, "dev"}, {KindBoard, "b1"}, {KindBoard, "b2"}} {
		if want := a.Allows(c.kind, c.name) && b.Allows(c.kind, c.name); got.Allows(c.kind, c.name) != want {
			t.Errorf("Allows(%s, %s) = %v, want %v", c.kind, c.name, !want, want)
		}
	}
	if (*Scopes)(nil).Intersect(b) != b || a.Intersect(nil) != a {
		t.Error("unscoped is the identity")
	}
	if none := (&Scopes{Agents: []string{"x"}}).Intersect(&Scopes{Agents: []string{"y"}}); none.Agents == nil || none.Allows(KindAgent, "x") {
		t.Errorf("disjoint lists = %+v, want an empty list (no agent)", none)
	}
}
