package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/table"
)

// Versions are the data file versions both lancer and Lance write, the
// ones Compare measures by default.
var Versions = []format.Version{format.Version2_0, format.Version2_1, format.Version2_2}

// CompareOptions configures Compare. The zero value means all defaults.
type CompareOptions struct {
	// Workload is the generated table to write. Default: Workload{}.
	Workload Workload
	// Versions are the data file versions to write. Default Versions.
	Versions []format.Version
	// Runs is how many times each write and scan is timed; the report
	// shows the medians. Default 3.
	Runs int
	// Dir is the scratch folder (it gets the IPC file and the datasets).
	// Default: a new temporary folder, removed afterwards.
	Dir string
	// Fixtures also rewrites the shared types_v2_* fixtures with lancer and
	// compares their data file sizes with Lance's.
	Fixtures bool
	// FixturesDir is the folder holding lance/MANIFEST.json. Default
	// $LANCER_FIXTURES, else shared/fixtures in a parent of the repository.
	FixturesDir string
	// Verify has real Lance read back every row lancer wrote (the
	// workload's first run and the fixture rewrites) and checks them
	// against what was written; otherwise only the row counts are checked.
	Verify bool
	// Log, if set, gets a line per step.
	Log io.Writer
}

// Result is one data file version's measurements of the workload.
type Result struct {
	Version format.Version
	// LancerWrite and LanceWrite are the timed writes, one per run; so are
	// the scans (a full scan of every column).
	LancerWrite, LanceWrite []Timing
	LancerScan, LanceScan   []Timing
	// LancerSizes and LanceSizes are the data files of the first run.
	LancerSizes, LanceSizes Sizes
	// LanceReadRows is the row count real Lance scanned in lancer's output.
	LanceReadRows int64
	// LanceScanOfLancer is the time real Lance took to scan lancer's output.
	LanceScanOfLancer Timing
}

// Timing is one timed operation.
type Timing struct {
	// Wall is the elapsed time.
	Wall time.Duration
	// CPU is the CPU time (user and system, all threads) of the whole
	// process over the same span: less sensitive than Wall to other
	// processes competing for the cores.
	CPU time.Duration
}

// FixtureResult compares a shared fixture Lance wrote with lancer's
// rewrite of its rows at the same data file version.
type FixtureResult struct {
	Name    string
	Version format.Version
	Rows    int64
	// LancerSizes are lancer's rewrite's data files; LanceSizes the
	// fixture's.
	LancerSizes, LanceSizes Sizes
	// LanceReadRows is the row count real Lance scanned in the rewrite.
	LanceReadRows int64
}

// Report is what Compare measured.
type Report struct {
	Workload Workload
	RawBytes int64
	Runs     int
	Results  []Result
	Fixtures []FixtureResult
}

