package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/promptd/promptd/api/client"
)

func runTokens(a *app, args []string) error {
	if len(args) == 0 {
		return usageError{"tokens needs a subcommand: create, list or revoke"}
	}
	if isHelp(args[0]) {
		a.help("tokens", nil)
		return nil
	}
	switch args[0] {
	case "create":
		return runTokensCreate(a, args[1:])
	case "list":
		if _, err := a.parse(a.flags("tokens list"), args[1:], 0, 0); err != nil {
			return err
		}
		// Every page (a page holds 500 at most): an admin asking which
		// tokens can act wants all of them, the bootstrap set first.
		all := &client.TokenPage{}
		for o := (client.ListOptions{Limit: 500}); ; {
			p, err := a.c.ListTokens(a.ctx, o)
			if err != nil {
				return err
			}
			all.Items, all.Bootstrap = append(all.Items, p.Items...), p.Bootstrap
			if p.Next == "" {
				break
			}
			o.Cursor = p.Next
		}
		return a.show(all, []string{"NAME", "ID", "ROLE", "SCOPES", "PRINCIPAL", "EXPIRES", "LAST USED", "REVOKED"}, func() [][]string {
			rows := make([][]string, 0, len(all.Bootstrap)+len(all.Items))
			for _, t := range all.Bootstrap {
				rows = append(rows, []string{t.Name, "bootstrap (" + t.Source + ")", t.Role, "-", t.Principal, "never", "-", "-"})
			}
			for _, t := range all.Items {
				rows = append(rows, []string{t.Name, t.ID, t.Role, scopeList(t.Scopes), t.Principal, optWhen(t.ExpiresAt), optWhen(t.LastUsedAt), optWhen(t.RevokedAt)})
			}
			return rows
		})
	case "revoke":
		pos, err := a.parse(a.flags("tokens revoke"), args[1:], 1, 1)
		if err != nil {
			return err
		}
		if err := a.c.RevokeToken(a.ctx, pos[0]); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "revoked token %s: every instance refuses it within a second\n", pos[0])
		return nil
	}
	return usageError{fmt.Sprintf("unknown tokens subcommand %q", args[0])}
}

func runTokensCreate(a *app, args []string) error {
	fs := a.flags("tokens create")
	role := fs.String("role", "", "admin or runtime")
	agents := fs.String("agents", "", "agents the token may reach (names or prefixes ending in *); omitted: all, \"-\": none")
	envs := fs.String("envs", "", "envs the token may reach; omitted: all, \"-\": none")
	boards := fs.String("boards", "", "boards the token may reach; omitted: all, \"-\": none")
	expires := fs.Duration("expires", 0, "lifetime, at most a year (8784h); 0: no expiry")
	pos, err := a.parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if *role == "" {
		return usageError{"tokens create needs --role admin or --role runtime"}
	}
	req := client.CreateTokenRequest{Name: pos[0], Role: *role}
	if *agents != "" || *envs != "" || *boards != "" {
		req.Scopes = &client.Scopes{Agents: patterns(*agents), Envs: patterns(*envs), Boards: patterns(*boards)}
	}
	if *expires > 0 {
		at := time.Now().Add(*expires).UTC()
		req.ExpiresAt = &at
	}
	t, err := a.c.CreateToken(a.ctx, req)
	if err != nil {
		return err
	}
	if a.output == "json" {
		return a.printJSON(t)
	}
	secret := "(redacted: this was a replay)"
	if t.Secret != nil {
		secret = *t.Secret
	}
	fmt.Fprintf(a.stdout, "created token %s (%s, %s); its secret, shown this once:\n%s\n", t.Name, t.ID, t.Role, secret)
	return nil
}

// patterns is a --agents style list: "" means all (nil), "-" none.
func patterns(s string) []string {
	switch s {
	case "":
		return nil
	case "-":
		return []string{}
	}
	return strings.Split(s, ",")
}

func scopeList(s *client.Scopes) string {
	if s == nil {
		return "-"
	}
	var parts []string
	for _, l := range []struct {
		name string
		v    []string
	}{{"agents", s.Agents}, {"envs", s.Envs}, {"boards", s.Boards}} {
		if l.v != nil {
			parts = append(parts, l.name+"="+strings.Join(l.v, ","))
		}
	}
	return strings.Join(parts, " ")
}

func optWhen(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return when(*t)
}
