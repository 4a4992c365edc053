package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/ftsindex"
)

// The text suite (issue #18's "build and query at least 2x faster than
// Lance on the bench's text workload"): lancer's and real Lance's
// full-text (INVERTED) index builds and queries on the same generated
// sentences (TextGen), alternating run by run as the core suite does.

// lanceTextScript is the Node side of the text suite, in this folder.
const lanceTextScript = "lance-text.mjs"

// TextOptions configures RunText. Zero fields mean the defaults.
type TextOptions struct {
	// Rows, Vocab and Seed shape the sentences (TextGen). Defaults
	// DefaultTextRows (1M), DefaultTextVocab, DefaultTextSeed.
	Rows, Vocab int
	Seed        uint64
	// Queries is the number of queries of each kind (term, or, and,
	// phrase). Default DefaultTextQueries.
	Queries int
	// K is the rows each query asks for. Default 10.
	K int
	// Runs is how often each step is timed per side, alternating.
	// Default 3.
	Runs int
	// NoWarmup drops the untimed warm-up run per side of the query steps
	// (the builds have none).
	NoWarmup bool
	// ProfileDir, if set, receives lancer's CPU and allocation profiles
	// of each step, as CoreOptions.ProfileDir.
	ProfileDir string
	// Dir is the scratch folder. Default: a new temporary folder, removed
	// afterwards.
	Dir string
	// Log, if set, gets a line per step.
	Log io.Writer
}

func (o TextOptions) withDefaults() TextOptions {
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&o.Rows, DefaultTextRows)
	def(&o.Vocab, DefaultTextVocab)
	def(&o.Queries, DefaultTextQueries)
	def(&o.K, 10)
	def(&o.Runs, 3)
	if o.Seed == 0 {
		o.Seed = DefaultTextSeed
	}
	return o
}

// textLanceRequest is one request to lance-text.mjs (see its header).
type textLanceRequest struct {
	Op           string      `json:"op"`
	Dir          string      `json:"dir,omitempty"`
	IPC          string      `json:"ipc,omitempty"`
	Name         string      `json:"name,omitempty"`
	WithPosition bool        `json:"withPosition,omitempty"`
	K            int         `json:"k,omitempty"`
	Queries      []TextQuery `json:"queries,omitempty"`
}

// textLanceReply is its answer.
type textLanceReply struct {
	lanceCoreReply
	Scores [][]float64 `json:"scores"`
}

// textTable is the table's name on both sides.
const textTable = "t"

