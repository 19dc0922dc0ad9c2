package browsertest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"
)

func TestRelease_startRampPauseResumeRollback_seenInTheBrowser(t *testing.T) {
	srv := startServer(t)
	srv.publish("support", 0, "support v1")
	srv.publish("support", 1, "support v2")
	srv.point("support", "prod", 1)

	tb := newTab(t, srv)
	tb.login(adminToken)
	tb.open("/ui/releases?agent=support&env=prod")
	tb.fill(sel("start-candidate"), "2")
	tb.fill(sel("start-percent"), "10")
	tb.fill(sel("start-message"), "try v2 on 10%")
	tb.click(sel("start-submit"))
	tb.wait("the release page", `location.pathname.startsWith('/ui/releases/rel_') && document.querySelector('[data-testid=release-summary]')`)
	id := tb.path()[len("/ui/releases/"):]
	waitRelease := func(state, percent string) {
		t.Helper()
		tb.wait("release "+state+" at "+percent+"%", `(e => e && e.dataset.state === `+js(state)+` && Number(e.dataset.percent) === `+percent+`)(document.querySelector('[data-testid=release-summary]'))`)
		rel := srv.must(200, "GET", "/v1/releases/"+id, nil)
		if rel["state"] != state || fmt.Sprint(rel["percent"]) != percent {
			t.Fatalf("the page shows %s at %s%%, the API %v at %v%%", state, percent, rel["state"], rel["percent"])
		}
	}
	waitRelease("running", "10")
	if st := tb.text(sel("release-state")); st == "" {
		t.Error("release-state is empty")
	}

	// Traffic: the runtime resolves for 200 users (the server counts these
	// exposures) and reports an outcome for each.
	arms := map[string]int{}
	var outcomes []map[string]any
	for i := 0; i < 200; i++ {
		st, b := srv.call("GET", fmt.Sprintf("/v1/agents/support/envs/prod/prompt?user_id=user-%d", i), runtimeToken, nil)
		if st != 200 {
			t.Fatalf("resolve: %d %s", st, b)
		}
		var p struct {
			Version int `json:"version"`
			Release *struct {
				ID, Arm string
			} `json:"release"`
		}
		if err := json.Unmarshal(b, &p); err != nil || p.Release == nil {
			t.Fatalf("resolve during the release: %s (%v)", b, err)
		}
		arms[p.Release.Arm]++
		outcomes = append(outcomes, map[string]any{"agent": "support", "env": "prod", "release_id": id, "arm": p.Release.Arm,
			"version": p.Version, "reason": "bucket", "success": i%10 != 0, "at": time.Now().UTC().Format(time.RFC3339Nano)})
	}
	srv.mustAs(runtimeToken, 200, "POST", "/v1/outcomes", map[string]any{"items": outcomes})
	t.Logf("resolved arms: %v", arms)

	// The arms' figures reach the page (exposures are flushed every 2 s).
	tb.waitFigure(sel("arm-row", "data-arm", "candidate")+" "+sel("arm-exposures"), arms["candidate"])
	tb.waitFigure(sel("arm-row", "data-arm", "baseline")+" "+sel("arm-exposures"), arms["baseline"])
	tb.waitFigure(sel("arm-row", "data-arm", "candidate")+" "+sel("arm-outcomes"), arms["candidate"])
	tb.waitFigure(sel("arm-row", "data-arm", "baseline")+" "+sel("arm-outcomes"), arms["baseline"])

	// Ramp with the slider: the number follows it, and the release moves.
	tb.setValue(sel("ramp-slider"), "50")
	if n := tb.attr(sel("ramp-number"), "value"); n != "50" && eval[string](tb, `document.querySelector('[data-testid=ramp-number]').value`) != "50" {
		t.Errorf("ramp-number does not follow the slider: %q", n)
	}
	tb.click(sel("ramp-submit"))
	waitRelease("running", "50")
	tb.screenshot("release-running-50")

	tb.click(sel("release-pause"))
	waitRelease("paused", "50")
	if tb.visible(sel("release-pause")) != 0 || tb.visible(sel("release-resume")) != 1 {
		t.Error("paused: pause is still offered or resume is not")
	}
	tb.click(sel("release-resume"))
	waitRelease("running", "50")

	// The control for the confirmation: cancelling the rollback changes
	// nothing.
	tb.click(sel("release-rollback"))
	tb.wait("the confirm dialog", `(d => d && d.open)(document.querySelector('[data-testid=confirm-dialog]'))`)
	tb.click(sel("confirm-cancel"))
	tb.wait("the dialog closed", `!(d => d && d.open)(document.querySelector('[data-testid=confirm-dialog]'))`)
	time.Sleep(300 * time.Millisecond) // a cancelled dialog must not send anything: give it the chance to
	waitRelease("running", "50")

	tb.click(sel("release-rollback"))
	tb.wait("the confirm dialog", `(d => d && d.open)(document.querySelector('[data-testid=confirm-dialog]'))`)
	tb.fill(sel("confirm-reason"), "v2 answers too long")
	tb.click(sel("confirm-ok"))
	waitRelease("rolled_back", "50")
	tb.screenshot("release-rolled-back")

	if v, _ := srv.pointer("support", "prod"); v != 1 {
		t.Errorf("after the rollback the pointer is at v%d, want the baseline v1", v)
	}
	env := srv.must(200, "GET", "/v1/agents/support/envs/prod", nil)
	if revoked := fmt.Sprint(env["revoked"]); !regexp.MustCompile(`\b2\b`).MatchString(revoked) {
		t.Errorf("after the rollback revoked = %s, want v2 in it", revoked)
	}
	if n := tb.visible(sel("release-pause")) + tb.visible(sel("release-resume")) + tb.visible(sel("release-promote")) + tb.visible(sel("release-rollback")); n != 0 {
		t.Errorf("a rolled-back release still offers %d actions", n)
	}
}

