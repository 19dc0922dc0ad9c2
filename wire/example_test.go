package wire_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/promptd/promptd/wire"
)

// A turn encodes as the API shows it: its seq, the chat message, and its
// time in UTC with milliseconds; a TurnInput is what an append sends.
func Example() {
	in := wire.TextTurn("user", "Where is my order?")
	t := wire.Turn{Seq: 7, TurnInput: in, CreatedAt: wire.At(time.Date(2026, 12, 3, 10, 0, 0, 100e6, time.FixedZone("CET", 3600)))}
	b, _ := json.Marshal(t)
	fmt.Println(string(b))

	var back wire.Turn
	_ = json.Unmarshal(b, &back)
	fmt.Println(back.Seq, back.Role, back.CreatedAt.Time().Equal(t.CreatedAt.Time()))
	// Output:
	// {"seq":7,"role":"user","content":"Where is my order?","created_at":"2026-12-03T09:00:00.100Z"}
	// 7 user true
}
