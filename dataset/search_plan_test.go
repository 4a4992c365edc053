package dataset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/manifest"
)

func fixtureVector(t *testing.T, raw json.RawMessage) []float32 {
	t.Helper()
	var q []float32
	if err := json.Unmarshal(raw, &q); err != nil {
		t.Fatal(err)
	}
	return q
}

// The indexed_v2_2 fixture's vector segments (vecindex/fixture_test.go).
const (
	fixtureVecIdx  = "6e51a605-1a7c-4f6b-b4ff-64699fed39d0" // vec_idx, IVF_PQ, 4 partitions
	fixtureVec2Idx = "cfb53b38-2d55-4900-80e7-403cbfd28b77" // vec2_idx, IVF_HNSW_SQ, 2 partitions
)

// TestIndexTypeName names the fixture's Lance-built indices as Lance
// lists them (the fixture's expected.json, from LanceDB's listIndices).
func TestIndexTypeName(t *testing.T) {
	path, _ := lanceFixtureQueries(t)
	d, _ := openFixture(t, path, 0)
	want := map[string]string{"vec_idx": "IvfPq", "vec2_idx": "IvfHnswSq", "id_idx": "BTree",
		"category_idx": "Bitmap", "tags_idx": "LabelList", "text_idx": "FTS"}
	got := map[string]string{}
	for _, ix := range d.Indices() {
		got[ix.Name] = d.IndexTypeName(context.Background(), ix)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("index %s: type %q, Lance %q (all: %v)", name, got[name], w, got)
		}
	}
	// The legacy file is an IvfPq too.
	ld, _ := openFixture(t, filepath.Join("testdata", "legacy_ivfpq", "ivfpq_l2.lance"), 0)
	if n := ld.IndexTypeName(context.Background(), ld.Indices()[0]); n != "IvfPq" {
		t.Errorf("legacy index: %q", n)
	}
}

// TestSearchPlanLance: the plan of a search through the fixture's Lance
// indices says which index, segments, partitions and unindexed fragments,
// and ExplainSearch's equals what Search fills in.
func TestSearchPlanLance(t *testing.T) {
	path, queries := lanceFixtureQueries(t)
	d, _ := openFixture(t, path, 0)
	q := fixtureVector(t, queries[0].RawQuery)
	var plan SearchPlan
	o := &SearchOptions{K: 5, NProbes: 3, Plan: &plan, Filter: "id > 10"}
	if _, err := d.SearchRowIDs(context.Background(), "vec", q, o); err != nil {
		t.Fatal(err)
	}
	if plan.Index != "vec_idx" || plan.IndexType != "IvfPq" || plan.Lancer || plan.Legacy || plan.Exact ||
		!slices.Equal(plan.Segments, []string{fixtureVecIdx}) || plan.Partitions != 4 || plan.PartitionsProbed != 3 ||
		plan.IndexedFragments != 1 || !slices.Equal(plan.UnindexedFragments, []uint64{1}) || plan.RowsScoredExactly != 100 ||
		!plan.Rescore || plan.FilterMode != "prefilter" || plan.Metric != "l2" {
		t.Errorf("plan %+v", plan)
	}
	ex, err := d.ExplainSearch(context.Background(), "vec", q, o)
	if err != nil {
		t.Fatal(err)
	}
	if ex.String() != plan.String() {
		t.Errorf("ExplainSearch:\n%s\nSearch:\n%s", ex, &plan)
	}
	for _, s := range []string{"vec_idx (IvfPq, Lance)", "partitions probed: 3 of 4", "1 [1], 100 rows scored exactly", `prefilter "id > 10"`} {
		if !strings.Contains(plan.String(), s) {
			t.Errorf("plan text lacks %q:\n%s", s, &plan)
		}
	}
	// Exact: every row, and the index left aside is named.
	ex, err = d.ExplainSearch(context.Background(), "vec", q, &SearchOptions{Exact: true, Postfilter: true, Filter: "id > 10"})
	if err != nil {
		t.Fatal(err)
	}
	if !ex.Exact || ex.ExactReason != "requested" || ex.RowsScoredExactly != 1100 || ex.FilterMode != "postfilter" ||
		len(ex.Notes) != 1 || !strings.Contains(ex.Notes[0], "vec_idx (IvfPq) not used") {
		t.Errorf("exact plan %+v", ex)
	}
	// A bad filter fails ExplainSearch as it fails Search.
	if _, err := d.ExplainSearch(context.Background(), "vec", q, &SearchOptions{Filter: "id >"}); err == nil {
		t.Error("ExplainSearch with a malformed filter succeeded")
	}
}

