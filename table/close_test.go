package table_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/table"
)

// TestUseAfterClose calls every method of a closed handle, and of a
// handle derived from it: each fails with lancer.ErrClosed (invariant 3).
func TestUseAfterClose(t *testing.T) {
	ctx := context.Background()
	_, tb := create(t, 0, 1, 2)
	exp, err := tb.CreateBranch(ctx, "exp", table.Ref{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checked, err := tb.Checkout(ctx, table.Ref{Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Closing a derived handle ends only its own use.
	if err := checked.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := checked.Count(ctx, ""); !errors.Is(err, lancer.ErrClosed) {
		t.Errorf("closed checkout: %v", err)
	}
	if _, err := tb.Count(ctx, ""); err != nil {
		t.Fatalf("closing a checkout closed its parent: %v", err)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tb.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	calls := map[string]func(tb *table.Table) error{
		"Checkout": func(tb *table.Table) error { _, err := tb.Checkout(ctx, table.Ref{}); return err },
		"Scan":     func(tb *table.Table) error { _, err := tb.Scan(nil); return err },
		"Take":     func(tb *table.Table) error { _, err := tb.Take(ctx, []uint64{0}, nil); return err },
		"TakeRowIDs": func(tb *table.Table) error {
			_, err := tb.TakeRowIDs(ctx, []uint64{0}, nil)
			return err
		},
		"Search": func(tb *table.Table) error { _, err := tb.Search(ctx, "vec", []float32{0, 1}, nil); return err },
		"SearchRowIDs": func(tb *table.Table) error {
			_, err := tb.SearchRowIDs(ctx, "vec", []float32{0, 1}, nil)
			return err
		},
		"ExplainSearch": func(tb *table.Table) error {
			_, err := tb.ExplainSearch(ctx, "vec", []float32{0, 1}, nil)
			return err
		},
		"Count":    func(tb *table.Table) error { _, err := tb.Count(ctx, ""); return err },
		"Versions": func(tb *table.Table) error { _, err := tb.Versions(ctx); return err },
		"Write": func(tb *table.Table) error {
			r := rows(9)
			defer r.Release()
			return tb.Write(ctx, r, &dataset.WriteOptions{Mode: dataset.WriteAppend})
		},
		"Append": func(tb *table.Table) error {
			r := rows(9)
			defer r.Release()
			return tb.Append(ctx, r, nil)
		},
		"Overwrite": func(tb *table.Table) error {
			r := rows(9)
			defer r.Release()
			return tb.Overwrite(ctx, r, nil)
		},
		"Delete":       func(tb *table.Table) error { return tb.Delete(ctx, "true", nil) },
		"DeleteRowIDs": func(tb *table.Table) error { return tb.DeleteRowIDs(ctx, []uint64{0}, nil) },
		"Update": func(tb *table.Table) error {
			_, err := tb.Update(ctx, map[string]string{"val": "'x'"}, "", nil)
			return err
		},
		"MergeInsert": func(tb *table.Table) error {
			r := rows(9)
			defer r.Release()
			_, err := tb.MergeInsert(ctx, r, &dataset.MergeInsertOptions{On: []string{"id"}, WhenNotMatchedInsertAll: true})
			return err
		},
		"AddColumns": func(tb *table.Table) error {
			return tb.AddColumns(ctx, []dataset.NewColumn{{Name: "x", Expr: "id"}}, nil)
		},
		"AddColumnsFromData": func(tb *table.Table) error {
			r := rows(9)
			defer r.Release()
			return tb.AddColumnsFromData(ctx, r, "id", nil)
		},
		"DropColumns":     func(tb *table.Table) error { return tb.DropColumns(ctx, []string{"val"}, nil) },
		"RenameColumn":    func(tb *table.Table) error { return tb.RenameColumn(ctx, "val", "v", nil) },
		"Compact":         func(tb *table.Table) error { _, err := tb.Compact(ctx, nil); return err },
		"CreateIndex":     func(tb *table.Table) error { return tb.CreateIndex(ctx, "vec", nil) },
		"DropIndex":       func(tb *table.Table) error { return tb.DropIndex(ctx, "vec_idx", nil) },
		"OptimizeIndexes": func(tb *table.Table) error { return tb.OptimizeIndexes(ctx, nil) },
		"Restore":         func(tb *table.Table) error { return tb.Restore(ctx, nil) },
		"CreateBranch": func(tb *table.Table) error {
			_, err := tb.CreateBranch(ctx, "b", table.Ref{}, nil)
			return err
		},
		"ListBranches": func(tb *table.Table) error { _, err := tb.ListBranches(ctx); return err },
		"DeleteBranch": func(tb *table.Table) error { _, err := tb.DeleteBranch(ctx, "exp", nil); return err },
		"CreateTag":    func(tb *table.Table) error { _, err := tb.CreateTag(ctx, "t", table.Ref{}); return err },
		"UpdateTag":    func(tb *table.Table) error { _, err := tb.UpdateTag(ctx, "t", table.Ref{}); return err },
		"ListTags":     func(tb *table.Table) error { _, err := tb.ListTags(ctx); return err },
		"DeleteTag":    func(tb *table.Table) error { return tb.DeleteTag(ctx, "t") },
		"Merge": func(tb *table.Table) error {
			_, err := tb.Merge(ctx, table.Ref{Branch: "exp"}, nil)
			return err
		},
		"CherryPick": func(tb *table.Table) error {
			_, err := tb.CherryPick(ctx, table.Ref{Branch: "exp"}, nil)
			return err
		},
		"MergeBase": func(tb *table.Table) error {
			_, err := tb.MergeBase(ctx, table.Ref{}, table.Ref{Branch: "exp"})
			return err
		},
		"Diff": func(tb *table.Table) error {
			_, err := tb.Diff(ctx, table.Ref{}, table.Ref{Branch: "exp"}, nil)
			return err
		},
		"Log":     func(tb *table.Table) error { _, err := tb.Log(ctx); return err },
		"Cleanup": func(tb *table.Table) error { _, err := tb.Cleanup(ctx, nil); return err },
	}
	for name, call := range calls {
		for _, h := range []*table.Table{tb, exp} {
			if err := call(h); !errors.Is(err, lancer.ErrClosed) {
				t.Errorf("%s on %+v after Close: %v, want ErrClosed", name, h.Ref(), err)
			}
		}
	}
	if tb.Dataset() != nil {
		t.Error("Dataset() after Close is not nil")
	}
}

// TestCloseReleasesCloudStore opens a table on S3 (an in-process server)
// and checks that Close closes the store it opened: the bucket refuses
// requests after it, while a table opened alone is still usable.
func TestCloseReleasesCloudStore(t *testing.T) {
	ctx := context.Background()
	backend := s3mem.New()
	if err := backend.CreateBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer srv.Close()
	opts := &table.Options{StorageOptions: map[string]string{
		"aws_endpoint": srv.URL, "aws_region": "us-east-1",
		"aws_access_key_id": "AK", "aws_secret_access_key": "SK", "allow_http": "true",
	}}
	r := rows(0, 1, 2)
	defer r.Release()
	created, err := table.Create(ctx, "s3://bkt/t.lance", r, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := created.Close(); err != nil {
		t.Fatal(err)
	}

	tb, err := table.Open(ctx, "s3://bkt/t.lance", opts)
	if err != nil {
		t.Fatal(err)
	}
	other, err := table.Open(ctx, "s3://bkt/t.lance", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	store, ok := tb.Dataset().Store().(*blob.CloudStore)
	if !ok {
		t.Fatalf("an s3 table's store is a %T", tb.Dataset().Store())
	}
	if n, err := tb.Count(ctx, ""); err != nil || n != 3 {
		t.Fatalf("count: %d, %v", n, err)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Stat(ctx, "_versions/x"); err == nil || errors.Is(err, lancer.ErrNotFound) {
		t.Errorf("the store answers after Close (%v): it was not closed", err)
	}
	if n, err := other.Count(ctx, ""); err != nil || n != 3 {
		t.Errorf("another handle's store: %d, %v", n, err)
	}
}
