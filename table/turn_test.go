package table

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// maintainKey marks the ctx of the call an appendRacer races.
type maintainKey struct{}

// appendRacer races each manifest creation of a call whose ctx carries
// maintainKey with an Append through the handle tb: the creation goes on
// once the append created its own manifest (the call then loses the
// race) or waits for its turn (the call holds it and wins).
type appendRacer struct {
	blob.Store
	t  *testing.T
	tb *Table

	mu       sync.Mutex
	racer    chan struct{}
	next     int64
	attempts int
	appended []int64
	errs     []error
	wg       sync.WaitGroup
}

func (s *appendRacer) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	if !strings.HasPrefix(key, manifest.VersionsDir) {
		return s.Store.CreateIfAbsent(ctx, key, data)
	}
	if ctx.Value(maintainKey{}) == nil {
		defer s.let() // the version is taken once created
		return s.Store.CreateIfAbsent(ctx, key, data)
	}
	s.mu.Lock()
	s.attempts++
	id := s.next
	s.next++
	racer := make(chan struct{})
	s.racer = racer
	s.mu.Unlock()
	s.wg.Go(func() {
		err := s.tb.Append(context.Background(), idRows(s.t, id), nil)
		s.mu.Lock()
		if err != nil {
			s.errs = append(s.errs, err)
		} else {
			s.appended = append(s.appended, id)
		}
		s.mu.Unlock()
		s.let()
	})
	<-racer
	return s.Store.CreateIfAbsent(ctx, key, data)
}

func (s *appendRacer) let() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.racer != nil {
		close(s.racer)
		s.racer = nil
	}
}

// TestMaintenanceTakesTurnsWithAppends: Compact, OptimizeIndexes' and
// Optimize's commits through a handle take turns with the handle's group
// commits of Appends, so that with an Append racing every commit attempt
// they land at the first; all rows are there once. Without the turn each
// attempt loses to the append and the call fails once its 3 retries are
// used up.
func TestMaintenanceTakesTurnsWithAppends(t *testing.T) {
	retries := dataset.CommitOptions{Retries: 3}
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context, tb *Table) error
	}{
		{"compact", func(ctx context.Context, tb *Table) error {
			_, err := tb.Compact(ctx, &dataset.CompactOptions{CommitOptions: retries})
			return err
		}},
		{"optimize", func(ctx context.Context, tb *Table) error {
			_, err := tb.Optimize(ctx, &OptimizeOptions{SkipIndex: true, SkipCleanup: true, Compact: &dataset.CompactOptions{CommitOptions: retries}})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			inner := blob.NewMemStore("table-turn-" + tc.name)
			want := []int64{0}
			if _, err := dataset.Write(ctx, inner, idRows(t, 0), nil); err != nil {
				t.Fatal(err)
			}
			for i := range int64(6) {
				if _, err := dataset.Write(ctx, inner, idRows(t, 10+i), &dataset.WriteOptions{Mode: dataset.WriteAppend}); err != nil {
					t.Fatal(err)
				}
				want = append(want, 10+i)
			}
			s := &appendRacer{Store: inner, t: t, next: 100}
			tb, err := newTable(ctx, newRootStore(s, nil), dataset.OpenOptions{}, Ref{})
			if err != nil {
				t.Fatal(err)
			}
			s.tb = tb
			// The handle's committer, as t.committer makes it but telling
			// when a commit waits for its turn.
			ds, err := tb.current()
			if err != nil {
				t.Fatal(err)
			}
			tb.groupOnce.Do(func() {
				tb.group = dataset.NewGroupCommitter(ds.Store(), &dataset.GroupCommitOptions{OnTurnWait: s.let})
			})

			err = tc.run(context.WithValue(ctx, maintainKey{}, true), tb)
			s.wg.Wait()
			if err != nil {
				t.Fatalf("%s raced by appends: %v (after %d attempts)", tc.name, err, s.attempts)
			}
			if s.attempts != 1 || len(s.errs) > 0 {
				t.Errorf("%d attempts (want 1), append errors %v", s.attempts, s.errs)
			}
			want = append(want, s.appended...)
			slices.Sort(want)
			d, err := dataset.Open(ctx, inner, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			sc, err := d.Scan(&dataset.ScanOptions{Columns: []string{"id"}})
			if err != nil {
				t.Fatal(err)
			}
			for rec, err := range sc.Batches(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, rec.Column(0).(*array.Int64).Int64Values()...)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("ids %v, want %v", got, want)
			}
			if n := len(d.Manifest().Fragments); n != 1+len(s.appended) {
				t.Errorf("%d fragments, want the compacted one and %d appended", n, len(s.appended))
			}
		})
	}
}
