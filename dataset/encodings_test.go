package dataset

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/internal/fixturetest"
)

// TestFixturesEncodings scans every dataset under fixtures/encodings (the
// ones on which Lance really used FSST, zstd, lz4, byte-stream split,
// bit-packing, RLE, dictionaries, constant and full-zip pages, multi-page
// and multi-file columns) and compares every row, with _rowid, to what real
// Lance read back. pages_2_2 is covered by TestScanBoundedMemory.
func TestFixturesEncodings(t *testing.T) {
	for _, name := range []string{"strs_2_1", "strs_2_2", "wide_2_1", "wide_2_2", "mpage_2_1", "mpage_2_2", "pages_2_1"} {
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			d, err := openDir(context.Background(), fixturetest.EncodingDatasetPath(t, name), &OpenOptions{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			s, err := d.Scan(&ScanOptions{WithRowID: true, BatchSize: 5000})
			if err != nil {
				t.Fatal(err)
			}
			want := func(i int) []byte { return fixturetest.FormulaRow(name, i) }
			n, byFormula := fixturetest.FormulaRowCount(name)
			if !byFormula {
				rows := fixturetest.EncodingRows(t, name)
				n, want = len(rows), func(i int) []byte { return rows[i] }
			}
			check := fixturetest.NewRowChecker(t, name, fixturetest.CompareOptions{})
			row := 0
			for rec, err := range s.Batches(context.Background()) {
				if err != nil {
					t.Fatal(err)
				}
				for _, got := range fixturetest.EncodeRows(t, rec) {
					if row < n {
						check.Check(row, got, want(row))
					}
					row++
				}
			}
			check.Finish(row, n)
		})
	}
}
