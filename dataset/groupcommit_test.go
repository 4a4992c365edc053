package dataset

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
)

var idField = []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}

// idsReader is a reader of one batch of an int64 column "id"; the caller
// releases it.
func idsReader(mem memory.Allocator, ids []int64) array.RecordReader {
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues(ids, nil)
	col := b.NewArray()
	defer col.Release()
	schema := arrow.NewSchema(idField, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(len(ids)))
	defer rec.Release()
	r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		panic(err) // the schema is the batch's
	}
	return r
}

// createIDs writes a dataset of ids to store.
func createIDs(t *testing.T, store blob.Store, ids []int64) *Dataset {
	t.Helper()
	r := idsReader(memory.DefaultAllocator, ids)
	defer r.Release()
	d, err := Write(context.Background(), store, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// idsAt returns the ids of version v (0: the latest), sorted.
func idsAt(t *testing.T, store blob.Store, v uint64) []int64 {
	t.Helper()
	d := openStore(t, store, v, nil)
	var out []int64
	s, err := d.Scan(&ScanOptions{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range s.Batches(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec.Column(0).(*array.Int64).Int64Values()...)
	}
	slices.Sort(out)
	return out
}

// groupAppend appends ids through c, reading the latest version (or, when
// stale, the version before it).
func groupAppend(ctx context.Context, c *GroupCommitter, store blob.Store, mem memory.Allocator, ids []int64, stale bool) (*Dataset, error) {
	d, err := Open(ctx, store, &OpenOptions{Allocator: mem})
	if err != nil {
		return nil, err
	}
	if stale && d.Version() > 1 {
		if d, err = d.Checkout(ctx, d.Version()-1); err != nil {
			return nil, err
		}
	}
	r := idsReader(mem, ids)
	defer r.Release()
	return c.Append(ctx, d, r, nil)
}

// TestGroupCommitModel appends from many goroutines at once through one
// GroupCommitter, one group commit failing on purpose, and checks the
// model: every acknowledged append's rows are in the table exactly once,
// all of them first in the version it was answered with; no row of a
// failed append is; the failed group's appends, and only they, failed,
// all with the one error; and fewer versions than appends were made.
func TestGroupCommitModel(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			ctx := context.Background()
			mem := checkedAlloc(t)
			inner := blob.NewMemStore(fmt.Sprintf("group-model-%d", seed))
			createIDs(t, inner, []int64{-1})
			rng := rand.New(rand.NewPCG(seed, 99))
			failAt := 3 + rng.IntN(5) // the failing group: its transaction write fails
			store := blob.NewFaultStore(inner, seed,
				blob.Fault{Ops: []blob.Op{blob.OpWrite}, Key: "_transactions/*", Nth: failAt, Permanent: true},
				// Slow commits, so that groups gather.
				blob.Fault{Ops: []blob.Op{blob.OpCreateIfAbsent}, Key: "_versions/*", Action: blob.Delay, Delay: 3 * time.Millisecond},
			)
			checkWhenDone(t, store)

			var (
				infoMu sync.Mutex
				infos  []GroupCommitInfo
			)
			c := NewGroupCommitter(store, &GroupCommitOptions{OnGroup: func(i GroupCommitInfo) {
				infoMu.Lock()
				infos = append(infos, i)
				infoMu.Unlock()
			}})

			const writers, perWriter = 8, 12
			type result struct {
				ids     []int64
				version uint64
				err     error
			}
			results := make([][]result, writers)
			var wg sync.WaitGroup
			for w := range writers {
				wseed := rng.Uint64()
				wg.Add(1)
				go func() {
					defer wg.Done()
					wr := rand.New(rand.NewPCG(wseed, 1))
					for i := range perWriter {
						n := 1 + wr.IntN(20)
						ids := make([]int64, n)
						for j := range ids {
							ids[j] = int64(w*1_000_000 + i*1000 + j)
						}
						ds, err := groupAppend(ctx, c, store, mem, ids, wr.IntN(4) == 0)
						res := result{ids: ids, err: err}
						if err == nil {
							res.version = ds.Version()
						}
						results[w] = append(results[w], res)
					}
				}()
			}
			wg.Wait()

			var failedGroups []GroupCommitInfo
			for _, i := range infos {
				if i.Err != nil {
					failedGroups = append(failedGroups, i)
				}
			}
			if len(failedGroups) != 1 {
				t.Fatalf("%d failed groups, want 1: %v", len(failedGroups), failedGroups)
			}
			var (
				acked        []int64
				failedErrs   []error
				requests     = writers * perWriter
				ackedByVer   = map[uint64][]int64{}
				failedByRows int64
			)
			for _, rs := range results {
				for _, r := range rs {
					if r.err != nil {
						failedErrs = append(failedErrs, r.err)
						failedByRows += int64(len(r.ids))
						continue
					}
					acked = append(acked, r.ids...)
					ackedByVer[r.version] = append(ackedByVer[r.version], r.ids...)
				}
			}
			if len(failedErrs) != failedGroups[0].Requests || failedByRows != failedGroups[0].Rows {
				t.Errorf("%d appends (%d rows) failed, the failed group held %d (%d rows)", len(failedErrs), failedByRows, failedGroups[0].Requests, failedGroups[0].Rows)
			}
			for _, err := range failedErrs {
				if err != failedErrs[0] {
					t.Errorf("failed appends got different errors: %v and %v", err, failedErrs[0])
				}
				if !errors.Is(err, blob.ErrInjected) || !strings.Contains(err.Error(), "group commit") {
					t.Errorf("error %v: want a group commit error wrapping the injected fault", err)
				}
			}

			// Every acknowledged row exactly once, nothing else.
			want := append([]int64{-1}, acked...)
			slices.Sort(want)
			if got := idsAt(t, store, 0); !slices.Equal(got, want) {
				t.Fatalf("latest holds %d rows, want the %d acknowledged (+1)", len(got), len(acked))
			}
			// Each append's rows land whole in the version it was told.
			for v, ids := range ackedByVer {
				now, before := idsAt(t, store, v), idsAt(t, store, v-1)
				for _, id := range ids {
					if _, ok := slices.BinarySearch(now, id); !ok {
						t.Errorf("row %d is not in version %d, which its append was answered with", id, v)
					}
					if _, ok := slices.BinarySearch(before, id); ok {
						t.Errorf("row %d is in version %d, before its append's %d", id, v-1, v)
					}
				}
			}
			latest := openStore(t, store, 0, nil)
			versions := int(latest.Version() - 1)
			if versions >= requests {
				t.Errorf("%d versions for %d appends: nothing was grouped", versions, requests)
			}
			st := c.Stats()
			if st.Groups != int64(len(infos)) || st.Failed != 1 || st.Requests != int64(requests) {
				t.Errorf("stats %+v for %d groups of %d appends", st, len(infos), requests)
			}
			t.Logf("seed %d: %d appends in %d versions (largest group %d)", seed, requests, versions, st.Largest)
			// No data file is left that no version references: the
			// failed group's files were removed.
			referenced := map[string]bool{}
			for _, f := range latest.Manifest().Fragments {
				for _, df := range f.Files {
					referenced[dataDir+df.Path] = true
				}
			}
			for info, err := range inner.List(ctx, dataDir) {
				if err != nil {
					t.Fatal(err)
				}
				if !referenced[info.Key] {
					t.Errorf("unreferenced data file %s left behind", info.Key)
				}
			}
		})
	}
}

