package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/lancereftest"
)

// CoreSettings are the (nprobes, ef) settings the core suite searches the
// IVF_HNSW_SQ index at: the baseline's (10 and 20 partitions, ef default
// and 100) plus cheaper and costlier ones, so that recall against QPS
// draws a curve for each engine.
var CoreSettings = []VectorSetting{{1, 20}, {5, 40}, {10, 0}, {10, 100}, {20, 100}, {50, 200}}

// CoreOptions configures RunCore. Zero fields mean the defaults.
type CoreOptions struct {
	// Suite names the suite in the report. Default "core".
	Suite string
	// Rows, Dim, Centers, Queries and Seed shape the data (CoreData).
	// Defaults: the baseline's 200,000 × 128, 256 centres, 100 queries,
	// seed 12345.
	Rows, Dim, Centers, Queries int
	Seed                        uint32
	// K is the neighbours per query. Default 10.
	K int
	// Appends is the number of writes of write_appends (a create and
	// Appends-1 appends, one fragment each), and so the fragments of the
	// table every read step uses, as the baseline's. Default 20.
	Appends int
	// Take is the number of rows the take steps fetch. Default 1000.
	Take int
	// Runs is how often each step is timed on each side, alternating:
	// lancer, Lance, lancer, Lance… Default 5, the fewest from which the
	// ratio's bootstrap interval (StepDetail.RatioLow/High) says anything.
	Runs int
	// NoWarmup drops the warm-up: by default each step first runs once
	// per side untimed (except the index build, whose runs take seconds),
	// so that the first timed run does not pay for cold caches, page
	// faults and lazily built state that later runs reuse.
	NoWarmup bool
	// BuildOnly runs the write steps (they make the tables) and then only
	// the index builds: in this process (index_build) and in a fresh one
	// per side (index_build_fresh), with their memory; no reads, no
	// searches. It cannot be combined with WritesOnly.
	BuildOnly bool
	// WritesOnly stops after the write steps (the one-shot write and the
	// create + appends) and their sizes: a run that measures a change to
	// the write or commit path in a minute rather than the whole suite's
	// quarter hour, the reads and index builds skipped.
	WritesOnly bool
	// ProfileDir, if set, receives lancer's profiles of each step:
	// <step>.cpu.pprof (a CPU profile over the step's timed runs) and
	// <step>.allocs.pprof (the allocation profile after them; cumulative,
	// so compare with the previous step's: go tool pprof -base). It
	// cannot be combined with a whole-suite CPU profile.
	ProfileDir string
	// Settings are the index search settings. Default CoreSettings.
	Settings []VectorSetting
	// Partitions is the IVF partitions of both indices. Default
	// round(√Rows), Lance's default and the baseline's.
	Partitions int
	// Dir is the scratch folder. Default: a new temporary folder, removed
	// afterwards.
	Dir string
	// Log, if set, gets a line per step.
	Log io.Writer
}

func (o CoreOptions) withDefaults() CoreOptions {
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	if o.Suite == "" {
		o.Suite = "core"
	}
	def(&o.Rows, DefaultVectorRows)
	def(&o.Dim, DefaultVectorDim)
	def(&o.Centers, DefaultVectorCenters)
	def(&o.Queries, DefaultVectorQueries)
	def(&o.K, DefaultVectorK)
	def(&o.Appends, 20)
	def(&o.Take, 1000)
	def(&o.Runs, 5)
	def(&o.Partitions, max(1, int(math.Round(math.Sqrt(float64(o.Rows))))))
	if o.Seed == 0 {
		o.Seed = DefaultVectorSeed
	}
	if len(o.Settings) == 0 {
		o.Settings = CoreSettings
	}
	o.Appends = min(o.Appends, o.Rows)
	o.Take = min(o.Take, o.Rows)
	return o
}

// coreRun is one run of the suite in progress.
type coreRun struct {
	o     CoreOptions
	rep   *CoreReport
	lance *lanceProc
	ref   lancereftest.Ref
	logf  func(string, ...any)
	// peakRSS is lancer's running maximum of VmHWM, which the index build
	// resets.
	peakRSS int64
	// build holds the index build's memory: each side's peak resident set
	// during a build and its growth over the resident set just before
	// (the largest over the runs).
	build struct{ lancerPeak, lancerGrowth, lancePeak, lanceGrowth int64 }
}

