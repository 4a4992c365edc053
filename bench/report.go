package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Tolerance is issue #3's bound: lancer's files may be at most 10% larger
// than Lance's, and its writes no slower. The report marks ratios above
// 1+Tolerance with "!".
const Tolerance = 0.10

// Print writes the report as aligned tables: per data file version, the
// median write and scan times of lancer and Lance with their ratio, and
// the bytes of the data files per column; then the fixture rewrites.
func (r *Report) Print(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	p := func(cells ...string) {
		for i := 1; i < len(cells); i++ {
			cells[i] = fmt.Sprintf("%12s", cells[i])
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	fmt.Fprintf(out, "workload: %s; %s of Arrow buffers; medians of %d runs\n", r.Workload, mb(r.RawBytes), r.Runs)
	fmt.Fprintln(out, "lance write: native createTable on the IPC bytes; lance scan: table.query() streamed into JS.")
	fmt.Fprintln(out, "cpu: CPU time (user+system, all threads) of the whole process over the same span.")
	fmt.Fprintf(out, "ratio = lancer/lance; \"!\" marks a ratio above %.2f (lancer larger or slower)\n\n", 1+Tolerance)
	rows := float64(r.Workload.withDefaults().Rows)
	for _, res := range r.Results {
		lw, Lw := median(res.LancerWrite, false), median(res.LanceWrite, false)
		lc, Lc := median(res.LancerWrite, true), median(res.LanceWrite, true)
		ls, Ls := median(res.LancerScan, false), median(res.LanceScan, false)
		lsc, Lsc := median(res.LancerScan, true), median(res.LanceScan, true)
		p("file version "+res.Version.String(), "lancer", "lance", "ratio")
		p("write", secs(lw), secs(Lw), ratio(lw.Seconds(), Lw.Seconds()))
		p("  MB/s", rate(float64(r.RawBytes)/1e6, lw), rate(float64(r.RawBytes)/1e6, Lw), "")
		p("  rows/s", rate(rows, lw), rate(rows, Lw), "")
		p("  runs", runs(res.LancerWrite, false), runs(res.LanceWrite, false), "")
		p("  cpu", secs(lc), secs(Lc), ratio(lc.Seconds(), Lc.Seconds()))
		p("scan", secs(ls), secs(Ls), ratio(ls.Seconds(), Ls.Seconds()))
		p("  runs", runs(res.LancerScan, false), runs(res.LanceScan, false), "")
		p("  cpu", secs(lsc), secs(Lsc), ratio(lsc.Seconds(), Lsc.Seconds()))
		p("lance scan of lancer's", secs(res.LanceScanOfLancer.Wall), fmt.Sprintf("%d rows", res.LanceReadRows), "")
		r.printSizes(p, res.LancerSizes, res.LanceSizes)
		p("", "", "", "")
	}
	for _, f := range r.Fixtures {
		p(fmt.Sprintf("fixture %s (%d rows)", f.Name, f.Rows), "lancer", "lance", "ratio")
		r.printSizes(p, f.LancerSizes, f.LanceSizes)
		p("lance reads lancer's rewrite", fmt.Sprintf("%d rows", f.LanceReadRows), "", "")
		p("", "", "", "")
	}
	return w.Flush()
}

func (r *Report) printSizes(p func(...string), lancer, lance Sizes) {
	p("bytes on disk", "", "", "")
	for _, c := range columnNames(Columns, lancer.ByColumn, lance.ByColumn) {
		a, b := lancer.ByColumn[c], lance.ByColumn[c]
		p("  "+c, size(a), size(b), ratio(float64(a), float64(b)))
	}
	p("  total", size(lancer.Total), size(lance.Total), ratio(float64(lancer.Total), float64(lance.Total)))
	if lancer.Files != 1 || lance.Files != 1 {
		p("  data files", fmt.Sprint(lancer.Files), fmt.Sprint(lance.Files), "")
	}
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }

func runs(ts []Timing, cpu bool) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		d := t.Wall
		if cpu {
			d = t.CPU
		}
		s[i] = fmt.Sprintf("%.2f", d.Seconds())
	}
	return strings.Join(s, " ")
}

func rate(n float64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	v := n / d.Seconds()
	if v >= 10_000 {
		return fmt.Sprintf("%.0fk", v/1000)
	}
	return fmt.Sprintf("%.1f", v)
}

func ratio(a, b float64) string {
	switch {
	case b == 0 && a == 0:
		return "-"
	case b == 0:
		return "new !"
	}
	q := a / b
	mark := ""
	if q > 1+Tolerance {
		mark = " !"
	}
	return fmt.Sprintf("%.2f%s", q, mark)
}

func size(n int64) string {
	switch {
	case n >= 10<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 10<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
