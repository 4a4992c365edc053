package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lancerdb/lancer/internal/baselinetest"
	"github.com/lancerdb/lancer/vector"
)

// TestClusteredVectorsDeterministic checks the generator's first draws,
// which lance-baseline.mjs's mulberry32(12345) makes too, and that it is a
// pure function of its arguments.
func TestClusteredVectorsDeterministic(t *testing.T) {
	r := baselinetest.NewRNG(12345)
	// mulberry32(12345)() in JavaScript.
	if got, want := r.Float(), 0.9797282677609473; got != want {
		t.Fatalf("first mulberry32(12345) draw = %v, want %v (JavaScript's)", got, want)
	}
	v1, q1 := ClusteredVectors(100, 8, 4, 3, 7)
	v2, q2 := ClusteredVectors(100, 8, 4, 3, 7)
	if len(v1) != 800 || len(q1) != 24 {
		t.Fatalf("sizes %d, %d; want 800, 24", len(v1), len(q1))
	}
	if !reflect.DeepEqual(v1, v2) || !reflect.DeepEqual(q1, q2) {
		t.Fatal("ClusteredVectors is not deterministic")
	}
	gt := GroundTruth(v1, q1, 8, 5)
	for q, ids := range gt {
		want := vector.FlatSearch(v1, 8, q1[q*8:(q+1)*8], 5, vector.L2, nil)
		for i := range want {
			if ids[i] != want[i].ID {
				t.Fatalf("ground truth of query %d: %v, FlatSearch %v", q, ids, want)
			}
		}
	}
	if r := Recall(gt, gt); r != 1 {
		t.Fatalf("Recall(gt, gt) = %v", r)
	}
}

// TestVectorSmall runs the vector suite at 5,000 rows × 32 dimensions with
// real Lance and checks properties, never timings: lancer's index finds
// the true neighbours (recall ≥ 0.9 at nprobes 20), Lance answered every
// query, the ratios are computed and the report survives JSON. It fails,
// never skips, when node or the Lance reference is missing.
func TestVectorSmall(t *testing.T) {
	dir := t.TempDir()
	rep, err := RunVector(context.Background(), VectorOptions{
		Rows: 5000, Dim: 32, Queries: 50, Runs: 1,
		Settings: []VectorSetting{{NProbes: 10}, {NProbes: 20, Ef: 100}},
		HNSW:     true,
		Lance:    true,
		Dir:      dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rep.Print(&out); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())

	if rep.Partitions != 71 {
		t.Errorf("partitions %d, want round(sqrt(5000)) = 71", rep.Partitions)
	}
	check := func(side *SideReport, wantSettings int) {
		t.Helper()
		if len(side.Settings) != wantSettings {
			t.Fatalf("%s %s: %d settings, want %d", side.Engine, side.Index, len(side.Settings), wantSettings)
		}
		for _, s := range side.Settings {
			if s.Short != 0 || len(s.IDs) != rep.Queries {
				t.Errorf("%s %s %s: %d of %d queries answered, %d short of k", side.Engine, side.Index, s.Name, len(s.IDs), rep.Queries, s.Short)
			}
			if s.QPS <= 0 {
				t.Errorf("%s %s %s: QPS %v", side.Engine, side.Index, s.Name, s.QPS)
			}
		}
		if side.Flat != nil && side.Flat.Recall != 1 {
			t.Errorf("%s flat search: recall %.3f, want 1", side.Engine, side.Flat.Recall)
		}
		if side.BuildS <= 0 || side.IndexBytes <= 0 {
			t.Errorf("%s %s: build %v s, index %d bytes", side.Engine, side.Index, side.BuildS, side.IndexBytes)
		}
	}
	check(&rep.Lancer, 2)
	if rep.Lancer.Flat == nil {
		t.Fatal("no lancer flat search")
	}
	if r := rep.Lancer.Settings[1].Recall; r < 0.9 {
		t.Errorf("lancer ivf_hnsw_sq at nprobes 20: recall %.3f, want ≥ 0.9", r)
	}
	if rep.LancerHNSW == nil {
		t.Fatal("no lancer hnsw report")
	}
	check(rep.LancerHNSW, 2) // ef default and 100
	for _, s := range rep.LancerHNSW.Settings {
		if s.Recall < 0.9 {
			t.Errorf("lancer hnsw %s: recall %.3f, want ≥ 0.9", s.Name, s.Recall)
		}
	}
	if rep.Lance == nil {
		t.Fatal("no Lance report")
	}
	check(rep.Lance, 2)
	if rep.Lance.Flat == nil {
		t.Fatal("no Lance flat search")
	}
	// Lance's index finds the neighbours too: the data and the queries
	// reached it intact, and its ids are the generator's row indices.
	if r := rep.Lance.Settings[1].Recall; r < 0.8 {
		t.Errorf("Lance IVF_HNSW_SQ at nprobes 20 ef 100: recall %.3f, want ≥ 0.8", r)
	}

	if len(rep.Ratios) != 4 {
		t.Fatalf("%d ratios, want 4: %+v", len(rep.Ratios), rep.Ratios)
	}
	for _, r := range rep.Ratios {
		if r.Ratio <= 0 && r.Note == "" {
			t.Errorf("ratio %q not computed and not explained: %+v", r.Name, r)
		}
	}
	for _, r := range rep.Ratios[1:] { // build, size, flat: always defined
		if r.Ratio <= 0 {
			t.Errorf("ratio %q not computed: %+v", r.Name, r)
		}
	}

	path := filepath.Join(dir, "report.json")
	if err := rep.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var back VectorReport
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, rep) {
		t.Errorf("the report changed through JSON:\n%s", b)
	}
}

