package dataset

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
)

// TestHistoryAndRestorePastDamagedManifest: a damaged latest manifest is
// listed, not fatal, and Restore rolls back past it with fresh fragment
// ids (the restored version's high-water mark).
func TestHistoryAndRestorePastDamagedManifest(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	store := blob.NewMemStore("h")
	r := idRows(t, mem, 0, 10)
	d, err := Write(ctx, store, r, nil)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		r := idRows(t, mem, 10*(i+1), 10)
		d, err = d.Append(ctx, r, nil)
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	latest, err := latestManifest(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Write(ctx, latest.key, []byte("not a manifest")); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, store, nil); !errors.Is(err, lancer.ErrCorrupt) {
		t.Fatalf("open: %v, want ErrCorrupt", err)
	}
	hist, err := History(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 3 || hist[0].Err != nil || hist[1].Err != nil || !errors.Is(hist[2].Err, lancer.ErrCorrupt) || hist[2].Operation != "" {
		t.Fatalf("history %+v: want versions 1 and 2 intact and 3 damaged", hist)
	}
	if hist[1].Operation != "Append" || hist[1].Metadata["total_rows"] != "20" {
		t.Fatalf("version 2: %+v", hist[1])
	}

	v2, err := Open(ctx, store, &OpenOptions{Version: 2})
	if err != nil {
		t.Fatal(err)
	}
	back, err := v2.Restore(ctx, nil)
	if err != nil {
		t.Fatalf("restore past a damaged manifest: %v", err)
	}
	if back.Version() != 4 {
		t.Fatalf("restored as version %d, want 4", back.Version())
	}
	if n, err := back.CountRows(ctx); err != nil || n != 20 {
		t.Fatalf("restored: %d rows, %v; want 20", n, err)
	}
	// An append after the rollback takes a fragment id after the restored
	// version's (the damaged manifest's cannot be read).
	r = idRows(t, mem, 100, 5)
	after, err := back.Append(ctx, r, nil)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for _, f := range after.Manifest().Fragments {
		if seen[f.ID] {
			t.Fatalf("fragment id %d used twice", f.ID)
		}
		seen[f.ID] = true
	}
	if n, err := after.CountRows(ctx); err != nil || n != 25 {
		t.Fatalf("after the append: %d rows, %v; want 25", n, err)
	}
}
