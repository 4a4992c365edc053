package table_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/table"
)

func TestCheck(t *testing.T) {
	ctx := context.Background()
	uri, tb := create(t, span(0, 10)...)
	if _, err := tb.CreateBranch(ctx, "exp", table.Ref{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.CreateTag(ctx, "v1", table.Ref{Version: 1}); err != nil {
		t.Fatal(err)
	}
	r, err := tb.Check(ctx, nil)
	if err != nil || !r.OK() || len(r.Lines) != 2 {
		t.Fatalf("a fresh table with a branch: %+v, %v", r, err)
	}

	// A tag whose version is gone is named.
	if err := os.WriteFile(filepath.Join(uri, "_refs", "tags", "gone.json"), []byte(`{"version":9}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err = tb.Check(ctx, nil)
	if err != nil || len(r.Violations) != 1 || r.Violations[0].Invariant != "B1" {
		t.Fatalf("a dangling tag: %+v, %v", r, err)
	}
	if err := os.Remove(filepath.Join(uri, "_refs", "tags", "gone.json")); err != nil {
		t.Fatal(err)
	}

	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Check(ctx, nil); !errors.Is(err, lancer.ErrClosed) {
		t.Errorf("Check on a closed handle: %v, want ErrClosed", err)
	}
}