// Compare writes the workload with lancer and with real Lance (LanceDB for
// Node, the pinned reference) at each data file version, timing writes and
// scans, and measures the data files both wrote. It fails when node or the
// reference is missing.
func Compare(ctx context.Context, opts CompareOptions) (*Report, error) {
	o := opts
	o.Workload = o.Workload.withDefaults()
	if len(o.Versions) == 0 {
		o.Versions = Versions
	}
	if o.Runs <= 0 {
		o.Runs = 3
	}
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", args...)
		}
	}
	ref, err := findRef()
	if err != nil {
		return nil, err
	}
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "lancer-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		o.Dir = dir
	}

	logf("generating %s", o.Workload)
	mem := memory.DefaultAllocator
	schema := o.Workload.Schema()
	recs := o.Workload.Records(mem)
	defer releaseAll(recs)
	rep := &Report{Workload: o.Workload, RawBytes: RawBytes(recs), Runs: o.Runs}
	ipcPath := filepath.Join(o.Dir, "workload.arrow")
	if err := WriteIPC(ipcPath, schema, recs); err != nil {
		return nil, err
	}

	for _, v := range o.Versions {
		res := Result{Version: v}
		vdir := versionDir(v)

		// Real Lance: every run's write and scan in one node process.
		logf("%s: writing and scanning with Lance (%d runs)", v, o.Runs)
		var reqs []lanceRequest
		for run := range o.Runs {
			db := filepath.Join(o.Dir, "lance", vdir, fmt.Sprint(run))
			reqs = append(reqs,
				lanceRequest{Op: "write", IPC: ipcPath, Dir: db, Name: "t", StorageVersion: v.String()},
				lanceRequest{Op: "scan", Dir: db, Name: "t"})
		}
		replies, err := askLance(ref, reqs)
		if err != nil {
			return nil, err
		}
		for i, r := range replies {
			if r.Rows != int64(o.Workload.Rows) {
				return nil, fmt.Errorf("bench: Lance %s of %s: %d rows, want %d", reqs[i].Op, v, r.Rows, o.Workload.Rows)
			}
			if reqs[i].Op == "write" {
				res.LanceWrite = append(res.LanceWrite, r.timing())
			} else {
				res.LanceScan = append(res.LanceScan, r.timing())
			}
		}
		if res.LanceSizes, err = DataFileSizes(ctx, filepath.Join(o.Dir, "lance", vdir, "0", "t.lance")); err != nil {
			return nil, err
		}

		// lancer: the same runs, in this process.
		logf("%s: writing and scanning with lancer (%d runs)", v, o.Runs)
		for run := range o.Runs {
			path := filepath.Join(o.Dir, "lancer", vdir, fmt.Sprint(run), "t.lance")
			runtime.GC() // start each timing with the same heap
			w, err := lancerWrite(ctx, path, schema, recs, v)
			if err != nil {
				return nil, err
			}
			runtime.GC()
			s, n, err := lancerScan(ctx, path)
			if err != nil {
				return nil, err
			}
			if n != int64(o.Workload.Rows) {
				return nil, fmt.Errorf("bench: lancer scan of %s: %d rows, want %d", v, n, o.Workload.Rows)
			}
			res.LancerWrite = append(res.LancerWrite, w)
			res.LancerScan = append(res.LancerScan, s)
		}
		if res.LancerSizes, err = DataFileSizes(ctx, filepath.Join(o.Dir, "lancer", vdir, "0", "t.lance")); err != nil {
			return nil, err
		}

		// Keep the first run of each side (for inspection), drop the rest.
		for run := 1; run < o.Runs; run++ {
			os.RemoveAll(filepath.Join(o.Dir, "lance", vdir, fmt.Sprint(run)))
			os.RemoveAll(filepath.Join(o.Dir, "lancer", vdir, fmt.Sprint(run)))
		}
		rep.Results = append(rep.Results, res)
	}

	var fixtureData []written
	if o.Fixtures {
		logf("rewriting the types_v2_* fixtures with lancer")
		if rep.Fixtures, fixtureData, err = compareFixtures(ctx, o); err != nil {
			return nil, err
		}
		defer func() {
			for _, w := range fixtureData {
				releaseAll(w.recs)
			}
		}()
	}

	// Real Lance reads back everything lancer wrote, in one node process.
	logf("reading lancer's datasets with Lance")
	var back []written
	for _, res := range rep.Results {
		back = append(back, written{db: filepath.Join(o.Dir, "lancer", versionDir(res.Version), "0"), schema: schema, recs: recs})
	}
	back = append(back, fixtureData...)
	var reqs []lanceRequest
	for i, w := range back {
		reqs = append(reqs, lanceRequest{Op: "scan", Dir: w.db, Name: "t"})
		if o.Verify {
			reqs = append(reqs, lanceRequest{Op: "export", Dir: w.db, Name: "t", Out: filepath.Join(o.Dir, fmt.Sprintf("lance-read-%d.arrow", i))})
		}
	}
	replies, err := askLance(ref, reqs)
	if err != nil {
		return nil, fmt.Errorf("bench: Lance reading lancer's datasets: %w", err)
	}
	for i, w := range back {
		k := i
		if o.Verify {
			k = 2 * i
			if err := checkExport(reqs[k+1].Out, w.db, w.schema, w.recs); err != nil {
				return nil, err
			}
		}
		if i < len(rep.Results) {
			rep.Results[i].LanceReadRows, rep.Results[i].LanceScanOfLancer = replies[k].Rows, replies[k].timing()
		} else {
			rep.Fixtures[i-len(rep.Results)].LanceReadRows = replies[k].Rows
		}
	}
	return rep, nil
}

// versionDir names a data file version in paths: "v2_1".
func versionDir(v format.Version) string {
	return "v" + strings.ReplaceAll(v.String(), ".", "_")
}

// lancerWrite times dataset.Write of recs as a new dataset at path.
func lancerWrite(ctx context.Context, path string, schema *arrow.Schema, recs []arrow.RecordBatch, v format.Version) (Timing, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return Timing{}, err
	}
	store, err := blob.NewLocalStore(path)
	if err != nil {
		return Timing{}, err
	}
	rr, err := array.NewRecordReader(schema, recs)
	if err != nil {
		return Timing{}, err
	}
	defer rr.Release()
	cpu := processCPU()
	start := time.Now()
	_, err = dataset.Write(ctx, store, rr, &dataset.WriteOptions{
		FileVersion: v,
		// Lance's default (1024 * 1024): Lance's createTable uses it too.
		MaxRowsPerFile: dataset.DefaultMaxRowsPerFile,
	})
	t := Timing{Wall: time.Since(start), CPU: processCPU() - cpu}
	if err != nil {
		return Timing{}, fmt.Errorf("bench: lancer write %s: %w", v, err)
	}
	return t, nil
}

