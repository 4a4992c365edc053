package dataset

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// Fault injection over whole datasets (blob.FaultStore over a MemStore):
// reads either succeed with exactly the right rows or fail with an error
// naming the file, and a commit interrupted at any request leaves the
// dataset at its old version or the new one, whole.

// memFixture copies the dataset directory at dir into a new MemStore.
func memFixture(t testing.TB, dir string) *blob.MemStore {
	t.Helper()
	store := blob.NewMemStore(t.Name())
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		return store.Write(context.Background(), filepath.ToSlash(rel), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// cloneStore copies every object of src into a new MemStore.
func cloneStore(t testing.TB, src blob.Store) *blob.MemStore {
	t.Helper()
	ctx := context.Background()
	dst := blob.NewMemStore(t.Name())
	for info, err := range src.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		data, err := src.ReadAll(ctx, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		if err := dst.Write(ctx, info.Key, data); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// readEverything opens the latest version of store, scans it and takes
// some rows, returning the rows as fixture JSON or the first error.
func readEverything(ctx context.Context, t testing.TB, store blob.Store, take []uint64) ([][]byte, error) {
	d, err := Open(ctx, store, nil)
	if err != nil {
		return nil, err
	}
	s, err := d.Scan(&ScanOptions{WithRowID: true, BatchSize: 4096})
	if err != nil {
		return nil, err
	}
	var rows [][]byte
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			return nil, err
		}
		rows = append(rows, fixturetest.EncodeRows(t, rec)...)
	}
	rec, err := d.Take(ctx, take, &TakeOptions{WithRowID: true})
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	return append(rows, fixturetest.EncodeRows(t, rec)...), nil
}

// faultedKey returns the key of the last request the fault store failed.
func faultedKey(f *blob.FaultStore) string {
	log := f.Log()
	for i := len(log) - 1; i >= 0; i-- {
		if l, ok := strings.CutSuffix(log[i], " <- fault"); ok {
			return l[strings.LastIndexByte(l, ' ')+1:]
		}
	}
	return ""
}

// firstFault returns the log line of the first request the fault store
// hit, or "none".
func firstFault(f *blob.FaultStore) string {
	for _, l := range f.Log() {
		if l, ok := strings.CutSuffix(l, " <- fault"); ok {
			return l
		}
	}
	return "none"
}

// TestFaultyReads opens, scans and takes from fixtures through a store
// that fails or truncates reads: with retries (blob.WithRetry) transient
// faults are invisible; without, every fault at every request index makes
// the read fail with an error naming the file, and never return wrong rows.
func TestFaultyReads(t *testing.T) {
	ctx := context.Background()
	reads := []blob.Op{blob.OpStat, blob.OpReadRange, blob.OpReadAll, blob.OpList}
	for _, name := range []string{"lance/deletions_v2_2", "lance/history_v2_0", "encodings/strs_2_2"} {
		t.Run(name, func(t *testing.T) {
			store := memFixture(t, filepath.Join(fixturetest.Dir(t), name+".lance"))
			take := []uint64{7, 0, 3, 7, 1}
			want, err := readEverything(ctx, t, store, take)
			if err != nil {
				t.Fatal(err)
			}
			clean := blob.NewFaultStore(store, 1)
			if _, err := readEverything(ctx, t, clean, take); err != nil {
				t.Fatal(err)
			}
			total := clean.Requests()
			t.Logf("%d requests: %s", total, strings.Join(clean.Log(), ", "))

			// Flaky reads, retried: the same rows.
			for seed := range uint64(4) {
				f := blob.NewFaultStore(store, seed, blob.Fault{Ops: reads, Probability: 0.25},
					blob.Fault{Ops: []blob.Op{blob.OpReadRange}, Probability: 0.1, Action: blob.Truncate, Drop: 7})
				got, err := readEverything(ctx, t, blob.WithRetry(f, &blob.RetryOptions{MaxTries: 20, Backoff: time.Microsecond}), take)
				if err != nil {
					t.Fatalf("seed %d: %v (%d faults)", seed, err, f.Injected())
				}
				fixturetest.CompareRows(t, fmt.Sprintf("seed %d", seed), got, want, fixturetest.CompareOptions{})
				if f.Injected() == 0 {
					t.Errorf("seed %d: no fault was injected in %d requests", seed, f.Requests())
				}
			}

			// Each request in turn fails for good or comes back short.
			for n := 1; n <= total; n++ {
				for _, ft := range []blob.Fault{
					{Ops: reads, Nth: n, Permanent: true},
					{Ops: reads, Nth: n, Action: blob.Truncate, Drop: 1 + n%5},
				} {
					f := blob.NewFaultStore(store, 1, ft)
					got, err := readEverything(ctx, t, f, take)
					key := faultedKey(f)
					if key == "" {
						continue // a truncate fault on a Stat or List
					}
					if err == nil {
						// A truncated read that went unnoticed must at
						// least not have changed a row.
						if !fixturetest.CompareRows(t, fmt.Sprintf("fault at request %d (%s)", n, firstFault(f)), got, want, fixturetest.CompareOptions{}) {
							continue
						}
						t.Errorf("fault at request %d (%s) went unnoticed", n, firstFault(f))
						continue
					}
					if !strings.Contains(err.Error(), path.Base(key)) {
						t.Errorf("fault at request %d (%s): error does not name %s: %v", n, firstFault(f), key, err)
					}
					if ft.Action == blob.Truncate && !errors.Is(err, lancer.ErrCorrupt) {
						t.Errorf("short read at request %d (%s): %v, want corruption", n, firstFault(f), err)
					}
					if ft.Action != blob.Truncate && !errors.Is(err, blob.ErrInjected) {
						t.Errorf("failed request %d (%s): error %v does not wrap the store's", n, firstFault(f), err)
					}
				}
			}
		})
	}
}

// faultOp is a write and commit run through a faulty store.
type faultOp struct {
	name string
	run  func(ctx context.Context, t *testing.T, d *Dataset) (*Dataset, error)
}

var faultOps = []faultOp{
	{"append", func(ctx context.Context, t *testing.T, d *Dataset) (*Dataset, error) {
		return d.Append(ctx, idRows(t, memory.DefaultAllocator, 1000, 40), nil)
	}},
	{"delete", func(ctx context.Context, t *testing.T, d *Dataset) (*Dataset, error) {
		return d.Delete(ctx, "id % 5 = 0 OR id > 250", nil)
	}},
	{"update", func(ctx context.Context, t *testing.T, d *Dataset) (*Dataset, error) {
		d, _, err := d.Update(ctx, map[string]string{"s": "'updated'"}, "id >= 90 AND id < 130", nil)
		return d, err
	}},
	{"compact", func(ctx context.Context, t *testing.T, d *Dataset) (*Dataset, error) {
		d, _, err := d.Compact(ctx, &CompactOptions{TargetRowsPerFragment: 1000})
		return d, err
	}},
}

// TestFaultyCommits fails each request of each kind of write in turn
// (transiently or for good, before the store acts or after, once or from
// then on): afterwards the dataset opens at its old version or at the new
// one whole, every version reads back exactly, and the next write
// succeeds.
func TestFaultyCommits(t *testing.T) {
	ctx := context.Background()
	base := blob.NewMemStore(t.Name())
	d := smallFragments(t, base, memory.DefaultAllocator, format.Version2_2, false, 3, 100)
	if _, err := d.Delete(ctx, "id % 7 = 1", nil); err != nil {
		t.Fatal(err)
	}
	prev, err := LatestVersion(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	history := map[uint64][]string{}
	for v := uint64(1); v <= prev; v++ {
		history[v] = contents(scanAll(t, openStore(t, base, v, nil)))
	}
	for _, op := range faultOps {
		t.Run(op.name, func(t *testing.T) {
			// A clean run gives the new version's rows and how many
			// requests the write makes.
			clean := blob.NewFaultStore(cloneStore(t, base), 1)
			cd := openStore(t, clean, 0, nil)
			opened := clean.Requests()
			out, err := op.run(ctx, t, cd)
			if err != nil {
				t.Fatal(err)
			}
			total := clean.Requests() - opened
			after := contents(scanAll(t, out))
			afterFrags := len(out.Manifest().Fragments)
			if out.Version() != prev+1 {
				t.Fatalf("the clean %s made version %d", op.name, out.Version())
			}
			modes := []struct {
				name  string
				fault blob.Fault
				// retried runs the write over blob.WithRetry: the fault
				// must then be invisible.
				retried bool
			}{
				{"transient", blob.Fault{}, false},
				{"permanent", blob.Fault{Permanent: true}, false},
				{"lost response", blob.Fault{Action: blob.FailAfter}, false},
				{"crash", blob.Fault{Times: -1, Permanent: true}, false},
				{"transient, retried", blob.Fault{Times: 2}, true},
				{"lost response, retried", blob.Fault{Action: blob.FailAfter}, true},
			}
			counts := map[string]int{}
			for n := 1; n <= total+1; n++ {
				for _, mode := range modes {
					store := cloneStore(t, base)
					f := blob.NewFaultStore(store, 1)
					var through blob.Store = f
					if mode.retried {
						through = blob.WithRetry(f, &blob.RetryOptions{Backoff: time.Microsecond})
					}
					d := openStore(t, through, 0, nil)
					ft := mode.fault
					ft.Nth = n
					f.SetFaults(ft)
					_, err := op.run(ctx, t, d)
					what := fmt.Sprintf("%s fault at request %d of %d (%s)", mode.name, n, total, firstFault(f))
					// A streamed upload cannot be replayed, so the retry
					// layer passes a failed Close on (the write then fails
					// whole); every other transient fault it absorbs.
					streamed := strings.Contains(firstFault(f), " Close ")
					if err != nil && !errors.Is(err, blob.ErrInjected) || mode.retried && err != nil && !streamed {
						t.Fatalf("%s: unexpected error %v", what, err)
					}
					latest, lerr := LatestVersion(ctx, store)
					if lerr != nil {
						t.Fatalf("%s: %v", what, lerr)
					}
					switch {
					case latest == prev+1:
						got := openStore(t, store, 0, nil)
						if !slices.Equal(contents(scanAll(t, got)), after) || len(got.Manifest().Fragments) != afterFrags {
							t.Fatalf("%s (error %v): version %d differs from the clean run's", what, err, latest)
						}
						if err != nil {
							// The commit landed but its caller was told
							// otherwise: allowed (the caller cannot know),
							// as long as it was not applied twice.
							counts["committed, error reported"]++
						} else {
							counts["committed"]++
						}
					case latest == prev && err != nil:
						counts["not committed"]++
					default:
						t.Fatalf("%s: error %v, latest version %d (was %d)", what, err, latest, prev)
					}
					for v := uint64(1); v <= prev; v++ {
						if got := contents(scanAll(t, openStore(t, store, v, nil))); !slices.Equal(got, history[v]) {
							t.Fatalf("%s: version %d changed", what, v)
						}
					}
					// The next write, on a healthy store, commits.
					next, err := openStore(t, store, 0, nil).Append(ctx, idRows(t, memory.DefaultAllocator, 5000, 3), nil)
					if err != nil || next.Version() != latest+1 {
						t.Fatalf("%s: the next write: %v", what, err)
					}
					if n == total+1 && f.Injected() > 0 {
						t.Fatalf("the %s made more requests than in the clean run", op.name)
					}
				}
			}
			t.Logf("%d requests; outcomes of %d runs (a fault at each request and none, %d modes): %v", total, (total+1)*len(modes), len(modes), counts)
		})
	}
}

// TestRequestCounts reports the requests a scan and a 1,000-row random
// take make on the encodings fixtures, and holds them to what coalescing
// achieves: without it, every page and every buffer was one request.
func TestRequestCounts(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name           string
		maxScan, maxTk int64
	}{
		// strs_2_2 has 15 columns, wide_2_2 7, with one or two pages each.
		{"strs_2_2", 6, 4}, {"wide_2_2", 4, 3}, {"mpage_2_2", 3, 2}, {"pages_2_2", 4, 3},
	} {
		c := blob.NewCountingStore(memFixture(t, fixturetest.EncodingDatasetPath(t, tc.name)))
		d := openStore(t, c, 0, nil)
		opened := c.Snapshot()
		s, err := d.Scan(nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rec, err := range s.Batches(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			n += int(rec.NumRows())
		}
		scan := c.Snapshot().Sub(opened)
		rng := rand.New(rand.NewPCG(1, 2))
		offs := make([]uint64, 1000)
		for i := range offs {
			offs[i] = uint64(rng.IntN(n))
		}
		before := c.Snapshot()
		rec, err := d.Take(ctx, offs, nil)
		if err != nil {
			t.Fatal(err)
		}
		rec.Release()
		take := c.Snapshot().Sub(before)
		t.Logf("%s (%d rows): open %d requests; scan %v; take of 1000: %v", tc.name, n, opened.Requests(), scan, take)
		if scan.Requests() > tc.maxScan || take.Requests() > tc.maxTk {
			t.Errorf("%s: scan %d requests (max %d), take %d (max %d)", tc.name, scan.Requests(), tc.maxScan, take.Requests(), tc.maxTk)
		}
	}
}
