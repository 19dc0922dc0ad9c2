package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestHelp_listsTheGlobalOptions_includingTraceparent: promptctl help
// names every global option, so --traceparent can be found without
// reading the source.
func TestHelp_listsTheGlobalOptions_includingTraceparent(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"help"}, func(string) string { return "" }, &out, &errb)
	if code != exitOK {
		t.Fatalf("promptctl help: exit %d", code)
	}
	for _, want := range []string{"--server URL", "--token T", "--output table|json", "--traceparent TRACEPARENT", "TRACEPARENT"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("promptctl help does not name %q:\n%s", want, out.String())
		}
	}
}