// lancerScan times opening the dataset at path and scanning every column,
// and returns the rows scanned.
func lancerScan(ctx context.Context, path string) (Timing, int64, error) {
	cpu := processCPU()
	start := time.Now()
	t, err := table.Open(ctx, path, nil)
	if err != nil {
		return Timing{}, 0, err
	}
	defer t.Close()
	s, err := t.Scan(nil)
	if err != nil {
		return Timing{}, 0, err
	}
	var n int64
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			return Timing{}, 0, fmt.Errorf("bench: lancer scan %s: %w", path, err)
		}
		n += rec.NumRows()
	}
	return Timing{Wall: time.Since(start), CPU: processCPU() - cpu}, n, nil
}

// scanAll reads every row of the dataset at path as record batches, which
// the caller releases.
func scanAll(ctx context.Context, path string) (*arrow.Schema, []arrow.RecordBatch, error) {
	d, err := openLocal(ctx, path)
	if err != nil {
		return nil, nil, err
	}
	s, err := d.Scan(nil)
	if err != nil {
		return nil, nil, err
	}
	var recs []arrow.RecordBatch
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			releaseAll(recs)
			return nil, nil, err
		}
		rec.Retain()
		recs = append(recs, rec)
	}
	return s.Schema(), recs, nil
}

// written is a dataset lancer wrote at <db>/t.lance, and its rows.
type written struct {
	db     string
	schema *arrow.Schema
	recs   []arrow.RecordBatch
}

// compareFixtures rewrites types_v2_{0,1,2} with lancer at their own data
// file version and measures both; it returns the rewrites with their rows,
// which the caller releases.
func compareFixtures(ctx context.Context, o CompareOptions) ([]FixtureResult, []written, error) {
	dir, err := fixturesDir(o.FixturesDir)
	if err != nil {
		return nil, nil, err
	}
	var out []FixtureResult
	var ws []written
	fail := func(err error) ([]FixtureResult, []written, error) {
		for _, w := range ws {
			releaseAll(w.recs)
		}
		return nil, nil, err
	}
	for _, v := range o.Versions {
		name := "types_" + versionDir(v)
		src := filepath.Join(dir, "lance", name+".lance")
		schema, recs, err := scanAll(ctx, src)
		if err != nil {
			return fail(fmt.Errorf("bench: reading fixture %s: %w", name, err))
		}
		db := filepath.Join(o.Dir, "fixtures", name)
		ws = append(ws, written{db: db, schema: schema, recs: recs})
		var rows int64
		for _, r := range recs {
			rows += r.NumRows()
		}
		if _, err := lancerWrite(ctx, filepath.Join(db, "t.lance"), schema, recs, v); err != nil {
			return fail(fmt.Errorf("bench: rewriting fixture %s: %w", name, err))
		}
		fr := FixtureResult{Name: name, Version: v, Rows: rows}
		if fr.LanceSizes, err = DataFileSizes(ctx, src); err != nil {
			return fail(err)
		}
		if fr.LancerSizes, err = DataFileSizes(ctx, filepath.Join(db, "t.lance")); err != nil {
			return fail(err)
		}
		out = append(out, fr)
	}
	return out, ws, nil
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// fixturesDir finds the shared fixtures: dir, else $LANCER_FIXTURES, else
// shared/fixtures next to the repository or one of its parents.
func fixturesDir(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv("LANCER_FIXTURES")
	}
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "lance", "MANIFEST.json")); err != nil {
			return "", fmt.Errorf("bench: fixtures folder %s: %w", dir, err)
		}
		return dir, nil
	}
	for d := repoRoot(); ; d = filepath.Dir(d) {
		c := filepath.Join(d, "shared", "fixtures")
		if _, err := os.Stat(filepath.Join(c, "lance", "MANIFEST.json")); err == nil {
			return c, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("bench: the shared fixtures (shared/fixtures/lance/MANIFEST.json) are not next to the repository: set LANCER_FIXTURES")
		}
	}
}

// median returns the median of the Wall (cpu false) or CPU times of ts
// (the mean of the middle two for an even count).
func median(ts []Timing, cpu bool) time.Duration {
	if len(ts) == 0 {
		return 0
	}
	s := make([]time.Duration, len(ts))
	for i, t := range ts {
		s[i] = t.Wall
		if cpu {
			s[i] = t.CPU
		}
	}
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
