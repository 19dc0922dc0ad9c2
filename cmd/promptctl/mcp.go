package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runMCP serves MCP over stdio for a local client (Claude Desktop, an
// IDE) by bridging it to promptd's streamable HTTP endpoint
// /v1/mcp/{env}: the SDK's StdioTransport and StreamableClientTransport
// connections, each message pumped to the other side as it comes, so the
// MCP server is promptd's own (one implementation). It returns when stdin
// closes or promptd ends the session.
func runMCP(a *app, args []string) error {
	fs := a.flags("mcp")
	env := fs.String("env", "", "the `ENV` whose prompts to serve (required)")
	if _, err := a.parse(fs, args, 0, 0); err != nil {
		return err
	}
	if *env == "" {
		return usageError{"--env is required"}
	}
	b := &mcpBridge{endpoint: strings.TrimRight(a.server, "/") + "/v1/mcp/" + url.PathEscape(*env), token: a.token}
	b.http = &http.Client{Transport: b}
	remote, err := (&mcp.StreamableClientTransport{Endpoint: b.endpoint, HTTPClient: b.http,
		// The SDK opens the server's stream for its own client sessions
		// only: the bridge opens it (standalone), once initialized.
		DisableStandaloneSSE: true}).Connect(a.ctx)
	if err != nil {
		return err
	}
	local, err := (&mcp.StdioTransport{}).Connect(a.ctx)
	if err != nil {
		_ = remote.Close()
		return err
	}
	return b.run(a.ctx, local, remote)
}

// mcpBridge pumps messages between a local connection and promptd's.
type mcpBridge struct {
	endpoint, token string
	http            *http.Client
	// version is the protocol version initialize negotiated: every request
	// after it carries it (MCP-Protocol-Version).
	version atomic.Value // string
	initID  atomic.Value // jsonrpc.ID of the client's initialize
	stream  sync.Once
}

// RoundTrip adds the token and the negotiated protocol version to every
// request to promptd.
func (b *mcpBridge) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	if v, _ := b.version.Load().(string); v != "" && r.Header.Get("Mcp-Protocol-Version") == "" {
		r.Header.Set("Mcp-Protocol-Version", v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// run pumps both ways until one side ends; it closes both and returns
// the first error that is not an end of input.
func (b *mcpBridge) run(ctx context.Context, local, remote mcp.Connection) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 3)
	go func() {
		for {
			msg, err := local.Read(ctx)
			if err != nil {
				errs <- fmt.Errorf("mcp: reading stdin: %w", err)
				return
			}
			if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "initialize" {
				b.initID.Store(req.ID)
			}
			if err := remote.Write(ctx, msg); err != nil {
				errs <- fmt.Errorf("mcp: writing to promptd: %w", err)
				return
			}
		}
	}()
	go func() {
		for {
			msg, err := remote.Read(ctx)
			if err != nil {
				errs <- fmt.Errorf("mcp: reading from promptd: %w", err)
				return
			}
			if res, ok := msg.(*jsonrpc.Response); ok && res.Error == nil {
				if id, ok := b.initID.Load().(jsonrpc.ID); ok && id == res.ID {
					var init struct {
						ProtocolVersion string `json:"protocolVersion"`
					}
					if json.Unmarshal(res.Result, &init) == nil && init.ProtocolVersion != "" {
						b.version.Store(init.ProtocolVersion)
					}
					b.stream.Do(func() { go b.standalone(ctx, remote.SessionID(), local, errs) })
				}
			}
			if err := local.Write(ctx, msg); err != nil {
				errs <- fmt.Errorf("mcp: writing stdout: %w", err)
				return
			}
		}
	}()
	err := <-errs
	cancel()
	err = errors.Join(err, local.Close(), remote.Close())
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil // stdin closed: the client is done
	}
	return err
}

// standalone keeps the session's server stream open (GET, Server-Sent
// Events) and writes its messages (notifications/prompts/list_changed) to
// the local side; a dropped stream is opened again after a second.
func (b *mcpBridge) standalone(ctx context.Context, session string, local mcp.Connection, errs chan<- error) {
	for ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.endpoint, nil)
		if err != nil {
			errs <- err
			return
		}
		req.Header.Set("Accept", "text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		res, err := b.http.Do(req)
		switch {
		case err != nil:
		case res.StatusCode == http.StatusMethodNotAllowed:
			_ = res.Body.Close()
			return // the server offers no stream
		case res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusUnauthorized || res.StatusCode == http.StatusForbidden:
			_ = res.Body.Close()
			errs <- fmt.Errorf("mcp: promptd refused the session's stream: %s", res.Status)
			return
		case res.StatusCode != http.StatusOK:
			_ = res.Body.Close()
		default:
			readEvents(ctx, res.Body, local)
			_ = res.Body.Close()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// readEvents writes the JSON-RPC message of each event of an SSE body to
// local, until the body ends.
func readEvents(ctx context.Context, body io.Reader, local mcp.Connection) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "data:"); ok {
			data.WriteString(strings.TrimPrefix(d, " "))
			continue
		}
		if line != "" || data.Len() == 0 {
			continue
		}
		msg, err := jsonrpc.DecodeMessage(data.Bytes())
		data.Reset()
		if err != nil {
			continue
		}
		if local.Write(ctx, msg) != nil {
			return
		}
	}
}