var number = regexp.MustCompile(`\d[\d,\s]*`)

// waitFigure waits until the element's text holds the number want (the
// first number in it, thousands separators allowed), reloading the page
// every few seconds in case the figure is not refreshed live.
func (tb *tab) waitFigure(css string, want int) {
	tb.t.Helper()
	deadline := time.Now().Add(2 * waitFor)
	reload := time.Now().Add(5 * time.Second)
	var got string
	for {
		if tb.count(css) > 0 {
			got = eval[string](tb, "document.querySelector("+js(css)+").innerText")
			if m := number.FindString(got); m != "" {
				if n, err := strconv.Atoi(regexp.MustCompile(`[,\s]`).ReplaceAllString(m, "")); err == nil && n == want {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			tb.t.Fatalf("%s shows %q, want %d", css, got, want)
		}
		if time.Now().After(reload) {
			tb.open(tb.path())
			reload = time.Now().Add(5 * time.Second)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestRelease_promotedInTheBrowser_movesThePointerToTheCandidate(t *testing.T) {
	srv := startServer(t)
	srv.publish("support", 0, "support v1")
	srv.publish("support", 1, "support v2")
	srv.point("support", "prod", 1)
	rel := srv.must(201, "POST", "/v1/agents/support/envs/prod/releases", map[string]any{"candidate_version": 2, "percent": 20})
	id := rel["id"].(string)

	tb := newTab(t, srv)
	tb.login(adminToken)
	tb.open("/ui/releases?agent=support&env=prod")
	tb.click(sel("release-row", "data-release-id", id) + " " + sel("release-link"))
	tb.wait("the release page", `(e => e && e.dataset.state === 'running')(document.querySelector('[data-testid=release-summary]'))`)
	tb.click(sel("release-promote"))
	tb.wait("the confirm dialog", `(d => d && d.open)(document.querySelector('[data-testid=confirm-dialog]'))`)
	tb.click(sel("confirm-ok"))
	tb.wait("the release promoted", `(e => e && e.dataset.state === 'promoted')(document.querySelector('[data-testid=release-summary]'))`)
	if v, _ := srv.pointer("support", "prod"); v != 2 {
		t.Errorf("after the promotion the pointer is at v%d, want the candidate v2", v)
	}
	if st := srv.must(200, "GET", "/v1/releases/"+id, nil)["state"]; st != "promoted" {
		t.Errorf("the API says the release is %v, want promoted", st)
	}
	if tb.visible(sel("ramp-form")) != 0 {
		t.Error("a promoted release still offers the ramp")
	}
}
