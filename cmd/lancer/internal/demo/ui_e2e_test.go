package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lancerdb/lancer/cmd/lancer/internal/demo"
	"github.com/lancerdb/lancer/internal/lancereftest"
	"github.com/lancerdb/lancer/server"
)

// chromiumPath is the browser the UI test drives: Debian's chromium
// package, which scripts/test.sh installs.
const chromiumPath = "/usr/bin/chromium"

// TestUIBrowser runs the dataset browser (server/ui) in headless Chromium
// through interop/ui-e2e.mjs over the demo database Build makes (images,
// an embedding column, a branch merged back, tags), served in process with an
// API key: the page asks for the key, shows thumbnails that decode, a
// row's detail, a search by example with distances, the version graph
// with both lines, a diff with its counts, the versions and the schema. Screenshots of each step go
// to $LANCER_ARTIFACTS (default <tmp>/lancer-ui-e2e), whose paths the test
// logs. It fails, never skips, when Chromium or playwright-core is missing.
func TestUIBrowser(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("%s is missing: install Debian's chromium (apt-get install -y chromium; scripts/test.sh does it): %v", chromiumPath, err)
	}
	ref := lancereftest.ForTest(t)
	if _, err := os.Stat(filepath.Join(ref.Dir, "node_modules", "playwright-core", "package.json")); err != nil {
		t.Fatalf("playwright-core is not installed in %s: run scripts/test.sh (it installs interop/package.json there): %v", ref.Dir, err)
	}
	artifacts := os.Getenv("LANCER_ARTIFACTS")
	if artifacts == "" {
		// Not t.TempDir: the screenshots are for looking at after the run.
		artifacts = filepath.Join(os.TempDir(), "lancer-ui-e2e")
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dataDir := t.TempDir()
	if _, err := demo.Build(ctx, demo.Options{Dir: dataDir, Images: 2 * demo.Classes}); err != nil {
		t.Fatalf("building the demo database: %v", err)
	}

	const key = "sk-lancer-ui"
	var logs bytes.Buffer
	h, err := server.New(&server.Options{DataDir: dataDir, APIKey: key, Addr: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	cmd := ref.Command("ui-e2e.mjs")
	cmd.Env = append(cmd.Env, "LANCER_URL=http://"+ln.Addr().String(), "LANCER_API_KEY="+key,
		"LANCER_ARTIFACTS="+artifacts, "LANCER_TABLE="+demo.Table, "LANCER_BRANCH="+demo.Branch, "CHROMIUM="+chromiumPath)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var runErr error
	select {
	case runErr = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("ui-e2e.mjs did not finish in time\n%s\n%s", stdout.String(), stderr.String())
	}
	var res struct {
		OK             bool            `json:"ok"`
		Error          string          `json:"error"`
		Checks         json.RawMessage `json:"checks"`
		Screenshots    []string        `json:"screenshots"`
		ConsoleErrors  []string        `json:"consoleErrors"`
		FailedRequests []string        `json:"failedRequests"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("ui-e2e.mjs: %v, printed %.2000q\nstderr:\n%s", runErr, stdout.String(), stderr.String())
	}
	for _, s := range res.Screenshots {
		t.Logf("screenshot: %s", s)
	}
	if !res.OK || runErr != nil {
		t.Fatalf("ui-e2e.mjs failed (%v): %s\nchecks: %s\nconsole errors: %q\nfailed requests: %q\nstderr:\n%s\nserver log:\n%s",
			runErr, res.Error, res.Checks, res.ConsoleErrors, res.FailedRequests, stderr.String(), logs.String())
	}
	t.Logf("checks: %s", res.Checks)
	// Every step left a real screenshot.
	if len(res.Screenshots) != 10 {
		t.Errorf("%d screenshots, want one per step (10)", len(res.Screenshots))
	}
	for _, s := range res.Screenshots {
		f, err := os.Open(s)
		if err != nil {
			t.Error(err)
			continue
		}
		cfg, err := png.DecodeConfig(f)
		_, _ = io.Copy(io.Discard, f)
		f.Close()
		if err != nil || cfg.Width < 800 || cfg.Height < 600 {
			t.Errorf("screenshot %s: %v, %dx%d", s, err, cfg.Width, cfg.Height)
		}
	}
}
