package bench

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// The README's core-suite figures sit between these two lines and come
// from one report.json: `bench -suite=core -readme` rewrites them, and
// TestReadmeIsOneRun fails when they differ from bench/results/report.json,
// so no figure in the README is edited by hand or mixed from two runs.
const (
	ReadmeCoreBegin = "<!-- begin: written by `go run ./bench/cmd/bench -suite=core -readme` from bench/results/report.json; edits here are overwritten -->"
	ReadmeCoreEnd   = "<!-- end: core suite figures -->"
)

// stepLabels are the README's names of the core steps.
var stepLabels = map[string]string{
	"write_oneshot":   "write, one call",
	"write_appends":   "write, create + 19 appends",
	"scan_full":       "full scan (20 fragments)",
	"scan_full_1file": "full scan (1 file)",
	"scan_id":         "scan `id`",
	"scan_vector":     "scan `vector`",
	"scan_text":       "scan `text`",
	"take_offsets":    "take 1,000 rows by offset",
	"take_rowids":     "take 1,000 rows by row id",
	"filter_1pct":     "filter returning 1%",
	"count_rows":      "count rows",
	"flat_search":     "flat search, 100 queries",
	"index_build":     "IVF_HNSW_SQ build",
}

func stepLabel(name string) string {
	if l, ok := stepLabels[name]; ok {
		return l
	}
	return strings.ReplaceAll(name, "_", " ")
}

// ReadmeSection is the README's core-suite section rendered from the
// report: when and where it ran, the step table with intervals, recall
// and QPS, the machine's limits, sizes and memory, and the targets not
// yet met. It holds no figure the report does not.
func (r *CoreReport) ReadmeSection() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	m, v, w := r.Machine, r.Versions, r.Workload
	p("Measured %s on %d CPUs (%s) with %.1f GiB, shared with other work (load average %.2f at the start, %.2f at the end; the suite took %.0f s). "+
		"Versions: lancer %s (%s), @lancedb/lancedb %s (lance %s), node %s.\n\n",
		r.Started.UTC().Format("2006-01-02 15:04 UTC"), m.CPUs, m.CPUModel, m.MemGiB, m.Load[0], m.Load[1], r.Seconds,
		v.Lancer, v.Go, v.LanceDB, v.Lance, v.Node)
	p("Each step ran %d times per side, alternating lancer and Lance%s; medians. "+
		"**Ratio = Lance / lancer: above 1 means lancer is faster.** The interval is a 95%% bootstrap of the ratio; \"?\" marks a step whose runs cannot tell which engine is faster.\n\n",
		w.Runs, warmupNote(w.Warmup))
	p("| step | lancer ms | Lance ms | ratio | 95%% interval |\n|---|---:|---:|---:|---:|\n")
	for _, s := range r.StepDetails {
		p("| %s | %s | %s | %s | %s |\n", stepLabel(s.Name), fmtMS(s.Lancer.MedianMS), fmtMS(s.Lance.MedianMS), fmtRatio(s.Ratio), fmtInterval(s.RatioLow, s.RatioHigh, s.Uncertain))
	}
	p("\n| search | lancer recall@%d | lancer QPS | Lance recall@%d | Lance QPS |\n|---|---:|---:|---:|---:|\n", w.K, w.K)
	for i := 0; i+1 < len(r.RecallQPS); i += 2 {
		a, L := r.RecallQPS[i], r.RecallQPS[i+1]
		p("| %s%s | %.3f | %s | %.3f | %s |\n", a.Setting, indexLabel(a.Index), a.Recall, fmtQPS(a.QPS), L.Recall, fmtQPS(L.QPS))
	}
	if len(r.Limits) > 0 {
		p("\nThe machine's limits, measured in the same run:\n\n")
		for _, l := range r.Limits {
			p("- %s: %s ms for %s (%.1f GB/s): %s.\n", strings.ReplaceAll(l.Name, "_", " "), fmtMS(l.MedianMS), fmtBytes(l.Bytes), l.GBps, l.What)
		}
	}
	p("\nOn disk and in memory (ratio = Lance / lancer: above 1, lancer smaller):\n\n")
	for _, s := range append(append([]ByteRatio(nil), r.Sizes...), r.Memory...) {
		p("- %s: lancer %s, Lance %s (%s): %s.\n", strings.ReplaceAll(s.Name, "_", " "), fmtBytes(s.LancerBytes), fmtBytes(s.LanceBytes), fmtRatio(s.Ratio), s.What)
	}
	var slower, unmet []string
	for _, s := range r.StepDetails {
		if s.Ratio > 0 && s.Ratio < 1 && !s.Uncertain {
			slower = append(slower, fmt.Sprintf("%s (%s)", stepLabel(s.Name), fmtRatio(s.Ratio)))
		}
	}
	for _, t := range r.Targets {
		if !t.Met {
			unmet = append(unmet, fmt.Sprintf("%s %s (%s, wanted ≥ %.2f)", t.Issue, t.Name, fmtRatio(t.Ratio), t.AtLeast))
		}
	}
	p("\nWhere lancer is slower in this run: %s.\n\n", listOrNone(slower))
	p("Targets not met in this run: %s.\n", listOrNone(unmet))
	return b.String()
}

func fmtQPS(x float64) string {
	if x >= 100 {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.1f", x)
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, "; ")
}

// readmeRegion finds the generated region of a README: the bytes between
// the begin line and the end line.
func readmeRegion(readme []byte) (start, end int, err error) {
	i := bytes.Index(readme, []byte(ReadmeCoreBegin+"\n"))
	j := bytes.Index(readme, []byte(ReadmeCoreEnd))
	switch {
	case i < 0:
		return 0, 0, fmt.Errorf("bench: the README has no line %q", ReadmeCoreBegin)
	case j < 0:
		return 0, 0, fmt.Errorf("bench: the README has no line %q", ReadmeCoreEnd)
	case j < i:
		return 0, 0, fmt.Errorf("bench: the README's end line comes before its begin line")
	}
	return i + len(ReadmeCoreBegin) + 1, j, nil
}

// ReadmeCoreSection is what the README at path holds between its markers.
func ReadmeCoreSection(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	i, j, err := readmeRegion(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return string(b[i:j]), nil
}

// UpdateReadme replaces the generated region of the README at path with
// the report's section, leaving every other byte as it was.
func UpdateReadme(path string, r *CoreReport) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	i, j, err := readmeRegion(b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	out := append(append(append([]byte(nil), b[:i]...), r.ReadmeSection()...), b[j:]...)
	return os.WriteFile(path, out, 0o644)
}
