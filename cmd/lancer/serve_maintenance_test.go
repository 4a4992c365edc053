package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeMaintenance: lancer serve compacts a table of small fragments in
// the background with its --maintenance-* flags, counts it in /metrics and
// logs it; bad flags are refused by name.
func TestServeMaintenance(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ args, want string }{
		{"--retention soon", "--retention"},
		{"--maintenance-fragments 0", "--maintenance-fragments"},
		{"--maintenance-unindexed-rows -1", "--maintenance-unindexed-rows"},
		{"--maintenance-size-ratio -1", "--maintenance-size-ratio"},
		{"--maintenance-size-ratio NaN", "--maintenance-size-ratio"},
	} {
		args := append([]string{"serve", "--data", dir, "--addr", "127.0.0.1:0"}, strings.Fields(c.args)...)
		if code, _, errOut := runLancer(t, args...); code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d: %s", c.args, code, errOut)
		}
	}
	ds := filepath.Join(dir, "t.lance")
	src := filepath.Join("testdata", "people.jsonl")
	mustRun(t, "import", src, ds)
	for range 4 {
		mustRun(t, "import", src, ds, "--mode", "append") // 5 fragments of 4 rows
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--data", dir, "--addr", addr, "--maintenance-interval", "20ms",
			"--maintenance-fragments", "2", "--no-cleanup"}, &stdout, &stderr)
	}()
	compacted := false
	for range 250 {
		if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), "\nlancer_maintenance_fragments_compacted_total 5\n") {
				compacted = true
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 || !compacted {
		t.Fatalf("serve: compacted %t, exit %d: %s", compacted, code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "msg=maintenance table=t") {
		t.Errorf("no maintenance line in the log: %s", stderr.String())
	}
	if got := mustRun(t, "count", ds); got != "20\n" {
		t.Errorf("count after the background compaction: %q", got)
	}
	if got := mustRun(t, "check", ds); !strings.HasPrefix(got, "ok: ") {
		t.Errorf("check: %s", got)
	}
}