func (c *coreRun) hwm() int64 {
	c.peakRSS = max(c.peakRSS, procStatus("VmHWM"))
	return c.peakRSS
}

// RunCore runs issue #8's core suite: it draws the baseline's workload
// and runs every step in lancer (in this process) and in real Lance
// (lance-core.mjs in one node process), alternating run by run, and
// returns the report. It fails when node or the Lance reference is
// missing.
func RunCore(ctx context.Context, opts CoreOptions) (*CoreReport, error) {
	o := opts.withDefaults()
	began := time.Now()
	c := &coreRun{o: o, logf: stepLogger(o.Log)}
	if o.BuildOnly && o.WritesOnly {
		return nil, fmt.Errorf("bench: BuildOnly and WritesOnly together would run no build: %w", lancer.ErrInvalidArgument)
	}
	ref, err := findRef()
	if err != nil {
		return nil, err
	}
	c.ref = ref
	dir, cleanup, err := scratchDir(o.Dir, "lancer-core-", "lancer", "lance", "input")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	o.Dir, c.o.Dir = dir, dir
	c.rep = newCoreReport(o)

	// The data, the ground truth and the files node reads.
	c.logf("generating %d x %d vectors, texts and %d queries (seed %d)", o.Rows, o.Dim, o.Queries, o.Seed)
	vecs, queries, texts := CoreData(o.Rows, o.Dim, o.Centers, o.Queries, o.Seed)
	start := time.Now()
	truth := GroundTruth(vecs, queries, o.Dim, o.K)
	c.rep.Workload.GroundTruthS = time.Since(start).Seconds()
	chunk := (o.Rows + o.Appends - 1) / o.Appends
	schema, chunks := coreRecords(vecs, texts, o.Dim, chunk)
	defer releaseAll(chunks)
	texts = nil
	c.rep.Workload.RawBytes = RawBytes(chunks)
	in := filepath.Join(o.Dir, "input")
	wholeFile, chunkFiles, err := writeInputs(in, schema, chunks)
	if err != nil {
		return nil, err
	}
	qFile := filepath.Join(in, "queries.f32")
	if err := WriteFloat32s(qFile, queries); err != nil {
		return nil, err
	}

	c.logf("starting node (%s)", lanceCoreScript)
	if c.lance, err = startLance(ref); err != nil {
		return nil, err
	}
	defer func() {
		if c.lance != nil {
			c.lance.close()
		}
	}()
	v, err := c.lance.ask(lanceCoreRequest{Op: "versions"})
	if err != nil {
		return nil, err
	}
	c.rep.Versions.setLance(v.nodeReply)
	loaded, err := c.lance.ask(lanceCoreRequest{Op: "init", Dir: filepath.Join(o.Dir, "lance"), Whole: wholeFile,
		Chunks: chunkFiles, Queries: qFile, Dim: o.Dim})
	if err != nil {
		return nil, err
	}
	runtime.GC()
	lancerLoaded := procStatus("VmRSS")

	if err := c.writes(ctx, schema, chunks); err != nil {
		return nil, err
	}
	if o.WritesOnly {
		if err := c.lance.close(); err != nil {
			return nil, err
		}
		c.lance = nil
		c.rep.finish(began)
		return c.rep, nil
	}
	d, err := openLocal(ctx, c.lancerPath("a0"))
	if err != nil {
		return nil, err
	}
	if o.BuildOnly {
		if _, err := c.buildIndex(ctx, d); err != nil {
			return nil, err
		}
		if err := c.freshBuilds(ctx); err != nil {
			return nil, err
		}
	} else if err := c.allReads(ctx, d, chunk, queries, truth); err != nil {
		return nil, err
	}
	return c.finishMemory(began, lancerLoaded, loaded)
}

// allReads runs the read steps, the machine limits and the vector steps.
func (c *coreRun) allReads(ctx context.Context, d *dataset.Dataset, chunk int, queries []float32, truth [][]uint64) error {
	o := c.o
	if err := c.reads(ctx, d, chunk); err != nil {
		return err
	}
	c.logf("machine limits: page-cache read and memory sum of the full scan's bytes")
	var err error
	if c.rep.Limits, err = measureLimits(c.lancerPath("a0"), o.Runs); err != nil {
		return err
	}
	return c.vectors(ctx, d, queries, truth)
}

