package dataset

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
)

// TestExpressionLimits: an expression that would build more than the
// filter package allows (three nested replaces of 300 characters each
// turning "Item-…" into 27 MB) fails every operation that evaluates one,
// filters and values alike, with the filter package's error, and commits
// nothing.
func TestExpressionLimits(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	d := writeGoods(t, blob.NewMemStore("limits"), mem, 10, WriteOptions{})
	r300 := "'" + strings.Repeat("r", 300) + "'"
	grown := "replace(replace(replace(name, 'I', " + r300 + "), 'r', " + r300 + "), 'r', " + r300 + ")"
	where := grown + " = 'x'"
	const want = "filter.MaxValueBytes"
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, lancer.ErrInvalidArgument) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an ErrInvalidArgument naming %s", what, err, want)
		}
	}
	_, err := d.Count(ctx, where)
	check("Count", err)
	_, err = filteredIDs(t, d, &ScanOptions{Columns: []string{"id"}, Filter: where})
	check("Scan", err)
	_, err = d.Delete(ctx, where, nil)
	check("Delete", err)
	_, _, err = d.Update(ctx, map[string]string{"name": "'x'"}, where, nil)
	check("Update where", err)
	_, _, err = d.Update(ctx, map[string]string{"name": grown}, "id = 2", nil)
	check("Update set", err)
	_, err = d.AddColumns(ctx, []NewColumn{{Name: "big", Expr: grown}}, nil)
	check("AddColumns", err)

	latest, err := Open(ctx, d.store, &OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if latest.Version() != d.Version() {
		t.Errorf("version %d after the failures, want %d", latest.Version(), d.Version())
	}
}
