package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/promptd/promptd/api/client"
)

// TestFragment_clientRoutes drives every fragment route through the client
// against a real promptd: versions (a stale base is ErrVersionConflict with
// the latest), list, get, env pointers (a stale revision is
// ErrRevisionConflict) and used-by of an agent version that pins it.
func TestFragment_clientRoutes(t *testing.T) {
	s := startPromptd(t)
	ctx := context.Background()
	text := "Never share secrets of {{company}}."
	v1, err := s.admin.CreateFragmentVersion(ctx, "safety", client.CreateFragmentVersionRequest{BaseVersion: 0,
		Fragment: client.FragmentContent{Text: &text}, Variables: map[string]any{"company": map[string]any{"default": "ACME"}}, Message: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if v1.Version != 1 || v1.Name != "safety" || v1.ContentHash == "" || v1.CreatedBy != "ops" || v1.CreatedAt.IsZero() {
		t.Fatalf("v1 = %+v", v1)
	}
	if c, err := v1.Content(); err != nil || c.Text == nil || *c.Text != text {
		t.Fatalf("content = %+v, %v", c, err)
	}
	_, err = s.admin.CreateFragmentVersion(ctx, "safety", client.CreateFragmentVersionRequest{BaseVersion: 0, Fragment: map[string]any{"text": "x"}})
	var pe *client.Error
	if !errors.Is(err, client.ErrVersionConflict) || !errors.As(err, &pe) || pe.LatestVersion() != 1 {
		t.Fatalf("stale base: %v", err)
	}
	chk, err := s.admin.CheckFragmentVersion(ctx, "safety", client.CreateFragmentVersionRequest{BaseVersion: 1,
		Fragment: client.FragmentContent{Text: &text}, Variables: map[string]any{"company": map[string]any{"default": "ACME"}}})
	if err != nil || !chk.DryRun || chk.Version != 2 || chk.ContentHash != v1.ContentHash {
		t.Fatalf("check of the same content = %+v, %v (want version 2, v1's hash)", chk, err)
	}
	msgs, err := s.admin.CreateFragmentVersion(ctx, "examples", client.CreateFragmentVersionRequest{BaseVersion: 0,
		Fragment: client.FragmentContent{Messages: []client.FragmentMessage{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := msgs.Content(); len(c.Messages) != 2 || c.Messages[1].Content != "hello" || c.Text != nil {
		t.Fatalf("messages content = %s", msgs.Fragment)
	}

	e, err := s.admin.PutFragmentEnv(ctx, "safety", "prod", client.PutFragmentEnvRequest{Version: 1, ExpectedRevision: 0})
	if err != nil || e.Revision != 1 || e.Version != 1 || e.Env != "prod" {
		t.Fatalf("put env = %+v, %v", e, err)
	}
	_, err = s.admin.PutFragmentEnv(ctx, "safety", "prod", client.PutFragmentEnvRequest{Version: 1, ExpectedRevision: 0})
	if !errors.Is(err, client.ErrRevisionConflict) {
		t.Fatalf("stale revision: %v", err)
	}
	if got, err := s.rt.GetFragmentEnv(ctx, "safety", "prod"); err != nil || got.Version != 1 || got.Revision != 1 || got.UpdatedBy != "ops" {
		t.Fatalf("get env = %+v, %v", got, err)
	}
	if _, err := s.rt.GetFragmentEnv(ctx, "safety", "staging"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("missing env: %v", err)
	}

	cfg := json.RawMessage(`{"system":"You help. {{> safety}}","fragments":{"safety":{"name":"safety","env":"prod"}}}`)
	if _, err := s.admin.CreateVersion(ctx, "support", client.CreateVersionRequest{BaseVersion: 0, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	text2 := "Never share anything."
	v2, err := s.admin.CreateFragmentVersion(ctx, "safety", client.CreateFragmentVersionRequest{BaseVersion: 1,
		Fragment: client.FragmentContent{Text: &text2}, Propose: true})
	if err != nil || !v2.DryRun || v2.Version != 2 || len(v2.Proposal) != 1 || v2.Proposal[0].Agent != "support" || v2.Proposal[0].Env != "prod" {
		t.Fatalf("proposal = %+v, %v", v2, err)
	}

	fs, err := s.rt.AllFragments(ctx)
	if err != nil || len(fs) != 2 || fs[0].Name != "examples" || fs[1].Name != "safety" || fs[1].LatestVersion != 1 ||
		fs[1].LatestContentHash != v1.ContentHash || fs[1].Envs["prod"] != 1 {
		t.Fatalf("fragments = %+v, %v", fs, err)
	}
	page, err := s.rt.ListFragments(ctx, client.ListOptions{Limit: 1})
	if err != nil || len(page.Items) != 1 || page.Next == "" {
		t.Fatalf("page 1 = %+v, %v", page, err)
	}
	vs, err := s.rt.ListFragmentVersions(ctx, "safety", client.ListOptions{})
	if err != nil || len(vs.Items) != 1 || vs.Items[0].Version != 1 || vs.Items[0].Message != "first" {
		t.Fatalf("versions = %+v, %v", vs, err)
	}
	got, err := s.rt.GetFragmentVersion(ctx, "safety", 1)
	if err != nil || got.ContentHash != v1.ContentHash || string(got.Variables) == "{}" {
		t.Fatalf("get = %+v, %v", got, err)
	}
	if _, err := s.rt.GetFragmentVersion(ctx, "safety", 9); !errors.As(err, &pe) || !pe.NotFound() {
		t.Fatalf("missing version: %v", err)
	}
	used, err := s.rt.FragmentUsedBy(ctx, "safety", 1, client.ListOptions{})
	if err != nil || len(used.Items) != 1 || used.Items[0].Agent != "support" || used.Items[0].Version != 1 {
		t.Fatalf("used-by = %+v, %v", used, err)
	}
	// Fragment writes are admin-only.
	if _, err := s.rt.PutFragmentEnv(ctx, "safety", "prod", client.PutFragmentEnvRequest{Version: 1, ExpectedRevision: 1}); !errors.Is(err, client.ErrForbidden) {
		t.Fatalf("runtime put env: %v", err)
	}
}
