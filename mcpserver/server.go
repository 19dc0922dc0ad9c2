package mcpserver

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptd/promptd"
	"github.com/promptd/promptd/access"
	"github.com/promptd/promptd/audit"
	"github.com/promptd/promptd/ident"
)

// Options configure a Service.
type Options struct {
	// Logger receives the servers' logs; nil means slog.Default().
	Logger *slog.Logger
	// Version is the server version MCP clients are told (initialize's
	// serverInfo); empty means "dev".
	Version string
	// Idle is how long a server with no session is kept following the
	// feed after it was made (a session connects within it); zero means
	// 30s.
	Idle time.Duration
}

// Service makes MCP servers over one runtime and keeps those with
// sessions informed of prompt changes. Safe for concurrent use.
type Service struct {
	rt  *promptd.Runtime
	o   Options
	log *slog.Logger

	mu        sync.Mutex
	live      map[*server]struct{}
	following bool
}

// New returns a Service over rt.
func New(rt *promptd.Runtime, o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.Idle <= 0 {
		o.Idle = 30 * time.Second
	}
	return &Service{rt: rt, o: o, log: o.Logger, live: map[*server]struct{}{}}
}

// server is one MCP server: one token on one env.
type server struct {
	s       *Service
	srv     *mcp.Server
	token   *access.Token
	env     string
	created time.Time

	mu      sync.Mutex // serializes syncs
	prompts map[string]bool
}

// Server returns an MCP server for token t on env: its prompts are env's
// agents t's scopes allow, its tools act as t. It follows the change feed
// while it has sessions (connect one within Options.Idle). An env outside
// t's scopes is a forbidden problem, an invalid env name invalid_id.
func (s *Service) Server(ctx context.Context, t *access.Token, env string) (*mcp.Server, error) {
	if err := ident.Validate("env", env); err != nil {
		return nil, err
	}
	if !t.Scopes.Allows(access.KindEnv, env) {
		return nil, outOfScope("envs", "env %q is outside token %q's scopes", env, t.Name)
	}
	sv := &server{s: s, token: t, env: env, created: time.Now(), prompts: map[string]bool{}}
	// The first sync adds the prompts before any session: with
	// listChanged off until it is done, the SDK schedules no notice a
	// session connecting right after would get (the SDK reads this
	// struct when it notifies and when it answers initialize).
	caps := &mcp.ServerCapabilities{Prompts: &mcp.PromptCapabilities{}, Tools: &mcp.ToolCapabilities{}}
	sv.srv = mcp.NewServer(&mcp.Implementation{Name: "promptd", Title: "promptd (env " + env + ")", Version: s.o.Version},
		&mcp.ServerOptions{
			Instructions: "The prompts are promptd's agents in env " + env + "; the tools claim board records and append session turns.",
			Capabilities: caps,
		})
	addTools(sv)
	// Register before the first sync: a change committed after the
	// feed position read here is seen by the follower.
	s.register(ctx, sv)
	if err := sv.syncAll(sv.ctx(ctx)); err != nil {
		s.unregister(sv)
		return nil, err
	}
	sv.mu.Lock() // the follower's syncs take it too
	caps.Prompts.ListChanged = true
	sv.mu.Unlock()
	return sv.srv, nil
}

// ctx is ctx acting as the server's token (audit events name it).
func (sv *server) ctx(ctx context.Context) context.Context {
	return audit.WithActor(ctx, sv.token.Name)
}

func (s *Service) register(ctx context.Context, sv *server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live[sv] = struct{}{}
	if s.following {
		return
	}
	s.following = true
	after, err := s.rt.Feed.Position(ctx)
	if err != nil {
		s.log.Warn("mcp: reading the change feed's position failed; following from its head", "err", err)
		after = s.rt.Feed.Head()
	}
	go s.follow(after)
}

func (s *Service) unregister(sv *server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.live, sv)
}

// servers are the live servers, less those with no session past Idle.
// With none left the follower stops (the next Server starts it again).
func (s *Service) servers() []*server {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*server
	for sv := range s.live {
		sessions := 0
		for range sv.srv.Sessions() {
			sessions++
		}
		if sessions == 0 && time.Since(sv.created) > s.o.Idle {
			delete(s.live, sv)
			continue
		}
		out = append(out, sv)
	}
	if len(out) == 0 {
		s.following = false
	}
	return out
}

// followWait bounds one wait on the feed, so that a follower whose
// servers all ended stops within it.
const followWait = 5 * time.Second

// follow reads the change feed after position after and re-syncs the
// servers an event touches.
func (s *Service) follow(after int64) {
	ctx := context.Background()
	for {
		svs := s.servers()
		if len(svs) == 0 {
			return
		}
		evs, next, err := s.rt.Feed.Read(ctx, after, 1000)
		if err != nil {
			s.log.Warn("mcp: reading the change feed failed; resuming from its head", "err", err)
			if next, err = s.rt.Feed.Position(ctx); err != nil {
				time.Sleep(time.Second)
				continue
			}
			for _, sv := range svs {
				sv.resync(ctx, nil) // something may have been missed
			}
		}
		touched := map[*server]map[string]bool{}
		for _, e := range evs {
			if !promptChange(e.Action) {
				continue
			}
			for _, sv := range svs {
				if e.Env != "" && e.Env != sv.env {
					continue
				}
				if e.Agent != "" && !sv.token.Scopes.Allows(access.KindAgent, e.Agent) {
					continue
				}
				m := touched[sv]
				if m == nil {
					m = map[string]bool{}
					touched[sv] = m
				}
				m[e.Agent] = true // "": every agent (an import)
			}
		}
		for sv, agents := range touched {
			sv.resync(ctx, agents)
		}
		after = next
		if len(evs) == 1000 {
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, followWait)
		s.rt.Feed.Wait(wctx, after)
		cancel()
	}
}

// promptChange reports whether an event of action may change what a
// prompts/list or prompts/get answers.
func promptChange(action string) bool {
	if action == "version.created" {
		return false // a new version changes nothing until a pointer or release names it
	}
	for _, p := range []string{"pointer.", "version.", "release.", "env.", "import."} {
		if strings.HasPrefix(action, p) {
			return true
		}
	}
	return false
}

// resync re-reads the agents named (nil or "" among them: all) and
// notifies the server's sessions.
func (sv *server) resync(ctx context.Context, agents map[string]bool) {
	ctx = sv.ctx(ctx)
	var err error
	if agents == nil || agents[""] {
		err = sv.syncAll(ctx)
	} else {
		for a := range agents {
			if err = sv.syncOne(ctx, a); err != nil {
				break
			}
		}
	}
	if err != nil {
		sv.s.log.Warn("mcp: re-reading prompts failed", "env", sv.env, "err", err)
	}
}
