package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// TestTextGenDeterministic checks that the text workload is a function of
// its seed, batch by batch, and has the shape the suite relies on: ids in
// order, sentences of 6-18 words, phrases drawn from the rows, and queries
// of every kind.
func TestTextGenDeterministic(t *testing.T) {
	draw := func(seed uint64) ([]string, []TextQuery) {
		g := NewTextGen(70_000, 500, 5, seed)
		var texts []string
		var id int64
		for rec := g.Next(); rec != nil; rec = g.Next() {
			ids, txt := rec.Column(0).(*array.Int64), rec.Column(1).(*array.String)
			for i := range txt.Len() {
				if ids.Value(i) != id {
					t.Fatalf("row %d has id %d", id, ids.Value(i))
				}
				id++
				texts = append(texts, txt.Value(i))
			}
			rec.Release()
		}
		if id != 70_000 {
			t.Fatalf("%d rows, want 70000", id)
		}
		return texts, TextQueries(g, 5, seed+1)
	}
	a, qa := draw(7)
	b, qb := draw(7)
	c, _ := draw(8)
	if !slices.Equal(a, b) || !slices.Equal(qa, qb) {
		t.Fatal("two draws of seed 7 differ")
	}
	if slices.Equal(a, c) {
		t.Fatal("seeds 7 and 8 draw the same rows")
	}
	for _, s := range a[:1000] {
		if n := len(strings.Fields(s)); n < 6 || n > 18 || !strings.HasSuffix(s, ".") {
			t.Fatalf("sentence %q: %d words", s, n)
		}
	}
	kinds := map[string]int{}
	all := strings.Join(a, "\n")
	for _, q := range qa {
		kinds[q.Kind]++
		if q.Kind == TextPhrase && !strings.Contains(strings.ToLower(strings.ReplaceAll(all, ",", "")), q.Text) {
			t.Errorf("phrase %q is in no row", q.Text)
		}
	}
	for _, k := range TextQueryKinds {
		if kinds[k] != 5 {
			t.Errorf("%d queries of kind %s, want 5", kinds[k], k)
		}
	}
}

// TestTextSmall runs the text suite at 3,000 rows with real Lance and
// checks properties of the report only, never timings: every step has both
// sides' runs and a positive ratio, lancer's results equal Lance's for
// every query kind (rows and scores), the sizes and memory are measured,
// and report.json round-trips. It fails, never skips, when node or the
// Lance reference is missing.
func TestTextSmall(t *testing.T) {
	out := t.TempDir()
	opts := TextOptions{Rows: 3000, Vocab: 2000, Queries: 8, Runs: 2, Dir: t.TempDir(), ProfileDir: filepath.Join(t.TempDir(), "profiles")}
	if testing.Verbose() {
		opts.Log = os.Stderr
	}
	rep, err := RunText(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Write(out); err != nil {
		t.Fatal(err)
	}
	want := []string{"fts_build", "fts_build_positions", "fts_term", "fts_or", "fts_and", "fts_phrase"}
	var names []string
	for _, s := range rep.StepDetails {
		names = append(names, s.Name)
		if len(s.Lancer.RunsMS) != 2 || len(s.Lance.RunsMS) != 2 || s.Ratio <= 0 {
			t.Errorf("step %s: runs %v / %v, ratio %v", s.Name, s.Lancer.RunsMS, s.Lance.RunsMS, s.Ratio)
		}
		if fi, err := os.Stat(filepath.Join(opts.ProfileDir, s.Name+".cpu.pprof")); err != nil || fi.Size() == 0 {
			t.Errorf("step %s: no CPU profile (%v)", s.Name, err)
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("steps %v, want %v", names, want)
	}
	if len(rep.Checks) != len(TextQueryKinds) {
		t.Errorf("%d checks, want one per kind", len(rep.Checks))
	}
	for _, ch := range rep.Checks {
		if ch.Queries != 8 || ch.Differ != 0 || ch.LancerRows == 0 {
			t.Errorf("check %+v: want 8 queries, rows found, none differing from Lance's", ch)
		}
	}
	for _, s := range append(slices.Clone(rep.Sizes), rep.Memory...) {
		// A build of 3,000 rows can stay within the pages already
		// resident: a growth of 0 is a measurement, a negative one is not.
		least := int64(1)
		if strings.HasSuffix(s.Name, "_rss_growth") {
			least = 0
		}
		if s.LancerBytes < least || s.LanceBytes < least {
			t.Errorf("%s: lancer %d B, Lance %d B: want both measured", s.Name, s.LancerBytes, s.LanceBytes)
		}
	}
	if rep.Versions.LanceDB == "" || rep.Workload.RawBytes <= 0 || len(rep.Targets) == 0 {
		t.Errorf("versions %+v, workload %+v, %d targets", rep.Versions, rep.Workload, len(rep.Targets))
	}
	back, err := ReadTextReport(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := json.MarshalIndent(back, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(again, '\n'), raw) {
		t.Error("report.json does not round-trip through TextReport")
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil || !strings.Contains(string(md), "| fts_phrase |") {
		t.Errorf("report.md lacks the phrase step (%v)", err)
	}
}
