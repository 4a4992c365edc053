package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// CoreReport is what RunCore measured. Its JSON form is report.json.
type CoreReport struct {
	Suite    string       `json:"suite"`
	Started  time.Time    `json:"started"`
	Seconds  float64      `json:"seconds"` // the whole suite's wall time
	Machine  Machine      `json:"machine"`
	Versions CoreVersions `json:"versions"`
	Workload CoreWorkload `json:"workload"`
	// Steps are the timed steps, medians in ms; Ratio = LanceMS / LancerMS,
	// so above 1 means lancer is faster.
	Steps []StepRatio `json:"steps"`
	// RecallQPS is each engine's recall@k and QPS per search setting.
	RecallQPS []RecallQPS `json:"recall_qps"`
	// StepDetails are the steps with every run, min, median and max per
	// side and what each side's figure includes.
	StepDetails []StepDetail `json:"step_details"`
	// Sizes and Memory are bytes; their Ratio is also Lance / lancer
	// (above 1: lancer smaller).
	Sizes  []ByteRatio `json:"sizes"`
	Memory []ByteRatio `json:"memory"`
	// Limits are the machine's, measured in the same run: the page cache's
	// read of the full scan's files and a memory sum of as many bytes.
	Limits []Limit `json:"limits,omitempty"`
	// Targets are the issues' targets read off the ratios.
	Targets []Target `json:"targets"`
	Notes   []string `json:"notes"`
}

// Machine is where the suite ran.
type Machine struct {
	OS         string     `json:"os"`
	Arch       string     `json:"arch"`
	CPUs       int        `json:"cpus"`
	CPUModel   string     `json:"cpu_model"`
	MemGiB     float64    `json:"mem_gib"`
	GOMAXPROCS int        `json:"gomaxprocs"`
	Load       [2]float64 `json:"load"` // 1-minute load average at the start and the end
}

// CoreVersions are lancer's and the reference's.
type CoreVersions struct {
	Go      string `json:"go"`
	Lancer  string `json:"lancer"` // the checkout's commit
	LanceDB string `json:"lancedb"`
	Lance   string `json:"lance"` // the lance crate inside LanceDB's addon
	ArrowJS string `json:"arrow_js"`
	Node    string `json:"node"`
}

// CoreWorkload is the generated table.
type CoreWorkload struct {
	Rows         int             `json:"rows"`
	Dim          int             `json:"dim"`
	Centers      int             `json:"centers"`
	Queries      int             `json:"queries"`
	K            int             `json:"k"`
	Seed         uint32          `json:"seed"`
	TextBytes    int             `json:"text_bytes"`
	Fragments    int             `json:"fragments"` // of the appended table every read step uses
	Take         int             `json:"take"`
	Partitions   int             `json:"partitions"`
	Settings     []VectorSetting `json:"settings"`
	Runs         int             `json:"runs"`
	Warmup       bool            `json:"warmup"` // one untimed run per side before the timed ones
	RawBytes     int64           `json:"raw_bytes"`
	GroundTruthS float64         `json:"ground_truth_s"`
}

// StepRatio is one step's medians.
type StepRatio struct {
	Name     string  `json:"name"`
	LancerMS float64 `json:"lancer_ms"`
	LanceMS  float64 `json:"lance_ms"`
	Ratio    float64 `json:"ratio"`
	// RatioLow and RatioHigh bound the ratio's 95% bootstrap interval;
	// Uncertain says it includes 1: the runs cannot tell which engine
	// is faster at this step.
	RatioLow  float64 `json:"ratio_low,omitempty"`
	RatioHigh float64 `json:"ratio_high,omitempty"`
	Uncertain bool    `json:"uncertain,omitempty"`
}

// RecallQPS is one engine's search at one setting.
type RecallQPS struct {
	Engine  string `json:"engine"`
	Setting string `json:"setting"`
	// Index says whose index files were searched: "" each engine its
	// own, "lance" the index Lance built, "lancer" the one lancer built.
	Index  string  `json:"index,omitempty"`
	Recall float64 `json:"recall"`
	QPS    float64 `json:"qps"`
	// QPSJS is Lance's QPS through toArrow() (results decoded into JS).
	QPSJS float64 `json:"qps_js,omitempty"`
}