// finishMemory closes Lance's process and records each side's memory.
func (c *coreRun) finishMemory(began time.Time, lancerLoaded int64, loaded *lanceCoreReply) (*CoreReport, error) {
	m, err := c.lance.ask(lanceCoreRequest{Op: "mem"})
	if err != nil {
		return nil, err
	}
	if err := c.lance.close(); err != nil {
		return nil, err
	}
	c.lance = nil
	c.rep.addMemory("rss_after_load", lancerLoaded, loaded.RSS,
		"resident set once the input is in memory (lancer: the generated vectors, texts, Arrow batches and ground truth, in the Go process; Lance: node, the LanceDB addon and the IPC files of the whole table and of its chunks)")
	c.rep.addMemory("peak_rss", c.hwm(), m.HWM,
		"peak resident set of the whole process over the suite (VmHWM, kept as a running maximum across the build's reset); includes the input above")
	c.rep.addMemory("peak_rss_growth", c.hwm()-lancerLoaded, m.HWM-loaded.RSS,
		"peak_rss minus rss_after_load: what the engine's work added on top of the input")
	c.rep.addMemory("peak_rss_build", c.build.lancerPeak, c.build.lancePeak,
		"peak resident set of the process during the index build (VmHWM reset just before it; the largest over the runs)")
	c.rep.addMemory("peak_rss_build_growth", c.build.lancerGrowth, c.build.lanceGrowth,
		"the build's peak minus the resident set just before it (the largest over the runs)")
	c.rep.finish(began)
	return c.rep, nil
}

// lancerPath is the path of lancer's dataset name.
func (c *coreRun) lancerPath(name string) string {
	return filepath.Join(c.o.Dir, "lancer", name+".lance")
}

// lancePath is the path of Lance's table name.
func (c *coreRun) lancePath(name string) string {
	return filepath.Join(c.o.Dir, "lance", name+".lance")
}

// run times one step, alternating lancer and Lance o.Runs times, and
// records it. lancerFn returns lancer's time and CPU time (0 when not
// measured); lanceFn Lance's reply.
func (c *coreRun) run(s stepSpec, lancerFn func(run int) (time.Duration, time.Duration, error),
	lanceFn func(run int) (*lanceCoreReply, error)) error {
	c.logf("%s: %d runs each, alternating", s.Name, c.o.Runs)
	if !c.o.NoWarmup && !s.noWarmup {
		// Run number Runs is past the timed ones: the steps treat it as
		// any later run (nothing kept, its dataset dropped).
		if _, _, err := lancerFn(c.o.Runs); err != nil {
			return fmt.Errorf("bench: lancer %s (warm-up): %w", s.Name, err)
		}
		if _, err := lanceFn(c.o.Runs); err != nil {
			return err
		}
	}
	stopProfile, err := c.startStepProfile(s.Name)
	if err != nil {
		return err
	}
	stopped := false
	defer func() {
		if !stopped {
			stopProfile()
		}
	}()
	var got stepSamples
	for r := range c.o.Runs {
		runtime.GC()
		var wall, cpu time.Duration
		var err error
		// The step's name labels what lancer does in it (and in the
		// goroutines it starts), so that a CPU profile of the suite
		// (bench -cpuprofile) splits by step: pprof -tagfocus step=NAME.
		pprof.Do(context.Background(), pprof.Labels("step", s.Name), func(context.Context) {
			wall, cpu, err = lancerFn(r)
		})
		if err != nil {
			return fmt.Errorf("bench: lancer %s: %w", s.Name, err)
		}
		got.lancer = append(got.lancer, ms(wall))
		got.lancerCPU = append(got.lancerCPU, ms(cpu))
		L, err := lanceFn(r)
		if err != nil {
			return err
		}
		got.lance = append(got.lance, L.MS)
		got.lanceCPU = append(got.lanceCPU, L.CPUMS)
		got.lanceEngine = append(got.lanceEngine, L.EngineMS)
		got.lanceJS = append(got.lanceJS, L.JSMS)
	}
	stopped = true
	if err := stopProfile(); err != nil {
		return err
	}
	c.rep.addStep(s, got)
	return nil
}