// RunText runs the text suite and returns its report. It fails when node
// or the Lance reference is missing, and when an engine's query results
// cannot be compared (not when they differ: TextReport.Checks says so).
func RunText(ctx context.Context, opts TextOptions) (*TextReport, error) {
	o := opts.withDefaults()
	began := time.Now()
	ref, err := findRef()
	if err != nil {
		return nil, err
	}
	dir, cleanup, err := scratchDir(o.Dir, "lancer-text-", "lancer", "lance", "input")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	o.Dir = dir
	// The core suite's step runner, with its own report as the steps'
	// accumulator.
	c := &coreRun{o: CoreOptions{Runs: o.Runs, NoWarmup: o.NoWarmup, ProfileDir: o.ProfileDir, Log: o.Log}.withDefaults(),
		rep: &CoreReport{}, logf: stepLogger(o.Log)}
	c.o.Runs, c.o.NoWarmup = o.Runs, o.NoWarmup
	rep := &TextReport{Suite: "text", Workload: TextWorkload{Rows: o.Rows, Vocab: o.Vocab, Seed: o.Seed, QueriesPerKind: o.Queries,
		K: o.K, Runs: o.Runs, Warmup: !o.NoWarmup}}
	rep.Started, rep.Machine, rep.Versions = suiteStart()

	// The rows: drawn once, batch by batch, into lancer's dataset and the
	// IPC file node creates its table from.
	c.logf("generating %d sentences (vocabulary %d, seed %d) into lancer's dataset and the IPC file", o.Rows, o.Vocab, o.Seed)
	ipcPath := filepath.Join(dir, "input", "text.arrow")
	lancerPath := filepath.Join(dir, "lancer", textTable+".lance")
	g := NewTextGen(o.Rows, o.Vocab, o.Queries, o.Seed)
	if err := writeTextInputs(ctx, g, ipcPath, lancerPath, &rep.Workload); err != nil {
		return nil, err
	}
	queries := TextQueries(g, o.Queries, o.Seed+1)

	c.logf("starting node (%s)", lanceTextScript)
	np, err := startNode(ref, lanceTextScript)
	if err != nil {
		return nil, err
	}
	defer func() {
		if np != nil {
			np.close()
		}
	}()
	ask := func(req textLanceRequest) (*textLanceReply, error) {
		var r textLanceReply
		if err := np.call(req.Op, req.Name, req, &r); err != nil {
			return nil, err
		}
		return &r, nil
	}
	v, err := ask(textLanceRequest{Op: "versions"})
	if err != nil {
		return nil, err
	}
	rep.Versions.setLance(v.nodeReply)
	loaded, err := ask(textLanceRequest{Op: "init", Dir: filepath.Join(dir, "lance"), IPC: ipcPath, Name: textTable})
	if err != nil {
		return nil, err
	}
	if err := wantRows("Lance's table", loaded.Rows, int64(o.Rows)); err != nil {
		return nil, err
	}
	lancePath := filepath.Join(dir, "lance", textTable+".lance")

	d, err := openLocal(ctx, lancerPath)
	if err != nil {
		return nil, err
	}
	for _, withPos := range []bool{false, true} {
		spec := textBuildStep(o.Rows, withPos)
		var lancerBefore, lanceBefore int64
		var buildMem [4]int64 // lancer peak, growth; Lance peak, growth
		err := c.run(spec, func(r int) (time.Duration, time.Duration, error) {
			if r == 0 {
				lancerBefore, _ = dirBytes(filepath.Join(lancerPath, "_indices"))
			}
			params := ftsindex.DefaultParams()
			params.WithPosition = withPos
			runtime.GC()
			before := procStatus("VmRSS")
			resetPeakRSS()
			wall, cpu, err := timed(func() error {
				nd, err := d.CreateIndex(ctx, "text", &dataset.CreateIndexOptions{Type: dataset.IndexFTS, Name: "text_idx", Replace: true, FTS: &params})
				if err == nil {
					d = nd
				}
				return err
			})
			peak := procStatus("VmHWM")
			buildMem[0], buildMem[1] = max(buildMem[0], peak), max(buildMem[1], peak-before)
			if r == 0 && err == nil {
				n, err := dirBytes(filepath.Join(lancerPath, "_indices"))
				if err != nil {
					return 0, 0, err
				}
				rep.addSize(spec.Name+"_index", n-lancerBefore, -1, "the index's files after the first build (growth of _indices/)")
			}
			return wall, cpu, err
		}, func(r int) (*lanceCoreReply, error) {
			if r == 0 {
				lanceBefore, _ = dirBytes(filepath.Join(lancePath, "_indices"))
			}
			L, err := ask(textLanceRequest{Op: "build", Name: textTable, WithPosition: withPos})
			if err != nil {
				return nil, err
			}
			buildMem[2], buildMem[3] = max(buildMem[2], L.PeakRSS), max(buildMem[3], L.PeakRSS-L.RSSBefore)
			if r == 0 {
				n, err := dirBytes(filepath.Join(lancePath, "_indices"))
				if err != nil {
					return nil, err
				}
				rep.Sizes[len(rep.Sizes)-1].setLance(n - lanceBefore)
			}
			return &L.lanceCoreReply, nil
		})
		if err != nil {
			return nil, err
		}
		rep.Memory = append(rep.Memory,
			ByteRatio{Name: spec.Name + "_peak_rss", LancerBytes: buildMem[0], LanceBytes: buildMem[2], Ratio: byteRatio(buildMem[0], buildMem[2]),
				What: "peak resident set of the process during the build (VmHWM reset just before it; the largest over the runs), the input included"},
			ByteRatio{Name: spec.Name + "_rss_growth", LancerBytes: buildMem[1], LanceBytes: buildMem[3], Ratio: byteRatio(buildMem[1], buildMem[3]),
				What: "the build's peak minus the resident set just before it (the largest over the runs)"})
	}

	// The queries, on the index with positions (phrase queries need
	// them), a freshly opened dataset as a reader would have.
	if d, err = openLocal(ctx, lancerPath); err != nil {
		return nil, err
	}
	for _, kind := range TextQueryKinds {
		var qs []TextQuery
		for _, q := range queries {
			if q.Kind == kind {
				qs = append(qs, q)
			}
		}
		if len(qs) == 0 {
			continue
		}
		var mine, theirs []textHits
		spec := textQueryStep(kind, len(qs), o.K)
		err := c.run(spec, func(r int) (time.Duration, time.Duration, error) {
			res := make([]textHits, len(qs))
			wall, cpu, err := timed(func() error {
				for i, q := range qs {
					h, err := lancerTextQuery(ctx, d, q, o.K)
					if err != nil {
						return fmt.Errorf("query %q: %w", q.Text, err)
					}
					res[i] = h
				}
				return nil
			})
			if r == 0 {
				mine = res
			}
			return wall, cpu, err
		}, func(r int) (*lanceCoreReply, error) {
			L, err := ask(textLanceRequest{Op: "search", Name: textTable, K: o.K, Queries: qs})
			if err != nil {
				return nil, err
			}
			var ids [][]int64
			if err := json.Unmarshal(L.RawIDs, &ids); err != nil {
				return nil, fmt.Errorf("bench: Lance search ids: %w", err)
			}
			if len(ids) != len(qs) || len(L.Scores) != len(qs) {
				return nil, fmt.Errorf("bench: Lance answered %d of %d queries", len(ids), len(qs))
			}
			if r == 0 {
				theirs = make([]textHits, len(qs))
				for i := range qs {
					theirs[i].ids = ids[i]
					for _, s := range L.Scores[i] {
						theirs[i].scores = append(theirs[i].scores, float32(s))
					}
				}
			}
			return &L.lanceCoreReply, nil
		})
		if err != nil {
			return nil, err
		}
		rep.Checks = append(rep.Checks, checkTextHits(kind, qs, mine, theirs))
	}
	if err := np.close(); err != nil {
		return nil, err
	}
	np = nil
	rep.StepDetails, rep.Steps = c.rep.StepDetails, c.rep.Steps
	rep.finish(began)
	return rep, nil
}

