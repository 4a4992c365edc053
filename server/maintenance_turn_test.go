package server_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/server"
)

// metricValue reads an unlabelled sample of /metrics; an error instead of
// a failure, for goroutines.
func metricValue(h http.Handler, name string) (float64, error) {
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("x-api-key", testKey)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("/metrics (%d) has no %s", rec.Code, name)
}

// insertRacer is the root store of a server whose background compaction
// is raced by inserts, as under a sustained stream of them but without a
// timing: just before each manifest creation of a compaction (a Rewrite),
// it sends an insert of 3 rows to the server and lets the creation go on
// only once that insert either reached its own manifest creation (which
// then comes first, and the compaction loses the race) or waits for the
// compaction's commit (lancer_commit_turn_waits_total went up), or
// failed.
type insertRacer struct {
	blob.Store
	h       http.Handler // the server, once it runs
	armed   atomic.Bool
	inserts atomic.Int64 // manifest creations of other commits (the inserts), once done

	mu       sync.Mutex
	attempts int           // manifest creations of compactions
	sent     int           // racing inserts sent
	acked    int           // racing inserts answered 200
	failures []string      // of racing inserts, or of the race itself
	last     chan struct{} // closed when the last racing insert was answered
	wg       sync.WaitGroup
}

func (s *insertRacer) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	if !s.armed.Load() || !strings.Contains(key, manifest.VersionsDir) {
		return s.Store.CreateIfAbsent(ctx, key, data)
	}
	if !isRewrite(ctx, data) {
		// Counted once created: the version is then taken.
		defer s.inserts.Add(1)
		return s.Store.CreateIfAbsent(ctx, key, data)
	}
	// The racing insert of the last attempt is done first, so that a
	// wait for the turn is this one's, behind this attempt.
	s.mu.Lock()
	last := s.last
	s.mu.Unlock()
	if last != nil {
		<-last
	}
	waits, err := metricValue(s.h, "lancer_commit_turn_waits_total")
	if err != nil {
		s.fail(err.Error())
		return s.Store.CreateIfAbsent(ctx, key, data)
	}
	before := s.inserts.Load()
	done := make(chan struct{})
	s.mu.Lock()
	s.attempts++
	s.sent++
	s.last = done
	s.mu.Unlock()
	s.wg.Go(func() {
		defer close(done)
		req := httptest.NewRequest("POST", "/v1/table/t/insert/", bytes.NewReader(threeRows))
		req.Header.Set("x-api-key", testKey)
		req.Header.Set("content-type", arrowBody["content-type"])
		rec := httptest.NewRecorder()
		s.h.ServeHTTP(rec, req)
		s.mu.Lock()
		defer s.mu.Unlock()
		if rec.Code == http.StatusOK {
			s.acked++
		} else {
			s.failures = append(s.failures, fmt.Sprintf("racing insert: %d %s", rec.Code, rec.Body))
		}
	})
	// A deadline against a hang, not a timing: either event happens
	// within milliseconds.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if s.inserts.Load() > before {
			break // the insert commits first
		}
		if w, err := metricValue(s.h, "lancer_commit_turn_waits_total"); err == nil && w > waits {
			break // the insert waits for this commit
		}
		select {
		case <-done:
		default:
			if time.Now().Before(deadline) {
				continue
			}
			s.fail("the racing insert neither committed nor waited for the compaction")
		}
		break
	}
	return s.Store.CreateIfAbsent(ctx, key, data)
}

func (s *insertRacer) fail(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, msg)
}

// isRewrite reports whether a manifest file records a Rewrite transaction.
func isRewrite(ctx context.Context, file []byte) bool {
	mem := blob.NewMemStore("peek")
	if err := mem.Write(ctx, "m", file); err != nil {
		return false
	}
	f, err := manifest.ReadFile(ctx, mem, "m", int64(len(file)), true)
	if err != nil || f.Transaction == nil {
		return false
	}
	_, ok := f.Transaction.Operation.(*manifest.Rewrite)
	return ok
}

var threeRows []byte

// TestServerMaintenanceLandsUnderInserts: the background compaction of a
// table lands although an insert races every one of its commit attempts
// (issue #24: under a stream of small group commits it lost every race
// and the fragments grew without bound). Its commit takes turns with the
// server's group commits, so it lands at its first attempt, the racing
// insert waits for it and then rebases over it; every row is there once
// and the fragments end under the bound. Without the turn every attempt
// loses, the compaction gives up for a conflict pass after pass, and no
// fragment is ever compacted.
func TestServerMaintenanceLandsUnderInserts(t *testing.T) {
	threeRows = rows(t, 3, true)
	const base, inserts, fragments = 200, 12, 4
	dir := t.TempDir()
	local, err := blob.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	root := &insertRacer{Store: local}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))

	// The table and its small fragments, written with maintenance off.
	setup, err := server.New(&server.Options{Root: root, APIKey: testKey, Logger: logger, Maintenance: server.MaintenanceOptions{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	if rec := do(t, setup, "POST", "/v1/table/t/create/", rows(t, base, true), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	for i := range inserts {
		if rec := do(t, setup, "POST", "/v1/table/t/insert/", threeRows, arrowBody); rec.Code != http.StatusOK {
			t.Fatalf("insert %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	if err := setup.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := server.New(&server.Options{Root: root, APIKey: testKey, Logger: logger,
		Maintenance: server.MaintenanceOptions{Interval: 10 * time.Millisecond, Fragments: fragments, Quiet: -1, NoIndex: true, NoCleanup: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	root.h = s
	root.armed.Store(true)
	// Until the first compaction landed (a deadline against a hang: it
	// lands at the first pass with the fix, never without).
	compacted := 0.0
	for deadline := time.Now().Add(20 * time.Second); compacted == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		compacted = metric(t, s, "lancer_maintenance_fragments_compacted_total")
	}
	root.armed.Store(false)
	root.wg.Wait()
	conflicts := metric(t, s, "lancer_maintenance_conflicts_total")
	errs := metric(t, s, "lancer_maintenance_errors_total")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	root.mu.Lock()
	defer root.mu.Unlock()
	for _, f := range root.failures {
		t.Error(f)
	}
	if compacted < inserts || root.attempts == 0 {
		t.Fatalf("the compaction never landed: %v fragments compacted after %d commit attempts, each raced by an insert (%v conflicts)", compacted, root.attempts, conflicts)
	}
	if root.attempts != 1 || conflicts != 0 || errs != 0 {
		t.Errorf("the compaction took %d attempts (%v conflicts, %v errors), want 1: it lost races to the inserts", root.attempts, conflicts, errs)
	}

	ds := openLatest(t, dir)
	n := len(ds.Manifest().Fragments)
	if n > fragments {
		t.Errorf("%d fragments at the end, want at most %d", n, fragments)
	}
	verify, err := server.New(&server.Options{Root: local, APIKey: testKey, Logger: logger, Maintenance: server.MaintenanceOptions{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer verify.Close()
	ids, err := queryIDs(verify, "t")
	if want := wantIDs(base, inserts+root.acked); err != nil || !slices.Equal(ids, want) {
		t.Fatalf("after the compaction and %d racing inserts: %d ids (%v), want %d", root.acked, len(ids), err, len(want))
	}
	t.Logf("%v fragments compacted in %d attempt(s); %d racing inserts; %d fragments, version %d", compacted, root.attempts, root.acked, n, ds.Version())
}