// TestVectorReadIDs checks, lancer alone, on a table of 3 fragments, that
// reading the id column (ReadIDs) finds the same rows as mapping
// SearchRowIDs' row addresses to row indices: both name the generator's
// rows.
func TestVectorReadIDs(t *testing.T) {
	opts := VectorOptions{Rows: 3000, Dim: 16, Queries: 20, Runs: 1, Fragments: 3, Settings: []VectorSetting{{NProbes: 20}}, Dir: t.TempDir()}
	a, err := RunVector(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.ReadIDs = true
	b, err := RunVector(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Lancer.Flat.IDs, b.Lancer.Flat.IDs) {
		t.Errorf("flat search: row ids map to %v, the id column says %v", a.Lancer.Flat.IDs[:2], b.Lancer.Flat.IDs[:2])
	}
	if a.Lancer.Flat.Recall != 1 || b.Lancer.Flat.Recall != 1 {
		t.Errorf("flat recall %v and %v, want 1", a.Lancer.Flat.Recall, b.Lancer.Flat.Recall)
	}
	if a.Lancer.Settings[0].Recall < 0.9 || b.Lancer.Settings[0].Recall < 0.9 {
		t.Errorf("indexed recall %v and %v, want ≥ 0.9", a.Lancer.Settings[0].Recall, b.Lancer.Settings[0].Recall)
	}
	if a.Lance != nil || len(a.Ratios) != 0 {
		t.Error("Lance ran without Lance set")
	}
}

// TestVectorRatios checks issue #6's comparisons on made-up measurements,
// including the settings neither or one side reaches the recall at.
func TestVectorRatios(t *testing.T) {
	lancer := &SideReport{BuildS: 10, IndexBytes: 50, Flat: &SearchResult{QPS: 60},
		Settings: []SearchResult{{Name: "a", Recall: 0.94, QPS: 900}, {Name: "b", Recall: 0.96, QPS: 500}, {Name: "c", Recall: 0.97, QPS: 400}}}
	lance := &SideReport{BuildS: 25, IndexBytes: 60, Flat: &SearchResult{QPS: 12},
		Settings: []SearchResult{{Name: "a", Recall: 0.90, QPS: 200}, {Name: "b", Recall: 0.955, QPS: 180}, {Name: "c", Recall: 0.955, QPS: 190}}}
	rs := vectorRatios(lancer, lance)
	want := []struct {
		ratio float64
		met   bool
	}{{500.0 / 190, true}, {0.4, true}, {50.0 / 60, true}, {5, true}}
	if len(rs) != len(want) {
		t.Fatalf("%d ratios, want %d", len(rs), len(want))
	}
	for i, w := range want {
		if math.Abs(rs[i].Ratio-w.ratio) > 1e-9 || rs[i].Met != w.met {
			t.Errorf("%s: ratio %v met %v, want %v %v", rs[i].Name, rs[i].Ratio, rs[i].Met, w.ratio, w.met)
		}
	}

	// Lance below the recall everywhere: compared with its most accurate.
	lance.Settings[1].Recall, lance.Settings[2].Recall = 0.94, 0.93
	rs = vectorRatios(lancer, lance)
	if rs[0].Ratio != 500.0/180 || rs[0].Note == "" {
		t.Errorf("Lance below the recall: %+v, want lancer b against Lance b", rs[0])
	}
	// lancer below the recall everywhere: not met, no ratio.
	for i := range lancer.Settings {
		lancer.Settings[i].Recall = 0.5
	}
	rs = vectorRatios(lancer, lance)
	if rs[0].Ratio != 0 || rs[0].Met || rs[0].Note == "" {
		t.Errorf("lancer below the recall: %+v, want an unmet target with a note", rs[0])
	}
	// Build twice as slow as the target allows: not met.
	lancer.BuildS = 20
	if rs = vectorRatios(lancer, lance); rs[1].Met {
		t.Errorf("build ratio %v met a ≤ %v target", rs[1].Ratio, TargetBuild)
	}
}
