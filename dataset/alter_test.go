package dataset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
)

// alterFixture writes a two-fragment dataset: id int32, price float64,
// vec fixed_size_list<float32>[2], note string (null at id 1).
func alterFixture(t *testing.T, mem memory.Allocator) *Dataset {
	t.Helper()
	ctx := context.Background()
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "vec", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), Nullable: true},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	batch := func(from int) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, sch)
		defer b.Release()
		vb := b.Field(2).(*array.FixedSizeListBuilder)
		for i := from; i < from+3; i++ {
			b.Field(0).(*array.Int32Builder).Append(int32(i))
			b.Field(1).(*array.Float64Builder).Append(float64(i) * 1.5)
			vb.Append(true)
			vb.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{float32(i), 0.5}, nil)
			if i == 1 {
				b.Field(3).(*array.StringBuilder).AppendNull()
			} else {
				b.Field(3).(*array.StringBuilder).Append(fmt.Sprint("n", i))
			}
		}
		return b.NewRecordBatch()
	}
	store, err := blob.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var d *Dataset
	for i, from := range []int{0, 3} {
		rec := batch(from)
		rr, _ := array.NewRecordReader(sch, []arrow.RecordBatch{rec})
		mode := WriteCreate
		if i > 0 {
			mode = WriteAppend
		}
		d, err = Write(ctx, store, rr, &WriteOptions{Mode: mode, CommitOptions: CommitOptions{Allocator: mem}})
		rr.Release()
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// dump scans d into "col=value" lines, one per row.
func dump(t *testing.T, d *Dataset) string {
	t.Helper()
	sc, err := d.Scan(nil)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for rec, err := range sc.Batches(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		for r := 0; r < int(rec.NumRows()); r++ {
			for c := 0; c < int(rec.NumCols()); c++ {
				fmt.Fprintf(&sb, "%s=%s ", rec.ColumnName(c), rec.Column(c).ValueStr(r))
			}
			sb.WriteString("\n")
		}
	}
	return sb.String()
}

func TestAlterColumnsCasts(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	d := alterFixture(t, mem)
	f16 := arrow.FixedSizeListOfField(2, arrow.Field{Name: "item", Type: arrow.FixedWidthTypes.Float16, Nullable: true})
	out, err := d.AlterColumns(ctx, []ColumnAlteration{
		{Path: "price", DataType: arrow.PrimitiveTypes.Float32},
		{Path: "id", DataType: arrow.PrimitiveTypes.Int64, Rename: "key"},
		{Path: "vec", DataType: f16},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Version() != d.Version()+1 {
		t.Errorf("version %d after %d: want one commit", out.Version(), d.Version())
	}
	got := out.Schema().LogicalArrow().String()
	for _, want := range []string{"key: type=int64", "price: type=float32", "vec: type=fixed_size_list<item: float16, nullable>[2]", "note: type=utf8"} {
		if !strings.Contains(got, want) {
			t.Errorf("schema %s lacks %q", got, want)
		}
	}
	// The columns keep their places.
	if names := fmt.Sprint(out.Schema().LogicalArrow().Field(0).Name, out.Schema().LogicalArrow().Field(1).Name,
		out.Schema().LogicalArrow().Field(2).Name); names != "keypricevec" {
		t.Errorf("column order %s", names)
	}
	rows := dump(t, out)
	if !strings.Contains(rows, "key=4 price=6 vec=[4,0.5] note=n4") || !strings.Contains(rows, "key=1 price=1.5 vec=[1,0.5] note=(null)") {
		t.Errorf("rows after the casts:\n%s", rows)
	}
	// Reopened from disk, the same.
	again, err := Open(ctx, out.Store(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if dump(t, again) != rows {
		t.Errorf("reopened rows differ:\n%s", dump(t, again))
	}

	// Casts Lance refuses, and values that do not fit.
	for _, a := range []ColumnAlteration{
		{Path: "price", DataType: arrow.BinaryTypes.String},
		{Path: "note", DataType: arrow.PrimitiveTypes.Int32},
		{Path: "nope", DataType: arrow.PrimitiveTypes.Int32},
	} {
		if _, err := out.AlterColumns(ctx, []ColumnAlteration{a}, nil); err == nil {
			t.Errorf("%s to %s accepted", a.Path, a.DataType)
		}
	}
	if _, err := out.AlterColumns(ctx, []ColumnAlteration{{Path: "key", DataType: arrow.PrimitiveTypes.Int8}}, nil); err != nil {
		t.Errorf("int64 to int8 of small values: %v", err)
	}
}

func TestAlterColumnsNullableAndNoOp(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	d := alterFixture(t, mem)
	no := false
	if _, err := d.AlterColumns(ctx, []ColumnAlteration{{Path: "note", Nullable: &no}}, nil); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("note has a null, made non-nullable: %v", err)
	}
	out, err := d.AlterColumns(ctx, []ColumnAlteration{{Path: "price", Nullable: &no}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Schema().Field("price").Nullable {
		t.Error("price still nullable")
	}
	// A no-op makes a version, as in Lance.
	same, err := out.AlterColumns(ctx, []ColumnAlteration{{Path: "price"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if same.Version() != out.Version()+1 {
		t.Errorf("no-op alter: version %d after %d", same.Version(), out.Version())
	}

	meta, err := same.UpdateFieldMetadata(ctx, []FieldMetadataUpdate{{Path: "price", Set: map[string]string{"lancedb:description": "cost", "x": "1"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	meta, err = meta.UpdateFieldMetadata(ctx, []FieldMetadataUpdate{{Path: "price", Delete: []string{"x"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if md := meta.Schema().Field("price").Metadata; len(md) != 1 || md["lancedb:description"] != "cost" {
		t.Errorf("metadata %v", md)
	}
	if _, err := meta.UpdateFieldMetadata(ctx, []FieldMetadataUpdate{{Path: "nope"}}, nil); !errors.Is(err, lancer.ErrNotFound) {
		t.Errorf("unknown field: %v", err)
	}
}
