package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/promptd/promptd/api/client"
)

// runEvents lists the change feed, or follows it (-w, like kubectl get -w):
// one line per event as it commits, resuming by position after a drop,
// until interrupted. --output json writes one JSON object per line.
func runEvents(a *app, args []string) error {
	var (
		f       client.EventFilter
		actions string
		since   string
		follow  bool
		limit   int
	)
	fs := a.flags("events")
	fs.BoolVar(&follow, "w", false, "follow: print events as they commit, until interrupted")
	fs.BoolVar(&follow, "follow", false, "same as -w")
	fs.StringVar(&since, "since", "", "start after this position (0: the oldest kept); default: the latest events, or new ones with -w")
	fs.StringVar(&actions, "actions", "", "only these actions, comma-separated (patterns such as release.*)")
	fs.StringVar(&f.Agent, "agent", "", "only this agent")
	fs.StringVar(&f.Env, "env", "", "only this env")
	fs.StringVar(&f.Board, "board", "", "only this board")
	fs.IntVar(&limit, "limit", 50, "how many, without -w (1..1000)")
	if _, err := a.parse(fs, args, 0, 0); err != nil {
		return err
	}
	if actions != "" {
		f.Actions = strings.Split(actions, ",")
	}
	if !follow {
		if since == "" {
			since = "0"
		}
		p, err := a.c.PollEvents(a.ctx, f, since, limit, 0)
		if err != nil {
			return err
		}
		if a.output == "json" {
			return a.printJSON(p)
		}
		rows := make([][]string, len(p.Items))
		for i, e := range p.Items {
			rows[i] = eventRow(e)
		}
		a.table(eventHeader, rows)
		fmt.Fprintf(a.stderr, "next: --since %s\n", p.Next)
		return nil
	}
	if a.output != "json" {
		a.table(eventHeader, nil)
	}
	err := a.c.Subscribe(a.ctx, client.Subscription{
		Filter: f,
		Since:  since,
		OnEvent: func(e client.Event) {
			if a.output == "json" {
				b, _ := json.Marshal(e)
				fmt.Fprintln(a.stdout, string(b))
				return
			}
			fmt.Fprintln(a.stdout, strings.Join(eventRow(e), "  "))
		},
		OnState: func(up bool, err error) {
			if !up {
				fmt.Fprintf(a.stderr, "promptctl: stream dropped (%v); resuming\n", err)
			}
		},
		OnReset: func() { fmt.Fprintln(a.stderr, "promptctl: the position expired; resuming from the oldest kept event") },
	})
	if errors.Is(err, a.ctx.Err()) && a.ctx.Err() != nil {
		return nil // interrupted
	}
	return err
}

var eventHeader = []string{"SEQ", "AT", "ACTION", "RESOURCE", "REVISION"}

func eventRow(e client.Event) []string {
	rev := ""
	if e.Revision != nil {
		rev = strconv.FormatInt(*e.Revision, 10)
	}
	return []string{strconv.FormatInt(e.Seq, 10), e.At.UTC().Format(time.RFC3339), e.Action, e.Resource, rev}
}
