package server

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
)

// openParts reads the parts one after the other and tells a store's
// failure, corrupt bytes and a schema that differs apart.
func TestOpenParts(t *testing.T) {
	ctx := context.Background()
	store := blob.NewMemStore("parts")
	stage := func(key, column string, rows ...int64) *stagedPart {
		schema := arrow.NewSchema([]arrow.Field{{Name: column, Type: arrow.PrimitiveTypes.Int64}}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		b.Field(0).(*array.Int64Builder).AppendValues(rows, nil)
		rec := b.NewRecordBatch()
		defer rec.Release()
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := store.Write(ctx, key, buf.Bytes()); err != nil {
			t.Fatal(err)
		}
		return &stagedPart{key: key, size: int64(buf.Len()), rows: int64(len(rows))}
	}
	a, b, other := stage("a", "x", 1, 2), stage("b", "x", 3), stage("c", "y", 4)
	if err := store.Write(ctx, "junk", []byte("not arrow")); err != nil {
		t.Fatal(err)
	}
	junk := &stagedPart{key: "junk", size: 9}
	missing := &stagedPart{key: "missing", size: 100}

	readAll := func(parts ...*stagedPart) ([]int64, error) {
		r, err := openParts(ctx, store, parts)
		if err != nil {
			return nil, err
		}
		defer r.Release()
		var got []int64
		for r.Next() {
			got = append(got, r.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
		}
		return got, r.Err()
	}
	got, err := readAll(a, b)
	if err != nil || len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Fatalf("two parts: %v, %v; want [1 2 3]", got, err)
	}
	if _, err := readAll(a, other); err == nil {
		t.Error("parts of different schemas were read")
	} else {
		wantStatus(t, "different schemas", err, http.StatusBadRequest)
	}
	if _, err := readAll(a, junk); !errors.Is(err, lancer.ErrCorrupt) {
		t.Errorf("a junk part: %v, want ErrCorrupt", err)
	}
	if _, err := readAll(missing); !errors.Is(err, lancer.ErrNotFound) {
		t.Errorf("a missing first part: %v, want the store's ErrNotFound", err)
	}
	if _, err := readAll(a, missing); !errors.Is(err, lancer.ErrNotFound) {
		t.Errorf("a missing second part: %v, want the store's ErrNotFound", err)
	}
	// Released unread, the stream closes its first part.
	r, err := openParts(ctx, store, []*stagedPart{a, b})
	if err != nil {
		t.Fatal(err)
	}
	r.Release()
}
