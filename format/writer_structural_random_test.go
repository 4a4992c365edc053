package format

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/formattest"
)

// Randomized round trips: random nested schemas (structs, lists, maps of
// every primitive type), nulls everywhere, empty lists, long strings, NaN,
// written at several sizes in both versions and read back equal.

// TestStructuralWriterRandom writes random schemas and data and reads them
// back.
func TestStructuralWriterRandom(t *testing.T) {
	sizes := []int{0, 1, 1023, 1025, 70000}
	seeds := 12
	if testing.Short() {
		sizes, seeds = []int{0, 1, 1025}, 4
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	for _, c := range formattest.RandomCases(t, mem, sizes, seeds, false) {
		t.Run(c.Name, func(t *testing.T) {
			defer formattest.ReleaseRecords(c.Recs)
			want := fixturetest.EncodeRows(t, c.Recs...)
			for _, pageSize := range []int{0, 8 << 10} {
				store := blob.NewMemStore("random")
				wf := writeStructural(t, store, "data/r.lance", c.Schema, &WriterOptions{Version: caseVersion(c.V22), PageSize: pageSize, Allocator: mem}, c.Recs...)
				if int(wf.Rows) != len(want) {
					t.Fatalf("wrote %d rows, want %d", wf.Rows, len(want))
				}
				_, got := readRowsJSON(t, store, "data/r.lance", mem, 1000)
				if !fixturetest.CompareRows(t, fmt.Sprintf("%s page %d", c.Name, pageSize), got, want, fixturetest.CompareOptions{}) {
					t.Logf("schema: %s", c.Schema.LogicalArrow())
				}
			}
		})
	}
}

// caseVersion is the version of a formattest case for 2.2 (v22) or 2.1.
func caseVersion(v22 bool) Version {
	if v22 {
		return Version2_2
	}
	return Version2_1
}