// Stats are one side's runs of a step.
type Stats struct {
	MedianMS    float64   `json:"median_ms"`
	MinMS       float64   `json:"min_ms"`
	MaxMS       float64   `json:"max_ms"`
	RunsMS      []float64 `json:"runs_ms"`
	CPUMedianMS float64   `json:"cpu_median_ms,omitempty"`
	Includes    string    `json:"includes,omitempty"`
}

// StepDetail is one step in full.
type StepDetail struct {
	Name   string `json:"name"`
	What   string `json:"what"`
	Lancer Stats  `json:"lancer"`
	Lance  Stats  `json:"lance"`
	// LanceEngine is the root elapsed= of Lance's analyzePlan() (execution
	// alone); LanceJS the same query through toArrow(), decoded in JS.
	LanceEngine *Stats  `json:"lance_engine,omitempty"`
	LanceJS     *Stats  `json:"lance_js,omitempty"`
	Ratio       float64 `json:"ratio"`
	// RatioLow, RatioHigh and Uncertain: as in StepRatio.
	RatioLow  float64 `json:"ratio_low,omitempty"`
	RatioHigh float64 `json:"ratio_high,omitempty"`
	Uncertain bool    `json:"uncertain,omitempty"`
}

// ByteRatio compares sizes or memory.
type ByteRatio struct {
	Name        string  `json:"name"`
	LancerBytes int64   `json:"lancer_bytes"`
	LanceBytes  int64   `json:"lance_bytes"`
	Ratio       float64 `json:"ratio"`
	What        string  `json:"what"`
}

func (b *ByteRatio) setLance(n int64) {
	b.LanceBytes = n
	b.Ratio = byteRatio(b.LancerBytes, n)
}

func byteRatio(lancer, lance int64) float64 {
	if lancer <= 0 || lance <= 0 {
		return 0
	}
	return float64(lance) / float64(lancer)
}

// Target is one issue's target on a ratio (Lance / lancer): met when
// Ratio ≥ AtLeast.
type Target struct {
	Issue   string  `json:"issue"`
	Name    string  `json:"name"`
	Ratio   float64 `json:"ratio"`
	AtLeast float64 `json:"at_least"`
	Met     bool    `json:"met"`
	Note    string  `json:"note,omitempty"`
}

// stepSpec describes a step: what it does, what each side's figure
// includes, and which extra Lance figures its reply carries.
type stepSpec struct {
	Name, What    string
	Lancer, Lance string
	engine, js    bool
	cpu           bool
	// noWarmup: the step runs too long for an untimed first run to pay.
	noWarmup bool
}

type stepSamples struct {
	lancer, lancerCPU, lance, lanceCPU, lanceEngine, lanceJS []float64
}

const (
	lanceQueryIncl = "analyzePlan() of the LanceDB query, wall time in node: Lance plans it, runs it to the end in Rust and returns only the plan text, so no Arrow data crosses into JavaScript (the napi call is included)"
	lancerReadIncl = "in process, the dataset opened beforehand; every batch read into Arrow memory and dropped"
)

func stepWriteOneshot(o CoreOptions) stepSpec {
	return stepSpec{Name: "write_oneshot", cpu: true,
		What:   fmt.Sprintf("write the %d rows as a new dataset in one call (one data file)", o.Rows),
		Lancer: "dataset.Write of the in-memory Arrow batches to the local disk until the version is committed, fsync of the data files included",
		Lance:  "the native createTable (db.inner) given the Arrow IPC file's bytes, read before the timing; LanceDB's JavaScript serialization of a table is excluded, and Lance does not fsync",
	}
}

func stepWriteAppends(o CoreOptions) stepSpec {
	return stepSpec{Name: "write_appends", cpu: true,
		What:   fmt.Sprintf("create a dataset with the first ⌈%d/%d⌉ rows, then %d appends of the rest, one fragment each", o.Rows, o.Appends, o.Appends-1),
		Lancer: "dataset.Write then Dataset.Append per chunk, each committing a version, fsync included",
		Lance:  "native createTable then the native Table.add per chunk, given IPC bytes read before the timing (no JavaScript serialization)",
	}
}

