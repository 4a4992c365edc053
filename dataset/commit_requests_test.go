package dataset_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"gocloud.dev/blob/memblob"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// keys returns the keys of the logged requests of the given kinds.
func keys(store *blob.CountingStore, ops ...blob.Op) []string {
	var out []string
	for _, r := range store.Log() {
		if slices.Contains(ops, r.Op) {
			out = append(out, r.Key)
		}
	}
	return out
}

func countPrefix(keys []string, prefix string) int {
	n := 0
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}

// TestCommitRequests checks what an append costs in requests: a writer
// that still holds the latest version does not read its manifest again,
// and the version hint is written on file systems and memory but not on
// object stores (as Lance does), where it would be one more PUT per commit.
func TestCommitRequests(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		store func(t *testing.T) blob.Store
		hint  bool
	}{
		{"mem", func(t *testing.T) blob.Store { return blob.NewMemStore("commit-requests") }, true},
		{"local", func(t *testing.T) blob.Store {
			s, err := blob.NewLocalStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		}, true},
		{"object store", func(t *testing.T) blob.Store {
			b := memblob.OpenBucket(nil)
			t.Cleanup(func() { b.Close() })
			return blob.NewCloudStore(b, "mem://bucket/t.lance", "t.lance")
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := blob.NewCountingStore(c.store(t))
			log.StartLog()
			if got := blob.IsObjectStore(log); got != !c.hint {
				t.Fatalf("IsObjectStore = %v", got)
			}
			r := goods([]int64{1, 2}, []string{"pen", "ink"}, []float64{2, 10})
			d, err := dataset.Write(ctx, log, r, nil)
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			log.Reset()
			r = goods([]int64{3}, []string{"pad"}, []float64{4})
			d, err = d.Append(ctx, r, nil)
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			reads := keys(log, blob.OpReadRange, blob.OpReadAll)
			if n := countPrefix(reads, "_versions/"); n != 0 {
				t.Errorf("append at the latest version read %d manifests: %v", n, reads)
			}
			writes := keys(log, blob.OpWrite)
			hints := 0
			for _, k := range writes {
				if strings.HasSuffix(k, "latest_version_hint.json") {
					hints++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[c.hint]; hints != want {
				t.Errorf("append wrote the version hint %d times, want %d (writes %v)", hints, want, writes)
			}

			// A writer behind the latest version reads what it missed.
			stale, err := d.Checkout(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			log.Reset()
			r = goods([]int64{4}, []string{"cap"}, []float64{1})
			d, err = stale.Append(ctx, r, nil)
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			if reads := keys(log, blob.OpReadRange, blob.OpReadAll); countPrefix(reads, "_versions/") == 0 {
				t.Errorf("an append rebased over version 2 read no manifest: %v", reads)
			}
			if n, err := d.CountRows(ctx); err != nil || n != 4 || d.Version() != 3 {
				t.Fatalf("after the rebased append: version %d, %d rows, %v; want 3, 4", d.Version(), n, err)
			}
		})
	}
}
