package table

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/blob/blobtest"
	"github.com/lancerdb/lancer/dataset"
)

// TestOutsideStoresClosedOnce: a shallow clone's files live in its
// source, a store the table opens for the clone's base path. The handle
// opens it once however many handles and lineages read it concurrently,
// keeps it open while any handle reads (closing derived handles does not
// close it), and its owner's Close closes it exactly once, after which
// nothing opens it again.
func TestOutsideStoresClosedOnce(t *testing.T) {
	ctx := context.Background()
	src := blob.NewMemStore("src")
	if _, err := dataset.Write(ctx, src, idRows(t, 0, 1, 2, 3), nil); err != nil {
		t.Fatal(err)
	}
	srcDS, err := dataset.Open(ctx, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	dst := blob.NewMemStore("dst")
	const srcURI = "fake://source-table"
	if _, err := dataset.Clone(ctx, srcDS, dst, &dataset.CloneOptions{SourcePath: srcURI}); err != nil {
		t.Fatal(err)
	}

	var (
		opens  atomic.Int32
		opened = &blobtest.ClosingStore{Store: src}
	)
	root := newRootStore(dst, nil)
	root.outside.open = func(_ context.Context, uri string) (blob.Store, error) {
		if uri != srcURI {
			t.Errorf("opened %q, want the clone's source %q", uri, srcURI)
		}
		opens.Add(1)
		return opened, nil
	}
	tb, err := newTable(ctx, root, (*Options)(nil).openOptions(), Ref{})
	if err != nil {
		t.Fatal(err)
	}
	tb.owner = true

	take := func(tb *Table) error {
		rec, err := tb.Take(ctx, []uint64{3, 0}, nil)
		if err != nil {
			return err
		}
		defer rec.Release()
		if got := rec.Column(0).(*array.Int64).Int64Values(); len(got) != 2 || got[0] != 3 || got[1] != 0 {
			return errors.New("wrong rows")
		}
		return nil
	}
	// Every Checkout is a new lineage that resolves the base path again.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			co, err := tb.Checkout(ctx, Ref{})
			if err != nil {
				errs <- err
				return
			}
			if err := take(co); err != nil {
				errs <- err
			}
			if err := co.Close(); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := take(tb); err != nil {
		t.Fatalf("after the derived handles closed: %v", err)
	}
	if n := opens.Load(); n != 1 {
		t.Errorf("the source was opened %d times, want once", n)
	}
	if n := opened.Closes(); n != 0 {
		t.Fatalf("the source was closed %d times while the table is open", n)
	}

	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if n := opened.Closes(); n != 1 {
		t.Errorf("the source was closed %d times, want once", n)
	}
	if _, err := root.outside.get(ctx, srcURI); !errors.Is(err, lancer.ErrClosed) {
		t.Errorf("get after Close: %v, want ErrClosed", err)
	}
	if n := opens.Load(); n != 1 {
		t.Errorf("the source was opened %d times, want once", n)
	}
}

// idRows returns a reader of one batch with an int64 column id.
func idRows(t *testing.T, ids ...int64) array.RecordReader {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues(ids, nil)
	col := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, int64(len(ids)))
	col.Release()
	defer rec.Release()
	r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