func stepScan(name, cols string, frags int) stepSpec {
	return stepSpec{Name: name, engine: true, js: true,
		What:   fmt.Sprintf("scan %s of every row (%d-fragment dataset)", cols, frags),
		Lancer: "Dataset.Scan " + lancerReadIncl,
		Lance:  lanceQueryIncl,
	}
}

func stepTake(name string, n int, by string) stepSpec {
	return stepSpec{Name: name, engine: true, js: true,
		What:   fmt.Sprintf("take %d distinct random rows, every column, by %s", n, by),
		Lancer: "Dataset.Take / TakeRowIDs, " + lancerReadIncl,
		Lance:  lanceQueryIncl + " (takeOffsets / takeRowIds)",
	}
}

func stepFilter(pred string, rows int64) stepSpec {
	return stepSpec{Name: "filter_1pct", engine: true, js: true,
		What:   fmt.Sprintf("scan every column where %s (%d rows, 1%%), no scalar index", pred, rows),
		Lancer: "Dataset.Scan with Filter, " + lancerReadIncl,
		Lance:  lanceQueryIncl,
	}
}

func stepCount() stepSpec {
	return stepSpec{Name: "count_rows", What: "count the rows",
		Lancer: "Dataset.CountRows (from the manifest)",
		Lance:  "table.countRows() through the binding, napi round trip included (there is no plan to analyze)",
	}
}

func stepSearch(name, what string, nq, k int) stepSpec {
	return stepSpec{Name: name, engine: true, js: true,
		What:   fmt.Sprintf("%s: %d queries one after another, k = %d, l2", what, nq, k),
		Lancer: "Dataset.Search per query reading the id column of the nearest rows, in process",
		Lance:  "the sum of the queries' analyzePlan() wall times (vectorSearch(q).select(['id', '_distance']).limit(k)); each includes one napi round trip",
	}
}

func stepBuild(partitions int) stepSpec {
	return stepSpec{Name: "index_build", cpu: true, noWarmup: true,
		What:   fmt.Sprintf("build the IVF_HNSW_SQ index on vector (%d partitions, l2), replacing the previous run's", partitions),
		Lancer: "Dataset.CreateIndex (lancer's default M and ef_construction) until the index is committed",
		Lance:  "createIndex(hnswSq) with LanceDB's defaults (m = 20, ef_construction = 300) until it returns",
	}
}

func newCoreReport(o CoreOptions) *CoreReport {
	r := &CoreReport{
		Suite: o.Suite,
		Workload: CoreWorkload{
			Rows: o.Rows, Dim: o.Dim, Centers: o.Centers, Queries: o.Queries, K: o.K, Seed: o.Seed,
			TextBytes: CoreTextBytes, Fragments: o.Appends, Take: o.Take, Partitions: o.Partitions,
			Settings: o.Settings, Runs: o.Runs, Warmup: !o.NoWarmup,
		},
	}
	r.Started, r.Machine, r.Versions = suiteStart()
	return r
}

func stats(xs []float64, incl string) Stats {
	s := Stats{RunsMS: xs, Includes: incl}
	if len(xs) == 0 {
		return s
	}
	s.MedianMS = medianFloat(xs)
	s.MinMS, s.MaxMS = slices.Min(xs), slices.Max(xs)
	return s
}