// startStepProfile starts the CPU profile of step name when the options
// ask for profiles; the returned func stops it and writes the allocation
// profile. Lance's runs fall inside the CPU profile's span, but this
// process only waits on the pipe then, so they add no samples.
func (c *coreRun) startStepProfile(name string) (stop func() error, err error) {
	if c.o.ProfileDir == "" {
		return func() error { return nil }, nil
	}
	if err := os.MkdirAll(c.o.ProfileDir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: profiles: %w", err)
	}
	cpuPath := filepath.Join(c.o.ProfileDir, name+".cpu.pprof")
	f, err := os.Create(cpuPath)
	if err != nil {
		return nil, fmt.Errorf("bench: profiles: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: profile of %s: %w (a whole-suite CPU profile is running?)", name, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("bench: %s: %w", cpuPath, err)
		}
		memPath := filepath.Join(c.o.ProfileDir, name+".allocs.pprof")
		m, err := os.Create(memPath)
		if err != nil {
			return fmt.Errorf("bench: profiles: %w", err)
		}
		if err := pprof.Lookup("allocs").WriteTo(m, 0); err != nil {
			m.Close()
			return fmt.Errorf("bench: %s: %w", memPath, err)
		}
		return m.Close()
	}, nil
}

// timed runs f and returns its wall and CPU time.
func timed(f func() error) (time.Duration, time.Duration, error) {
	cpu := processCPU()
	start := time.Now()
	err := f()
	return time.Since(start), processCPU() - cpu, err
}

// writes: the one-shot write and the create + appends, each run a new
// dataset; run 0's are kept (the read steps use the appended one).
func (c *coreRun) writes(ctx context.Context, schema *arrow.Schema, chunks []arrow.RecordBatch) error {
	write := func(path string, appendEach bool) error {
		if err := os.MkdirAll(path, 0o755); err != nil {
			return err
		}
		store, err := blob.NewLocalStore(path)
		if err != nil {
			return err
		}
		return writeChunks(ctx, store, schema, chunks, appendEach)
	}
	for _, w := range []struct {
		prefix     string
		op         string
		spec       stepSpec
		appendEach bool
	}{
		{"o", "write_oneshot", stepWriteOneshot(c.o), false},
		{"a", "write_appends", stepWriteAppends(c.o), true},
	} {
		err := c.run(w.spec, func(r int) (time.Duration, time.Duration, error) {
			path := c.lancerPath(fmt.Sprint(w.prefix, r))
			wall, cpu, err := timed(func() error { return write(path, w.appendEach) })
			if r > 0 {
				os.RemoveAll(path)
			}
			return wall, cpu, err
		}, func(r int) (*lanceCoreReply, error) {
			name := fmt.Sprint(w.prefix, r)
			L, err := c.lance.ask(lanceCoreRequest{Op: w.op, Name: name})
			if err != nil {
				return nil, err
			}
			if L.Rows != int64(c.o.Rows) {
				return nil, fmt.Errorf("bench: Lance %s wrote %d rows, want %d", w.op, L.Rows, c.o.Rows)
			}
			if r > 0 {
				if _, err := c.lance.ask(lanceCoreRequest{Op: "drop", Name: name}); err != nil {
					return nil, err
				}
			}
			return L, nil
		})
		if err != nil {
			return err
		}
	}
	for _, x := range []struct{ name, ds, sub, what string }{
		{"dataset_oneshot", "o0", "", "the one-shot dataset's folder (data files, manifests, transactions)"},
		{"dataset_appends", "a0", "", fmt.Sprintf("the %d-fragment dataset's folder before any index", c.o.Appends)},
		{"data_files_appends", "a0", "data", "its data files (data/) alone"},
	} {
		a, err := dirBytes(filepath.Join(c.lancerPath(x.ds), x.sub))
		if err != nil {
			return err
		}
		b, err := dirBytes(filepath.Join(c.lancePath(x.ds), x.sub))
		if err != nil {
			return err
		}
		c.rep.addSize(x.name, a, b, x.what)
	}
	return nil
}

// lancerScanRows scans d with opts and returns the rows it read.
func lancerScanRows(ctx context.Context, d *dataset.Dataset, opts *dataset.ScanOptions) (int64, error) {
	s, err := d.Scan(opts)
	if err != nil {
		return 0, err
	}
	var n int64
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			return 0, err
		}
		n += rec.NumRows()
	}
	return n, nil
}

