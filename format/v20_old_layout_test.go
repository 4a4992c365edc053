package format

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestV20StringsAsLists reads the 2.0 file @lancedb/lancedb 0.5.2 (Lance
// 0.12) wrote, whose utf8 column is stored as a list of uint8 in two
// columns and whose columns record the "none" column encoding: lancer
// reads every value as Lance 12 does, whole and in ranges that cut pages.
func TestV20StringsAsLists(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := v20OpenPath(t, "testdata/lancedb-0.5.2/strings_as_lists.lance", mem)
	if cols := r.Columns(); len(cols) != 4 || !strings.Contains(cols[1].Pages[0].Encoding, "list:") {
		t.Fatalf("the fixture is not in the old layout: %d columns, column 1 %+v", len(cols), cols[1])
	}
	fields := r.Schema().Fields
	columns := map[int32]int{0: 0, 1: 1, 2: 3} // as the manifest records them
	proj := Projection{Fields: fields, Column: func(id int32) (int, bool) { c, ok := columns[id]; return c, ok }}
	for _, rng := range [][2]uint64{{0, 300}, {0, 1}, {7, 8}, {150, 299}} {
		cur, err := r.NewCursor(proj)
		if err != nil {
			t.Fatal(err)
		}
		arrs, err := cur.ReadRange(context.Background(), rng[0], rng[1])
		cur.Close()
		if err != nil {
			t.Fatalf("rows %v: %v", rng, err)
		}
		ids, texts := arrs[0].(*array.Float64), arrs[1].(*array.String)
		for i := range int(rng[1] - rng[0]) {
			id := int(rng[0]) + i
			if ids.Value(i) != float64(id) || texts.Value(i) != fmt.Sprintf("row %d", id) {
				t.Errorf("row %d reads id %v, s %q", id, ids.Value(i), texts.Value(i))
			}
		}
		for _, a := range arrs {
			a.Release()
		}
	}
}
