package dataset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// syncRecorder is a store that defers syncs (blob.DeferredSyncer) as a
// local folder does, over memory: it remembers which objects are durable
// (written synced, or synced since by a CreateIfAbsentAfter naming them)
// and, each time a manifest is created, reads it and records every file it
// names that is not durable yet: a crash then could have left a manifest
// whose data or transaction is missing or torn (C6).
type syncRecorder struct {
	blob.Store
	// forgetSyncs makes CreateIfAbsentAfter sync nothing, as a commit that
	// skipped the syncs would: the control that shows the check can fail.
	forgetSyncs bool

	mu         sync.Mutex
	durable    map[string]bool
	deferred   map[string]bool // every key ever written unsynced
	unsynced   int             // objects written unsynced
	manifests  int             // manifests created
	violations []string
}

func newSyncRecorder(name string) *syncRecorder {
	return &syncRecorder{Store: blob.NewMemStore(name), durable: map[string]bool{}, deferred: map[string]bool{}}
}

func (s *syncRecorder) mark(key string, durable bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.durable[key] = durable
	if !durable {
		s.unsynced++
		s.deferred[key] = true
	}
}

func (s *syncRecorder) Write(ctx context.Context, key string, data []byte) error {
	if err := s.Store.Write(ctx, key, data); err != nil {
		return err
	}
	s.mark(key, true)
	return nil
}

func (s *syncRecorder) WriteUnsynced(ctx context.Context, key string, data []byte) error {
	if err := s.Store.Write(ctx, key, data); err != nil {
		return err
	}
	s.mark(key, false)
	return nil
}

// recWriter marks its object once Close published it.
type recWriter struct {
	blob.ObjectWriter
	s       *syncRecorder
	key     string
	durable bool
}

func (w *recWriter) Close() error {
	if err := w.ObjectWriter.Close(); err != nil {
		return err
	}
	w.s.mark(w.key, w.durable)
	return nil
}

func (s *syncRecorder) NewWriter(ctx context.Context, key string) (blob.ObjectWriter, error) {
	w, err := s.Store.NewWriter(ctx, key)
	if err != nil {
		return nil, err
	}
	return &recWriter{ObjectWriter: w, s: s, key: key, durable: true}, nil
}

func (s *syncRecorder) NewWriterUnsynced(ctx context.Context, key string) (blob.ObjectWriter, error) {
	w, err := s.Store.NewWriter(ctx, key)
	if err != nil {
		return nil, err
	}
	return &recWriter{ObjectWriter: w, s: s, key: key}, nil
}

func (s *syncRecorder) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := s.Store.CreateIfAbsent(ctx, key, data); err != nil {
		return err
	}
	s.mark(key, true)
	s.check(ctx, key)
	return nil
}

func (s *syncRecorder) CreateIfAbsentAfter(ctx context.Context, key string, data []byte, synced []string) error {
	for _, k := range synced {
		if _, err := s.Store.Stat(ctx, k); err != nil {
			return err // as a local store fails to open a missing file
		}
	}
	if !s.forgetSyncs {
		for _, k := range synced {
			s.mark(k, true)
		}
	}
	return s.CreateIfAbsent(ctx, key, data)
}

// check reads the manifest just created at key and records each file it
// names (data files of this store, deletion files, the transaction file)
// that is not durable.
func (s *syncRecorder) check(ctx context.Context, key string) {
	if !strings.HasPrefix(key, manifest.VersionsDir) || !strings.HasSuffix(key, ".manifest") {
		return
	}
	f, err := manifest.ReadFile(ctx, s.Store, key, 0, false)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.manifests++
	if err != nil {
		s.violations = append(s.violations, fmt.Sprintf("%s: unreadable: %v", key, err))
		return
	}
	m := f.Manifest
	var named []string
	for _, fr := range m.Fragments {
		for _, df := range fr.Files {
			if df.BaseID == nil {
				named = append(named, dataDir+df.Path)
			}
		}
		if fr.DeletionFile != nil && fr.DeletionFile.BaseID == nil {
			named = append(named, fr.DeletionFile.Key(fr.ID))
		}
	}
	if m.TransactionFile != "" {
		named = append(named, manifest.TransactionsDir+m.TransactionFile)
	}
	for _, n := range named {
		if !s.durable[n] {
			s.violations = append(s.violations, fmt.Sprintf("%s names %s before it is durable", key, n))
		}
	}
}

func (s *syncRecorder) result() (violations []string, unsynced, manifests int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.violations), s.unsynced, s.manifests
}

