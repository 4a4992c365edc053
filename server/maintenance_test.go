package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/checktest"
	"github.com/lancerdb/lancer/server"
)

// queryIDs runs a scan of the ids and returns them sorted; an error
// instead of a failure, for goroutines.
func queryIDs(h http.Handler, table string) ([]int64, error) {
	req := httptest.NewRequest("POST", "/v1/table/"+table+"/query/", strings.NewReader(`{"k":100000,"columns":["id"],"version":null}`))
	req.Header.Set("x-api-key", testKey)
	req.Header.Set("content-type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("query: %d %s", rec.Code, rec.Body)
	}
	rd, err := ipc.NewFileReader(bytes.NewReader(rec.Body.Bytes()))
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	var ids []int64
	for i := range rd.NumRecords() {
		b, err := rd.RecordBatchAt(i)
		if err != nil {
			return nil, err
		}
		ids = append(ids, b.Column(0).(*array.Int64).Int64Values()...)
		b.Release()
	}
	slices.Sort(ids)
	return ids, nil
}

// metric reads one sample of /metrics.
func metric(t *testing.T, h http.Handler, name string) float64 {
	t.Helper()
	rec := do(t, h, "GET", "/metrics", nil, nil)
	v, ok := find(parseMetrics(t, rec.Body.String()), name)
	if !ok {
		t.Fatalf("/metrics has no %s", name)
	}
	return v
}

// wantIDs are the ids of a table created with base rows and given n
// inserts of 3 (rows numbers its ids from 0).
func wantIDs(base, n int) []int64 {
	var ids []int64
	for i := range base {
		ids = append(ids, int64(i))
	}
	for range n {
		ids = append(ids, 0, 1, 2)
	}
	slices.Sort(ids)
	return ids
}

