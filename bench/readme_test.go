package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeIsOneRun: the README's core-suite figures are exactly what
// bench/results/report.json renders to, so they come from one run and
// nobody edited them by hand. After a run with -readme both change
// together; a hand edit or a report committed without its README fails.
func TestReadmeIsOneRun(t *testing.T) {
	root := RepoRoot()
	rep, err := ReadCoreReport(filepath.Join(root, "bench", "results", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadmeCoreSection(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := rep.ReadmeSection(); got != want {
		t.Errorf("README.md's core-suite figures are not bench/results/report.json's (rerun go run ./bench/cmd/bench -suite=core -readme, or rewrite them from the report):\n got:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(got, rep.Versions.Lancer) {
		t.Errorf("the section does not name the commit %s the run measured", rep.Versions.Lancer)
	}
}

func TestUpdateReadme(t *testing.T) {
	rep := &CoreReport{Workload: CoreWorkload{Runs: 5, K: 10}, StepDetails: []StepDetail{
		{Name: "scan_full", Lancer: Stats{MedianMS: 40}, Lance: Stats{MedianMS: 60}, Ratio: 1.5, RatioLow: 1.2, RatioHigh: 1.8},
		{Name: "write_appends", Lancer: Stats{MedianMS: 600}, Lance: Stats{MedianMS: 450}, Ratio: 0.75, RatioLow: 0.7, RatioHigh: 0.8},
		{Name: "scan_text", Lancer: Stats{MedianMS: 20}, Lance: Stats{MedianMS: 19}, Ratio: 0.95, RatioLow: 0.8, RatioHigh: 1.1, Uncertain: true},
	}, Limits: []Limit{{Name: limitPageCache, Bytes: 100 << 20, MedianMS: 10, GBps: 10.5, What: "raw read"}}}
	rep.finish(rep.Started)
	dir := t.TempDir()
	path := filepath.Join(dir, "README.md")
	before, after := "# title\n\nprose before\n\n", "\nprose after\n"
	if err := os.WriteFile(path, []byte(before+ReadmeCoreBegin+"\nold figures\n"+ReadmeCoreEnd+after), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 { // idempotent: a second rewrite changes nothing
		if err := UpdateReadme(path, rep); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if want := before + ReadmeCoreBegin + "\n" + rep.ReadmeSection() + ReadmeCoreEnd + after; string(b) != want {
			t.Fatalf("README after UpdateReadme:\n%s\nwant:\n%s", b, want)
		}
	}
	sec := rep.ReadmeSection()
	for _, want := range []string{
		"| full scan (20 fragments) | 40.0 | 60.0 | 1.50 | 1.20–1.80 |",
		"| scan `text` | 20.0 | 19.0 | 0.95 | 0.80–1.10 ? |",
		"page cache read: 10.0 ms for 100.0 MiB (10.5 GB/s)",
		// slower: only the step whose interval excludes 1
		"Where lancer is slower in this run: write, create + 19 appends (0.75).",
		"#23 scan_full time (1.50, wanted ≥ 2.00)",
		"#23 scan_full vs the page cache (0.25, wanted ≥ 0.33)",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("section lacks %q:\n%s", want, sec)
		}
	}
	if strings.Contains(sec, "#23 scan_full time (1.50") && strings.Contains(sec, "Targets not met in this run: none") {
		t.Error("unmet targets reported as none")
	}

	for name, text := range map[string]string{
		"no begin":     "x\n" + ReadmeCoreEnd + "\n",
		"no end":       ReadmeCoreBegin + "\nx\n",
		"end is first": ReadmeCoreEnd + "\n" + ReadmeCoreBegin + "\n",
	} {
		p := filepath.Join(dir, "bad.md")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := UpdateReadme(p, rep); err == nil {
			t.Errorf("%s: UpdateReadme accepted a README without a well-formed generated region", name)
		}
		if b, _ := os.ReadFile(p); string(b) != text {
			t.Errorf("%s: a refused rewrite changed the file", name)
		}
	}
}

// TestLancerCommit: the report names the checkout's commit, in a plain
// clone and in a linked worktree (where .git is a file) alike.
func TestLancerCommit(t *testing.T) {
	out, err := exec.Command("git", "-C", RepoRoot(), "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v", err)
	}
	if got, want := lancerCommit(), strings.TrimSpace(string(out))[:12]; got != want {
		t.Errorf("lancerCommit() = %q, git says %q", got, want)
	}
}
