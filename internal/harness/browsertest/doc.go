// Package browsertest drives the web console (/ui/) in a real Chromium:
// a promptd process on MariaDB and Redis, one headless browser reused by
// every test, each test in a browser context of its own (its own cookies).
// The tests log in with a token, publish and diff versions, switch an env
// from a stale tab, run a release from start to rollback, approve a change
// request, run axe-core on every page and check the Content-Security-Policy
// and CSRF protection from inside the page. Screenshots go to
// test-artifacts/ (PROMPTD_TEST_ARTIFACTS overrides it), and the tests log
// their paths.
//
// The package has no code outside its tests. It needs Debian's chromium
// (/usr/bin/chromium, or PROMPTD_TEST_CHROMIUM) and axe-core from npm
// (npm ci in this directory); scripts/test.sh installs both. With
// PROMPTD_REQUIRE_INTEGRATION=1 a missing browser or axe-core fails the
// tests instead of skipping them.
package browsertest