func medianFloat(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// bootstrapResamples is how many resamples bootstrapRatio draws: enough
// that the 2.5% and 97.5% quantiles move by less than the figures'
// printed precision between seeds.
const bootstrapResamples = 4000

// bootstrapRatio is the 95% percentile-bootstrap interval of the ratio of
// medians, median(lance) / median(lancer): each resample draws each side's
// runs with replacement. The generator is seeded from the step's name, so
// a report is reproducible from its runs. Both bounds are 0 when a side
// has no positive run.
func bootstrapRatio(lancer, lance []float64, name string) (lo, hi float64) {
	if len(lancer) == 0 || len(lance) == 0 || slices.Max(lancer) <= 0 || slices.Max(lance) <= 0 {
		return 0, 0
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	rng := rand.New(rand.NewPCG(h.Sum64(), 0x6c616e636572))
	a, b := make([]float64, len(lancer)), make([]float64, len(lance))
	ratios := make([]float64, 0, bootstrapResamples)
	for range bootstrapResamples {
		for i := range a {
			a[i] = lancer[rng.IntN(len(lancer))]
		}
		for i := range b {
			b[i] = lance[rng.IntN(len(lance))]
		}
		if x := msRatio(medianFloat(a), medianFloat(b)); x > 0 {
			ratios = append(ratios, x)
		}
	}
	if len(ratios) == 0 {
		return 0, 0
	}
	slices.Sort(ratios)
	q := func(p float64) float64 { return ratios[min(len(ratios)-1, int(p*float64(len(ratios))))] }
	return q(0.025), q(0.975)
}

func msRatio(lancer, lance float64) float64 {
	if lancer <= 0 || lance <= 0 {
		return 0
	}
	return lance / lancer
}

func (r *CoreReport) addStep(s stepSpec, got stepSamples) {
	d := StepDetail{Name: s.Name, What: s.What, Lancer: stats(got.lancer, s.Lancer), Lance: stats(got.lance, s.Lance)}
	if s.cpu {
		d.Lancer.CPUMedianMS = medianFloat(got.lancerCPU)
		d.Lance.CPUMedianMS = medianFloat(got.lanceCPU)
	}
	if s.engine {
		e := stats(got.lanceEngine, "the root node's elapsed= in analyzePlan()'s text: the engine's execution alone, without planning or the binding")
		d.LanceEngine = &e
	}
	if s.js {
		j := stats(got.lanceJS, "the same query through toArrow(): execution plus Arrow IPC into JavaScript and its decoding, what a LanceDB JS user waits for")
		d.LanceJS = &j
	}
	d.Ratio = msRatio(d.Lancer.MedianMS, d.Lance.MedianMS)
	d.RatioLow, d.RatioHigh = bootstrapRatio(got.lancer, got.lance, s.Name)
	d.Uncertain = d.RatioLow > 0 && d.RatioLow <= 1 && d.RatioHigh >= 1
	r.StepDetails = append(r.StepDetails, d)
	r.Steps = append(r.Steps, StepRatio{Name: s.Name, LancerMS: d.Lancer.MedianMS, LanceMS: d.Lance.MedianMS, Ratio: d.Ratio,
		RatioLow: d.RatioLow, RatioHigh: d.RatioHigh, Uncertain: d.Uncertain})
}

func (r *CoreReport) addSize(name string, lancer, lance int64, what string) {
	r.Sizes = append(r.Sizes, ByteRatio{Name: name, LancerBytes: lancer, LanceBytes: lance, Ratio: byteRatio(lancer, lance), What: what})
}

func (r *CoreReport) addMemory(name string, lancer, lance int64, what string) {
	r.Memory = append(r.Memory, ByteRatio{Name: name, LancerBytes: lancer, LanceBytes: lance, Ratio: byteRatio(lancer, lance), What: what})
}

func (r *CoreReport) step(name string) *StepDetail {
	for i := range r.StepDetails {
		if r.StepDetails[i].Name == name {
			return &r.StepDetails[i]
		}
	}
	return nil
}

func (r *CoreReport) memory(name string) *ByteRatio {
	for i := range r.Memory {
		if r.Memory[i].Name == name {
			return &r.Memory[i]
		}
	}
	return nil
}

func (r *CoreReport) size(name string) *ByteRatio {
	for i := range r.Sizes {
		if r.Sizes[i].Name == name {
			return &r.Sizes[i]
		}
	}
	return nil
}

// finish computes the targets and the notes and stamps the end.
func (r *CoreReport) finish(began time.Time) {
	r.Seconds = suiteEnd(&r.Machine, began)
	r.Targets = nil
	add := func(issue, name string, ratio, atLeast float64, note string) {
		r.Targets = append(r.Targets, Target{Issue: issue, Name: name, Ratio: ratio, AtLeast: atLeast, Met: ratio >= atLeast && ratio > 0, Note: note})
	}
	// Issue #3: lancer's writes, scans and data files within 10% of Lance's.
	within := 1 / (1 + Tolerance)
	for _, n := range []string{"write_oneshot", "write_appends", "scan_full", "scan_full_1file"} {
		if s := r.step(n); s != nil {
			add("#3", n+" time", s.Ratio, within, "lancer at most 10% slower")
		}
	}
	if s := r.size("data_files_appends"); s != nil {
		add("#3", "data files size", s.Ratio, within, "lancer's data files at most 10% larger")
	}
	// Issue #6: the vector index.
	best := func(engine, files string) *RecallQPS {
		var b *RecallQPS
		for i := range r.RecallQPS {
			x := &r.RecallQPS[i]
			if x.Engine == engine && x.Index == files && x.Setting != "flat" && x.Recall >= RecallTarget && (b == nil || x.QPS > b.QPS) {
				b = x
			}
		}
		return b
	}
	qpsTarget := func(issue, files, suffix string) {
		if len(r.RecallQPS) == 0 {
			return // no searches ran (a build-only run)
		}
		if files != "" && !r.hasIndex(files) {
			return // a report from before the suite searched both engines' files
		}
		if files != "" {
			// On the same files the engines find nearly the same rows, so
			// when one of them reaches the recall target at no setting
			// both are compared at the best recall both reach, each at
			// its fastest setting reaching it.
			at := RecallTarget
			for _, e := range []string{"lancer", "lance"} {
				top := 0.0
				for _, x := range r.RecallQPS {
					if x.Engine == e && x.Index == files && x.Setting != "flat" {
						top = max(top, x.Recall)
					}
				}
				at = min(at, top)
			}
			fastest := func(engine string) *RecallQPS {
				var b *RecallQPS
				for i := range r.RecallQPS {
					x := &r.RecallQPS[i]
					if x.Engine == engine && x.Index == files && x.Setting != "flat" && x.Recall >= at && (b == nil || x.QPS > b.QPS) {
						b = x
					}
				}
				return b
			}
			lb, Lb := fastest("lancer"), fastest("lance")
			name := fmt.Sprintf("QPS at recall@%d ≥ %.2f%s", r.Workload.K, RecallTarget, suffix)
			if lb == nil || Lb == nil || lb.QPS <= 0 || Lb.QPS <= 0 {
				add(issue, name, 0, TargetQPS, "no setting measured")
				return
			}
			note := fmt.Sprintf("lancer %s, Lance %s", lb.Setting, Lb.Setting)
			if at < RecallTarget {
				note = fmt.Sprintf("on these files the best recall both engines reach is %.3f: compared there, lancer %s (%.3f), Lance %s (%.3f)", at, lb.Setting, lb.Recall, Lb.Setting, Lb.Recall)
			}
			add(issue, name, lb.QPS/Lb.QPS, TargetQPS, note)
			return
		}
		lb, Lb := best("lancer", files), best("lance", files)
		name := fmt.Sprintf("QPS at recall@%d ≥ %.2f%s", r.Workload.K, RecallTarget, suffix)
		switch {
		case lb == nil:
			add(issue, name, 0, TargetQPS, "lancer reaches the recall at no setting")
		case Lb == nil:
			// Lance's most accurate setting, below the recall: generous to Lance.
			var m *RecallQPS
			for i := range r.RecallQPS {
				x := &r.RecallQPS[i]
				if x.Engine == "lance" && x.Index == files && x.Setting != "flat" && (m == nil || x.Recall > m.Recall || x.Recall == m.Recall && x.QPS > m.QPS) {
					m = x
				}
			}
			if m == nil {
				add(issue, name, 0, TargetQPS, "Lance measured no setting")
			} else {
				add(issue, name, lb.QPS/m.QPS, TargetQPS, fmt.Sprintf("lancer %s; Lance reaches it at no setting: its most accurate, %s (recall %.3f)", lb.Setting, m.Setting, m.Recall))
			}
		default:
			add(issue, name, lb.QPS/Lb.QPS, TargetQPS, fmt.Sprintf("lancer %s, Lance %s", lb.Setting, Lb.Setting))
		}
	}
	qpsTarget("#6", "", "")
	qpsTarget("#17", "lance", " on Lance's index files")
	qpsTarget("#17", "lancer", " on lancer's index files")
	if s := r.step("index_build"); s != nil {
		add("#6", "index build time", s.Ratio, 1/TargetBuild, "lancer at most half of Lance's time")
	}
	// Issue #17: the build's memory growth at most 1.5x Lance's, each in a
	// process of its own (index_build_fresh), and its time there.
	if m := r.memory("peak_rss_build_fresh_growth"); m != nil {
		add("#17", "index build memory growth (fresh process)", m.Ratio, 1/TargetBuildMemory, "lancer's growth at most 1.5x Lance's")
	}
	if s := r.step("index_build_fresh"); s != nil {
		add("#17", "index build time (fresh process)", s.Ratio, 1/TargetBuild, "lancer at most half of Lance's time")
	}
	if s := r.size("index"); s != nil {
		add("#6", "index size", s.Ratio, 1/TargetIndexSize, "lancer's index no larger than Lance's")
	}
	if s := r.step("flat_search"); s != nil {
		add("#6", "flat (exact) search QPS", s.Ratio, TargetFlatQPS, "lancer at least 3x Lance's QPS")
	}
	// Issue #23: every table step at least 2x Lance, and the full scan
	// within LimitFactor of the page cache's read of the same files.
	for _, n := range TableSteps {
		if s := r.step(n); s != nil {
			add("#23", n+" time", s.Ratio, TargetTableStep, "lancer at least 2x Lance")
		}
	}
	if s, l := r.step("scan_full"), r.limit(limitPageCache); s != nil && l != nil && s.Lancer.MedianMS > 0 {
		add("#23", "scan_full vs the page cache", l.MedianMS/s.Lancer.MedianMS, 1.0/LimitFactor,
			fmt.Sprintf("the raw read of the same files took %s ms (%.1f GB/s); lancer's full scan at most %dx that", fmtMS(l.MedianMS), l.GBps, LimitFactor))
	}
	r.Notes = []string{
		"ratio = Lance / lancer for times, sizes and memory: above 1 means lancer is faster (smaller); QPS targets compare lancer's QPS with Lance's, the same direction.",
		fmt.Sprintf("each step ran %d times per side, alternating lancer and Lance (A B A B) so that a change in the machine's load hits both%s; medians are reported, with min and max in the details.", r.Workload.Runs, warmupNote(r.Workload.Warmup)),
		"the 95% interval is a percentile bootstrap of the ratio of medians (each side's runs resampled with replacement); \"?\" marks a step whose interval includes 1, where the runs cannot tell which engine is faster.",
		"lancer runs in the benchmark's Go process; Lance runs in one node process (lance-core.mjs with the pinned @lancedb/lancedb) timing itself with performance.now(): the Go↔node pipe is never inside a timing.",
		"Lance's query figures are analyzePlan() wall times, which exclude the Arrow transfer into JavaScript but include LanceDB's napi call (a fixed cost per call, large next to a 10-row vector query); the step details also give the engine's own elapsed and the toArrow() time.",
		"lancer's writes fsync their data files; Lance's local writes do not.",
		"the data, the queries and the take offsets come from fixed seeds, and lancer's index build is seeded (the same index every run); Lance's k-means is not, so its recall can move by about 0.01 from one run of the suite to the next.",
		"the timings are wall clock on a shared machine: the load average at the start and the end says how busy it was.",
	}
}

// hasIndex says whether the report holds searches of files's index
// files (RecallQPS.Index).
func (r *CoreReport) hasIndex(files string) bool {
	for _, x := range r.RecallQPS {
		if x.Index == files {
			return true
		}
	}
	return false
}

// indexLabel is how the tables name whose index files a search used.
func indexLabel(files string) string {
	switch files {
	case "lance":
		return " (Lance's index)"
	case "lancer":
		return " (lancer's index)"
	}
	return ""
}

// WriteJSON writes the report, indented, to path.
func (r *CoreReport) WriteJSON(path string) error { return writeJSON(path, r) }

// ReadCoreReport reads a report.json.
func ReadCoreReport(path string) (*CoreReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r CoreReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", path, err)
	}
	return &r, nil
}

// Markdown renders the report: the header (date, machine, versions,
// workload), the step table, recall and QPS, sizes, memory, the targets,
// what each figure includes, and the plots when plots is set.
func (r *CoreReport) Markdown(plots bool) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w := r.Workload
	p("# lancer vs Lance: %s suite\n\n", r.Suite)
	b.WriteString(suiteHeader(r.Started, r.Machine, r.Seconds, r.Versions))
	p("Workload (shared/bench/lance-baseline.mjs): %d rows of id int64, vector float32[%d] (%d gaussian clusters + noise), text utf8 (%d B), seed %d, %.1f MB raw; %d queries drawn the same way, k = %d; "+
		"read steps use the table written as %d fragments; IVF_HNSW_SQ with %d partitions. %d runs per side, alternating; medians.\n\n",
		w.Rows, w.Dim, w.Centers, w.TextBytes, w.Seed, float64(w.RawBytes)/1e6, w.Queries, w.K, w.Fragments, w.Partitions, w.Runs)
	p("Ratio = Lance / lancer: above 1, lancer is faster (or smaller).\n\n")
	p("| step | lancer ms (min–max) | Lance ms (min–max) | ratio | 95%% interval | Lance engine ms | Lance toArrow ms |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.StepDetails {
		e, j := "", ""
		if s.LanceEngine != nil {
			e = fmtMS(s.LanceEngine.MedianMS)
		}
		if s.LanceJS != nil {
			j = fmtMS(s.LanceJS.MedianMS)
		}
		p("| %s | %s (%s–%s) | %s (%s–%s) | %s | %s | %s | %s |\n", s.Name,
			fmtMS(s.Lancer.MedianMS), fmtMS(s.Lancer.MinMS), fmtMS(s.Lancer.MaxMS),
			fmtMS(s.Lance.MedianMS), fmtMS(s.Lance.MinMS), fmtMS(s.Lance.MaxMS), fmtRatio(s.Ratio), fmtInterval(s.RatioLow, s.RatioHigh, s.Uncertain), e, j)
	}
	p("\n| search | lancer recall@%d | lancer QPS | Lance recall@%d | Lance QPS | Lance QPS (toArrow) |\n|---|---:|---:|---:|---:|---:|\n", w.K, w.K)
	for i := 0; i+1 < len(r.RecallQPS); i += 2 {
		a, L := r.RecallQPS[i], r.RecallQPS[i+1]
		p("| %s%s | %.3f | %.1f | %.3f | %.1f | %.1f |\n", a.Setting, indexLabel(a.Index), a.Recall, a.QPS, L.Recall, L.QPS, L.QPSJS)
	}
	p("\n| on disk / memory | lancer | Lance | ratio | what |\n|---|---:|---:|---:|---|\n")
	for _, s := range r.Sizes {
		p("| %s | %s | %s | %s | %s |\n", s.Name, fmtBytes(s.LancerBytes), fmtBytes(s.LanceBytes), fmtRatio(s.Ratio), s.What)
	}
	for _, s := range r.Memory {
		p("| %s | %s | %s | %s | %s |\n", s.Name, fmtBytes(s.LancerBytes), fmtBytes(s.LanceBytes), fmtRatio(s.Ratio), s.What)
	}
	if len(r.Limits) > 0 {
		p("\n| machine limit | ms (min–max) | bytes | GB/s | what |\n|---|---:|---:|---:|---|\n")
		for _, l := range r.Limits {
			p("| %s | %s (%s–%s) | %s | %.1f | %s |\n", l.Name, fmtMS(l.MedianMS), fmtMS(l.MinMS), fmtMS(l.MaxMS), fmtBytes(l.Bytes), l.GBps, l.What)
		}
	}
	p("\n| target | issue | ratio | wanted | met | note |\n|---|---|---:|---:|---|---|\n")
	for _, t := range r.Targets {
		met := "no"
		if t.Met {
			met = "yes"
		}
		p("| %s | %s | %s | ≥ %.2f | %s | %s |\n", t.Name, t.Issue, fmtRatio(t.Ratio), t.AtLeast, met, t.Note)
	}
	if plots {
		p("\n![recall against QPS](recall_qps.png)\n\n![time per step](steps.png)\n")
	}
	p("\n## What each figure includes\n\n")
	for _, s := range r.StepDetails {
		p("- **%s**: %s.\n", s.Name, s.What)
	}
	for _, side := range []struct {
		name string
		get  func(StepDetail) string
	}{
		{"lancer", func(s StepDetail) string { return s.Lancer.Includes }},
		{"Lance", func(s StepDetail) string { return s.Lance.Includes }},
	} {
		p("\n%s's figures:\n\n", side.name)
		var order []string
		steps := map[string][]string{}
		for _, s := range r.StepDetails {
			in := side.get(s)
			if _, ok := steps[in]; !ok {
				order = append(order, in)
			}
			steps[in] = append(steps[in], s.Name)
		}
		for _, in := range order {
			p("- %s: %s.\n", strings.Join(steps[in], ", "), in)
		}
	}
	for _, s := range r.StepDetails {
		if s.LanceEngine != nil && s.LanceJS != nil {
			p("- Lance engine ms: %s.\n- Lance toArrow ms: %s.\n", s.LanceEngine.Includes, s.LanceJS.Includes)
			break
		}
	}
	p("\n")
	for _, n := range r.Notes {
		p("- %s\n", n)
	}
	return b.String()
}