// TestGroupCommitBounds checks that groups stay within their rows, bytes
// and request bounds, and that an append above them commits alone.
func TestGroupCommitBounds(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts GroupCommitOptions
		ok   func(GroupCommitInfo) bool
		big  int // rows of an append above the bound (0: none)
	}{
		{"rows", GroupCommitOptions{MaxRows: 50}, func(i GroupCommitInfo) bool { return i.Rows <= 50 }, 400},
		{"bytes", GroupCommitOptions{MaxBytes: 4000}, func(i GroupCommitInfo) bool { return i.Bytes <= 4000 }, 2000},
		{"requests", GroupCommitOptions{MaxRequests: 3}, func(i GroupCommitInfo) bool { return i.Requests <= 3 }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := checkedAlloc(t)
			inner := blob.NewMemStore("group-bounds-" + tc.name)
			createIDs(t, inner, []int64{-1})
			store := blob.NewFaultStore(inner, 1,
				blob.Fault{Ops: []blob.Op{blob.OpCreateIfAbsent}, Key: "_versions/*", Action: blob.Delay, Delay: 3 * time.Millisecond})
			checkWhenDone(t, store)
			var (
				mu    sync.Mutex
				infos []GroupCommitInfo
			)
			o := tc.opts
			o.OnGroup = func(i GroupCommitInfo) { mu.Lock(); infos = append(infos, i); mu.Unlock() }
			c := NewGroupCommitter(store, &o)
			var (
				wg   sync.WaitGroup
				rows atomic.Int64
			)
			errs := make(chan error, 100)
			for w := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 8 {
						n := 10 + (w+i)%15
						if w == 0 && i == 4 && tc.big > 0 {
							n = tc.big // above the bound: alone
						}
						ids := make([]int64, n)
						for j := range ids {
							ids[j] = int64(w*100_000 + i*1000 + j)
						}
						rows.Add(int64(n))
						if _, err := groupAppend(ctx, c, store, mem, ids, false); err != nil {
							errs <- err
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			big, grouped := false, false
			for _, i := range infos {
				if tc.big > 0 && i.Rows >= int64(tc.big) {
					big = true
					if i.Requests != 1 {
						t.Errorf("the large append shared its commit: %+v", i)
					}
					continue
				}
				if !tc.ok(i) && i.Requests > 1 {
					t.Errorf("group out of bounds: %+v", i)
				}
				grouped = grouped || i.Requests > 1
			}
			if big != (tc.big > 0) || !grouped {
				t.Errorf("large append committed: %v; some group held several: %v (%d groups)", big, grouped, len(infos))
			}
			if got := len(idsAt(t, store, 0)); got != 1+int(rows.Load()) {
				t.Errorf("latest holds %d rows, want %d", got, 1+rows.Load())
			}
		})
	}
}