// writeTextInputs draws g's rows into a new lancer dataset at lancerPath
// and the IPC file ipcPath, recording the raw bytes in w.
func writeTextInputs(ctx context.Context, g *TextGen, ipcPath, lancerPath string, w *TextWorkload) (err error) {
	f, iw, err := createIPC(ipcPath)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if err := os.MkdirAll(lancerPath, 0o755); err != nil {
		return err
	}
	store, err := blob.NewLocalStore(lancerPath)
	if err != nil {
		return err
	}
	rr := newTextReader(g, iw)
	defer rr.Release()
	if _, err := dataset.Write(ctx, store, rr, nil); err != nil {
		return fmt.Errorf("bench: lancer's text dataset: %w", err)
	}
	if rr.err != nil {
		return rr.err
	}
	if err := iw.Close(); err != nil {
		return fmt.Errorf("bench: arrow ipc %s: %w", ipcPath, err)
	}
	w.RawBytes = rr.bytes
	return nil
}

// textHits are one query's results, best first: the rows' id values and
// their scores.
type textHits struct {
	ids    []int64
	scores []float32
}

// lancerTextQuery runs q on d's FTS index and reads the id column of the
// best k rows, as Lance's select(['id']) does.
func lancerTextQuery(ctx context.Context, d *dataset.Dataset, q TextQuery, k int) (textHits, error) {
	var fq ftsindex.FTSQuery
	switch q.Kind {
	case TextTerm, TextOr:
		fq.Match = &ftsindex.MatchQuery{Column: "text", Terms: q.Text, Operator: ftsindex.Or}
	case TextAnd:
		fq.Match = &ftsindex.MatchQuery{Column: "text", Terms: q.Text, Operator: ftsindex.And}
	case TextPhrase:
		fq.Phrase = &ftsindex.PhraseQuery{Column: "text", Terms: q.Text}
	default:
		return textHits{}, fmt.Errorf("bench: query kind %q", q.Kind)
	}
	hits, err := d.FullTextQuery(ctx, &fq, &dataset.FullTextQueryOptions{Limit: k})
	if err != nil || len(hits) == 0 {
		return textHits{}, err
	}
	rowIDs := make([]uint64, len(hits))
	out := textHits{scores: make([]float32, len(hits))}
	for i, h := range hits {
		rowIDs[i], out.scores[i] = h.RowID, h.Score
	}
	rec, err := d.TakeRowIDs(ctx, rowIDs, &dataset.TakeOptions{Columns: []string{"id"}})
	if err != nil {
		return textHits{}, err
	}
	defer rec.Release()
	col, ok := rec.Column(0).(*array.Int64)
	if !ok || col.Len() != len(hits) {
		return textHits{}, fmt.Errorf("bench: took %d id values of %d rows", rec.NumRows(), len(hits))
	}
	out.ids = slices.Clone(col.Int64Values())
	return out, nil
}

