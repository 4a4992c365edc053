package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lancerdb/lancer/internal/baselinetest"
)

// TestCoreDataMatchesClustered checks that the core suite's data is the
// vector suite's (ClusteredVectors) and that its texts are
// lance-baseline.mjs's, whose first three texts (N = 3) node printed.
func TestCoreDataMatchesClustered(t *testing.T) {
	vecs, queries, texts := CoreData(3, 128, 256, 100, 12345)
	wv, wq := ClusteredVectors(3, 128, 256, 100, 12345)
	if !slices.Equal(vecs, wv) || !slices.Equal(queries, wq) {
		t.Fatal("CoreData's vectors or queries differ from ClusteredVectors'")
	}
	want := []string{
		"row 0: fragment embedding search dataset lance blo",
		"row 1: vector manifest scan table table video sear",
		"row 2: dataset blob fragment image filter dataset ",
	}
	if !slices.Equal(texts, want) {
		t.Fatalf("texts = %q, want %q (lance-baseline.mjs's)", texts, want)
	}
	// The take offsets' stream: mulberry32(777) × 200000, as the baseline.
	r := baselinetest.NewRNG(777)
	var offs []int
	for range 5 {
		offs = append(offs, int(r.Float()*200000))
	}
	if w := []int{137275, 6890, 38477, 24600, 126593}; !slices.Equal(offs, w) {
		t.Fatalf("take offsets %v, want %v (lance-baseline.mjs's)", offs, w)
	}
}

