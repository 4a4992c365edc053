package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestDemoCommandBuildsAndReuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	code, out, errOut := runLancer(t, "demo", "--no-serve", "--images", "200", "--dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"✓ generated 200 images",
		"✓ wrote 200 images to " + filepath.Join(dir, "images.lance"),
		"✓ built an ivf_hnsw_sq index",
		"✓ searched by example: image #",
		"     1. #",
		`✓ created branch "relabel" and relabelled `,
		"✓ meanwhile appended 5 new images to main",
		"✓ diff main..relabel:",
		"✓ merged relabel@",
		"✓ main has 205 rows",
		"✓ demo built in ",
		"lancer serve --data " + dir,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "/ui/") {
		t.Errorf("--no-serve printed a URL:\n%s", out)
	}

	code, out, errOut = runLancer(t, "demo", "--no-serve", "--images", "200", "--dir", dir)
	if code != 0 || !strings.Contains(out, "✓ reusing the demo in") || strings.Contains(out, "generated") {
		t.Errorf("second run: exit %d: %s%s", code, out, errOut)
	}
	if code, _, errOut := runLancer(t, "demo", "--no-serve", "--images", "3", "--dir", dir); code != 1 || !strings.Contains(errOut, "at least 36") {
		t.Errorf("3 images: exit %d: %s", code, errOut)
	}
}

// syncBuffer is a bytes.Buffer safe to read while a command writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestDemoCommandServes(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"demo", "--dir", dir, "--images", "60", "--addr", "127.0.0.1:0"}, &stdout, &stderr)
	}()
	browse := regexp.MustCompile(`Browse the images:  (http://127\.0\.0\.1:\d+)/ui/`)
	var base string
	for deadline := time.Now().Add(60 * time.Second); base == "" && time.Now().Before(deadline); {
		select {
		case code := <-done:
			t.Fatalf("demo exited with %d before serving: %s%s", code, stdout.String(), stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if m := browse.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatalf("no URL printed:\n%s", stdout.String())
	}
	out := stdout.String()
	for _, want := range []string{"✓ demo built in ", "Serving " + dir, `host_override="` + base + `"`, `db.open_table("images")`} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	resp, err := http.Get(base + "/v1/table/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"images"`) {
		t.Errorf("table list: %d %s", resp.StatusCode, body)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after cancel: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("demo did not stop")
	}
}

func TestDemoCommandPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	code, _, errOut := runLancer(t, "demo", "--dir", dir, "--images", "60", "--addr", ln.Addr().String())
	if code != 1 || !strings.Contains(errOut, ln.Addr().String()+" is already in use") || !strings.Contains(errOut, "--no-serve") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	// The port is checked first: nothing was built.
	if _, err := os.Stat(filepath.Join(dir, "images.lance")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the demo was built although it could not be served: %v", err)
	}
}