// checkTextHits compares the engines' results of the queries qs: a query
// agrees when both return the same scores (exactly, as f32) and the same
// rows, except that rows tied at the last score may differ (either engine
// may cut a tie anywhere).
func checkTextHits(kind string, qs []TextQuery, mine, theirs []textHits) TextCheck {
	ch := TextCheck{Kind: kind, Queries: len(qs)}
	for i, q := range qs {
		a, b := sortedHits(mine[i]), sortedHits(theirs[i])
		ch.LancerRows += len(a)
		ch.LanceRows += len(b)
		if why := diffHits(a, b); why != "" {
			ch.Differ++
			if len(ch.Examples) < 5 {
				ch.Examples = append(ch.Examples, fmt.Sprintf("%q: %s", q.Text, why))
			}
		}
	}
	return ch
}

type scoredID struct {
	id    int64
	score float32
}

func sortedHits(h textHits) []scoredID {
	out := make([]scoredID, len(h.ids))
	for i := range h.ids {
		out[i] = scoredID{h.ids[i], h.scores[i]}
	}
	slices.SortFunc(out, func(a, b scoredID) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return out
}

// diffHits says how a and b differ, "" when they agree.
func diffHits(a, b []scoredID) string {
	if len(a) != len(b) {
		return fmt.Sprintf("lancer %d rows, Lance %d", len(a), len(b))
	}
	if len(a) == 0 {
		return ""
	}
	last := a[len(a)-1].score
	for i := range a {
		if a[i].score != b[i].score {
			return fmt.Sprintf("score %d: lancer %v (id %d), Lance %v (id %d)", i, a[i].score, a[i].id, b[i].score, b[i].id)
		}
		if a[i].score != last && a[i].id != b[i].id {
			return fmt.Sprintf("row %d (score %v): lancer id %d, Lance id %d", i, a[i].score, a[i].id, b[i].id)
		}
	}
	return ""
}

func textBuildStep(rows int, withPos bool) stepSpec {
	s := stepSpec{Name: "fts_build", cpu: true, noWarmup: true,
		What:   fmt.Sprintf("build the FTS (INVERTED) index on text over %d rows with Lance's default analyzer, no positions, replacing the previous run's", rows),
		Lancer: "Dataset.CreateIndex type fts (ftsindex.DefaultParams) until the index is committed",
		Lance:  "createIndex(Index.fts({withPosition: false})) until it returns",
	}
	if withPos {
		s.Name = "fts_build_positions"
		s.What = fmt.Sprintf("build the FTS index on text over %d rows with positions (LanceDB's default, needed by phrase queries), replacing the previous run's", rows)
		s.Lancer = "Dataset.CreateIndex type fts with WithPosition until the index is committed"
		s.Lance = "createIndex(Index.fts({withPosition: true})) until it returns"
	}
	return s
}

var textQueryWhat = map[string]string{
	TextTerm:   "single-word match queries (words of log-uniform frequency rank)",
	TextOr:     "match queries of 2-3 words, operator OR",
	TextAnd:    "match queries of 2 frequent words, operator AND",
	TextPhrase: "phrase queries of 2-3 consecutive words taken from the rows, slop 0",
}

func textQueryStep(kind string, n, k int) stepSpec {
	return stepSpec{Name: "fts_" + kind, engine: true, js: true,
		What:   fmt.Sprintf("%s: %d queries one after another, limit %d, on the index with positions", textQueryWhat[kind], n, k),
		Lancer: "Dataset.FullTextQuery per query, then TakeRowIDs of the hits' id column, in process",
		Lance:  "the sum of the queries' analyzePlan() wall times (query().fullTextSearch(q).select(['id']).limit(k)); each includes one napi round trip",
	}
}

// TextReport is what RunText measured. Its JSON form is report.json.
type TextReport struct {
	Suite    string       `json:"suite"`
	Started  time.Time    `json:"started"`
	Seconds  float64      `json:"seconds"`
	Machine  Machine      `json:"machine"`
	Versions CoreVersions `json:"versions"`
	Workload TextWorkload `json:"workload"`
	// Steps are the medians; Ratio = LanceMS / LancerMS (above 1: lancer
	// faster).
	Steps       []StepRatio  `json:"steps"`
	StepDetails []StepDetail `json:"step_details"`
	// Checks compare the engines' query results, per kind.
	Checks  []TextCheck `json:"checks"`
	Sizes   []ByteRatio `json:"sizes"`
	Memory  []ByteRatio `json:"memory"`
	Targets []Target    `json:"targets"`
	Notes   []string    `json:"notes"`
}

// TextWorkload is the generated table and the queries.
type TextWorkload struct {
	Rows           int    `json:"rows"`
	Vocab          int    `json:"vocab"`
	Seed           uint64 `json:"seed"`
	QueriesPerKind int    `json:"queries_per_kind"`
	K              int    `json:"k"`
	Runs           int    `json:"runs"`
	Warmup         bool   `json:"warmup"`
	RawBytes       int64  `json:"raw_bytes"`
}

// TextCheck is one query kind's comparison of the engines' results (of
// the first timed run).
type TextCheck struct {
	Kind       string `json:"kind"`
	Queries    int    `json:"queries"`
	LancerRows int    `json:"lancer_rows"`
	LanceRows  int    `json:"lance_rows"`
	// Differ counts the queries whose rows or scores differ; Examples
	// describe the first few.
	Differ   int      `json:"differ"`
	Examples []string `json:"examples,omitempty"`
}

func (r *TextReport) addSize(name string, lancer, lance int64, what string) {
	r.Sizes = append(r.Sizes, ByteRatio{Name: name, LancerBytes: lancer, LanceBytes: lance, Ratio: byteRatio(lancer, lance), What: what})
}

// TargetTextStep is issue #18's target for the text workload's build and
// queries: lancer at least twice as fast as Lance.
const TargetTextStep = 2.0

func (r *TextReport) finish(began time.Time) {
	r.Seconds = suiteEnd(&r.Machine, began)
	r.Targets = nil
	for _, s := range r.StepDetails {
		r.Targets = append(r.Targets, Target{Issue: "#18", Name: s.Name + " time", Ratio: s.Ratio, AtLeast: TargetTextStep,
			Met: s.Ratio >= TargetTextStep, Note: "lancer at least 2x Lance"})
	}
	for _, ch := range r.Checks {
		ratio := 0.0
		if ch.Queries > 0 {
			ratio = float64(ch.Queries-ch.Differ) / float64(ch.Queries)
		}
		r.Targets = append(r.Targets, Target{Issue: "#18", Name: "fts_" + ch.Kind + " results identical to Lance's", Ratio: ratio, AtLeast: 1,
			Met: ch.Differ == 0, Note: "share of queries with Lance's rows and scores"})
	}
	r.Notes = []string{
		"ratio = Lance / lancer for times, sizes and memory: above 1 means lancer is faster (smaller).",
		fmt.Sprintf("each step ran %d times per side, alternating lancer and Lance (A B A B)%s; medians are reported.", r.Workload.Runs,
			map[bool]string{true: ", the query steps after one untimed warm-up run per side (the builds have none)", false: ", without warm-up runs"}[r.Workload.Warmup]),
		"the 95% interval is a percentile bootstrap of the ratio of medians; \"?\" marks a step whose interval includes 1.",
		"both engines index the same rows: lancer's dataset and Lance's table (created by LanceDB from an Arrow IPC file) hold the sentences TextGen drew once, batch by batch.",
		"results are compared on the first timed run: the same scores (f32, exactly) and rows, rows tied at the last score excepted.",
		"the timings are wall clock on a shared machine: the load average at the start and the end says how busy it was.",
	}
}

// Write writes report.json and report.md to dir.
func (r *TextReport) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, "report.json"), r); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(r.Markdown()), 0o644)
}

