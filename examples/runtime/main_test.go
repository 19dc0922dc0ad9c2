package main

import "testing"

func TestSettings_fromTheEnvironment_withDocumentedDefaults(t *testing.T) {
	for _, c := range []struct {
		name       string
		env        map[string]string
		url, token string
	}{
		{"defaults", map[string]string{}, DefaultURL, ""},
		{"PROMPTD_URL and PROMPTD_TOKEN", map[string]string{"PROMPTD_URL": "http://10.0.0.7:9000/", "PROMPTD_TOKEN": "tok"}, "http://10.0.0.7:9000", "tok"},
		{"RT, the former name of the token", map[string]string{"RT": "old"}, DefaultURL, "old"},
		{"PROMPTD_TOKEN wins over RT", map[string]string{"RT": "old", "PROMPTD_TOKEN": "new"}, DefaultURL, "new"},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, token := settings(func(k string) string { return c.env[k] })
			if url != c.url || token != c.token {
				t.Fatalf("settings() = %q, %q; want %q, %q", url, token, c.url, c.token)
			}
		})
	}
}
