package dataset

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// maintenanceKey marks the ctx of the commit a racingStore races.
type maintenanceKey struct{}

// racingStore is an adversary of one commit: just before each manifest
// creation of a call whose ctx carries maintenanceKey, it starts an append
// through the group committer c and lets the creation go on only once
// that append either reached its own manifest creation (which then comes
// first: the maintenance commit loses the race) or waits for its turn
// (the maintenance commit is in turn and wins). That is the worst case of
// a sustained stream of appends, without a timing in it.
type racingStore struct {
	blob.Store
	t *testing.T
	c *GroupCommitter

	mu       sync.Mutex
	next     int64         // the next id an append adds
	racer    chan struct{} // set while an append races: closed once it created or waits
	appends  sync.WaitGroup
	appended [][]int64 // the ids of the appends that landed
	failed   []error
	creates  int // manifest creations of the maintenance commit
}

func (s *racingStore) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	if !strings.HasPrefix(key, manifest.VersionsDir) {
		return s.Store.CreateIfAbsent(ctx, key, data)
	}
	if ctx.Value(maintenanceKey{}) == nil {
		// Let the maintenance commit go on once this one created its
		// manifest: the version is then taken.
		defer s.let()
		return s.Store.CreateIfAbsent(ctx, key, data)
	}
	s.mu.Lock()
	s.creates++
	ids := []int64{s.next, s.next + 1}
	s.next += 2
	racer := make(chan struct{})
	s.racer = racer
	s.mu.Unlock()
	s.appends.Add(1)
	go func() {
		defer s.appends.Done()
		_, err := groupAppend(context.Background(), s.c, s, checkedAlloc(s.t), ids, false)
		s.mu.Lock()
		if err != nil {
			s.failed = append(s.failed, err)
		} else {
			s.appended = append(s.appended, ids)
		}
		s.mu.Unlock()
		s.let() // a failed append reaches neither point
	}()
	<-racer
	return s.Store.CreateIfAbsent(ctx, key, data)
}

// let releases the maintenance commit waiting for the racing append.
func (s *racingStore) let() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.racer != nil {
		close(s.racer)
		s.racer = nil
	}
}

// TestCommitInTurnWithGroupCommits: a compaction and an index update
// whose every commit attempt is raced by an append through the table's
// group committer land at their first attempt when they commit in turn
// with that committer (CommitOptions.Group), and the appends rebase over
// them: every row is there exactly once, the small fragments are merged,
// the index covers what it covered. Without the turn each attempt loses
// to the append started just before it, and the compaction gives up for
// a conflict once its retries are used up (the starvation of background
// maintenance under sustained inserts, issue #24).
func TestCommitInTurnWithGroupCommits(t *testing.T) {
	ctx := context.Background()
	inner := blob.NewMemStore("commit-in-turn")
	s := &racingStore{Store: inner, t: t, next: 1000}
	waits := 0
	s.c = NewGroupCommitter(s, &GroupCommitOptions{OnTurnWait: func() { waits++; s.let() }})

	var want []int64
	d := createIDs(t, s, []int64{0, 1, 2, 3})
	want = append(want, 0, 1, 2, 3)
	for i := range int64(8) {
		ids := []int64{10 + 2*i, 11 + 2*i}
		r := idsReader(checkedAlloc(t), ids)
		var err error
		if d, err = d.Append(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
		r.Release()
		want = append(want, ids...)
	}
	before := len(d.Manifest().Fragments)

	mctx := context.WithValue(ctx, maintenanceKey{}, true)
	out, stats, err := d.Compact(mctx, &CompactOptions{CommitOptions: CommitOptions{Retries: 3, Group: s.c}})
	s.appends.Wait()
	if err != nil {
		t.Fatalf("compaction raced by appends: %v (after %d attempts)", err, s.creates)
	}
	if s.creates != 1 {
		t.Errorf("the compaction took %d attempts, want 1: it lost races to the appends it commits in turn with", s.creates)
	}
	if waits != 1 {
		t.Errorf("OnTurnWait called %d times, want 1 (the append racing the one attempt)", waits)
	}
	if stats.FragmentsRemoved != before || stats.FragmentsAdded != 1 {
		t.Errorf("compaction stats %+v, want %d fragments merged into 1", stats, before)
	}
	if len(s.failed) > 0 {
		t.Fatalf("racing appends failed: %v", s.failed)
	}
	for _, ids := range s.appended {
		want = append(want, ids...)
	}
	slices.Sort(want)
	if got := idsAt(t, s, 0); !slices.Equal(got, want) {
		t.Fatalf("ids after the compaction and the appends racing it:\n got %v\nwant %v", got, want)
	}
	latest := openStore(t, s, 0, nil)
	// The compacted fragment and one per racing append, which rebased
	// over the compaction.
	if n := len(latest.Manifest().Fragments); n != 1+len(s.appended) {
		t.Errorf("%d fragments at the end, want %d", n, 1+len(s.appended))
	}
	if out.Version() >= latest.Version() {
		t.Errorf("compaction committed version %d, the racing append not after it (latest %d)", out.Version(), latest.Version())
	}
	if r, err := Check(ctx, s, &CheckOptions{AllVersions: true}); err != nil || !r.OK() {
		t.Errorf("check: %v %+v", err, r)
	}

	// A commit in turn with another dataset's committer is refused.
	other := NewGroupCommitter(blob.NewMemStore("other"), nil)
	r := idsReader(checkedAlloc(t), []int64{-5})
	defer r.Release()
	if _, err := latest.Append(ctx, r, &AppendOptions{CommitOptions: CommitOptions{Group: other}}); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("append in turn with another dataset's committer: %v, want ErrInvalidArgument", err)
	}
}

