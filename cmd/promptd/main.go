// Command promptd serves prompt configs and coordinates agent sessions
// over HTTP. It is configured with PROMPTD_* environment variables
// (promptd -h lists them; api/openapi.yaml explains them).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/promptd/promptd/internal/buildinfo"
	"github.com/promptd/promptd/telemetry"
)

func main() {
	if err := run(context.Background(), os.Args, os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "promptd:", err)
		os.Exit(exitCode(err))
	}
}

// run starts promptd and blocks until ctx is done or SIGINT/SIGTERM
// arrives, then shuts it down gracefully. Logs go to stdout as JSON.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	if len(args) > 1 {
		switch args[1] {
		case "-h", "-help", "--help", "help":
			printUsage(stdout)
			return nil
		case "-version", "--version", "version":
			fmt.Fprintln(stdout, versionLine())
			return nil
		case "healthcheck":
			return healthcheck(ctx, args[2:], getenv, stdout)
		}
		return usageErrorf("unexpected argument %q: promptd is configured with PROMPTD_* variables (promptd -h lists them)", args[1])
	}
	cfg, err := loadConfig(getenv)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(stdout, &slog.HandlerOptions{Level: cfg.LogLevel}))).
		With("instance", cfg.InstanceID)
	log.Info("starting", "config", cfg)
	// Tracing from the standard OTEL_* variables; off (nothing installed)
	// when none asks for it. Its shutdown flushes the spans queued.
	stopTracing, err := telemetry.Setup(ctx, getenv, buildVersion())
	if err != nil {
		return err
	}
	defer func() {
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := stopTracing(tctx); err != nil {
			log.Warn("flushing traces failed", "err", err)
		}
	}()
	log.Info("tracing", "enabled", telemetry.Enabled())

	m := NewMain(cfg, log)
	if err := m.Open(ctx); err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		return errors.Join(err, m.Close(cctx))
	}
	log.Info("listening", "addr", m.Addr().String())

	var serveErr error
	select {
	case <-ctx.Done():
		stop() // a second signal kills at once
		log.Info("shutting down")
	case serveErr = <-m.Served():
		log.Error("server stopped", "err", serveErr)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout+5*time.Second)
	defer cancel()
	if err := errors.Join(serveErr, m.Close(cctx)); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// version is set at link time by release builds
// (-ldflags "-X main.version=0.1.0"); else the VERSION file is used.
var version string

// buildVersion is the version promptd was built at (service.version of
// its spans, promptd_build_info): the link-time version, else the VERSION
// file's with the commit built from (buildinfo.Version).
func buildVersion() string { return buildinfo.Version(version) }
