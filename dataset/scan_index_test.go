package dataset

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/internal/fixturetest"
)

// scanIDs runs a filtered scan of the id column and returns the ids, in
// scan order, and the indices the scan used.
func scanIDs(t *testing.T, d *Dataset, predicate string, o ScanOptions) ([]int64, []FilterIndex) {
	t.Helper()
	o.Columns, o.Filter = []string{"id"}, predicate
	s, err := d.Scan(&o)
	if err != nil {
		t.Fatalf("%s: %v", predicate, err)
	}
	var ids []int64
	for rec, err := range s.Batches(context.Background()) {
		if err != nil {
			t.Fatalf("%s: %v", predicate, err)
		}
		ids = append(ids, rec.Column(0).(*array.Int64).Int64Values()...)
	}
	return ids, s.FilterIndices()
}

// TestScanIndexedFixture runs the indexed_v2_2 fixture's reference
// filters: the scan uses Lance's BTREE, BITMAP and LABEL_LIST indices for
// the first fragment, reads the appended one, and finds Lance's answers.
func TestScanIndexedFixture(t *testing.T) {
	path := fixturetest.DatasetPath(t, "indexed_v2_2")
	d, _ := openFixture(t, path, 0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(path), "indexed_v2_2.expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp struct {
		Queries []struct {
			Kind, Filter string
			Count        int
			IDs          []int64
		}
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	wantIndex := map[string]string{
		"id >= 990 AND id < 1005":     "id_idx",
		"category = 'cat3'":           "category_idx",
		"array_has_any(tags, ['t1'])": "tags_idx",
		"category IS NULL":            "category_idx",
	}
	n := 0
	for _, q := range exp.Queries {
		if q.Kind != "filter" {
			continue
		}
		n++
		got, uses := scanIDs(t, d, q.Filter, ScanOptions{})
		if !slices.Equal(got, q.IDs) || len(got) != q.Count {
			t.Errorf("%s: %d ids %v, Lance %d %v", q.Filter, len(got), got, q.Count, q.IDs)
		}
		if len(uses) == 0 || uses[0].Name != wantIndex[q.Filter] || !slices.Equal(uses[0].Fragments, []uint32{0}) {
			t.Errorf("%s: indices used %v, want %s on fragment 0", q.Filter, uses, wantIndex[q.Filter])
		}
		plain, none := scanIDs(t, d, q.Filter, ScanOptions{NoScalarIndex: true})
		if !slices.Equal(plain, got) || none != nil {
			t.Errorf("%s: without indices %v (indices %v), with %v", q.Filter, plain, none, got)
		}
		cnt, err := d.Count(context.Background(), q.Filter)
		if err != nil || cnt != uint64(q.Count) {
			t.Errorf("%s: Count %d, %v; Lance %d", q.Filter, cnt, err, q.Count)
		}
	}
	if n != 4 {
		t.Fatalf("%d reference filters, want 4", n)
	}
}

// TestScanIndexedFixtureMore checks filters beyond the reference ones on
// the fixture against the scan without indices: every op an index answers,
// ANDs and ORs mixing indexed and unindexed terms, Offset and Limit.
func TestScanIndexedFixtureMore(t *testing.T) {
	d, _ := openFixture(t, fixturetest.DatasetPath(t, "indexed_v2_2"), 0)
	filters := []string{
		"id = 5", "id = 1050", "id < 3", "id <= 3", "id > 1095", "id >= 998 AND id <= 1001",
		"id BETWEEN 10 AND 20", "id IN (1, 500, 999, 1000, 1099, 5000)", "id IS NULL", "id = 2.5", "id < 2.5",
		"id > -1 AND id < 0", "3 > id", "id IN (NULL, 7)",
		"category = 'cat3' AND id < 100", "category IN ('cat1', 'cat9')", "category < 'cat2'", "category >= 'cat8'",
		"category BETWEEN 'cat2' AND 'cat4'", "category = 'nope'", "category IS NULL OR id = 1",
		"category = 'cat1' OR id < 5", "category = 'cat1' OR text IS NULL", "NOT category = 'cat1'",
		"array_has(tags, 'u2')", "array_has_all(tags, ['t1', 'u1'])", "array_has_any(tags, ['t9', 't0'])",
		"array_has_any(tags, ['t1']) AND category = 'cat6'", "array_has_all(tags, ['t1', 'x'])",
		"id < 10 AND text IS NOT NULL", "lower(category) = 'cat3' AND id > 900",
	}
	for _, f := range filters {
		for _, o := range []ScanOptions{{}, {Offset: 3, Limit: 7}, {BatchSize: 64, ReadAhead: 2}} {
			got, uses := scanIDs(t, d, f, o)
			o.NoScalarIndex = true
			want, _ := scanIDs(t, d, f, o)
			if !slices.Equal(got, want) {
				t.Errorf("%s %+v: with indices %v (%v), without %v", f, o, got, uses, want)
			}
		}
	}
}
