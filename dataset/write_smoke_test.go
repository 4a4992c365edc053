package dataset

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format"
)

func TestWriteSmoke(t *testing.T) {
	ctx := context.Background()
	for _, v := range []format.Version{format.Version2_0, format.Version2_1, format.Version2_2} {
		t.Run(v.String(), func(t *testing.T) {
			mem := checkedAlloc(t)
			store := blob.NewMemStore("w" + v.String())
			ib := array.NewInt64Builder(mem)
			ib.AppendValues([]int64{1, 2, 3}, nil)
			sb := array.NewStringBuilder(mem)
			sb.AppendValues([]string{"a", "", "c"}, []bool{true, false, true})
			r := recordReader(t, []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, ib.NewArray(), sb.NewArray())
			ib.Release()
			sb.Release()
			d, err := Write(ctx, store, r, &WriteOptions{FileVersion: v, CommitOptions: CommitOptions{Allocator: mem}})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range scanAll(t, d) {
				t.Log(r.id, r.cols)
			}
		})
	}
}
