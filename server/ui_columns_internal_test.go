package server

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// TestUIColumnsCached: the browser's column kinds of a version are found
// once (reading values to spot images) and then answered from the cache;
// another version is looked at afresh.
func TestUIColumnsCached(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "img", Type: arrow.BinaryTypes.Binary}}, nil)
	write := func(store blob.Store, mode dataset.WriteMode) {
		b := array.NewBinaryBuilder(memory.DefaultAllocator, arrow.BinaryTypes.Binary)
		defer b.Release()
		b.Append(buf.Bytes())
		col := b.NewArray()
		defer col.Release()
		rec := array.NewRecordBatch(schema, []arrow.Array{col}, 1)
		defer rec.Release()
		rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
		if err != nil {
			t.Fatal(err)
		}
		defer rr.Release()
		if _, err := dataset.Write(ctx, store, rr, &dataset.WriteOptions{Mode: mode}); err != nil {
			t.Fatal(err)
		}
	}
	local, err := blob.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := blob.NewCountingStore(local)
	write(store, dataset.WriteCreate)
	s := &Server{}
	columns := func(wantReads bool) {
		t.Helper()
		ds, err := dataset.Open(ctx, store, nil)
		if err != nil {
			t.Fatal(err)
		}
		before := store.Snapshot()
		cols, err := s.uiColumnsOf(ctx, ds)
		if err != nil {
			t.Fatal(err)
		}
		if len(cols) != 1 || cols[0].Kind != kindImage {
			t.Fatalf("columns %+v, want one image column", cols)
		}
		if read := store.Snapshot().Sub(before).BytesRead() > 0; read != wantReads {
			t.Fatalf("read values: %v, want %v", read, wantReads)
		}
	}
	columns(true)
	columns(false)
	write(store, dataset.WriteAppend) // a new version
	columns(true)
	columns(false)
}

// TestFloat32JSONNonFinite: the browser shows a float32 NaN or infinity in
// a vector as the rest of its values do (rowjson's strings), never as
// null, which reads as a missing value.
func TestFloat32JSONNonFinite(t *testing.T) {
	for f, want := range map[float32]string{
		float32(math.NaN()):           `"NaN"`,
		float32(math.Inf(1)):          `"Infinity"`,
		float32(math.Inf(-1)):         `"-Infinity"`,
		0.7:                           `0.7`,
		float32(math.Copysign(0, -1)): `-0`,
	} {
		b, err := json.Marshal(float32JSON(f))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != want {
			t.Errorf("float32JSON(%v) = %s, want %s", f, b, want)
		}
	}
}
