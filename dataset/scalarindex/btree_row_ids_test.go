package scalarindex

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
)

// TestBTreeRowIDsColumn: a BTREE vectordb 0.21 (Lance 0.32) wrote names
// its id column row_ids, not ids; it opens (it was ErrCorrupt, which failed
// every delete on such a table). The files in testdata are the index of
// a float64 id column over ids 5..339 less 150 (one fragment, written by
// interop/lance-release-history.mjs).
func TestBTreeRowIDsColumn(t *testing.T) {
	ctx := context.Background()
	st := blob.NewMemStore("old")
	for name, file := range map[string]string{
		BTreePagesFile:  "btree_row_ids_page_data.lance",
		BTreeLookupFile: "btree_row_ids_page_lookup.lance",
	} {
		if err := st.Write(ctx, "btree/"+name, readTestdata(t, file)); err != nil {
			t.Fatal(err)
		}
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ix, err := Open(ctx, st, "btree", BTree, &OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatalf("open an old BTREE: %v", err)
	}
	// Opening reads the data file's schema; searches of a float64 id with
	// the filter's literals are not served by the index yet (the scan
	// filters those rows), so the open is what this file tests.
	if got := ix.ValueType(); got.ID() != arrow.FLOAT64 {
		t.Fatalf("value type %s, want float64", got)
	}
}