// TestServerMaintenanceCompacts: many small inserts make the background
// maintenance compact the table while readers keep reading it; every
// request succeeds, every read sees a prefix of the inserts (no row lost
// or doubled), and the table ends with few fragments and all its rows.
// The big fragment the table was created with is never rewritten: it holds
// more rows than all the inserts, so merging it with them would cost the
// table's size each pass (Lance's plan would, as it is below the 1Mi-row
// target; the maintenance's SizeRatio leaves it).
func TestServerMaintenanceCompacts(t *testing.T) {
	var logs syncBuffer
	dir := t.TempDir()
	s, err := server.New(&server.Options{DataDir: dir, APIKey: testKey, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Maintenance: server.MaintenanceOptions{Interval: 20 * time.Millisecond, Fragments: 8, Quiet: 5 * time.Millisecond, MaxDelay: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checktest.CleanTreeWhenDone(t, dir)
	const base, inserts = 500, 60 // base > 3 × inserts
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, base, true), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	latest := func() *dataset.Dataset { return openLatest(t, dir) }
	created := latest().Manifest().Fragments
	if len(created) != 1 {
		t.Fatalf("created with %d fragments, want 1", len(created))
	}
	bigID := created[0].ID
	body := rows(t, 3, true)
	var (
		wg       sync.WaitGroup
		done     atomic.Bool
		failures = make(chan string, 64)
		reads    atomic.Int64
	)
	wg.Go(func() {
		defer done.Store(true)
		for i := range inserts {
			req := httptest.NewRequest("POST", "/v1/table/t/insert/", bytes.NewReader(body))
			req.Header.Set("x-api-key", testKey)
			req.Header.Set("content-type", arrowBody["content-type"])
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				failures <- fmt.Sprintf("insert %d: %d %s", i, rec.Code, rec.Body)
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
	// Updates that rewrite rows (to their own values) in the fragments
	// the compaction rewrites: they conflict with it, and must not fail.
	wg.Go(func() {
		for i := 0; !done.Load(); i++ {
			req := httptest.NewRequest("POST", "/v1/table/t/update/", strings.NewReader(`{"predicate":"id = 1","updates":[["id","id"]]}`))
			req.Header.Set("x-api-key", testKey)
			req.Header.Set("content-type", "application/json")
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				failures <- fmt.Sprintf("update %d: %d %s", i, rec.Code, rec.Body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	for range 2 {
		wg.Go(func() {
			for !done.Load() {
				ids, err := queryIDs(s, "t")
				if err != nil {
					failures <- err.Error()
					return
				}
				n := (len(ids) - base) / 3
				if len(ids) < base || (len(ids)-base)%3 != 0 || !slices.Equal(ids, wantIDs(base, n)) {
					failures <- fmt.Sprintf("a read saw %d ids, not a prefix of the inserts", len(ids))
					return
				}
				reads.Add(1)
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	// The last inserts may still be waiting for a pass: on a busy
	// machine a pass can give way to an update or be put off, so wait
	// (up to a deadline, not a timing) until the passes have brought the
	// table under the bound.
	fragments := func() int { return len(latest().Manifest().Fragments) }
	deadline := time.Now().Add(30 * time.Second)
	for (metric(t, s, "lancer_maintenance_fragments_compacted_total") == 0 || fragments() > 9) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	ids, err := queryIDs(s, "t")
	if err != nil || !slices.Equal(ids, wantIDs(base, inserts)) {
		t.Fatalf("after the inserts: %d ids, %v; want %d", len(ids), err, len(wantIDs(base, inserts)))
	}
	runs := metric(t, s, "lancer_maintenance_runs_total")
	compacted := metric(t, s, "lancer_maintenance_fragments_compacted_total")
	if runs == 0 || compacted < 8 || metric(t, s, "lancer_maintenance_errors_total") != 0 {
		t.Errorf("maintenance: %v runs, %v fragments compacted, errors %v", runs, compacted, metric(t, s, "lancer_maintenance_errors_total"))
	}
	conflicts, putOff := metric(t, s, "lancer_maintenance_conflicts_total"), metric(t, s, "lancer_maintenance_put_off_total")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ds := openLatest(t, dir)
	if n := len(ds.Manifest().Fragments); n > 9 {
		t.Errorf("%d fragments after maintenance, want at most 9 (the threshold and one)", n)
	}
	var sizes []string
	kept := false
	for _, f := range ds.Manifest().Fragments {
		kept = kept || f.ID == bigID
		sizes = append(sizes, fmt.Sprintf("%d:%d", f.ID, f.PhysicalRows))
	}
	if !kept {
		t.Errorf("the created fragment %d was rewritten; fragments (id:rows) %v", bigID, sizes)
	}
	if !strings.Contains(logs.String(), "msg=maintenance table=t") {
		t.Errorf("no maintenance line in the log:\n%s", logs.String())
	}
	t.Logf("%d inserts, %d reads; %v maintenance runs compacted %v fragments (%v yielded to an update, %v put off); fragments (id:rows) left %v",
		inserts, reads.Load(), runs, compacted, conflicts, putOff, sizes)
}

// TestServerMaintenanceCleansUp: with a retention of zero, versions past
// the threshold are removed in the background, but the tagged one; the
// table checks clean. With every step off nothing happens.
func TestServerMaintenanceCleansUp(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("off=%v", off), func(t *testing.T) {
			opts := server.MaintenanceOptions{Interval: 20 * time.Millisecond, Versions: 5, OlderThan: -1, Quiet: -1, NoCompact: true}
			if off {
				opts.NoCleanup, opts.NoIndex = true, true
			}
			s, dir := newServer(t, server.Options{Maintenance: opts})
			defer s.Close()
			if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 2, true), arrowBody); rec.Code != http.StatusOK {
				t.Fatalf("create: %d %s", rec.Code, rec.Body)
			}
			if rec := do(t, s, "POST", "/v1/table/t/tags/create/", []byte(`{"tag":"first","version":1}`), nil); rec.Code != http.StatusOK {
				t.Fatalf("tag: %d %s", rec.Code, rec.Body)
			}
			for i := range 10 {
				if rec := do(t, s, "POST", "/v1/table/t/insert/", rows(t, 3, true), arrowBody); rec.Code != http.StatusOK {
					t.Fatalf("insert %d: %d %s", i, rec.Code, rec.Body)
				}
			}
			store, err := blob.NewLocalStore(dir + "/t.lance")
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			// Wait for a cleanup (or, off, for passes that do nothing),
			// then for the passes in flight.
			deadline := time.Now().Add(10 * time.Second)
			if off {
				deadline = time.Now().Add(300 * time.Millisecond)
			}
			for metric(t, s, "lancer_maintenance_versions_removed_total") == 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond)
			versions, err := dataset.ListVersions(ctx, store)
			if err != nil {
				t.Fatal(err)
			}
			removed := metric(t, s, "lancer_maintenance_versions_removed_total")
			if off {
				if len(versions) != 11 || removed != 0 {
					t.Errorf("maintenance off: versions %v, %v removed", versions, removed)
				}
				return
			}
			// Each cleanup keeps the tagged version and the latest; the
			// next comes once more than 5 versions were added.
			if versions[0] != 1 || versions[len(versions)-1] != 11 || len(versions) > 7 || int(removed) != 11-len(versions) {
				t.Errorf("versions after the background cleanup %v (%v removed), want 1, 11 and at most 5 more", versions, removed)
			}
			if ids, err := queryIDs(s, "t"); err != nil || !slices.Equal(ids, wantIDs(2, 10)) {
				t.Errorf("after cleanup: %d ids, %v", len(ids), err)
			}
		})
	}
}

// TestServerMaintenanceStopsOnClose: the maintenance goroutine is the
// server's one, and Close ends it. It counts goroutines running the
// maintenance loop, not all of them: other tests' servers, timers and
// the runtime start and end goroutines while this one runs (CI saw 13
// after Close against 12 before New under -race).
func TestServerMaintenanceStopsOnClose(t *testing.T) {
	before := maintenanceLoops()
	s, err := server.New(&server.Options{DataDir: t.TempDir(), APIKey: testKey, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Maintenance: server.MaintenanceOptions{Interval: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // a few passes over no table
	if n := maintenanceLoops(); n != before+1 {
		t.Errorf("%d maintenance loops with a server, %d without: want one more", n, before)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Close waits for the loop's deferred close(done); the goroutine may
	// still be returning for a moment after.
	if n := waitMaintenanceLoops(before); n != before {
		t.Errorf("%d maintenance loops after Close, %d before New", n, before)
	}
	off, err := server.New(&server.Options{DataDir: t.TempDir(), APIKey: testKey, Maintenance: server.MaintenanceOptions{Disabled: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	if n := maintenanceLoops(); n != before {
		t.Errorf("maintenance disabled: %d maintenance loops, %d before", n, before)
	}
}

// waitMaintenanceLoops polls maintenanceLoops for up to 2 s until it
// reports want, and returns its last count.
func waitMaintenanceLoops(want int) int {
	deadline := time.Now().Add(2 * time.Second)
	for {
		n := maintenanceLoops()
		if n == want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// maintenanceLoops counts the goroutines whose stack holds the
// maintenance loop.
func maintenanceLoops() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "server.(*maintainer).loop(") {
			count++
		}
	}
	return count
}

// TestServerMaintenanceIndexesNewRows: rows inserted in one large
// fragment, too few fragments for the fragment trigger, are indexed in
// the background once the index misses more than UnindexedRows of them
// (the official client cannot optimize a remote table, issue #21); with
// NoIndex they stay unindexed.
func TestServerMaintenanceIndexesNewRows(t *testing.T) {
	for _, noIndex := range []bool{false, true} {
		t.Run(fmt.Sprintf("noIndex=%v", noIndex), func(t *testing.T) {
			opts := server.MaintenanceOptions{Interval: 20 * time.Millisecond, UnindexedRows: 500, Quiet: -1, NoCompact: true, NoCleanup: true, NoIndex: noIndex}
			s, dir := newServer(t, server.Options{Maintenance: opts})
			defer s.Close()
			if rec := do(t, s, "POST", "/v1/table/t/create/", vectorRows(t, 300, 8, 1), arrowBody); rec.Code != http.StatusOK {
				t.Fatalf("create: %d %s", rec.Code, rec.Body)
			}
			if rec := do(t, s, "POST", "/v1/table/t/create_index/", []byte(`{"column":"vector","index_type":"IVF_FLAT","num_partitions":2}`), nil); rec.Code != http.StatusOK {
				t.Fatalf("create_index: %d %s", rec.Code, rec.Body)
			}
			if rec := do(t, s, "POST", "/v1/table/t/insert/", vectorRows(t, 600, 8, 2), arrowBody); rec.Code != http.StatusOK {
				t.Fatalf("insert: %d %s", rec.Code, rec.Body)
			}
			deadline := time.Now().Add(20 * time.Second)
			if noIndex {
				deadline = time.Now().Add(300 * time.Millisecond)
			}
			for metric(t, s, "lancer_maintenance_index_segments_total") == 0 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			segments := metric(t, s, "lancer_maintenance_index_segments_total")
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			ds := openLatest(t, dir)
			covered := map[uint32]bool{}
			for _, ix := range ds.Manifest().Indices {
				for _, id := range ix.Fragments {
					covered[id] = true
				}
			}
			all := len(ds.Manifest().Fragments) == 2 && covered[uint32(ds.Manifest().Fragments[1].ID)]
			if noIndex {
				if segments != 0 || all {
					t.Errorf("index maintenance off: %v segments added, the inserted fragment indexed: %v", segments, all)
				}
				return
			}
			if segments != 1 || !all {
				t.Errorf("%v segments added; the %d fragments are indexed: %v (covered %v)", segments, len(ds.Manifest().Fragments), all, covered)
			}
		})
	}
}

// TestServerMaintenanceKeepsIndexedTableCompact: a table with a vector
// index under a stream of small inserts keeps a bounded number of
// fragments and index segments: each pass's index update merges the
// small newest segments with its delta (MergeSizeRatio), so that the
// next pass's compaction, which never gathers fragments different
// segments cover, can merge the fragments they covered. Without the
// merge each pass adds a segment and the fragments under them stay
// apart. Searches through the index (every partition probed) give the
// exact search's rows, and every fragment is indexed.
func TestServerMaintenanceKeepsIndexedTableCompact(t *testing.T) {
	const inserts, bound = 80, 12
	opts := server.MaintenanceOptions{Interval: 20 * time.Millisecond, Fragments: 4, UnindexedRows: 20, Quiet: 5 * time.Millisecond,
		MaxDelay: 50 * time.Millisecond, NoCleanup: true}
	s, dir := newServer(t, server.Options{Maintenance: opts})
	defer s.Close()
	if rec := do(t, s, "POST", "/v1/table/t/create/", vectorRows(t, 300, 8, 1), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, s, "POST", "/v1/table/t/create_index/", []byte(`{"column":"vector","index_type":"IVF_FLAT","num_partitions":2}`), nil); rec.Code != http.StatusOK {
		t.Fatalf("create_index: %d %s", rec.Code, rec.Body)
	}
	latest := func() *dataset.Dataset { return openLatest(t, dir) }
	shape := func(ds *dataset.Dataset) (frags, segs int) { return len(ds.Manifest().Fragments), len(ds.Indices()) }
	maxFrags, maxSegs := 0, 0
	for i := range inserts {
		if rec := do(t, s, "POST", "/v1/table/t/insert/", vectorRows(t, 5, 8, uint64(10+i)), arrowBody); rec.Code != http.StatusOK {
			t.Fatalf("insert %d: %d %s", i, rec.Code, rec.Body)
		}
		time.Sleep(10 * time.Millisecond)
		f, g := shape(latest())
		maxFrags, maxSegs = max(maxFrags, f), max(maxSegs, g)
	}
	// One insert above UnindexedRows: the rows the index may miss
	// without an update (the contract) are then exceeded, so the test
	// does not depend on whether the last small inserts crossed it.
	if rec := do(t, s, "POST", "/v1/table/t/insert/", vectorRows(t, int(opts.UnindexedRows)+1, 8, 9), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("last insert: %d %s", rec.Code, rec.Body)
	}
	// Let the last inserts be maintained (a deadline, not a timing).
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ds := latest()
		if f, g := shape(ds); f <= bound && g <= bound && len(ds.IndexMissingFragments("vector_idx")) == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ds := latest()
	f, g := shape(ds)
	t.Logf("%d inserts of 5 rows: at most %d fragments and %d segments during them, %d and %d after; %d versions", inserts, maxFrags, maxSegs, f, g, ds.Version())
	if f > bound || g > bound {
		t.Fatalf("%d fragments, %d index segments after the inserts: want at most %d", f, g, bound)
	}
	if missing := ds.IndexMissingFragments("vector_idx"); len(missing) != 0 {
		t.Fatalf("fragments %v not indexed", missing)
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	for qi := range 10 {
		q := make([]float32, 8)
		for j := range q {
			q[j] = rng.Float32()
		}
		ids := func(o *dataset.SearchOptions) []int64 {
			o.K, o.Columns = 10, []string{"id", "vector"}
			rec, err := ds.Search(ctx, "vector", q, o)
			if err != nil {
				t.Fatal(err)
			}
			defer rec.Release()
			d := slices.Clone(rec.Column(int(rec.NumCols()) - 1).(*array.Float32).Float32Values())
			out := make([]int64, len(d))
			for i := range d {
				out[i] = int64(d[i] * 1e6) // rows share ids: compare distances
			}
			return out
		}
		if got, want := ids(&dataset.SearchOptions{NProbes: 2}), ids(&dataset.SearchOptions{Exact: true}); !slices.Equal(got, want) {
			t.Fatalf("query %d through the index: distances %v, exact %v", qi, got, want)
		}
	}
}

// openLatest opens the latest version of table t in the server's data
// folder dir, as a reader outside the server would.
func openLatest(t *testing.T, dir string) *dataset.Dataset {
	t.Helper()
	store, err := blob.NewLocalStore(dir + "/t.lance")
	if err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Open(context.Background(), store, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}