// gateStore blocks the first manifest creation until gate is closed,
// telling entered when it is reached.
type gateStore struct {
	blob.Store
	once    sync.Once
	entered chan struct{}
	gate    chan struct{}
}

func (s *gateStore) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	if strings.HasPrefix(key, "_versions/") {
		s.once.Do(func() {
			close(s.entered)
			<-s.gate
		})
	}
	return s.Store.CreateIfAbsent(ctx, key, data)
}

func newGateStore(name string) (*gateStore, *blob.MemStore) {
	inner := blob.NewMemStore(name)
	return &gateStore{Store: inner, entered: make(chan struct{}), gate: make(chan struct{})}, inner
}

// queued waits until c holds n queued appends.
func queued(t *testing.T, c *GroupCommitter, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		c.mu.Lock()
		got := len(c.queue)
		c.mu.Unlock()
		if got == n {
			return
		}
	}
	t.Fatalf("the committer never held %d queued appends", n)
}

// TestGroupCommitCancel cancels an append waiting behind a commit in
// flight: it returns ctx's error at once, its files are removed, and the
// commit in flight lands.
func TestGroupCommitCancel(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	gs, inner := newGateStore("group-cancel")
	createIDs(t, inner, []int64{-1})
	checkWhenDone(t, inner)
	c := NewGroupCommitter(gs, nil)

	first := make(chan error, 1)
	go func() {
		_, err := groupAppend(ctx, c, gs, mem, []int64{1, 2}, false)
		first <- err
	}()
	<-gs.entered // the first append's commit is in flight
	cctx, cancel := context.WithCancel(ctx)
	second := make(chan error, 1)
	go func() {
		_, err := groupAppend(cctx, c, gs, mem, []int64{3, 4}, false)
		second <- err
	}()
	queued(t, c, 1)
	cancel()
	select {
	case err := <-second:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled append: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled append did not return")
	}
	close(gs.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if got := idsAt(t, inner, 0); !slices.Equal(got, []int64{-1, 1, 2}) {
		t.Errorf("latest holds %v", got)
	}
	files := 0
	for _, err := range inner.List(ctx, dataDir) {
		if err != nil {
			t.Fatal(err)
		}
		files++
	}
	if files != 2 {
		t.Errorf("%d data files, want 2 (the cancelled append's removed)", files)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leading || len(c.queue) != 0 {
		t.Errorf("committer left leading=%v with %d queued", c.leading, len(c.queue))
	}
}

// TestGroupCommitStaleMember groups an append read before a concurrent
// overwrite with one read after it: the stale one fails with the conflict
// it would meet alone, the other lands.
func TestGroupCommitStaleMember(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	gs, inner := newGateStore("group-stale")
	d1 := createIDs(t, inner, []int64{-1})
	checkWhenDone(t, inner)
	r := idsReader(memory.DefaultAllocator, []int64{-2})
	_, err := Write(ctx, inner, r, &WriteOptions{Mode: WriteOverwrite})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	d1 = openStore(t, gs, d1.Version(), mem)
	d2 := openStore(t, gs, 2, mem)
	c := NewGroupCommitter(gs, nil)
	appendAt := func(ctx context.Context, d *Dataset, ids []int64) (*Dataset, error) {
		r := idsReader(mem, ids)
		defer r.Release()
		return c.Append(ctx, d, r, nil)
	}
	first := make(chan error, 1)
	go func() {
		_, err := appendAt(ctx, d2, []int64{1})
		first <- err
	}()
	<-gs.entered
	type out struct {
		ds  *Dataset
		err error
	}
	stale, fresh := make(chan out, 1), make(chan out, 1)
	go func() { ds, err := appendAt(ctx, d1, []int64{2}); stale <- out{ds, err} }()
	queued(t, c, 1)
	go func() { ds, err := appendAt(ctx, d2, []int64{3}); fresh <- out{ds, err} }()
	queued(t, c, 2)
	close(gs.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	s, f := <-stale, <-fresh
	var ce *ConflictError
	if !errors.As(s.err, &ce) || !errors.Is(s.err, lancer.ErrConflict) || ce.Version != 2 {
		t.Errorf("stale append: %v, want a conflict with version 2", s.err)
	}
	if f.err != nil {
		t.Fatalf("fresh append: %v", f.err)
	}
	if got := idsAt(t, inner, 0); !slices.Equal(got, []int64{-2, 1, 3}) {
		t.Errorf("latest holds %v", got)
	}
	if st := c.Stats(); st.Groups != 3 || st.Failed != 1 {
		t.Errorf("stats %+v: want the first commit, the group's failed try and its retry", st)
	}
}

// TestGroupCommitKilled kills a process appending from many goroutines
// through one GroupCommitter (kill -9, mid-group) and checks that every
// append it acknowledged is in the table, exactly once, and that the
// dataset is valid (checkWhenDone).
func TestGroupCommitKilled(t *testing.T) {
	if dir := os.Getenv("LANCER_GROUP_KILL_DIR"); dir != "" {
		groupKilledChild(dir)
		return
	}
	dir := t.TempDir()
	store, err := blob.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	createIDs(t, store, []int64{-1})
	checkWhenDone(t, store)
	ctx := context.Background()
	acked := []int64{-1}
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestGroupCommitKilled$", "-test.count=1")
		cmd.Env = append(os.Environ(), "LANCER_GROUP_KILL_DIR="+dir, "LANCER_GROUP_KILL_ROUND="+strconv.Itoa(round))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		if !sc.Scan() || sc.Text() != "READY" {
			t.Fatalf("child did not start: %q", sc.Text())
		}
		timer := time.AfterFunc(time.Duration(200+round*150)*time.Millisecond, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
		n := 0
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 0 {
				continue
			}
			if f[0] == "ERR" {
				t.Fatalf("child: %s", sc.Text())
			}
			if f[0] != "ACK" || len(f) != 3 {
				continue
			}
			n++
			for _, s := range strings.Split(f[2], ",") {
				id, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					t.Fatalf("child said %q", sc.Text())
				}
				acked = append(acked, id)
			}
		}
		timer.Stop()
		_ = cmd.Wait()
		slices.Sort(acked)
		got := idsAt(t, store, 0)
		// Appends answered after the last line read (or not yet
		// answered) may be there too; acknowledged ones must be, once.
		seen := map[int64]int{}
		for _, id := range got {
			seen[id]++
		}
		for _, id := range acked {
			if seen[id] != 1 {
				t.Fatalf("round %d: acknowledged row %d is in the table %d times", round, id, seen[id])
			}
		}
		for id, c := range seen {
			if c != 1 {
				t.Fatalf("round %d: row %d is in the table %d times", round, id, c)
			}
		}
		acked = got // what landed unacknowledged stays
		v, err := LatestVersion(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: killed after %d acknowledged appends; latest version %d, %d rows", round, n, v, len(got))
	}
}

// groupKilledChild appends from 8 goroutines until killed, printing
// "ACK <version> <ids>" for each acknowledged append.
func groupKilledChild(dir string) {
	store, err := blob.NewLocalStore(dir)
	if err != nil {
		fmt.Println("ERR", err)
		return
	}
	round, _ := strconv.Atoi(os.Getenv("LANCER_GROUP_KILL_ROUND"))
	c := NewGroupCommitter(store, nil)
	var out sync.Mutex
	fmt.Println("READY")
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				ids := make([]int64, 1+(w+i)%7)
				s := make([]string, len(ids))
				for j := range ids {
					ids[j] = int64(round*100_000_000 + w*1_000_000 + i*100 + j)
					s[j] = strconv.FormatInt(ids[j], 10)
				}
				ds, err := groupAppend(context.Background(), c, store, memory.DefaultAllocator, ids, false)
				out.Lock()
				if err != nil {
					fmt.Println("ERR", err)
				} else {
					fmt.Println("ACK", ds.Version(), strings.Join(s, ","))
				}
				out.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestGroupCommitSlowWriter checks that an append still writing its files
// holds a ready group at most MaxWait.
func TestGroupCommitSlowWriter(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := blob.NewMemStore("group-slow")
	createIDs(t, store, []int64{-1})
	checkWhenDone(t, store)
	const wait = 100 * time.Millisecond
	c := NewGroupCommitter(store, &GroupCommitOptions{MaxWait: wait})
	c.mu.Lock()
	c.writing++ // a writer that never finishes its files
	c.mu.Unlock()
	start := time.Now()
	ds, err := groupAppend(ctx, c, store, mem, []int64{1}, false)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < wait || took > 20*wait {
		t.Errorf("the append took %v with a writer pending; want MaxWait (%v) and not much more", took, wait)
	}
	if ds.Version() != 2 {
		t.Errorf("committed version %d", ds.Version())
	}
}

// TestGroupCommitRetriesUntilDeadline: a group commit whose appends have
// deadlines retries lost races for as long as they wait, past
// DefaultCommitRetries, and lands; without a deadline it gives up after
// DefaultCommitRetries, failing the append with the conflict.
func TestGroupCommitRetriesUntilDeadline(t *testing.T) {
	for _, withDeadline := range []bool{true, false} {
		t.Run(fmt.Sprintf("deadline=%v", withDeadline), func(t *testing.T) {
			ctx := context.Background()
			if withDeadline {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Minute)
				defer cancel()
			}
			mem := checkedAlloc(t)
			base := blob.NewMemStore(t.Name())
			if _, err := Write(ctx, base, idRows(t, mem, 0, 10), nil); err != nil {
				t.Fatal(err)
			}
			lose := DefaultCommitRetries + 3
			store := &losingStore{Store: base, t: t, lose: lose}
			c := NewGroupCommitter(store, nil)
			out, err := c.Append(ctx, openStore(t, store, 0, mem), idRows(t, mem, 100, 2), nil)
			if !withDeadline {
				if !errors.Is(err, lancer.ErrConflict) || !strings.Contains(err.Error(), "retries") {
					t.Fatalf("got %v, want the conflict after the retries", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := uint64(2 + lose); out.Version() != want {
				t.Fatalf("committed version %d, want %d", out.Version(), want)
			}
		})
	}
}

// TestGroupCommitMembersOfOtherHandles: a group whose members reached the
// table through different handles on one root (one that defers syncs,
// one that does not) commits only once every member's files are durable:
// the commit goes through the committer's store, and a member whose store
// is not that one writes its files synced. Before, the group committed
// through its oldest member's plain handle, which synced nothing, while
// another member had deferred its syncs to that commit (C6).
func TestGroupCommitMembersOfOtherHandles(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	rec := newSyncRecorder("group-handles")
	createIDs(t, rec, []int64{-1})
	// A plain handle on the same root: it hides rec's DeferredSyncer.
	gs := &gateStore{Store: rec, entered: make(chan struct{}), gate: make(chan struct{})}
	plain := openStore(t, gs, 1, mem)
	deferring := openStore(t, rec, 1, mem)
	c := NewGroupCommitter(gs, nil)
	appendAt := func(d *Dataset, ids []int64) error {
		r := idsReader(mem, ids)
		defer r.Release()
		_, err := c.Append(ctx, d, r, nil)
		return err
	}
	errs := make(chan error, 3)
	go func() { errs <- appendAt(plain, []int64{1}) }()
	<-gs.entered // the first commit is in flight; the next two group
	go func() { errs <- appendAt(plain, []int64{2}) }()
	queued(t, c, 1)
	go func() { errs <- appendAt(deferring, []int64{3}) }()
	queued(t, c, 2)
	close(gs.gate)
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if st := c.Stats(); st.Groups != 2 {
		t.Fatalf("stats %+v: want the first commit and one group of two", st)
	}
	if v, _, _ := rec.result(); len(v) > 0 {
		t.Errorf("manifests named files not yet durable:\n%s", strings.Join(v, "\n"))
	}
	got := idsAt(t, rec, 0)
	slices.Sort(got)
	if !slices.Equal(got, []int64{-1, 1, 2, 3}) {
		t.Errorf("latest holds %v", got)
	}

	// Handles that share the committer's syncs still defer theirs: the
	// server opens a table through a new Sub of its root per request.
	rec2 := newSyncRecorder("group-subs")
	createIDs(t, blob.Sub(rec2, "t.lance"), []int64{-1})
	c2 := NewGroupCommitter(blob.Sub(rec2, "t.lance"), nil)
	_, before, _ := rec2.result()
	for i := range 3 {
		d := openStore(t, blob.Sub(rec2, "t.lance"), 0, mem)
		r := idsReader(mem, []int64{int64(i)})
		_, err := c2.Append(ctx, d, r, nil)
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	v, after, _ := rec2.result()
	if len(v) > 0 {
		t.Errorf("manifests named files not yet durable:\n%s", strings.Join(v, "\n"))
	}
	// Each append defers its data file, its transaction and the version
	// hint (6 if the data files were written synced).
	if after-before < 9 {
		t.Errorf("%d objects written unsynced by 3 appends through Subs of the committer's store: they did not defer their syncs", after-before)
	}
}