// TestSearchUnsupportedLanceIndex: an index of a kind lancer cannot
// search (IVF_RQ, made by renaming the fixture's IVF_PQ) is an error
// wrapping lancer.ErrUnsupported, never a silent exact search; asked for,
// the exact search runs and its plan says why the index is not used.
func TestSearchUnsupportedLanceIndex(t *testing.T) {
	_, queries := lanceFixtureQueries(t)
	dir, store := copyFixture(t, "indexed_v2_2")
	file := filepath.Join(dir, "_indices", fixtureVecIdx, "index.idx")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	patched := bytes.Replace(b, []byte(`"type":"IVF_PQ"`), []byte(`"type":"IVF_RQ"`), 1)
	if bytes.Equal(patched, b) {
		t.Fatal("no IVF_PQ type in the segment")
	}
	if err := os.WriteFile(file, patched, 0o644); err != nil {
		t.Fatal(err)
	}
	d := openStore(t, store, 0, checkedAlloc(t))
	q := fixtureVector(t, queries[0].RawQuery)
	_, err = d.SearchRowIDs(context.Background(), "vec", q, &SearchOptions{K: 5})
	if !errors.Is(err, lancer.ErrUnsupported) || !strings.Contains(err.Error(), "IVF_RQ") || !strings.Contains(err.Error(), "Exact") {
		t.Fatalf("search through an IVF_RQ index: %v", err)
	}
	if _, err := d.ExplainSearch(context.Background(), "vec", q, &SearchOptions{K: 5}); !errors.Is(err, lancer.ErrUnsupported) {
		t.Fatalf("explain through an IVF_RQ index: %v", err)
	}
	var plan SearchPlan
	hits, err := d.SearchRowIDs(context.Background(), "vec", q, &SearchOptions{K: 5, Exact: true, Plan: &plan})
	if err != nil || len(hits) != 5 {
		t.Fatalf("exact search: %v, %d rows", err, len(hits))
	}
	want := []int64{}
	for _, h := range queries[0].Exact[:5] {
		want = append(want, h.ID)
	}
	ids, _, err := lanceSearchIDs(t, d, "vec", q, &SearchOptions{K: 5, Exact: true})
	if err != nil || !slices.Equal(ids, want) {
		t.Errorf("exact search: %v %v, Lance %v", ids, err, want)
	}
	if !plan.Exact || plan.ExactReason != "requested" || len(plan.Notes) != 1 || !strings.Contains(plan.Notes[0], "IvfRq") ||
		!strings.Contains(plan.Notes[0], "cannot search") {
		t.Errorf("plan %+v", plan)
	}
	if n := d.IndexTypeName(context.Background(), d.Indices()[slices.IndexFunc(d.Indices(), func(ix manifest.IndexInfo) bool { return ix.Name == "vec_idx" })]); n != "IvfRq" {
		t.Errorf("IndexTypeName: %q", n)
	}
}

// TestIndexTypeNameWithoutDetails: old Lance wrote index segments without
// index_details (scalar ones as well as vector ones). Lance then tells the
// type by the segment's files and column (infer_scalar_index_details):
// index.idx means a vector index, a list column a LabelList, bitmap and
// inverted lookup files a Bitmap or FTS index, and the rest a BTree. With
// every segment's details removed, lancer names the fixture's indices as
// Lance lists them; without the inference the BTree (and the others) came
// out as "Vector".
func TestIndexTypeNameWithoutDetails(t *testing.T) {
	path, _ := lanceFixtureQueries(t)
	dir := filepath.Join(t.TempDir(), "t.lance")
	copyTree(t, path, dir)
	d, _ := openFixture(t, dir, 0)
	editLatest(t, d.Store(), func(m *manifest.Manifest) {
		segs := m.IndexSegments()
		for _, s := range segs {
			s.Details = nil
		}
		m.SetIndexSegments(segs)
	})
	d, _ = openFixture(t, dir, 0)
	want := map[string]string{"vec_idx": "IvfPq", "vec2_idx": "IvfHnswSq", "id_idx": "BTree",
		"category_idx": "Bitmap", "tags_idx": "LabelList", "text_idx": "FTS"}
	got := map[string]string{}
	for _, ix := range d.Indices() {
		if ix.TypeURL != "" {
			t.Fatalf("index %s still has details %q", ix.Name, ix.TypeURL)
		}
		got[ix.Name] = d.IndexTypeName(context.Background(), ix)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("index %s without details: type %q, Lance %q (all: %v)", name, got[name], w, got)
		}
	}
}
