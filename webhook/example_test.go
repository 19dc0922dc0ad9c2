package webhook_test

import (
	"context"
	"fmt"

	"github.com/promptd/promptd/webhook"
)

// A delivery's signature: what a receiver recomputes with the secret it
// was shown at creation (any Standard Webhooks library does).
func ExampleSign() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	id := webhook.MessageID(42, "wh_0123456789abcdef0123")
	sig, _ := webhook.Sign(secret, id, 1614265330, []byte(`{"type":"pointer.switched"}`))
	fmt.Println(id)
	fmt.Println(sig)
	// Output:
	// msg_42_wh_0123456789abcdef0123
	// v1,LMilIIO4qz5Ce4xzLipbhQHe7sgHsJMXfFUtUApUbjU=
}

// The address guard refuses loopback, private and metadata addresses,
// also inside IPv6 forms, unless told to allow them.
func ExampleGuard_CheckURL() {
	g := webhook.Guard{}
	for _, u := range []string{"https://93.184.216.34/hook", "https://169.254.169.254/latest", "https://[::ffff:127.0.0.1]/", "http://93.184.216.34/"} {
		_, err := g.CheckURL(context.Background(), u)
		fmt.Println(u, err == nil)
	}
	// Output:
	// https://93.184.216.34/hook true
	// https://169.254.169.254/latest false
	// https://[::ffff:127.0.0.1]/ false
	// http://93.184.216.34/ false
}
