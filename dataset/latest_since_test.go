package dataset

import (
	"context"
	"errors"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
)

// TestLatestVersionSince checks LatestVersionSince against LatestVersion
// from every starting point, after versions are cleaned up and after the
// dataset is written again from scratch, and that on a local disk it probes
// manifests rather than list _versions/.
func TestLatestVersionSince(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	local, err := blob.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := blob.NewCountingStore(local)
	commit := func(n int) {
		t.Helper()
		for range n {
			if _, err := Write(ctx, store, idRows(t, mem, 0, 3), &WriteOptions{Mode: WriteAppend}); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(known, want uint64, wantListing bool) {
		t.Helper()
		before := store.Snapshot()
		got, err := LatestVersionSince(ctx, store, known)
		if err != nil {
			t.Fatalf("since %d: %v", known, err)
		}
		if got != want {
			t.Fatalf("since %d: %d, want %d", known, got, want)
		}
		if listed := store.Snapshot().Sub(before).List.Requests > 0; listed != wantListing {
			t.Errorf("since %d: listed %v, want %v", known, listed, wantListing)
		}
	}
	if _, err := LatestVersionSince(ctx, store, 3); !errors.Is(err, lancer.ErrNotFound) {
		t.Fatalf("no dataset: %v", err)
	}
	commit(5)
	check(0, 5, true)
	for known := uint64(1); known <= 5; known++ {
		check(known, 5, false)
	}
	commit(10) // 15 versions: from 5, more than the probes allowed
	check(5, 15, true)
	check(9, 15, false)
	check(40, 15, true) // a version never committed
	check(15, 15, false)
	// A cleanup that keeps version 15 (tagged) and the newest but removes
	// those between: the hint, rewritten by every commit, says where the
	// newest is.
	commit(5) // 20 versions
	for v := uint64(16); v < 20; v++ {
		e, err := findManifest(ctx, store, v)
		if err != nil {
			t.Fatal(err)
		}
		if err := local.Delete(ctx, e.key); err != nil {
			t.Fatal(err)
		}
	}
	check(15, 20, false)
	// Without the hint (a writer that writes none) the gap goes unseen:
	// callers list now and then (the server every second).
	if err := local.Delete(ctx, versionHintKey); err != nil {
		t.Fatal(err)
	}
	check(15, 15, false)
	if err := local.Write(ctx, versionHintKey, []byte(`{"version":20}`)); err != nil {
		t.Fatal(err)
	}
	// A hint naming a version that does not exist: listed.
	if err := local.Write(ctx, versionHintKey, []byte(`{"version":77}`)); err != nil {
		t.Fatal(err)
	}
	check(15, 20, true)
	if err := local.Write(ctx, versionHintKey, []byte(`{"version":20}`)); err != nil {
		t.Fatal(err)
	}
	// Version 9's manifest cleaned up: listed.
	e, err := findManifest(ctx, store, 9)
	if err != nil {
		t.Fatal(err)
	}
	if err := local.Delete(ctx, e.key); err != nil {
		t.Fatal(err)
	}
	check(9, 20, true)
	check(12, 20, false) // 13 to 15 exist, then the hint
	// Written again from scratch: 2 versions.
	for v := uint64(1); v <= 20; v++ {
		if e, err := findManifest(ctx, store, v); err == nil {
			if err := local.Delete(ctx, e.key); err != nil {
				t.Fatal(err)
			}
		}
	}
	commit(2)
	check(12, 2, true)
	check(1, 2, false)
	// A store that fails is an error, not a wrong version.
	f := blob.NewFaultStore(store, 1, blob.Fault{Ops: []blob.Op{blob.OpStat}, Err: errors.New("boom"), Times: -1})
	if _, err := LatestVersionSince(ctx, f, 1); err == nil {
		t.Fatal("a failing Stat went unreported")
	}
}