// TestGroupCommitPacing: with MinInterval (an hour here, so that a wait
// for it would hang the test rather than pass it) appends arriving while
// a commit is in flight gather for the next commit until it is full, or
// until the leader gives up; appends arriving when no commit is in flight
// are never held.
func TestGroupCommitPacing(t *testing.T) {
	ctx := context.Background()
	const hour = time.Hour
	t.Run("a sequential writer is not held", func(t *testing.T) {
		mem := checkedAlloc(t)
		store := blob.NewMemStore("pacing-sequential")
		createIDs(t, store, []int64{-1})
		c := NewGroupCommitter(store, &GroupCommitOptions{MinInterval: hour})
		var versions []uint64
		for i := range int64(4) {
			d, err := groupAppend(ctx, c, store, mem, []int64{i}, false)
			if err != nil {
				t.Fatal(err)
			}
			versions = append(versions, d.Version())
		}
		if !slices.Equal(versions, []uint64{2, 3, 4, 5}) {
			t.Errorf("sequential appends committed versions %v, want one each", versions)
		}
	})

	// inFlight starts an append whose commit is held at its manifest
	// creation and queues n more behind it, with ctxs[i] each.
	type outcome struct {
		version uint64
		err     error
	}
	inFlight := func(t *testing.T, name string, opts *GroupCommitOptions, ctxs []context.Context) (c *GroupCommitter, gs *gateStore, first chan error, rest []chan outcome, inner *blob.MemStore) {
		mem := checkedAlloc(t)
		gs, inner = newGateStore(name)
		createIDs(t, inner, []int64{-1})
		c = NewGroupCommitter(gs, opts)
		first = make(chan error, 1)
		go func() {
			_, err := groupAppend(ctx, c, gs, mem, []int64{0}, false)
			first <- err
		}()
		<-gs.entered
		for i, cx := range ctxs {
			ch := make(chan outcome, 1)
			rest = append(rest, ch)
			go func() {
				d, err := groupAppend(cx, c, gs, mem, []int64{int64(10 + i)}, false)
				o := outcome{err: err}
				if d != nil {
					o.version = d.Version()
				}
				ch <- o
			}()
			queued(t, c, i+1)
		}
		return c, gs, first, rest, inner
	}

	t.Run("a full group goes at once", func(t *testing.T) {
		ctxs := []context.Context{ctx, ctx, ctx}
		_, gs, first, rest, inner := inFlight(t, "pacing-full", &GroupCommitOptions{MinInterval: hour, MaxRequests: 3}, ctxs)
		close(gs.gate)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		for i, ch := range rest {
			if o := <-ch; o.err != nil || o.version != 3 {
				t.Errorf("queued append %d: version %d, %v; want 3 (one group after the held commit)", i, o.version, o.err)
			}
		}
		if got := idsAt(t, inner, 0); !slices.Equal(got, []int64{-1, 0, 10, 11, 12}) {
			t.Errorf("latest holds %v", got)
		}
	})

	t.Run("appends gather until the leader gives up", func(t *testing.T) {
		lctx, cancel := context.WithCancel(ctx)
		defer cancel()
		c, gs, first, rest, inner := inFlight(t, "pacing-cancel", &GroupCommitOptions{MinInterval: hour}, []context.Context{lctx})
		close(gs.gate)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		// The queued append leads the next commit, which waits for an
		// hour after the first's start: an append arriving now joins it
		// (without pacing the queued one would have gone alone).
		late := make(chan outcome, 1)
		go func() {
			d, err := groupAppend(ctx, c, gs, checkedAlloc(t), []int64{20}, false)
			o := outcome{err: err}
			if d != nil {
				o.version = d.Version()
			}
			late <- o
		}()
		queued(t, c, 2)
		cancel() // the leader gives up: the group commits
		for i, ch := range append(rest, late) {
			if o := <-ch; o.err != nil || o.version != 3 {
				t.Errorf("append %d: version %d, %v; want 3 (the group its leader committed on giving up)", i, o.version, o.err)
			}
		}
		if got := idsAt(t, inner, 0); !slices.Equal(got, []int64{-1, 0, 10, 20}) {
			t.Errorf("latest holds %v", got)
		}
		if st := c.Stats(); st.Groups != 2 || st.Largest != 2 {
			t.Errorf("stats %+v, want 2 groups, the largest of 2", st)
		}
	})
}
