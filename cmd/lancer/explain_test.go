package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// legacyFixture is a dataset Lance 0.10.18 wrote with its legacy IVF_PQ
// index file (dataset/testdata/legacy_ivfpq): 400 rows indexed (cosine,
// 4 partitions), 60 appended after.
var legacyFixture = filepath.Join("..", "..", "dataset", "testdata", "legacy_ivfpq", "ivfpq_cosine.lance")

const legacyQuery = "[4,0,0,0,0,0,0,0,4,0,0,0,0,0,0,0]"

// TestSearchExplain: --explain prints the plan (golden files), not rows.
func TestSearchExplain(t *testing.T) {
	base := []string{"search", legacyFixture, "--column", "vector", "--vector", legacyQuery, "--explain"}
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"search_explain_legacy.out", []string{"-k", "5", "--nprobes", "2", "--refine-factor", "3", "--filter", "id < 200"}},
		{"search_explain_rescore.out", []string{"--metric", "cosine"}},
		{"search_explain_exact.out", []string{"--exact", "--postfilter", "--filter", "id < 200"}},
		{"search_explain_metric.out", []string{"--metric", "l2"}},
	} {
		golden(t, tc.golden, mustRun(t, append(base, tc.args...)...))
	}
	// Every query of a file gets its plan.
	qf := filepath.Join(t.TempDir(), "q.jsonl")
	if err := os.WriteFile(qf, []byte(legacyQuery+"\n"+legacyQuery+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "search", legacyFixture, "--column", "vector", "--queries", qf, "--explain")
	if strings.Count(out, "vector search on vector") != 2 || !strings.HasPrefix(out, "query 0: ") || !strings.Contains(out, "query 1: ") {
		t.Errorf("plans of a query file:\n%s", out)
	}
}

// TestSearchExplainLanceFixture explains searches through the
// indexed_v2_2 fixture's IVF_PQ and IVF_HNSW_SQ indices and lists its
// indices with Lance's type names (the fixture's expected.json).
func TestSearchExplainLanceFixture(t *testing.T) {
	root := os.Getenv("LANCER_FIXTURES")
	if root == "" {
		t.Skip("LANCER_FIXTURES not set")
	}
	ds := filepath.Join(root, "lance", "indexed_v2_2.lance")
	q := "[" + strings.TrimSuffix(strings.Repeat("0.5,", 32), ",") + "]"
	got := mustRun(t, "search", ds, "--column", "vec2", "--vector", q, "--ef", "30", "--nprobes", "1", "--explain")
	got += mustRun(t, "search", ds, "--column", "vec", "--vector", q, "--explain")
	golden(t, "search_explain_indexed.out", got)
	golden(t, "index_list_indexed.out", mustRun(t, "index", "list", ds))
	for _, want := range []string{"IvfPq", "IvfHnswSq", "BTree", "Bitmap", "LabelList", "FTS"} {
		if !strings.Contains(mustRun(t, "index", "list", ds, "--format", "json"), `"type": "`+want+`"`) {
			t.Errorf("index list lacks type %s", want)
		}
	}
}

// TestIndexListLegacy names the legacy index file's index IvfPq.
func TestIndexListLegacy(t *testing.T) {
	out := mustRun(t, "index", "list", legacyFixture)
	if !strings.Contains(out, "vector_idx  IvfPq") {
		t.Errorf("index list:\n%s", out)
	}
}