// reads: scans, takes, the 1% filter and the count, on the appended
// dataset (and one scan of the one-shot one).
func (c *coreRun) reads(ctx context.Context, d *dataset.Dataset, chunk int) error {
	o := c.o
	one, err := openLocal(ctx, c.lancerPath("o0"))
	if err != nil {
		return err
	}
	scan := func(spec stepSpec, ds *dataset.Dataset, table string, cols []string, filter string, rows int64) error {
		return c.run(spec, func(int) (time.Duration, time.Duration, error) {
			var n int64
			wall, cpu, err := timed(func() (err error) {
				n, err = lancerScanRows(ctx, ds, &dataset.ScanOptions{Columns: cols, Filter: filter})
				return err
			})
			if err == nil {
				err = wantRows("lancer "+spec.Name, n, rows)
			}
			return wall, cpu, err
		}, func(int) (*lanceCoreReply, error) {
			L, err := c.lance.ask(lanceCoreRequest{Op: "query", Name: table, Columns: cols, Filter: filter})
			if err == nil {
				err = wantRows("Lance "+spec.Name, L.Rows, rows)
			}
			return L, err
		})
	}
	n := int64(o.Rows)
	if err := scan(stepScan("scan_full", "every column", o.Appends), d, "a0", nil, "", n); err != nil {
		return err
	}
	if err := scan(stepScan("scan_full_1file", "every column", 1), one, "o0", nil, "", n); err != nil {
		return err
	}
	for _, col := range []string{"id", "vector", "text"} {
		if err := scan(stepScan("scan_"+col, "the "+col+" column alone", o.Appends), d, "a0", []string{col}, "", n); err != nil {
			return err
		}
	}

	// Take: the baseline's distinct random rows, by offset and by row id.
	offsets, rowIDs := takeRows(o.Take, o.Rows, chunk)
	if err := c.checkRowIDs(ctx, d, offsets, rowIDs); err != nil {
		return err
	}
	take := func(spec stepSpec, ids []uint64, byRowID bool) error {
		return c.run(spec, func(int) (time.Duration, time.Duration, error) {
			var rows int64
			wall, cpu, err := timed(func() (err error) {
				rows, err = lancerTakeRows(ctx, d, ids, byRowID)
				return err
			})
			if err == nil {
				err = wantRows("lancer "+spec.Name, rows, int64(len(ids)))
			}
			return wall, cpu, err
		}, func(int) (*lanceCoreReply, error) {
			req := lanceCoreRequest{Op: "query", Name: "a0", Offsets: ids}
			if byRowID {
				req.Offsets, req.RowIDs = nil, ids
			}
			L, err := c.lance.ask(req)
			if err == nil {
				err = wantRows("Lance "+spec.Name, L.Rows, int64(len(ids)))
			}
			return L, err
		})
	}
	if err := take(stepTake("take_offsets", o.Take, "offsets (positions in scan order)"), offsets, false); err != nil {
		return err
	}
	if err := take(stepTake("take_rowids", o.Take, "row ids"), rowIDs, true); err != nil {
		return err
	}

	// The 1% filter: id > X returns the last round(N/100) rows.
	pct := onePercent(o.Rows)
	x := n - pct - 1
	if err := scan(stepFilter(fmt.Sprintf("id > %d", x), pct), d, "a0", nil, fmt.Sprintf("id > %d", x), pct); err != nil {
		return err
	}

	return c.run(stepCount(), func(int) (time.Duration, time.Duration, error) {
		var rows uint64
		wall, cpu, err := timed(func() (err error) {
			rows, err = d.CountRows(ctx)
			return err
		})
		if err == nil {
			err = wantRows("lancer count", int64(rows), n)
		}
		return wall, cpu, err
	}, func(int) (*lanceCoreReply, error) {
		L, err := c.lance.ask(lanceCoreRequest{Op: "count", Name: "a0"})
		if err == nil {
			err = wantRows("Lance count", L.Rows, n)
		}
		return L, err
	})
}

