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
			d, err := OpenURI(ctx, fixturetest.DatasetPath(t, name), nil)
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
				checkBlobReader(t, br, whole[0])
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

// checkBlobReader checks that br reads want: whole, with io.ReadAll, and in
// parts after seeks.
func checkBlobReader(t *testing.T, br *BlobReader, want []byte) {
	t.Helper()
	defer br.Close()
	if br.Size() != int64(len(want)) {
		t.Fatalf("size %d, want %d", br.Size(), len(want))
	}
	got, err := io.ReadAll(br)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("ReadAll: %d bytes (%v), want %d", len(got), err, len(want))
	}
	n := int64(len(want))
	for _, c := range []struct {
		off    int64
		whence int
		len    int
	}{
		{0, io.SeekStart, 7},
		{n / 2, io.SeekStart, 100},
		{-3, io.SeekEnd, 10},
		{0, io.SeekEnd, 5},
		{n / 3, io.SeekStart, 70000},
		{-1, io.SeekCurrent, 2},
	} {
		cur, _ := br.Seek(0, io.SeekCurrent)
		want0 := map[int]int64{io.SeekStart: c.off, io.SeekCurrent: cur + c.off, io.SeekEnd: n + c.off}[c.whence]
		abs, err := br.Seek(c.off, c.whence)
		if want0 < 0 {
			if err == nil {
				t.Fatalf("seek %+v to %d succeeded", c, want0)
			}
			continue
		}
		if err != nil {
			t.Fatalf("seek %+v: %v", c, err)
		}
		if abs != want0 {
			t.Fatalf("seek %+v: at %d, want %d", c, abs, want0)
		}
		buf := make([]byte, c.len)
		k, err := io.ReadFull(br, buf)
		end := min(abs+int64(c.len), n)
		if end < abs {
			end = abs
		}
		if int64(k) != end-abs || !bytes.Equal(buf[:k], want[abs:end]) {
			t.Fatalf("read %+v: %d bytes (%v), want %d", c, k, err, end-abs)
		}
		if abs+int64(c.len) > n && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			t.Fatalf("read %+v past the end: %v", c, err)
		}
		// Seek back: reads from the read-ahead buffer must be right too.
		if _, err := br.Seek(abs, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		buf2 := make([]byte, k)
		if _, err := io.ReadFull(br, buf2); err != nil || !bytes.Equal(buf2, buf[:k]) {
			t.Fatalf("reread %+v: %v", c, err)
		}
	}
	if _, err := br.Seek(-1, io.SeekStart); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("negative seek: %v", err)
	}
	// WriteTo (io.Copy) from a position.
	if _, err := br.Seek(n/4, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if k, err := io.Copy(&out, br); err != nil || k != n-n/4 || !bytes.Equal(out.Bytes(), want[n/4:]) {
		t.Fatalf("io.Copy from %d: %d bytes (%v)", n/4, k, err)
	}
	if err := br.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := br.Read(make([]byte, 1)); err == nil {
		t.Error("read after close succeeded")
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
			defer br.Close()
			if br.Size() != int64(c.size) {
				t.Fatalf("size %d, want %d", br.Size(), c.size)
			}
			head := make([]byte, 64<<10)
			if _, err := io.ReadFull(br, head); err != nil {
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
			// The tail, after a seek.
			if _, err := br.Seek(-10, io.SeekEnd); err != nil {
				t.Fatal(err)
			}
			tail, err := io.ReadAll(br)
			if err != nil || !bytes.Equal(tail, big[len(big)-10:]) {
				t.Fatalf("tail: %v", err)
			}
			if got := cs.Snapshot().BytesRead(); got >= 1<<20 {
				t.Errorf("head and tail fetched %d bytes", got)
			}
		})
	}
}
