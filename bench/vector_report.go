package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

// Print writes the vector report as an aligned table: lancer against Lance
// (build, index size, memory, flat and per-setting QPS and recall), then
// issue #6's ratios, with "!" marking a target not met.
func (r *VectorReport) Print(out io.Writer) error {
	fmt.Fprintf(out, "vector search: %d x %d float32 (%d clusters, seed %d) in %d fragment(s), %d queries, k=%d, l2; %d IVF partitions\n",
		r.Rows, r.Dim, r.Centers, r.Seed, max(r.Fragments, 1), r.Queries, r.K, r.Partitions)
	fmt.Fprintf(out, "queries run one after another; QPS = queries / median of %d passes; latencies over all passes\n", r.Runs)
	how := "dataset.SearchRowIDs (row ids only)"
	if r.ReadIDs {
		how = "dataset.Search reading the id column"
	}
	fmt.Fprintf(out, "lancer: %s, in process; lance: LanceDB for Node, vectorSearch().select(['id']).limit(k).toArrow()\n", how)
	hp := "lancer HNSW: M and ef_construction = lancer's defaults"
	if r.M > 0 || r.EfConstr > 0 {
		hp = fmt.Sprintf("lancer HNSW: M=%d ef_construction=%d (0 = default)", r.M, r.EfConstr)
	}
	fmt.Fprintf(out, "%s; Lance's: m=20 ef_construction=300 (its defaults)\n", hp)
	fmt.Fprintf(out, "GOMAXPROCS %d; load average (1 min) %.2f at the start, %.2f at the end; ground truth %.1f s\n\n",
		r.GOMAXPROCS, r.Load[0], r.Load[1], r.GroundTruthS)

	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	p := func(cells ...string) {
		for i := 1; i < len(cells); i++ {
			cells[i] = fmt.Sprintf("%18s", cells[i])
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	L := r.Lance
	if L == nil {
		L = &SideReport{Engine: "lance (not run)"}
	}
	sides := []*SideReport{&r.Lancer, L}
	if r.LancerHNSW != nil {
		sides = append(sides, r.LancerHNSW)
	}
	head := []string{"", "lancer " + r.Lancer.Index, "lance IVF_HNSW_SQ", "lancer/lance"}
	if r.LancerHNSW != nil {
		head = append(head, "lancer hnsw")
	}
	p(head...)
	row := func(name string, f func(s *SideReport) string, rat string) {
		cells := []string{name, f(&r.Lancer), f(L), rat}
		if r.LancerHNSW != nil {
			cells = append(cells, f(r.LancerHNSW))
		}
		p(cells...)
	}
	ran := r.Lance != nil
	q := func(a, b float64) string {
		if !ran || b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	row("write (s)", func(s *SideReport) string { return fsec(s.WriteS) }, q(r.Lancer.WriteS, L.WriteS))
	row("data files", func(s *SideReport) string { return size(s.DataBytes) }, q(float64(r.Lancer.DataBytes), float64(L.DataBytes)))
	row("index build (s)", func(s *SideReport) string { return fsec(s.BuildS) }, q(r.Lancer.BuildS, L.BuildS))
	row("  cpu (s)", func(s *SideReport) string { return fsec(s.BuildCPUS) }, q(r.Lancer.BuildCPUS, L.BuildCPUS))
	row("index on disk", func(s *SideReport) string { return size(s.IndexBytes) }, q(float64(r.Lancer.IndexBytes), float64(L.IndexBytes)))
	row("RSS before build", func(s *SideReport) string { return mib(s.RSSBeforeBuild) }, "")
	row("peak RSS in build", func(s *SideReport) string { return mib(s.PeakRSSBuild) }, "")
	row("  growth", func(s *SideReport) string { return mib(s.PeakRSSBuild - s.RSSBeforeBuild) },
		q(float64(r.Lancer.PeakRSSBuild-r.Lancer.RSSBeforeBuild), float64(L.PeakRSSBuild-L.RSSBeforeBuild)))
	row("Go heap growth in build", func(s *SideReport) string {
		if s.PeakHeapBuild == 0 {
			return "-"
		}
		return mib(s.PeakHeapBuild - s.HeapBeforeBuild)
	}, "")
	row("process peak RSS", func(s *SideReport) string { return mib(s.MaxRSS) }, "")

	search := func(name string, l, lance *SearchResult, hnsw *SearchResult) {
		get := func(x *SearchResult, f func(*SearchResult) string) string {
			if x == nil {
				return "-"
			}
			return f(x)
		}
		qr := "-"
		if l != nil && lance != nil && lance.QPS > 0 {
			qr = fmt.Sprintf("%.2f", l.QPS/lance.QPS)
		}
		cells := func(label string, f func(*SearchResult) string, rat string) {
			c := []string{label, get(l, f), get(lance, f), rat}
			if r.LancerHNSW != nil {
				c = append(c, get(hnsw, f))
			}
			p(c...)
		}
		cells(name+" QPS", func(x *SearchResult) string { return fmt.Sprintf("%.1f", x.QPS) }, qr)
		cells("  recall@"+fmt.Sprint(r.K), func(x *SearchResult) string { return fmt.Sprintf("%.3f", x.Recall) }, "")
		cells("  p50 / p95 ms", func(x *SearchResult) string { return fmt.Sprintf("%.2f / %.2f", x.P50MS, x.P95MS) }, "")
		cells("  passes ms", func(x *SearchResult) string { return passes(x.PassMS) }, "")
	}
	var lf *SearchResult
	if r.Lance != nil {
		lf = r.Lance.Flat
	}
	search("flat", r.Lancer.Flat, lf, nil)
	for i, s := range r.Lancer.Settings {
		var ls, hs *SearchResult
		if r.Lance != nil && i < len(r.Lance.Settings) {
			ls = &r.Lance.Settings[i]
		}
		if r.LancerHNSW != nil {
			for j := range r.LancerHNSW.Settings {
				if r.LancerHNSW.Settings[j].Ef == s.Ef {
					hs = &r.LancerHNSW.Settings[j]
				}
			}
		}
		search(s.Name, &r.Lancer.Settings[i], ls, hs)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if r.LancerHNSW != nil {
		fmt.Fprintln(out, "lancer hnsw: one graph over all rows, searched at each setting's ef (nprobes does not apply)")
	}
	if len(r.Ratios) == 0 {
		return nil
	}
	fmt.Fprintf(out, "\nissue #6 targets (\"!\" = not met):\n")
	w = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, x := range r.Ratios {
		op := "≤"
		if x.AtLeast {
			op = "≥"
		}
		val, mark := "n/a", " !"
		if x.Ratio > 0 {
			val = fmt.Sprintf("%.2f", x.Ratio)
		}
		if x.Met {
			mark = ""
		}
		note := x.Note
		if note != "" {
			note = "(" + note + ")"
		}
		fmt.Fprintf(w, "  %s\t%s%s\ttarget %s %.2f\t%s\n", x.Name, val, mark, op, x.Target, note)
	}
	return w.Flush()
}

// WriteJSON writes the report, indented, to path.
func (r *VectorReport) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func fsec(s float64) string {
	if s == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", s)
}

func mib(n int64) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}

func passes(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(s, " ")
}
