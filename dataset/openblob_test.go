package dataset

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// TestOpenBlobFixtures reads every row of the blob fixtures with OpenBlob
// and checks it against TakeBlobs, whole and in sought parts.
func TestOpenBlobFixtures(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"blob_v2_v2_2", "blob_v2_v2_3", "blob_legacy_v2_0", "blob_legacy_v2_1"} {
		t.Run(name, func(t *testing.T) {
			exp := fixturetest.LoadExpected(t, name)
			want := exp.FetchBlobs
			if want == nil {
				want = exp.WrittenPayloads
			}
			d, err := openDir(ctx, fixturetest.DatasetPath(t, name), nil)
			if err != nil {
				t.Fatal(err)
			}
			n := len(want)
			if n == 0 {
				t.Fatal("no rows")
			}
			for row := range n {
				id := uint64(row)
				whole, err := d.TakeBlobs(ctx, "blob", []uint64{id})
				if err != nil {
					t.Fatal(err)
				}
				br, err := d.OpenBlob(ctx, "blob", id)
				if whole[0] == nil {
					if !errors.Is(err, lancer.ErrNotFound) {
						t.Errorf("row %d: null blob: %v, want ErrNotFound", row, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("row %d: %v", row, err)
				}
				checkBlob(t, br, whole[0])
			}
			if _, err := d.OpenBlob(ctx, "id", 0); !errors.Is(err, lancer.ErrInvalidArgument) {
				t.Errorf("non-blob column: %v", err)
			}
			if _, err := d.OpenBlob(ctx, "nope", 0); !errors.Is(err, lancer.ErrNotFound) {
				t.Errorf("missing column: %v", err)
			}
			if _, err := d.OpenBlob(ctx, "blob", 999); !errors.Is(err, lancer.ErrNotFound) {
				t.Errorf("missing row: %v", err)
			}
		})
	}
}

// checkBlob checks that br reads want: whole with WriteRange, and in parts
// with ReadAt and WriteRange, past the end included.
func checkBlob(t *testing.T, br *Blob, want []byte) {
	t.Helper()
	ctx := context.Background()
	if br.Size() != int64(len(want)) {
		t.Fatalf("size %d, want %d", br.Size(), len(want))
	}
	var whole bytes.Buffer
	if k, err := br.WriteRange(ctx, &whole, 0, br.Size()); err != nil || k != br.Size() || !bytes.Equal(whole.Bytes(), want) {
		t.Fatalf("WriteRange of the whole value: %d bytes (%v), want %d", k, err, len(want))
	}
	n := int64(len(want))
	for _, c := range []struct {
		off int64
		len int
	}{
		{0, 7}, {n / 2, 100}, {max(0, n-3), 10}, {n, 5}, {n / 3, 70000}, {n + 10, 1}, {0, 0},
	} {
		buf := make([]byte, c.len)
		k, err := br.ReadAt(ctx, buf, c.off)
		start := min(c.off, n)
		end := min(c.off+int64(c.len), n)
		if int64(k) != end-start || !bytes.Equal(buf[:k], want[start:end]) {
			t.Fatalf("ReadAt %+v: %d bytes (%v), want %d", c, k, err, end-start)
		}
		if short := c.off+int64(c.len) > n; short != errors.Is(err, io.EOF) || !short && err != nil {
			t.Fatalf("ReadAt %+v: error %v", c, err)
		}
		var out bytes.Buffer
		k2, err := br.WriteRange(ctx, &out, c.off, int64(c.len))
		if err != nil || k2 != end-start || !bytes.Equal(out.Bytes(), want[start:end]) {
			t.Fatalf("WriteRange %+v: %d bytes (%v), want %d", c, k2, err, end-start)
		}
	}
	if _, err := br.ReadAt(ctx, make([]byte, 1), -1); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("negative offset: %v", err)
	}
	if _, err := br.WriteRange(ctx, io.Discard, 0, -1); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("negative length: %v", err)
	}
}

// TestOpenBlobReadsLazily writes one large value (a 100 MB dedicated
// sidecar in a 2.2 dataset, 8 MB inside a legacy 2.0 data file) and checks
// that reading its first 64 KiB fetches well under 1 MiB.
func TestOpenBlobReadsLazily(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100 MB")
	}
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		version format.Version
		v2      bool
		size    int
	}{
		{"v2_2_dedicated", format.Version2_2, true, 100 << 20},
		{"legacy_v2_0", format.Version2_0, false, 8 << 20},
		{"legacy_v2_1", format.Version2_1, false, 8 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := blob.NewMemStore(t.Name())
			bc := blobCase{name: c.name, version: c.version, v2: c.v2}
			big := payload(c.size, 3)
			sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, bc.blobField()}, nil)
			ib := array.NewInt64Builder(memory.DefaultAllocator)
			ib.AppendValues([]int64{0, 1}, nil)
			bb := array.NewBuilder(memory.DefaultAllocator, sch.Field(1).Type)
			for _, v := range [][]byte{payload(100, 1), big} {
				switch b := bb.(type) {
				case *array.BinaryBuilder:
					b.Append(v)
				case *array.StructBuilder:
					b.Append(true)
					b.FieldBuilder(0).(*array.BinaryBuilder).Append(v)
					b.FieldBuilder(1).(*array.StringBuilder).AppendNull()
				}
			}
			cols := []arrow.Array{ib.NewArray(), bb.NewArray()}
			ib.Release()
			bb.Release()
			rec := array.NewRecordBatch(sch, cols, 2)
			releaseArrays(cols)
			rr, err := array.NewRecordReader(sch, []arrow.RecordBatch{rec})
			rec.Release()
			if err != nil {
				t.Fatal(err)
			}
			_, err = Write(ctx, mem, rr, &WriteOptions{FileVersion: c.version})
			rr.Release()
			if err != nil {
				t.Fatal(err)
			}
			cs := blob.NewCountingStore(mem)
			d, err := Open(ctx, cs, nil)
			if err != nil {
				t.Fatal(err)
			}
			cs.Reset()
			br, err := d.OpenBlob(ctx, "blob", 1)
			if err != nil {
				t.Fatal(err)
			}
			if br.Size() != int64(c.size) {
				t.Fatalf("size %d, want %d", br.Size(), c.size)
			}
			head := make([]byte, 64<<10)
			if _, err := br.ReadAt(ctx, head, 0); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(head, big[:len(head)]) {
				t.Fatal("first 64 KiB differ")
			}
			if got := cs.Snapshot().BytesRead(); got >= 1<<20 {
				t.Errorf("reading 64 KiB of a %d-byte blob fetched %d bytes", c.size, got)
			} else {
				t.Logf("fetched %d bytes", got)
			}
			// The tail.
			tail := make([]byte, 10)
			if _, err := br.ReadAt(ctx, tail, br.Size()-10); err != nil || !bytes.Equal(tail, big[len(big)-10:]) {
				t.Fatalf("tail: %v", err)
			}
			if got := cs.Snapshot().BytesRead(); got >= 1<<20 {
				t.Errorf("head and tail fetched %d bytes", got)
			}
		})
	}
}