// TestCommitSyncsBeforeManifest: through a store that defers syncs, the
// creates, appends (alone, racing each other, and grouped), overwrites and
// deletes of a dataset write their data and transaction files unsynced
// and yet never create a manifest that names a file not yet durable (C6);
// with the syncs skipped, the same check reports the manifests.
func TestCommitSyncsBeforeManifest(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	ids := func(from, n int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = from + int64(i)
		}
		return out
	}
	appendIDs := func(d *Dataset, from, n int64) (*Dataset, error) {
		r := idsReader(mem, ids(from, n))
		defer r.Release()
		return d.Append(ctx, r, &AppendOptions{CommitOptions: CommitOptions{Allocator: mem}})
	}
	history := func(t *testing.T, s *syncRecorder) {
		r := idsReader(mem, ids(0, 100))
		d, err := Write(ctx, s, r, &WriteOptions{CommitOptions: CommitOptions{Allocator: mem}})
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
		if d, err = appendIDs(d, 100, 50); err != nil {
			t.Fatal(err)
		}
		// Two appends from the same version: the second loses the race
		// for its version, rebases and commits with a new transaction.
		a, err := appendIDs(d, 150, 10)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := appendIDs(d, 160, 10); err != nil {
			t.Fatal(err)
		}
		// Grouped appends, each writing its file in its own goroutine.
		c := NewGroupCommitter(s, nil)
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := idsReader(mem, ids(int64(200+10*i), 10))
				defer r.Release()
				_, errs[i] = c.Append(ctx, a, r, &AppendOptions{CommitOptions: CommitOptions{Allocator: mem}})
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		latest := openStore(t, s, 0, mem)
		if latest, err = latest.Delete(ctx, "id % 7 = 0", &CommitOptions{Allocator: mem}); err != nil {
			t.Fatal(err)
		}
		// Rewrites: an update, a merge-insert and a compaction write
		// their new data files unsynced too.
		if latest, _, err = latest.Update(ctx, map[string]string{"id": "id + 100000"}, "id = 3", nil); err != nil {
			t.Fatal(err)
		}
		r = idsReader(mem, ids(195, 10))
		latest, _, err = latest.MergeInsert(ctx, r, &MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true})
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
		compacted, _, err := latest.Compact(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Every data file of the compacted version was written by one of
		// the rewrites, and was deferred.
		s.mu.Lock()
		for _, f := range compacted.manifest.Fragments {
			for _, df := range f.Files {
				if !s.deferred[dataDir+df.Path] {
					t.Errorf("the rewrite wrote %s synced: its commit would have synced it", df.Path)
				}
			}
		}
		s.mu.Unlock()
		r = idsReader(mem, ids(1000, 5))
		_, err = Write(ctx, s, r, &WriteOptions{Mode: WriteOverwrite, CommitOptions: CommitOptions{Allocator: mem}})
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
	}

	s := newSyncRecorder("commit-durability")
	history(t, s)
	violations, unsynced, manifests := s.result()
	if len(violations) > 0 {
		t.Errorf("%d manifests named files not yet durable:\n%s", len(violations), strings.Join(violations, "\n"))
	}
	// The deferral is exercised: the appends' data files and every
	// transaction were written unsynced.
	if unsynced < 2*manifests || manifests < 10 {
		t.Errorf("%d objects written unsynced for %d manifests: the commits did not defer their syncs", unsynced, manifests)
	}
	if got := idsAt(t, s, 0); !slices.Equal(got, ids(1000, 5)) {
		t.Errorf("latest version holds %v", got)
	}

	// The control: the same history with the syncs skipped is caught.
	bad := newSyncRecorder("commit-durability-control")
	bad.forgetSyncs = true
	history(t, bad)
	if v, _, m := bad.result(); len(v) < m {
		t.Errorf("with the syncs skipped only %d of %d manifests were reported", len(v), m)
	}
}

// TestCommitSyncMissingFile: a commit whose data file vanished before the
// manifest fails definitely, creating no version (a local store cannot
// sync a file that is gone).
func TestCommitSyncMissingFile(t *testing.T) {
	ctx := context.Background()
	s := newSyncRecorder("commit-missing")
	d := createIDs(t, s, []int64{1, 2, 3})
	r := idsReader(memory.DefaultAllocator, []int64{4})
	defer r.Release()
	frags, err := writeFragments(ctx, s, d.manifest.Schema, nil, r, d.manifest.DataFormat, DefaultMaxRowsPerFile, memory.DefaultAllocator, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, dataDir+frags[0].Files[0].Path); err != nil {
		t.Fatal(err)
	}
	_, err = d.commit(ctx, &operation{kind: opAppend, fragments: frags}, nil)
	if !errors.Is(err, lancer.ErrNotFound) {
		t.Fatalf("commit after its data file vanished: %v, want not found", err)
	}
	if v := openStore(t, s, 0, nil).Version(); v != 1 {
		t.Fatalf("latest version %d after the failed commit, want 1", v)
	}
}
