package webhook

import (
	"context"
	"net/http"
	"strconv"
	"strings"
)

// Attempt posts an empty body to url with client and returns the outcome
// as last_error would name it ("" for a 2xx).
func Attempt(ctx context.Context, client *http.Client, url string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("{}"))
	if err != nil {
		return "connect"
	}
	resp, err := client.Do(req)
	if err != nil {
		return classify(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return ""
	}
	return "http_" + strconv.Itoa(resp.StatusCode)
}

// RetryAfter is retryAfter.
var RetryAfter = retryAfter
