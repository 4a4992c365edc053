package bench

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestWorkloadDeterministic: equal Workloads generate equal batches, with
// the documented shape.
func TestWorkloadDeterministic(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	w := Workload{Rows: 1000, Dim: 16, BatchRows: 300}
	a, b := w.Records(mem), w.Records(mem)
	defer releaseAll(a)
	defer releaseAll(b)
	if len(a) != 4 || len(b) != 4 {
		t.Fatalf("got %d and %d batches of 1000 rows by 300, want 4", len(a), len(b))
	}
	var rows int64
	for i := range a {
		if !array.RecordEqual(a[i], b[i]) {
			t.Fatalf("batch %d differs between two generations", i)
		}
		if !a[i].Schema().Equal(w.Schema()) {
			t.Fatalf("batch %d schema %s, want %s", i, a[i].Schema(), w.Schema())
		}
		rows += a[i].NumRows()
	}
	if rows != 1000 {
		t.Fatalf("%d rows, want 1000", rows)
	}
	other := Workload{Rows: 1000, Dim: 16, BatchRows: 300, Seed: 1}.Records(mem)
	defer releaseAll(other)
	if array.RecordEqual(a[0], other[0]) {
		t.Fatal("another seed generated the same batch")
	}

	var nulls int
	for _, r := range a {
		nulls += r.Column(3).NullN()
		caps := r.Column(2).(*array.String)
		imgs := r.Column(7).(*array.Binary)
		for j := 0; j < caps.Len(); j++ {
			if n := len(caps.Value(j)); n < 20 || n > 200 {
				t.Fatalf("caption of %d characters", n)
			}
			if n := len(imgs.Value(j)); n < 1<<10 || n > 8<<10 {
				t.Fatalf("image of %d bytes", n)
			}
		}
		if got := r.Column(6).DataType().(*arrow.FixedSizeListType).Len(); got != 16 {
			t.Fatalf("embedding dimension %d, want 16", got)
		}
	}
	if nulls < 50 || nulls > 150 {
		t.Fatalf("%d null scores in 1000 rows, want about 10%%", nulls)
	}
}

// TestCompareSmall runs the harness at a tiny size: both sides write and
// scan every version, real Lance reads lancer's output back in full with
// the values written, and
// lancer's data files are no more than Tolerance larger than Lance's, for
// the workload and for the types_v2_* fixtures. Timings are printed, never
// checked.
func TestCompareSmall(t *testing.T) {
	const rows = 2000
	rep, err := Compare(context.Background(), CompareOptions{
		Workload: Workload{Rows: rows},
		Runs:     1,
		Dir:      t.TempDir(),
		Fixtures: true,
		Verify:   true,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rep.Print(&out); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", out.String())

	if len(rep.Results) != len(Versions) {
		t.Fatalf("%d results, want one per version of %v", len(rep.Results), Versions)
	}
	for _, res := range rep.Results {
		if res.LanceReadRows != rows {
			t.Errorf("%s: real Lance read %d rows of lancer's dataset, want %d", res.Version, res.LanceReadRows, rows)
		}
		checkSizes(t, "workload "+res.Version.String(), res.LancerSizes, res.LanceSizes)
	}
	if len(rep.Fixtures) != len(Versions) {
		t.Fatalf("%d fixture results, want one per version of %v", len(rep.Fixtures), Versions)
	}
	for _, f := range rep.Fixtures {
		if f.Rows == 0 || f.LanceReadRows != f.Rows {
			t.Errorf("%s: real Lance read %d rows of lancer's rewrite of %d", f.Name, f.LanceReadRows, f.Rows)
		}
		checkSizes(t, f.Name, f.LancerSizes, f.LanceSizes)
	}
}

// checkSizes fails when lancer's data files are more than Tolerance larger
// than Lance's in total, and logs the columns that are.
func checkSizes(t *testing.T, what string, lancer, lance Sizes) {
	t.Helper()
	if lance.Total == 0 || float64(lancer.Total) > float64(lance.Total)*(1+Tolerance) {
		t.Errorf("%s: lancer's data files are %d bytes, Lance's %d: more than %.0f%% larger",
			what, lancer.Total, lance.Total, Tolerance*100)
	}
	for c, n := range lancer.ByColumn {
		if m := lance.ByColumn[c]; float64(n) > float64(m)*(1+Tolerance) && n-m > 256 {
			t.Logf("%s: column %s is %d bytes in lancer's file, %d in Lance's", what, c, n, m)
		}
	}
}
