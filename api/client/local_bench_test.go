package client_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/promptd/promptd/api/client"
	"github.com/promptd/promptd/bundle"
)

// BenchmarkLocalPrompts: what one answer costs a Go runtime, in one run:
// a bare map lookup of the same assembled bytes (the floor), a local
// resolve, a local assemble (openai format), and the same assemble over
// HTTP from a real promptd on loopback. Ratios against the map lookup
// are the figure to quote (go test -bench LocalPrompts -run ^$ ./api/client/).
func BenchmarkLocalPrompts(b *testing.B) {
	s, agent := localServer(b)
	ctx := b.Context()
	lp, err := s.rt.NewLocalPrompts(ctx, client.LocalOptions{Agents: []string{agent}, FlushEvery: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer lp.Close(ctx)
	vars := map[string]json.RawMessage{"persona": json.RawMessage(`"a helper"`)}
	req := func(i int) bundle.Request {
		return bundle.Request{Agent: agent, Env: "prod", UserID: fmt.Sprint("user-", i%1000), Format: "openai", Variables: vars}
	}
	// the floor: the same bytes, looked up by caller
	same := map[string][]byte{}
	for i := 0; i < 1000; i++ {
		body, _, err := lp.Assemble(ctx, req(i))
		if err != nil {
			b.Fatal(err)
		}
		same[fmt.Sprint("user-", i)] = body
	}
	var sink int
	b.Run("map-lookup", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			sink += len(same[fmt.Sprint("user-", i%1000)])
		}
	})
	b.Run("local-resolve", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			res, err := lp.Resolve(ctx, req(i))
			if err != nil {
				b.Fatal(err)
			}
			sink += res.Version
		}
	})
	b.Run("local-assemble", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			body, _, err := lp.Assemble(ctx, req(i))
			if err != nil {
				b.Fatal(err)
			}
			sink += len(body)
		}
	})
	b.Run("http-assemble", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			var raw []byte
			body := map[string]any{"user_id": fmt.Sprint("user-", i%1000), "format": "openai", "variables": map[string]string{"persona": "a helper"}}
			if err := s.rt.Do(ctx, "POST", "/v1/agents/"+agent+"/envs/prod/assemble", body, &raw); err != nil {
				b.Fatal(err)
			}
			sink += len(raw)
		}
	})
	_ = sink
}