// ReadTextReport reads a report.json of the text suite.
func ReadTextReport(path string) (*TextReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r TextReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", path, err)
	}
	return &r, nil
}

// Markdown renders the report.
func (r *TextReport) Markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w := r.Workload
	p("# lancer vs Lance: %s suite (full-text search)\n\n", r.Suite)
	b.WriteString(suiteHeader(r.Started, r.Machine, r.Seconds, r.Versions))
	p("Workload (bench.TextGen): %d rows of id int64 and text (sentences of 6-18 words, 30%% stop words, the rest Zipf-distributed over a vocabulary of %d words), seed %d, %.1f MB raw; %d queries of each kind, limit %d. %d runs per side, alternating; medians.\n\n",
		w.Rows, w.Vocab, w.Seed, float64(w.RawBytes)/1e6, w.QueriesPerKind, w.K, w.Runs)
	p("Ratio = Lance / lancer: above 1, lancer is faster (or smaller).\n\n")
	p("| step | lancer ms (min–max) | Lance ms (min–max) | ratio | 95%% interval | lancer CPU ms | Lance CPU ms | Lance engine ms | Lance toArrow ms |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.StepDetails {
		e, j := "", ""
		if s.LanceEngine != nil {
			e = fmtMS(s.LanceEngine.MedianMS)
		}
		if s.LanceJS != nil {
			j = fmtMS(s.LanceJS.MedianMS)
		}
		p("| %s | %s (%s–%s) | %s (%s–%s) | %s | %s | %s | %s | %s | %s |\n", s.Name,
			fmtMS(s.Lancer.MedianMS), fmtMS(s.Lancer.MinMS), fmtMS(s.Lancer.MaxMS),
			fmtMS(s.Lance.MedianMS), fmtMS(s.Lance.MinMS), fmtMS(s.Lance.MaxMS), fmtRatio(s.Ratio), fmtInterval(s.RatioLow, s.RatioHigh, s.Uncertain),
			fmtMS(s.Lancer.CPUMedianMS), fmtMS(s.Lance.CPUMedianMS), e, j)
	}
	p("\n| query kind | queries | lancer rows | Lance rows | differ | first differences |\n|---|---:|---:|---:|---:|---|\n")
	for _, ch := range r.Checks {
		p("| %s | %d | %d | %d | %d | %s |\n", ch.Kind, ch.Queries, ch.LancerRows, ch.LanceRows, ch.Differ, strings.Join(ch.Examples, "; "))
	}
	p("\n| on disk / memory | lancer | Lance | ratio | what |\n|---|---:|---:|---:|---|\n")
	for _, s := range append(slices.Clone(r.Sizes), r.Memory...) {
		p("| %s | %s | %s | %s | %s |\n", s.Name, fmtBytes(s.LancerBytes), fmtBytes(s.LanceBytes), fmtRatio(s.Ratio), s.What)
	}
	p("\n| target | issue | ratio | wanted | met | note |\n|---|---|---:|---:|---|---|\n")
	for _, t := range r.Targets {
		met := "no"
		if t.Met {
			met = "yes"
		}
		p("| %s | %s | %s | ≥ %.2f | %s | %s |\n", t.Name, t.Issue, fmtRatio(t.Ratio), t.AtLeast, met, t.Note)
	}
	p("\n## What each figure includes\n\n")
	for _, s := range r.StepDetails {
		p("- **%s**: %s. lancer: %s. Lance: %s.\n", s.Name, s.What, s.Lancer.Includes, s.Lance.Includes)
	}
	p("\n")
	for _, n := range r.Notes {
		p("- %s\n", n)
	}
	return b.String()
}