// checkRowIDs checks that both engines' row ids are the row addresses the
// suite computed: taking them returns the rows of the offsets.
func (c *coreRun) checkRowIDs(ctx context.Context, d *dataset.Dataset, offsets, rowIDs []uint64) error {
	wantIDs := make([]int64, len(offsets))
	for i, o := range offsets {
		wantIDs[i] = int64(o)
	}
	slices.Sort(wantIDs)
	rec, err := d.TakeRowIDs(ctx, rowIDs, &dataset.TakeOptions{Columns: []string{"id"}})
	if err != nil {
		return fmt.Errorf("bench: lancer TakeRowIDs: %w", err)
	}
	col, ok := rec.Column(0).(*array.Int64)
	if !ok {
		rec.Release()
		return fmt.Errorf("bench: lancer TakeRowIDs returned id as %s", rec.Column(0).DataType())
	}
	got := slices.Clone(col.Int64Values())
	rec.Release()
	slices.Sort(got)
	if !slices.Equal(got, wantIDs) {
		return fmt.Errorf("bench: lancer's row ids are not fragment<<32|offset with fragments 0..%d", c.o.Appends-1)
	}
	L, err := c.lance.ask(lanceCoreRequest{Op: "query", Name: "a0", RowIDs: rowIDs, Columns: []string{"id"}, WantIDs: true})
	if err != nil {
		return err
	}
	var lids []int64
	if err := jsonInts(L.RawIDs, &lids); err != nil {
		return err
	}
	slices.Sort(lids)
	if !slices.Equal(lids, wantIDs) {
		return fmt.Errorf("bench: Lance's row ids are not fragment<<32|offset with fragments 0..%d (%d rows for %d ids; first %v, want %v)",
			c.o.Appends-1, len(lids), len(wantIDs), lids[:min(5, len(lids))], wantIDs[:min(5, len(wantIDs))])
	}
	return nil
}

// vectors: flat search, the index build and the indexed searches.
func (c *coreRun) vectors(ctx context.Context, d *dataset.Dataset, queries []float32, truth [][]uint64) error {
	o := c.o
	nq := len(queries) / o.Dim
	pass := func(d *dataset.Dataset, so *dataset.SearchOptions, ids *[][]uint64) func(int) (time.Duration, time.Duration, error) {
		return func(r int) (time.Duration, time.Duration, error) {
			res := make([][]uint64, nq)
			wall, cpu, err := timed(func() error {
				for q := range nq {
					got, err := lancerSearchIDs(ctx, d, queries[q*o.Dim:(q+1)*o.Dim], so)
					if err != nil {
						return err
					}
					res[q] = got
				}
				return nil
			})
			if r == 0 {
				*ids = res
			}
			return wall, cpu, err
		}
	}
	lancePass := func(req lanceCoreRequest, ids *[][]uint64) func(int) (*lanceCoreReply, error) {
		return func(r int) (*lanceCoreReply, error) {
			L, err := c.lance.ask(req)
			if err != nil {
				return nil, err
			}
			if len(L.IDs) != nq {
				return nil, fmt.Errorf("bench: Lance answered %d of %d queries", len(L.IDs), nq)
			}
			if r == 0 {
				*ids = toUint64s(L.IDs)
			}
			return L, nil
		}
	}
	// search times one step; files says whose index files both engines
	// search ("" each its own, "lance" Lance's, "lancer" lancer's), and
	// d is the dataset lancer searches.
	search := func(spec stepSpec, d *dataset.Dataset, so *dataset.SearchOptions, req lanceCoreRequest, setting, files string) error {
		var lids, Lids [][]uint64
		req.Op, req.Name, req.K = "search", "a0", o.K
		if err := c.run(spec, pass(d, so, &lids), lancePass(req, &Lids)); err != nil {
			return err
		}
		st := c.rep.StepDetails[len(c.rep.StepDetails)-1]
		qps := func(msPerPass float64) float64 {
			if msPerPass <= 0 {
				return 0
			}
			return float64(nq) / (msPerPass / 1000)
		}
		c.rep.RecallQPS = append(c.rep.RecallQPS,
			RecallQPS{Engine: "lancer", Setting: setting, Index: files, Recall: Recall(lids, truth), QPS: qps(st.Lancer.MedianMS)},
			RecallQPS{Engine: "lance", Setting: setting, Index: files, Recall: Recall(Lids, truth), QPS: qps(st.Lance.MedianMS),
				QPSJS: qps(st.LanceJS.MedianMS)})
		return nil
	}
	if err := search(stepSearch("flat_search", "exact (flat) search, no index", nq, o.K), d,
		&dataset.SearchOptions{K: o.K, Exact: true}, lanceCoreRequest{Flat: true}, "flat", ""); err != nil {
		return err
	}

	if _, err := c.buildIndex(ctx, d); err != nil {
		return err
	}

	// Search a freshly opened dataset, as a reader would.
	d, err := openLocal(ctx, c.lancerPath("a0"))
	if err != nil {
		return err
	}
	for _, s := range o.Settings {
		if err := search(stepSearch("search_"+settingSlug(s), "IVF_HNSW_SQ search, "+s.String()+", each engine on the index it built", nq, o.K), d,
			&dataset.SearchOptions{K: o.K, NProbes: s.NProbes, Ef: s.Ef, Index: "vector_idx"},
			lanceCoreRequest{NProbes: s.NProbes, Ef: s.Ef}, s.String(), ""); err != nil {
			return err
		}
	}
	// Issue #17: the same index files searched by both engines, Lance's
	// (lancer opens Lance's table) and lancer's (Lance opens lancer's),
	// so that the QPS ratio is the engines' and not the builders'.
	ld, err := openLocal(ctx, c.lancePath("a0"))
	if err != nil {
		return fmt.Errorf("bench: lancer opening Lance's table: %w", err)
	}
	for _, files := range []string{"lance", "lancer"} {
		req := lanceCoreRequest{}
		sd, whose := ld, "Lance's"
		if files == "lancer" {
			req.Dir, sd, whose = filepath.Dir(c.lancerPath("a0")), d, "lancer's"
		}
		for _, s := range o.Settings {
			req.NProbes, req.Ef = s.NProbes, s.Ef
			if err := search(stepSearch("search_"+files+"idx_"+settingSlug(s), "IVF_HNSW_SQ search, "+s.String()+", both engines on "+whose+" index files", nq, o.K), sd,
				&dataset.SearchOptions{K: o.K, NProbes: s.NProbes, Ef: s.Ef, Index: "vector_idx"},
				req, s.String(), files); err != nil {
				return err
			}
		}
	}
	// Last, the build in a fresh process per side (issue #17): its index
	// replaces the one the searches above used.
	return c.freshBuilds(ctx)
}

