package bench

import (
	"math"
	"strings"
	"testing"
)

// TestBootstrapRatio checks the interval against cases whose answer is
// known: it brackets the ratio of medians, excludes 1 when every lancer run
// beats every Lance run by far, includes 1 when the two sides draw from the
// same runs, and is the same on every call (seeded by the step's name).
func TestBootstrapRatio(t *testing.T) {
	for _, tc := range []struct {
		name          string
		lancer, lance []float64
		uncertain     bool
		lo, hi        float64 // bounds the interval must lie within
	}{
		{"lancer twice as fast", []float64{10, 11, 10.5, 12, 10}, []float64{21, 20, 22, 20.5, 21}, false, 1.6, 2.3},
		{"Lance twice as fast", []float64{21, 20, 22, 20.5, 21}, []float64{10, 11, 10.5, 12, 10}, false, 0.4, 0.65},
		{"the same runs", []float64{10, 12, 11, 13, 9}, []float64{12, 9, 13, 10, 11}, true, 0.6, 1.6},
		{"constant", []float64{5, 5, 5}, []float64{10, 10, 10}, false, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := bootstrapRatio(tc.lancer, tc.lance, tc.name)
			ratio := msRatio(medianFloat(tc.lancer), medianFloat(tc.lance))
			if lo > ratio || hi < ratio {
				t.Errorf("interval %.3f–%.3f does not hold the ratio of medians %.3f", lo, hi, ratio)
			}
			if lo < tc.lo-1e-9 || hi > tc.hi+1e-9 {
				t.Errorf("interval %.3f–%.3f, want within %.2f–%.2f", lo, hi, tc.lo, tc.hi)
			}
			if got := lo <= 1 && hi >= 1; got != tc.uncertain {
				t.Errorf("interval %.3f–%.3f includes 1: %v, want %v", lo, hi, got, tc.uncertain)
			}
			if lo2, hi2 := bootstrapRatio(tc.lancer, tc.lance, tc.name); lo2 != lo || hi2 != hi {
				t.Errorf("second call %.6f–%.6f, first %.6f–%.6f: not reproducible", lo2, hi2, lo, hi)
			}
		})
	}
	if lo, hi := bootstrapRatio(nil, []float64{1}, "x"); lo != 0 || hi != 0 {
		t.Errorf("no lancer runs: %v–%v, want 0–0", lo, hi)
	}
	if lo, hi := bootstrapRatio([]float64{0, 0}, []float64{1}, "x"); lo != 0 || hi != 0 {
		t.Errorf("no positive lancer run: %v–%v, want 0–0", lo, hi)
	}
}

// TestReportFlagsUncertainSteps: a step whose interval includes 1 is
// flagged in the report and its table.
func TestReportFlagsUncertainSteps(t *testing.T) {
	r := &CoreReport{Suite: "core", Workload: CoreWorkload{Runs: 5, Warmup: true}}
	r.addStep(stepSpec{Name: "clear"}, stepSamples{lancer: []float64{10, 10, 11, 10, 10}, lance: []float64{30, 31, 30, 29, 30}})
	r.addStep(stepSpec{Name: "noisy"}, stepSamples{lancer: []float64{10, 20, 15, 12, 18}, lance: []float64{14, 11, 19, 16, 13}})
	if r.Steps[0].Uncertain || !r.Steps[1].Uncertain {
		t.Fatalf("uncertain flags %v, %v; want false, true", r.Steps[0].Uncertain, r.Steps[1].Uncertain)
	}
	if math.Abs(r.Steps[0].Ratio-3) > 1e-9 {
		t.Errorf("ratio %v, want 3", r.Steps[0].Ratio)
	}
	md := r.Markdown(false)
	var noisy, clear string
	for _, line := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(line, "| noisy |"):
			noisy = line
		case strings.HasPrefix(line, "| clear |"):
			clear = line
		}
	}
	if !strings.Contains(noisy, " ?") || strings.Contains(clear, " ?") {
		t.Errorf("table rows:\n%s\n%s\nwant only the noisy one marked ?", clear, noisy)
	}
}
