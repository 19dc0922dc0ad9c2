package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/promptd/promptd/internal/harness/testenv"
)

// The window is a laptop's: what the issue asks the console to be usable on.
const windowW, windowH = 1366, 768

// One browser serves the whole package; it is started by the first test
// that needs it and stopped by TestMain after the last.
var browser struct {
	once   sync.Once
	ctx    context.Context // a chromedp context that owns the browser
	cancel context.CancelFunc
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if browser.cancel != nil {
		browser.cancel()
	}
	os.Exit(code)
}

// chromiumPath finds Debian's chromium: PROMPTD_TEST_CHROMIUM, then PATH,
// then /usr/bin/chromium.
func chromiumPath() (string, error) {
	if p := os.Getenv("PROMPTD_TEST_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium", nil
	}
	return "", errors.New("no chromium in PROMPTD_TEST_CHROMIUM, PATH or /usr/bin (apt-get install chromium, or run ./scripts/test.sh)")
}

// unavailable skips the test, or fails it when integration tests are
// required (PROMPTD_REQUIRE_INTEGRATION=1).
func unavailable(t *testing.T, why string) {
	t.Helper()
	if testenv.Required() {
		t.Fatalf("browser test: %s, but PROMPTD_REQUIRE_INTEGRATION=1", why)
	}
	t.Skipf("browser test: %s; run ./scripts/test.sh", why)
}

func startBrowser() (context.Context, context.CancelFunc, error) {
	path, err := chromiumPath()
	if err != nil {
		return nil, nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.DisableGPU,
		chromedp.WindowSize(windowW, windowH),
		// Already in the defaults; named here because the suite relies on them.
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("hide-scrollbars", true),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	cancel := func() { cancelCtx(); cancelAlloc() }
	// The first Do starts the browser; bound it, as a broken install hangs.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err = <-started:
	case <-time.After(60 * time.Second):
		err = errors.New("chromium did not start within 60s")
	}
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("start %s: %w", path, err)
	}
	return ctx, cancel, nil
}

// browserContext returns the package's browser, starting it on first use.
func browserContext(t *testing.T) context.Context {
	t.Helper()
	browser.once.Do(func() {
		browser.ctx, browser.cancel, browser.err = startBrowser()
	})
	if browser.err != nil {
		unavailable(t, browser.err.Error())
	}
	return browser.ctx
}

// artifactsDir is where screenshots go: PROMPTD_TEST_ARTIFACTS, else
// test-artifacts/ beside this package (gitignored).
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("PROMPTD_TEST_ARTIFACTS")
	if dir == "" {
		dir = "test-artifacts"
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// artifactName turns a test name and a label into a file name.
func artifactName(t *testing.T, label string) string {
	r := strings.NewReplacer("/", "-", " ", "_", ":", "_")
	return r.Replace(t.Name()) + "-" + r.Replace(label) + ".png"
}