// TestCoreSmall runs the core suite at 5,000 rows with real Lance and
// checks properties of the report only, never timings: every step has
// both sides' runs, the ratios are positive, recall is measured for both
// engines at every setting, report.json round-trips, and the plots are
// PNG files. Like the other suites' tests it fails, never skips, when node
// or the Lance reference is missing.
func TestCoreSmall(t *testing.T) {
	out := t.TempDir()
	profiles := filepath.Join(t.TempDir(), "profiles")
	opts := CoreOptions{Rows: 5000, Runs: 2, Settings: []VectorSetting{{10, 0}, {20, 100}}, Dir: t.TempDir(), ProfileDir: profiles}
	if testing.Verbose() {
		opts.Log = os.Stderr
	}
	rep, err := RunCore(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Write(out); err != nil {
		t.Fatal(err)
	}

	wantSteps := []string{"write_oneshot", "write_appends", "scan_full", "scan_full_1file", "scan_id", "scan_vector", "scan_text",
		"take_offsets", "take_rowids", "filter_1pct", "count_rows", "flat_search", "index_build", "search_np10_efdef", "search_np20_ef100",
		"search_lanceidx_np10_efdef", "search_lanceidx_np20_ef100", "search_lanceridx_np10_efdef", "search_lanceridx_np20_ef100",
		"index_build_fresh"}
	var names []string
	for _, s := range rep.Steps {
		names = append(names, s.Name)
		if s.LancerMS <= 0 || s.LanceMS <= 0 || s.Ratio <= 0 {
			t.Errorf("step %s: lancer %v ms, Lance %v ms, ratio %v: want all positive", s.Name, s.LancerMS, s.LanceMS, s.Ratio)
		}
	}
	if !slices.Equal(names, wantSteps) {
		t.Errorf("steps %v, want %v", names, wantSteps)
	}
	for _, d := range rep.StepDetails {
		if len(d.Lancer.RunsMS) != 2 || len(d.Lance.RunsMS) != 2 {
			t.Errorf("step %s: %d lancer and %d Lance runs, want 2 each", d.Name, len(d.Lancer.RunsMS), len(d.Lance.RunsMS))
		}
		if d.Lancer.Includes == "" || d.Lance.Includes == "" {
			t.Errorf("step %s does not say what its figures include", d.Name)
		}
		if !(d.Lancer.MinMS <= d.Lancer.MedianMS && d.Lancer.MedianMS <= d.Lancer.MaxMS) {
			t.Errorf("step %s: lancer min/median/max %v/%v/%v", d.Name, d.Lancer.MinMS, d.Lancer.MedianMS, d.Lancer.MaxMS)
		}
		if !(d.RatioLow > 0 && d.RatioLow <= d.Ratio && d.Ratio <= d.RatioHigh) {
			t.Errorf("step %s: ratio %v outside its interval %v–%v", d.Name, d.Ratio, d.RatioLow, d.RatioHigh)
		}
		for _, kind := range []string{"cpu", "allocs"} {
			if fi, err := os.Stat(filepath.Join(profiles, d.Name+"."+kind+".pprof")); err != nil || fi.Size() == 0 {
				t.Errorf("step %s: no %s profile (%v)", d.Name, kind, err)
			}
		}
	}
	if !rep.Workload.Warmup {
		t.Error("the report says the steps had no warm-up run")
	}
	if len(rep.RecallQPS) != 2*7 {
		t.Errorf("%d recall_qps entries, want 14 (flat and 2 settings on each engine's own index, on Lance's and on lancer's; both engines)", len(rep.RecallQPS))
	}
	// On the same index files both engines find the same rows (#17's
	// parity: the same top k on at least 99% of HNSW queries), so their
	// recall differs by little; which files they searched is recorded.
	files := map[string]int{}
	for i := 0; i+1 < len(rep.RecallQPS); i += 2 {
		a, L := rep.RecallQPS[i], rep.RecallQPS[i+1]
		if a.Engine != "lancer" || L.Engine != "lance" || a.Index != L.Index || a.Setting != L.Setting {
			t.Errorf("recall_qps pair %+v, %+v: want lancer then Lance at one setting on the same files", a, L)
		}
		files[a.Index]++
		if a.Index != "" && math.Abs(a.Recall-L.Recall) > 0.05 {
			t.Errorf("on %s's index files at %s: lancer's recall %.3f, Lance's %.3f", a.Index, a.Setting, a.Recall, L.Recall)
		}
	}
	if files[""] != 3 || files["lance"] != 2 || files["lancer"] != 2 {
		t.Errorf("searches by index files %v, want 3 on each engine's own, 2 on Lance's and 2 on lancer's", files)
	}
	var t17 int
	for _, x := range rep.Targets {
		if x.Issue == "#17" {
			t17++
		}
	}
	if t17 != 4 {
		t.Errorf("%d #17 targets, want QPS at the recall target on Lance's and on lancer's index files, and the fresh build's memory and time", t17)
	}
	// The fresh-process build: both halves measured in processes of their
	// own, which open only the table (far below this process, which holds
	// the suite's input and Lance's replies).
	for _, name := range []string{"peak_rss_build_fresh", "peak_rss_build_fresh_growth"} {
		if rep.memory(name) == nil {
			t.Errorf("no %s memory figure", name)
		}
	}
	if f, in := rep.memory("peak_rss_build_fresh"), rep.memory("peak_rss"); f != nil && in != nil && f.LancerBytes >= in.LancerBytes {
		t.Errorf("the fresh process peaked at %d bytes, not below this one's %d: was it this process?", f.LancerBytes, in.LancerBytes)
	}
	for _, x := range rep.RecallQPS {
		if x.QPS <= 0 || x.Recall < 0 || x.Recall > 1 {
			t.Errorf("recall_qps %+v: want QPS > 0 and recall in [0, 1]", x)
		}
		if x.Setting == "flat" && x.Recall != 1 {
			t.Errorf("%s's exact search has recall %v, want 1", x.Engine, x.Recall)
		}
	}
	for _, s := range append(slices.Clone(rep.Sizes), rep.Memory...) {
		if s.LancerBytes <= 0 || s.LanceBytes <= 0 || s.Ratio <= 0 {
			t.Errorf("%s: lancer %d B, Lance %d B, ratio %v: want all positive", s.Name, s.LancerBytes, s.LanceBytes, s.Ratio)
		}
	}
	if len(rep.Targets) == 0 {
		t.Error("no targets")
	}
	for _, name := range []string{limitPageCache, limitMemorySum} {
		l := rep.limit(name)
		if l == nil || l.MedianMS <= 0 || l.Bytes <= 0 || l.GBps <= 0 || !(l.MinMS <= l.MedianMS && l.MedianMS <= l.MaxMS) {
			t.Errorf("machine limit %s: %+v, want it measured", name, l)
		}
	}
	if s := rep.size("data_files_appends"); s != nil && rep.limit(limitPageCache) != nil && rep.limit(limitPageCache).Bytes != s.LancerBytes {
		t.Errorf("the page-cache read covered %d bytes, the 20-fragment table's data files are %d", rep.limit(limitPageCache).Bytes, s.LancerBytes)
	}
	var t23 int
	for _, x := range rep.Targets {
		if x.Issue == "#23" {
			t23++
		}
	}
	if want := len(TableSteps) + 1; t23 != want {
		t.Errorf("%d #23 targets, want %d (each table step and the page-cache bound)", t23, want)
	}
	if sec := rep.ReadmeSection(); !strings.Contains(sec, rep.Versions.Lancer) || !strings.Contains(sec, "page cache read") {
		t.Errorf("the README section of the run lacks its commit or its limits:\n%s", sec)
	}
	if rep.Versions.LanceDB == "" || rep.Versions.Node == "" || rep.Machine.CPUs == 0 {
		t.Errorf("versions %+v, machine %+v: want them filled in", rep.Versions, rep.Machine)
	}

	// report.json: the fields the issue names, and a round trip.
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var generic struct {
		Steps []map[string]any `json:"steps"`
		RQ    []map[string]any `json:"recall_qps"`
	}
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	for _, s := range generic.Steps {
		for _, k := range []string{"name", "lancer_ms", "lance_ms", "ratio"} {
			if _, ok := s[k]; !ok {
				t.Fatalf("report.json step %v has no %q", s, k)
			}
		}
	}
	for _, s := range generic.RQ {
		for _, k := range []string{"engine", "setting", "recall", "qps"} {
			if _, ok := s[k]; !ok {
				t.Fatalf("report.json recall_qps %v has no %q", s, k)
			}
		}
	}
	back, err := ReadCoreReport(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := json.MarshalIndent(back, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(again, '\n'), raw) {
		t.Error("report.json does not round-trip through CoreReport")
	}

	for _, name := range []string{"recall_qps.png", "steps.png"} {
		f, err := os.Open(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
			t.Errorf("%s is %v", name, b)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| step |", "recall_qps.png", "steps.png", "write_appends"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
}

// TestSameFilesQPSTarget: #17's targets compare the engines on the same
// index files at the recall target, or, when one of them reaches it at no
// setting, at the best recall both reach, each at its fastest setting.
func TestSameFilesQPSTarget(t *testing.T) {
	rq := func(engine, setting, files string, recall, qps float64) RecallQPS {
		return RecallQPS{Engine: engine, Setting: setting, Index: files, Recall: recall, QPS: qps}
	}
	for _, tc := range []struct {
		name  string
		rqs   []RecallQPS
		ratio float64
		note  string
	}{
		{"both reach the target", []RecallQPS{
			rq("lancer", "a", "lance", 0.90, 3000), rq("lance", "a", "lance", 0.90, 400),
			rq("lancer", "b", "lance", 0.96, 1000), rq("lance", "b", "lance", 0.955, 200),
			rq("lancer", "c", "lance", 0.97, 500), rq("lance", "c", "lance", 0.97, 100),
		}, 5, "lancer b, Lance b"},
		{"neither reaches it", []RecallQPS{
			rq("lancer", "a", "lance", 0.69, 2333), rq("lance", "a", "lance", 0.717, 303),
			rq("lancer", "b", "lance", 0.949, 1618), rq("lance", "b", "lance", 0.944, 271),
			rq("lancer", "c", "lance", 0.949, 2067), rq("lance", "c", "lance", 0.949, 285),
			rq("lancer", "d", "lance", 0.949, 462), rq("lance", "d", "lance", 0.949, 122),
		}, 2067.0 / 285, "best recall both engines reach is 0.949"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &CoreReport{RecallQPS: tc.rqs}
			r.Workload.K = 10
			r.finish(time.Now())
			var got *Target
			for i, x := range r.Targets {
				if x.Issue == "#17" && strings.Contains(x.Name, "Lance's index files") {
					got = &r.Targets[i]
				}
			}
			if got == nil || math.Abs(got.Ratio-tc.ratio) > 1e-9 || !strings.Contains(got.Note, tc.note) {
				t.Fatalf("target %+v, want ratio %v and a note saying %q", got, tc.ratio, tc.note)
			}
		})
	}
}