// buildIndex runs index_build: IVF_HNSW_SQ on both sides, in this
// process and in lance-core.mjs's, rebuilt (replaced) each run. It returns
// lancer's dataset with the index.
func (c *coreRun) buildIndex(ctx context.Context, d *dataset.Dataset) (*dataset.Dataset, error) {
	o := c.o
	b := &c.build
	err := c.run(stepBuild(o.Partitions), func(r int) (time.Duration, time.Duration, error) {
		runtime.GC()
		c.hwm()
		before := procStatus("VmRSS")
		resetPeakRSS()
		wall, cpu, err := timed(func() error {
			nd, err := d.CreateIndex(ctx, "vector", coreIndexOptions(o.Partitions))
			if err == nil {
				d = nd
			}
			return err
		})
		peak := procStatus("VmHWM")
		b.lancerPeak, b.lancerGrowth = max(b.lancerPeak, peak), max(b.lancerGrowth, peak-before)
		c.hwm()
		if r == 0 && err == nil {
			n, err := dirBytes(filepath.Join(c.lancerPath("a0"), "_indices"))
			if err != nil {
				return 0, 0, err
			}
			c.rep.addSize("index", n, -1, "the IVF_HNSW_SQ index's files (_indices/) after the first build")
		}
		return wall, cpu, err
	}, func(r int) (*lanceCoreReply, error) {
		L, err := c.lance.ask(lanceCoreRequest{Op: "build", Name: "a0", Partitions: o.Partitions})
		if err != nil {
			return nil, err
		}
		b.lancePeak, b.lanceGrowth = max(b.lancePeak, L.PeakRSS), max(b.lanceGrowth, L.PeakRSS-L.RSSBefore)
		if r == 0 {
			// replace: true leaves the earlier index folders behind: measure
			// the first build's alone.
			n, err := dirBytes(filepath.Join(c.lancePath("a0"), "_indices"))
			if err != nil {
				return nil, err
			}
			c.rep.Sizes[len(c.rep.Sizes)-1].setLance(n)
		}
		return L, nil
	})
	return d, err
}

// settingSlug names a setting in step names: "np10_ef100", "np10_efdef".
func settingSlug(s VectorSetting) string {
	ef := "def"
	if s.Ef > 0 {
		ef = fmt.Sprint(s.Ef)
	}
	np := "def"
	if s.NProbes > 0 {
		np = fmt.Sprint(s.NProbes)
	}
	return "np" + np + "_ef" + ef
}

func toUint64s(xs [][]int64) [][]uint64 {
	out := make([][]uint64, len(xs))
	for i, row := range xs {
		out[i] = make([]uint64, len(row))
		for j, x := range row {
			out[i][j] = uint64(x)
		}
	}
	return out
}
