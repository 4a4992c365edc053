package bench

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The plots' colours: lancer blue, Lance orange.
var (
	lancerColor = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	lanceColor  = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
)

// Write writes the report to dir: report.json, report.md and the plots
// recall_qps.png and steps.png.
func (r *CoreReport) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := r.WriteJSON(filepath.Join(dir, "report.json")); err != nil {
		return err
	}
	// A writes-only run has no searches to plot (and gonum's log axis
	// panics on an empty plot).
	if len(r.RecallQPS) > 0 {
		if err := r.PlotRecallQPS(filepath.Join(dir, "recall_qps.png")); err != nil {
			return err
		}
	}
	if err := r.PlotSteps(filepath.Join(dir, "steps.png")); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(r.Markdown(true)), 0o644)
}

// PlotRecallQPS draws recall@k against QPS (log scale) for both engines,
// one point per index setting, labelled with it.
func (r *CoreReport) PlotRecallQPS(path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("IVF_HNSW_SQ, %d x %d, %d queries one at a time", r.Workload.Rows, r.Workload.Dim, r.Workload.Queries)
	p.X.Label.Text = fmt.Sprintf("recall@%d", r.Workload.K)
	p.Y.Label.Text = "queries per second (log)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	for _, e := range []struct {
		engine, label string
		c             color.Color
		shape         draw.GlyphDrawer
	}{
		{"lancer", "lancer", lancerColor, draw.CircleGlyph{}},
		{"lance", "Lance (analyzePlan)", lanceColor, draw.TriangleGlyph{}},
	} {
		var xys plotter.XYs
		var labels []string
		for _, x := range r.RecallQPS {
			if x.Engine == e.engine && x.Index == "" && x.Setting != "flat" && x.QPS > 0 {
				xys = append(xys, plotter.XY{X: x.Recall, Y: x.QPS})
				labels = append(labels, shortSetting(x.Setting))
			}
		}
		if len(xys) == 0 {
			continue
		}
		sortByX(xys, labels)
		l, s, err := plotter.NewLinePoints(xys)
		if err != nil {
			return err
		}
		l.Color, s.Color, s.Shape, s.Radius = e.c, e.c, e.shape, vg.Points(3.5)
		lab, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
		if err != nil {
			return err
		}
		for i := range lab.TextStyle {
			lab.TextStyle[i].Color = e.c
			lab.TextStyle[i].Font.Size = vg.Points(7)
			lab.TextStyle[i].XAlign = draw.XLeft
		}
		lab.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(2)}
		p.Add(l, s, lab)
		p.Legend.Add(e.label, l, s)
	}
	p.Legend.Top = false
	p.Legend.Left = true
	return p.Save(7*vg.Inch, 4.5*vg.Inch, path)
}

// PlotSteps draws every step's median time for both engines on one log
// axis, a row per step.
func (r *CoreReport) PlotSteps(path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("median time per step, %d rows (log scale; right = slower)", r.Workload.Rows)
	p.X.Label.Text = "ms"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	n := len(r.StepDetails)
	names := make([]string, n)
	var lancer, lance plotter.XYs
	for i, s := range r.StepDetails {
		row := float64(n - 1 - i) // the first step on top
		names[n-1-i] = fmt.Sprintf("%s (%s)", s.Name, fmtRatio(s.Ratio))
		if s.Lancer.MedianMS > 0 {
			lancer = append(lancer, plotter.XY{X: s.Lancer.MedianMS, Y: row})
		}
		if s.Lance.MedianMS > 0 {
			lance = append(lance, plotter.XY{X: s.Lance.MedianMS, Y: row})
		}
		if s.Lancer.MedianMS > 0 && s.Lance.MedianMS > 0 {
			seg, err := plotter.NewLine(plotter.XYs{{X: s.Lancer.MedianMS, Y: row}, {X: s.Lance.MedianMS, Y: row}})
			if err != nil {
				return err
			}
			seg.Color = color.Gray{Y: 0xa0}
			p.Add(seg)
		}
	}
	for _, e := range []struct {
		label string
		xys   plotter.XYs
		c     color.Color
		shape draw.GlyphDrawer
	}{
		{"lancer", lancer, lancerColor, draw.CircleGlyph{}},
		{"Lance", lance, lanceColor, draw.TriangleGlyph{}},
	} {
		if len(e.xys) == 0 {
			continue
		}
		s, err := plotter.NewScatter(e.xys)
		if err != nil {
			return err
		}
		s.Color, s.Shape, s.Radius = e.c, e.shape, vg.Points(4)
		p.Add(s)
		p.Legend.Add(e.label, s)
	}
	p.NominalY(names...)
	p.Y.Label.Text = "step (Lance / lancer)"
	p.Legend.Top, p.Legend.Left = false, true
	h := vg.Length(math.Max(3, 0.28*float64(n)+1)) * vg.Inch
	return p.Save(8*vg.Inch, h, path)
}

// shortSetting shortens "nprobes=10 ef=100" to "10/100".
func shortSetting(s string) string {
	var np, ef string
	if _, err := fmt.Sscanf(s, "nprobes=%s ef=%s", &np, &ef); err != nil {
		return s
	}
	if np == "default" {
		np = "def"
	}
	if ef == "default" {
		ef = "def"
	}
	return np + "/" + ef
}

// sortByX sorts the points (and their labels) by X, so the line joins
// them left to right.
func sortByX(xys plotter.XYs, labels []string) {
	for i := 1; i < len(xys); i++ {
		for j := i; j > 0 && xys[j].X < xys[j-1].X; j-- {
			xys[j], xys[j-1] = xys[j-1], xys[j]
			labels[j], labels[j-1] = labels[j-1], labels[j]
		}
	}
}
