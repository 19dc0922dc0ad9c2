package events_test

import (
	"context"
	"fmt"

	"github.com/promptd/promptd/events"
)

// Without Redis a bus delivers in process: every subscriber of a kind
// hears each event published with it, with its new revision.
func Example() {
	bus := events.NewBus(events.Options{})
	defer bus.Close()
	bus.Subscribe("pointer", func(_ context.Context, ev events.Event) {
		fmt.Printf("%s %s/%s is at revision %d\n", ev.Kind, ev.Agent, ev.Env, ev.Revision)
	})
	bus.Subscribe("session", func(context.Context, events.Event) { fmt.Println("never: another kind") })
	bus.Publish(context.Background(), events.Event{Kind: "pointer", Agent: "support", Env: "prod", Revision: 7})

	// A mirror without Redis mirrors nothing: reads fall through to SQL.
	m := events.NewMirror(events.Options{})
	m.PutSnapshot(context.Background(), "support", 1, []byte(`{}`))
	fmt.Println("mirrored:", m.Snapshot(context.Background(), "support", 1) != nil)
	// Output:
	// pointer support/prod is at revision 7
	// mirrored: false
}
