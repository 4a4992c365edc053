package formattest

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"

	"github.com/lancerdb/lancer/internal/rowjson"
)

// RowsJSON renders every row of arr in the fixtures' JSON encoding, which
// prints null at any level and ignores slots under nulls.
func RowsJSON(t testing.TB, arr arrow.Array) []string {
	t.Helper()
	out := make([]string, arr.Len())
	for i := range out {
		b, err := rowjson.AppendValue(nil, arr, i)
		if err != nil {
			t.Fatalf("rowjson: %v", err)
		}
		out[i] = string(b)
	}
	return out
}

// CheckArray verifies the structural invariants of an array a reader
// built: null counts match bitmaps, offsets are monotone and stay within
// the children, children are long enough. path names a in the errors.
func CheckArray(t testing.TB, path string, a arrow.Array) {
	t.Helper()
	d := a.Data()
	if v := d.Buffers(); len(v) > 0 && v[0] != nil {
		if got := d.Len() - bitutil.CountSetBits(v[0].Bytes(), d.Offset(), d.Len()); got != d.NullN() {
			t.Errorf("%s: null count %d, bitmap says %d", path, d.NullN(), got)
		}
	} else if d.NullN() != 0 && d.DataType().ID() != arrow.NULL {
		t.Errorf("%s: null count %d without a bitmap", path, d.NullN())
	}
	switch arr := a.(type) {
	case *array.Struct:
		for i := 0; i < arr.NumField(); i++ {
			f := arr.Field(i)
			if f.Len() != arr.Len() {
				t.Errorf("%s.%d: length %d, struct %d", path, i, f.Len(), arr.Len())
			}
			CheckArray(t, fmt.Sprintf("%s.%d", path, i), f)
		}
	case array.ListLike:
		items := arr.ListValues()
		prev := int64(-1)
		for i := 0; i < arr.Len(); i++ {
			s, e := arr.ValueOffsets(i)
			if s < prev || e < s || e > int64(items.Len()) {
				t.Errorf("%s: list %d has offsets [%d, %d) over %d items (previous end %d)", path, i, s, e, items.Len(), prev)
			}
			prev = e
		}
		CheckArray(t, path+"[]", items)
	}
}
