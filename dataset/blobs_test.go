package dataset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// TestFixturesBlobs reads the bytes of every blob of the blob fixtures, in
// a shuffled order with a repeat, and checks them against what real Lance
// fetched (blob v2) or what the generator wrote (legacy blobs, which Lance's
// fetch API refuses but whose bytes sit in the data file).
func TestFixturesBlobs(t *testing.T) {
	for _, name := range []string{"blob_v2_v2_2", "blob_v2_v2_3", "blob_legacy_v2_0", "blob_legacy_v2_1"} {
		t.Run(name, func(t *testing.T) {
			exp := fixturetest.LoadExpected(t, name)
			want := exp.FetchBlobs
			if want == nil {
				want = exp.WrittenPayloads
			}
			if len(want) == 0 {
				t.Fatal("the fixture records no blob payloads")
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			d, err := openDir(context.Background(), fixturetest.DatasetPath(t, name), &OpenOptions{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			// Row ids are row addresses here: one fragment, id 0.
			order := []int{len(want) - 1, 3, 0}
			for i := range want {
				order = append(order, i)
			}
			ids := make([]uint64, len(order))
			for j, i := range order {
				ids[j] = uint64(i)
			}
			blobs, err := d.TakeBlobs(context.Background(), "blob", ids)
			if err != nil {
				t.Fatal(err)
			}
			for j, i := range order {
				w, got := want[i], blobs[j]
				if w == nil {
					if got != nil {
						t.Errorf("row %d: %d bytes, want a null blob", i, len(got))
					}
					continue
				}
				sum := sha256.Sum256(got)
				if got == nil || int64(len(got)) != int64(w.Size) || hex.EncodeToString(sum[:]) != w.SHA256 {
					t.Errorf("row %d: %d bytes (sha256 %x), want %d (%s)", i, len(got), sum[:4], w.Size, w.SHA256[:8])
				}
			}
		})
	}
}

func TestTakeBlobsErrors(t *testing.T) {
	d, err := openDir(context.Background(), fixturetest.DatasetPath(t, "blob_v2_v2_2"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := d.TakeBlobs(ctx, "id", []uint64{0}); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("non-blob column: %v", err)
	}
	if _, err := d.TakeBlobs(ctx, "nope", []uint64{0}); !errors.Is(err, lancer.ErrNotFound) {
		t.Errorf("missing column: %v", err)
	}
	if _, err := d.TakeBlobs(ctx, "blob", []uint64{99}); !errors.Is(err, lancer.ErrNotFound) {
		t.Errorf("missing row: %v", err)
	}
}
