package client_test

import (
	"context"
	"testing"

	"github.com/promptd/promptd/api/client"
)

func TestLists_sessionsBoardsAndAuditByActor_pageThroughTheClient(t *testing.T) {
	s := startPromptd(t)
	ctx := context.Background()
	if _, err := s.admin.CreateVersion(ctx, "bot", client.CreateVersionRequest{Config: client.PromptConfig{System: "hi"}, Message: "m"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.admin.PutEnv(ctx, "bot", "prod", client.PutEnvRequest{Version: 1}); err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for range 3 {
		sess, err := s.rt.CreateSession(ctx, client.CreateSessionRequest{Agent: "bot", Env: "prod"})
		if err != nil {
			t.Fatal(err)
		}
		ids[sess.SessionID] = true
	}
	var seen int
	for o := (client.ListSessionsOptions{Agent: "bot", State: "open", ListOptions: client.ListOptions{Limit: 2}}); ; {
		p, err := s.rt.ListSessions(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			if !ids[it.SessionID] {
				t.Errorf("listed %s, not one of %v", it.SessionID, ids)
			}
			delete(ids, it.SessionID)
			seen++
		}
		if p.Next == "" {
			break
		}
		o.Cursor = p.Next
	}
	if seen != 3 || len(ids) != 0 {
		t.Errorf("listed %d sessions; never listed %v", seen, ids)
	}
	if _, _, err := s.rt.CreateRecord(ctx, "jobs", client.NewRecord{Payload: 1}); err != nil {
		t.Fatal(err)
	}
	boards, err := s.rt.ListBoards(ctx, client.ListOptions{})
	if err != nil || len(boards.Items) != 1 || boards.Items[0].Board != "jobs" || boards.Items[0].Counts["pending"] != 1 || boards.Next != "" {
		t.Fatalf("ListBoards = %+v, %v", boards, err)
	}
	events, err := s.admin.Audit(ctx, client.AuditQuery{Actor: "rt", Action: "session.created"})
	if err != nil || len(events.Items) != 3 {
		t.Fatalf("Audit(actor rt, session.created) = %+v, %v", events, err)
	}
	if events, err := s.admin.Audit(ctx, client.AuditQuery{Actor: "ops", Action: "session.created"}); err != nil || len(events.Items) != 0 {
		t.Fatalf("Audit(actor ops, session.created) = %+v, %v", events, err)
	}
}
