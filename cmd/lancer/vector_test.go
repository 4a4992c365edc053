package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeVectors writes a JSON lines file of n rows {id, label, vector}: row
// i's vector is (i, i, i, 1) scaled, so the rows nearest to row i are i±1,
// i±2, ...
func writeVectors(t *testing.T, dir string, from, to int) string {
	t.Helper()
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, `{"id": %d, "label": "l%d", "vector": [%d, %d, %d, 1]}`+"\n", i, i%3, i, i, i)
	}
	p := filepath.Join(dir, fmt.Sprintf("v%d.jsonl", from))
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type hit struct {
	QueryIndex *int    `json:"query_index"`
	ID         int64   `json:"id"`
	Label      string  `json:"label"`
	Distance   float32 `json:"_distance"`
}

func hits(t *testing.T, out string) []hit {
	t.Helper()
	var hs []hit
	for _, line := range jsonLines(out) {
		var h hit
		if err := json.Unmarshal(line, &h); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		hs = append(hs, h)
	}
	return hs
}

func hitIDs(hs []hit) []int64 {
	var out []int64
	for _, h := range hs {
		out = append(out, h.ID)
	}
	return out
}

func TestIndexAndSearchVerbs(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "v.lance")
	mustRun(t, "import", writeVectors(t, dir, 0, 200), ds)

	if got := mustRun(t, "index", "list", ds); strings.Count(got, "\n") != 1 {
		t.Fatalf("index list of an unindexed dataset: %q", got)
	}
	out := mustRun(t, "index", "create", ds, "--column", "vector", "--type", "ivf_hnsw_sq", "--partitions", "4")
	if !strings.HasPrefix(out, `created index "vector_idx" on vector over 200 rows in `) || !strings.HasSuffix(out, "; version 2\n") {
		t.Fatalf("index create printed %q", out)
	}
	var list []struct {
		Name      string `json:"name"`
		Type      string `json:"type"`
		Unindexed int    `json:"unindexed_fragments"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "index", "list", ds, "--format", "json")), &list); err != nil ||
		len(list) != 1 || list[0].Name != "vector_idx" || list[0].Type != "IvfHnswSq" || list[0].Unindexed != 0 {
		t.Fatalf("index list: %v %+v", err, list)
	}

	// Rows appended after the index are found.
	mustRun(t, "import", writeVectors(t, dir, 200, 210), ds, "--mode", "append")
	hs := hits(t, mustRun(t, "search", ds, "--column", "vector", "--vector", "[205, 205, 205, 1]", "-k", "3", "--format", "jsonl", "--nprobes", "4"))
	if ids := hitIDs(hs); len(ids) != 3 || ids[0] != 205 || hs[0].Distance != 0 {
		t.Fatalf("search near 205: %+v", hs)
	}
	hs = hits(t, mustRun(t, "search", ds, "--column", "vector", "--near-row", "50", "-k", "3", "--format", "jsonl",
		"--filter", "label = 'l1'", "--columns", "id,label"))
	for _, h := range hs {
		if h.Label != "l1" {
			t.Fatalf("filter ignored: %+v", hs)
		}
	}
	if ids := hitIDs(hs); fmt.Sprint(ids) != "[49 52 46]" && fmt.Sprint(ids) != "[52 49 46]" {
		t.Fatalf("search near row 50 with label l1: %v", ids)
	}

	// Many queries in one process, each row with its query_index.
	qf := filepath.Join(dir, "q.jsonl")
	if err := os.WriteFile(qf, []byte("[10, 10, 10, 1]\n\n[100, 100, 100, 1]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hs = hits(t, mustRun(t, "search", ds, "--column", "vector", "--queries", qf, "-k", "2", "--format", "jsonl", "--exact"))
	if len(hs) != 4 || *hs[0].QueryIndex != 0 || hs[0].ID != 10 || *hs[2].QueryIndex != 1 || hs[2].ID != 100 {
		t.Fatalf("batch search: %+v", hs)
	}
	if got := mustRun(t, "search", ds, "--column", "vector", "--vector", "[1,1,1,1]", "-k", "1", "--columns", "id"); !strings.Contains(got, "_distance") || !strings.Contains(got, "(1 rows)") {
		t.Fatalf("table output: %q", got)
	}

	// The IVF_HNSW_SQ index gets a delta over the appended rows.
	if got := mustRun(t, "index", "optimize", ds); got != "indexed the new fragments; version 4\n" {
		t.Fatalf("index optimize: %q", got)
	}
	if got := mustRun(t, "index", "optimize", ds); got != "indices are up to date; version 4\n" {
		t.Fatalf("second index optimize: %q", got)
	}
	list = nil
	if err := json.Unmarshal([]byte(mustRun(t, "index", "list", ds, "--format", "json")), &list); err != nil ||
		len(list) == 0 || list[0].Name != "vector_idx" || list[0].Type != "IvfHnswSq" || list[0].Unindexed != 0 {
		t.Fatalf("index list after optimize: %v %+v", err, list)
	}
	if got := mustRun(t, "index", "drop", ds, "vector_idx"); got != `dropped index "vector_idx"; version 5`+"\n" {
		t.Fatalf("index drop: %q", got)
	}
	// An IVF_PQ index is extended by a segment over the new fragments.
	mustRun(t, "index", "create", ds, "--column", "vector", "--type", "ivf_pq", "--partitions", "2", "--name", "pq_idx")
	mustRun(t, "import", writeVectors(t, dir, 300, 310), ds, "--mode", "append")
	if got := mustRun(t, "index", "optimize", ds); got != "indexed the new fragments; version 8\n" {
		t.Fatalf("index optimize: %q", got)
	}
	if got := mustRun(t, "index", "optimize", ds); got != "indices are up to date; version 8\n" {
		t.Fatalf("second index optimize: %q", got)
	}
	if got := mustRun(t, "index", "drop", ds, "pq_idx"); got != `dropped index "pq_idx"; version 9`+"\n" {
		t.Fatalf("index drop: %q", got)
	}
}

func TestSearchErrors(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "v.lance")
	mustRun(t, "import", writeVectors(t, dir, 0, 20), ds)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"search", ds, "--vector", "[1,2,3,4]"}, "exactly one of"},
		{[]string{"search", ds, "--column", "vector"}, "exactly one of"},
		{[]string{"search", ds, "--column", "vector", "--vector", "[1,2]"}, "query of 2 dimensions"},
		{[]string{"search", ds, "--column", "vector", "--vector", "nope"}, "--vector: want a JSON array"},
		{[]string{"search", ds, "--column", "label", "--vector", "[1]"}, "not a vector"},
		{[]string{"search", ds, "--column", "vector", "--near-row", "999"}, "--near-row 999"},
		{[]string{"search", ds, "--column", "vector", "--vector", "[1,2,3,4]", "--filter", "nosuch = 1"}, "nosuch"},
		{[]string{"search", ds, "--column", "vector", "--queries", filepath.Join(dir, "missing")}, "--queries"},
		{[]string{"index", "create", ds}, "needs --column"},
		{[]string{"index", "create", ds, "--column", "vector", "--type", "pq"}, `index type "pq"`},
		{[]string{"index", "create", ds, "--column", "vector", "--metric", "hamming"}, "hamming"},
		{[]string{"index", "drop", ds, "nosuch"}, `no index named "nosuch"`},
	} {
		code, _, errOut := runLancer(t, tc.args...)
		if code != 1 || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "goroutine") {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, code, errOut, tc.want)
		}
	}
}

// TestSearchHugeK: -k (and --refine-factor, --nprobes, --ef) are the
// user's; a k beyond the rows lists every row, nearest first, and a
// k × refine factor past the integers is an error, never a process
// killed by an out-of-memory or an empty answer.
func TestSearchHugeK(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "v.lance")
	mustRun(t, "import", writeVectors(t, dir, 0, 20), ds)
	mustRun(t, "index", "create", ds, "--column", "vector", "--type", "ivf_flat", "--partitions", "2")
	// Checked first: unfixed, the product wrapped and the search answered
	// no rows (exit 0), and a huge -k below asked for 32 GiB up front.
	code, out, errOut := runLancer(t, "search", ds, "--column", "vector", "--vector", "[0,0,0,1]", "-k", "3",
		"--refine-factor", "4611686018427387904", "--format", "jsonl")
	if code != 1 || !strings.Contains(errOut, "refine factor") {
		t.Fatalf("k × refine factor overflowing: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	for _, args := range [][]string{
		{"-k", "2147483647"},
		{"-k", "9223372036854775807", "--exact"},
		{"-k", "2147483647", "--refine-factor", "1000000", "--nprobes", "2147483647", "--ef", "2147483647"},
	} {
		args = append([]string{"search", ds, "--column", "vector", "--vector", "[0,0,0,1]", "--format", "jsonl"}, args...)
		ids := hitIDs(hits(t, mustRun(t, args...)))
		if fmt.Sprint(ids) != fmt.Sprint(seqIDs(20)) {
			t.Errorf("%v: %v, want every row nearest first", args[7:], ids)
		}
	}
	for _, flag := range []string{"--nprobes", "--ef", "--refine-factor"} {
		code, _, errOut := runLancer(t, "search", ds, "--column", "vector", "--vector", "[0,0,0,1]", flag, "-1")
		if code != 1 || !strings.Contains(errOut, "negative") {
			t.Errorf("%s -1: exit %d, stderr %q", flag, code, errOut)
		}
	}
}

// seqIDs is 0, 1, ..., n-1.
func seqIDs(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

// TestIndexOptimizeMergesSegments: index optimize adds a delta segment by
// default; --num-indices-to-merge 2 replaces the two newest segments with
// one over their fragments and the new one, after which compact merges
// the fragments that segment covers (it never gathers fragments different
// segments cover); lancer optimize takes the flag too; a negative count
// is refused.
func TestIndexOptimizeMergesSegments(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "v.lance")
	mustRun(t, "import", writeVectors(t, dir, 0, 40), ds)
	mustRun(t, "index", "create", ds, "--column", "vector", "--type", "ivf_flat", "--partitions", "2")
	segments := func() (n int, frags [][]uint32) {
		t.Helper()
		var list []struct {
			Name      string   `json:"name"`
			Fragments []uint32 `json:"fragments"`
		}
		if err := json.Unmarshal([]byte(mustRun(t, "index", "list", ds, "--format", "json")), &list); err != nil {
			t.Fatal(err)
		}
		for _, ix := range list {
			frags = append(frags, ix.Fragments)
		}
		return len(list), frags
	}
	for i := range 3 {
		mustRun(t, "import", writeVectors(t, dir, 40+10*i, 50+10*i), ds, "--mode", "append")
		mustRun(t, "index", "optimize", ds)
	}
	if n, frags := segments(); n != 4 {
		t.Fatalf("after three default optimizes: %d segments %v, want 4", n, frags)
	}
	mustRun(t, "import", writeVectors(t, dir, 70, 80), ds, "--mode", "append")
	mustRun(t, "index", "optimize", ds, "--num-indices-to-merge", "2")
	n, frags := segments()
	if n != 3 || len(frags[2]) != 3 {
		t.Fatalf("after --num-indices-to-merge 2: %d segments %v, want 3, the last over 3 fragments", n, frags)
	}
	mustRun(t, "compact", ds)
	if n, frags := segments(); n != 3 || len(frags[2]) != 1 {
		t.Fatalf("after compact: %d segments %v, want the merged segment's 3 fragments compacted into 1", n, frags)
	}
	mustRun(t, "import", writeVectors(t, dir, 80, 90), ds, "--mode", "append")
	mustRun(t, "optimize", ds, "--no-compact", "--no-cleanup", "--num-indices-to-merge", "99")
	if n, frags := segments(); n != 1 {
		t.Fatalf("after optimize --num-indices-to-merge 99: %d segments %v, want 1", n, frags)
	}
	got := mustRun(t, "search", ds, "--column", "vector", "--vector", "[85,85,85,1]", "-k", "1", "--format", "jsonl")
	if hs := hits(t, got); len(hs) != 1 || hs[0].ID != 85 {
		t.Fatalf("search after the merge: %q", got)
	}
	for _, args := range [][]string{{"index", "optimize", ds, "--num-indices-to-merge", "-1"}, {"optimize", ds, "--num-indices-to-merge", "-1"}} {
		if code, _, errOut := runLancer(t, args...); code == 0 || !strings.Contains(errOut, "--num-indices-to-merge") {
			t.Errorf("%v: exit %d, %q, want an error naming the flag", args, code, errOut)
		}
	}
}