// Table is the step table alone with its header line: what the README
// carries.
func (r *CoreReport) Table() string {
	md := r.Markdown(false)
	i := strings.Index(md, "| step |")
	j := strings.Index(md, "\n## What each figure includes")
	if i < 0 || j < 0 {
		return md
	}
	return md[i:j]
}

func fmtMS(x float64) string {
	switch {
	case x == 0:
		return "-"
	case x < 1:
		return fmt.Sprintf("%.3f", x)
	case x < 100:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.0f", x)
}

func warmupNote(warmup bool) string {
	if warmup {
		return ", after one untimed warm-up run per side (none for the index build)"
	}
	return ", without warm-up runs"
}

// fmtInterval prints a ratio's bootstrap interval, marked "?" when it
// includes 1.
func fmtInterval(lo, hi float64, uncertain bool) string {
	if lo <= 0 || hi <= 0 {
		return "n/a"
	}
	s := fmtRatio(lo) + "–" + fmtRatio(hi)
	if uncertain {
		s += " ?"
	}
	return s
}

func fmtRatio(x float64) string {
	if x <= 0 {
		return "n/a"
	}
	if x < 10 {
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.1f", x)
}

func fmtBytes(n int64) string {
	switch {
	case n <= 0:
		return "-"
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// machine describes this machine.
func machine() Machine {
	m := Machine{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), CPUModel: "unknown"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			m.MemGiB = math.Round(float64(kb)/(1<<20)*10) / 10
		}
	}
	return m
}

// lancerCommit is the checkout's HEAD commit (12 digits), read from .git
// without running git; "unknown" where it cannot.
func lancerCommit() string {
	gitDir, refsDir := gitDirs(repoRoot())
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "unknown"
	}
	h := strings.TrimSpace(string(head))
	if ref, ok := strings.CutPrefix(h, "ref: "); ok {
		if b, err := os.ReadFile(filepath.Join(refsDir, ref)); err == nil {
			h = strings.TrimSpace(string(b))
		} else if b, err := os.ReadFile(filepath.Join(refsDir, "packed-refs")); err == nil {
			h = "unknown"
			for _, line := range strings.Split(string(b), "\n") {
				if id, name, ok := strings.Cut(line, " "); ok && name == ref {
					h = id
				}
			}
		} else {
			return "unknown"
		}
	}
	if len(h) > 12 {
		h = h[:12]
	}
	return h
}

// gitDirs returns the checkout's git folder (its HEAD) and the folder
// holding its refs: both .git in a plain clone; in a linked worktree .git
// is a file naming the worktree's own folder, whose commondir names the
// main repository's, where the refs are.
func gitDirs(root string) (gitDir, refsDir string) {
	gitDir = filepath.Join(root, ".git")
	b, err := os.ReadFile(gitDir)
	if err != nil { // a folder (or nothing): a plain clone
		return gitDir, gitDir
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return gitDir, gitDir
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	refsDir = dir
	if c, err := os.ReadFile(filepath.Join(dir, "commondir")); err == nil {
		refsDir = strings.TrimSpace(string(c))
		if !filepath.IsAbs(refsDir) {
			refsDir = filepath.Join(dir, refsDir)
		}
	}
	return dir, refsDir
}

// jsonInts decodes a JSON array of integers.
func jsonInts(raw json.RawMessage, out *[]int64) error {
	if len(raw) == 0 {
		return fmt.Errorf("bench: Lance returned no ids")
	}
	return json.Unmarshal(raw, out)
}

// RepoRoot is the repository holding the bench package's source: the
// suites run from a checkout, and the report goes to bench/results.
func RepoRoot() string { return repoRoot() }
