package scalarindex

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/filter"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// The scalar index segments of the indexed_v2_2 fixture: built on its
// first fragment (ids 0..999 at row addresses 0..999).
const (
	fixtureBTree     = "1efda78f-6900-4731-a0cc-cd9ff07c1d29" // id_idx on id (int64)
	fixtureBitmap    = "df0ce838-76eb-4949-beed-5a16bfdcd7d7" // category_idx on category (utf8, nulls)
	fixtureLabelList = "697aab90-9b0b-4432-ba15-91701bcbd198" // tags_idx on tags (list<utf8>)
)

// fixtureSchema is the part of the fixture's schema the filters name.
var fixtureSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "category", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
}, nil)

type fixtureFilter struct {
	Kind   string  `json:"kind"`
	Filter string  `json:"filter"`
	IDs    []int64 `json:"ids"`
}

func fixtureStore(t testing.TB) (blob.Store, []fixtureFilter) {
	root := fixturetest.DatasetPath(t, "indexed_v2_2")
	st, err := blob.NewLocalStore(root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(root), "indexed_v2_2.expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp struct {
		Queries []fixtureFilter `json:"queries"`
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	return st, exp.Queries
}

func openFixtureIndex(t testing.TB, st blob.Store, uuid string, kind Kind, mem memory.Allocator) Index {
	t.Helper()
	ix, err := Open(context.Background(), st, "_indices/"+uuid, kind, &OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatalf("open %s %s: %v", kind, uuid, err)
	}
	return ix
}

// term returns the single index term of a filter.
func term(t testing.TB, sql string) *filter.IndexTerm {
	t.Helper()
	e, err := filter.Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	x := e.IndexExpr(fixtureSchema)
	if x == nil || x.Term == nil {
		t.Fatalf("%s: index expression %+v, want one term", sql, x)
	}
	return x.Term
}

// addrs returns the row addresses of a set, which in fragment 0 are the
// ids.
func addrs(t testing.TB, s *RowSet) []int64 {
	var out []int64
	for _, hi := range s.His() {
		if hi != 0 {
			t.Errorf("row address in fragment %d, the index covers fragment 0 only", hi)
		}
		bm, full := s.Part(hi)
		if full {
			t.Fatalf("fragment %d whole", hi)
		}
		for _, lo := range bm.ToArray() {
			out = append(out, int64(hi)<<32|int64(lo))
		}
	}
	return out
}

// TestFixtureReferenceQueries answers the fixture's reference filters
// from Lance's indices: the ids Lance returned, less those of the
// fragment appended after the indices were built.
func TestFixtureReferenceQueries(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	st, queries := fixtureStore(t)
	byColumn := map[string]Index{
		"category": openFixtureIndex(t, st, fixtureBitmap, Bitmap, mem),
		"tags":     openFixtureIndex(t, st, fixtureLabelList, LabelList, mem),
		"id":       openFixtureIndex(t, st, fixtureBTree, BTree, mem),
	}
	ctx := context.Background()
	checked := 0
	for _, q := range queries {
		if q.Kind != "filter" {
			continue
		}
		e, err := filter.Parse(q.Filter)
		if err != nil {
			t.Fatal(err)
		}
		x := e.IndexExpr(fixtureSchema)
		if x == nil {
			t.Errorf("%s: no index expression", q.Filter)
			continue
		}
		var got *RowSet
		for _, leaf := range leaves(x) {
			ix := byColumn[leaf.Column]
			if !ix.Supports(leaf) {
				t.Fatalf("%s: %s index does not support %s", q.Filter, ix.Kind(), leaf.SQL)
			}
			s, err := ix.Search(ctx, leaf)
			if err != nil {
				t.Fatalf("%s: %v", q.Filter, err)
			}
			if got == nil {
				got = s
			} else {
				got.And(s) // the reference filters are ANDs
			}
		}
		var want []int64
		for _, id := range q.IDs {
			if id < 1000 {
				want = append(want, id)
			}
		}
		if g := addrs(t, got); !slices.Equal(g, want) {
			t.Errorf("%s: index finds %d rows %v, Lance %d rows %v", q.Filter, len(g), g, len(want), want)
		}
		checked++
	}
	if checked != 4 {
		t.Errorf("checked %d reference filters, want 4", checked)
	}
}

func leaves(x *filter.IndexExpr) []*filter.IndexTerm {
	if x.Term != nil {
		return []*filter.IndexTerm{x.Term}
	}
	var out []*filter.IndexTerm
	for _, c := range x.Terms {
		out = append(out, leaves(c)...)
	}
	return out
}
