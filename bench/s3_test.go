package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/internal/s3test"
)

// proxiedStore starts versitygw with bucket and a counting proxy in front
// of it (holding each request for latency), and opens a store on the
// bucket through the proxy; all three stop when t ends.
func proxiedStore(t *testing.T, bucket string, latency time.Duration) (*countingProxy, *blob.CloudStore) {
	t.Helper()
	srv := s3test.ForTest(t, bucket)
	p, err := startCountingProxy(srv.Endpoint, latency)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	opts := srv.Options()
	opts["aws_endpoint"] = p.URL
	s, err := blob.OpenWithOptions(context.Background(), srv.URI("p"), opts)
	if err != nil {
		t.Fatal(err)
	}
	cs := s.(*blob.CloudStore)
	t.Cleanup(func() { cs.Close() })
	return p, cs
}

// TestCountingProxy checks the proxy's counts against lancer's own: every
// read call of a CloudStore is one HTTP request, so a blob.CountingStore
// over a store pointed at the proxy must see exactly the requests and
// bytes the proxy saw, by kind.
func TestCountingProxy(t *testing.T) {
	ctx := context.Background()
	p, s := proxiedStore(t, "proxy", 0)
	cs := blob.NewCountingStore(s)

	payload := []byte(strings.Repeat("0123456789", 1000))
	for i := range 3 {
		if err := cs.Write(ctx, fmt.Sprintf("k%d", i), payload); err != nil {
			t.Fatal(err)
		}
	}
	before, mine := p.Snapshot(), cs.Snapshot()
	for i := range 3 {
		if _, err := cs.ReadRange(ctx, fmt.Sprintf("k%d", i), 100, 2500); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.ReadAll(ctx, "k1"); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Stat(ctx, "k2"); err != nil {
		t.Fatal(err)
	}
	for _, err := range cs.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, want := p.Snapshot().Sub(before), cs.Snapshot().Sub(mine)
	if got.Requests != want.Requests() || got.Ranged != want.ReadRange.Requests || got.Get != want.ReadRange.Requests+want.ReadAll.Requests ||
		got.Head != want.Stat.Requests || got.List != want.List.Requests {
		t.Errorf("proxy counted %s; the store made %s", got, want)
	}
	if got.BytesFetched < want.BytesRead() || got.BytesSent != 0 {
		t.Errorf("proxy: %d bytes fetched, %d sent; the store read %d", got.BytesFetched, got.BytesSent, want.BytesRead())
	}
	// The listing's XML is the only body besides the objects' bytes.
	if extra := got.BytesFetched - want.BytesRead(); extra > 4096 {
		t.Errorf("proxy counted %d bytes beyond the objects' for one small listing", extra)
	}
	if got.Failed != 0 {
		t.Errorf("%d failed requests", got.Failed)
	}
}

// TestProxyLatency: a proxy with a latency holds every request that long
// (a lower bound only: the delay is injected, not measured performance).
func TestProxyLatency(t *testing.T) {
	ctx := context.Background()
	const latency = 40 * time.Millisecond
	_, s := proxiedStore(t, "latency", latency)
	start := time.Now()
	if err := s.Write(ctx, "k", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadRange(ctx, "k", 1, 3); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 2*latency {
		t.Errorf("two requests through a proxy delaying each by %v took %v", latency, took)
	}
}

// TestS3Small runs the s3 suite at 3,000 rows, one run per side, with
// real Lance and versitygw, and checks properties of the report only,
// never timings: every step has both sides' times, the read steps fetched
// bytes on both sides, the writes sent at least the raw data, and
// report.json and report.md are written. It fails, never skips, when
// node, the Lance reference or versitygw is missing.
func TestS3Small(t *testing.T) {
	opts := S3Options{Rows: 3000, Dim: 16, Runs: 1}
	if testing.Verbose() {
		opts.Log = os.Stderr
	}
	rep, err := RunS3(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	wantSteps := []string{"write_oneshot", "write_appends", "open", "scan_full", "take_offsets", "take_rowids", "filter_1pct", "count_rows"}
	if len(rep.StepDetails) != len(wantSteps) {
		t.Fatalf("%d steps, want %d", len(rep.StepDetails), len(wantSteps))
	}
	for i, s := range rep.StepDetails {
		if s.Name != wantSteps[i] {
			t.Errorf("step %d is %s, want %s", i, s.Name, wantSteps[i])
		}
		if s.Lancer.MedianMS <= 0 || s.Lance.MedianMS <= 0 {
			t.Errorf("%s: times %v / %v ms", s.Name, s.Lancer.MedianMS, s.Lance.MedianMS)
		}
		switch {
		case strings.HasPrefix(s.Name, "write_"):
			for side, c := range map[string]S3Counts{"lancer": s.LancerS3.S3Counts, "Lance": s.LanceS3.S3Counts} {
				if c.BytesSent < rep.Workload.RawBytes/2 || c.Put == 0 {
					t.Errorf("%s: %s sent %d bytes in %d PUTs for %d raw bytes", s.Name, side, c.BytesSent, c.Put, rep.Workload.RawBytes)
				}
			}
		case s.Name != "count_rows":
			if s.LancerS3.BytesFetched == 0 || s.LanceS3.BytesFetched == 0 {
				t.Errorf("%s: fetched %d / %d bytes", s.Name, s.LancerS3.BytesFetched, s.LanceS3.BytesFetched)
			}
		}
	}
	dir := t.TempDir()
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	var back S3Report
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil || json.Unmarshal(b, &back) != nil || len(back.StepDetails) != len(wantSteps) {
		t.Fatalf("report.json does not round-trip: %v", err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(md), "| scan_full |") {
		t.Fatalf("report.md: %v", err)
	}
	t.Log("\n" + rep.Markdown())
}
