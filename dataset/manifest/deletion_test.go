package manifest

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
)

// ipcFile writes an Arrow IPC file holding one batch of col.
func ipcFile(t testing.TB, name string, col arrow.Array, opts ...ipc.Option) []byte {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: name, Type: col.DataType(), Nullable: col.NullN() > 0}}, nil)
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, append(opts, ipc.WithSchema(schema))...)
	if err != nil {
		t.Fatal(err)
	}
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len()))
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func uint32Array(values []uint32, valid []bool) arrow.Array {
	b := array.NewUint32Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(values, valid)
	return b.NewArray()
}

func roaringBytes(t testing.TB, values ...uint32) []byte {
	t.Helper()
	b, err := roaring.BitmapOf(values...).ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeDeletionFile(t *testing.T) {
	offsets := []uint32{15, 0, 5, 10}
	rows := uint32Array(offsets, nil)
	defer rows.Release()
	withNull := uint32Array([]uint32{1, 2}, []bool{true, false})
	defer withNull.Release()
	i64 := func() arrow.Array {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		b.AppendValues([]int64{1}, nil)
		return b.NewArray()
	}()
	defer i64.Release()
	valid := ipcFile(t, "row_id", rows, ipc.WithZstd())
	runBitmap := roaring.New()
	runBitmap.AddRange(100, 5000)
	runBitmap.RunOptimize()
	runBytes, err := runBitmap.ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		kind     DeletionFileKind
		data     []byte
		physical uint64
		want     []uint32
		wantErr  error
	}{
		{"arrow zstd", DeletionArrow, valid, 20, []uint32{0, 5, 10, 15}, nil},
		{"arrow lz4", DeletionArrow, ipcFile(t, "row_id", rows, ipc.WithLZ4()), 20, []uint32{0, 5, 10, 15}, nil},
		{"arrow uncompressed", DeletionArrow, ipcFile(t, "row_id", rows), 20, []uint32{0, 5, 10, 15}, nil},
		{"arrow unknown row count", DeletionArrow, valid, 0, []uint32{0, 5, 10, 15}, nil},
		{"arrow offset past the fragment", DeletionArrow, valid, 15, nil, lancer.ErrCorrupt},
		{"arrow truncated", DeletionArrow, valid[:len(valid)-9], 20, nil, lancer.ErrCorrupt},
		{"arrow garbage", DeletionArrow, []byte("ARROW1\x00\x00garbage"), 20, nil, lancer.ErrCorrupt},
		{"arrow wrong name", DeletionArrow, ipcFile(t, "rowid", rows), 20, nil, lancer.ErrCorrupt},
		{"arrow wrong type", DeletionArrow, ipcFile(t, "row_id", i64), 20, nil, lancer.ErrCorrupt},
		{"arrow nulls", DeletionArrow, ipcFile(t, "row_id", withNull), 20, nil, lancer.ErrCorrupt},
		{"bitmap", DeletionBitmap, roaringBytes(t, 3, 1, 2), 4, []uint32{1, 2, 3}, nil},
		{"bitmap with runs", DeletionBitmap, runBytes, 5000, nil, nil},
		{"bitmap empty", DeletionBitmap, roaringBytes(t), 4, nil, nil},
		{"bitmap past the fragment", DeletionBitmap, roaringBytes(t, 4), 4, nil, lancer.ErrCorrupt},
		{"bitmap trailing bytes", DeletionBitmap, append(roaringBytes(t, 1), 0), 4, nil, lancer.ErrCorrupt},
		{"bitmap truncated", DeletionBitmap, roaringBytes(t, 1, 2, 3)[:9], 4, nil, lancer.ErrCorrupt},
		{"bitmap garbage", DeletionBitmap, []byte{1, 2, 3, 4, 5, 6, 7, 8}, 4, nil, lancer.ErrCorrupt},
		{"unknown kind", DeletionFileKind(7), valid, 20, nil, lancer.ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dv, err := DecodeDeletionFile(tc.kind, tc.data, tc.physical)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			want := tc.want
			if tc.name == "bitmap with runs" {
				want = runBitmap.ToArray()
			}
			if got := dv.ToArray(); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("deleted %v, want %v", got, want)
			}
		})
	}
}
