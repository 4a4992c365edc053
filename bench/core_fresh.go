package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/vector"
)

// The fresh-process index build (issue #17). The in-process index_build
// step measures lancer's resident-set growth in a process that still holds
// the suite's input (the vectors, texts, Arrow batches and ground truth,
// some 300 MB at 200k rows), whose pages the build's allocations can
// reuse or push out, against Lance's in a node process holding IPC files:
// not the same ground. index_build_fresh builds the same index on each
// engine's table in a process of its own, started for the build and
// holding nothing else, as a user's one-off `index create` does: lancer in
// a child of this binary (MaybeBuildChild), Lance in lance-build.mjs. Each
// reports its resident set after opening the table, its peak during the
// build (VmHWM, reset after the open) and the build's time.

// buildChildEnv, when set in the environment, makes this binary the lancer
// half of the fresh-process build: its value is a freshBuildRequest.
const buildChildEnv = "LANCER_BENCH_BUILD_CHILD"

// lanceBuildScript is the Lance half, in this folder.
const lanceBuildScript = "lance-build.mjs"

// buildChildHooked is set by MaybeBuildChild: the binary this process runs
// can be started as a build child.
var buildChildHooked bool

// freshBuildRequest is what the child builds: the IVF_HNSW_SQ index of
// the core suite on the dataset at Path.
type freshBuildRequest struct {
	Path       string `json:"path"`
	Partitions int    `json:"partitions"`
}

// freshBuildReply is what either half prints (lance-build.mjs prints the
// same fields): the build's wall and CPU time in milliseconds, the
// resident set before it and the peak during it, in bytes.
type freshBuildReply struct {
	MS        float64 `json:"ms"`
	CPUMS     float64 `json:"cpuMs"`
	RSSBefore int64   `json:"rssBefore"`
	PeakRSS   int64   `json:"peakRss"`
}

// MaybeBuildChild makes this process the lancer half of the core suite's
// fresh-process index build when RunCore started it as one: it builds the
// index, prints the measurement and exits. Otherwise it returns at once.
// Call it first in main (and in TestMain) of every binary that runs
// RunCore: the suite starts its own executable as the child and refuses
// to run without the hook.
func MaybeBuildChild() {
	buildChildHooked = true
	arg := os.Getenv(buildChildEnv)
	if arg == "" {
		return
	}
	reply, err := runBuildChild(context.Background(), arg)
	if err == nil {
		err = json.NewEncoder(os.Stdout).Encode(reply)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: fresh-process build:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runBuildChild(ctx context.Context, arg string) (*freshBuildReply, error) {
	var req freshBuildRequest
	if err := json.Unmarshal([]byte(arg), &req); err != nil {
		return nil, fmt.Errorf("%s=%q: %w", buildChildEnv, arg, err)
	}
	d, err := openLocal(ctx, req.Path)
	if err != nil {
		return nil, err
	}
	runtime.GC()
	before := procStatus("VmRSS")
	resetPeakRSS()
	wall, cpu, err := timed(func() error {
		_, err := d.CreateIndex(ctx, "vector", coreIndexOptions(req.Partitions))
		return err
	})
	if err != nil {
		return nil, err
	}
	return &freshBuildReply{MS: ms(wall), CPUMS: ms(cpu), RSSBefore: before, PeakRSS: procStatus("VmHWM")}, nil
}

// coreIndexOptions are the options of the suite's index, in this process
// or a fresh one.
func coreIndexOptions(partitions int) *dataset.CreateIndexOptions {
	return &dataset.CreateIndexOptions{
		Type: dataset.IndexIVFHNSWSQ, Name: "vector_idx", Metric: vector.L2, Partitions: partitions, Replace: true,
	}
}

// runFresh runs cmd and decodes the freshBuildReply it prints as its
// last line.
func runFresh(cmd *exec.Cmd, who string) (*freshBuildReply, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("bench: %s fresh-process build: %w\n%s", who, err, tail(stderr.Bytes(), 2000))
	}
	lines := bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n"))
	var r freshBuildReply
	if err := json.Unmarshal(lines[len(lines)-1], &r); err != nil || r.PeakRSS <= 0 || r.RSSBefore <= 0 {
		return nil, fmt.Errorf("bench: %s fresh-process build printed %q (want {ms, cpuMs, rssBefore, peakRss}; err %v)\n%s",
			who, tail(stdout.Bytes(), 500), err, tail(stderr.Bytes(), 2000))
	}
	return &r, nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func stepBuildFresh(partitions int) stepSpec {
	return stepSpec{Name: "index_build_fresh", cpu: true, noWarmup: true,
		What:   fmt.Sprintf("build the IVF_HNSW_SQ index on vector (%d partitions, l2) in a fresh process holding nothing else, replacing the previous one", partitions),
		Lancer: "a child process of the bench binary: open the dataset, then Dataset.CreateIndex until the index is committed (the time and CPU of the build alone)",
		Lance:  "node " + lanceBuildScript + ": open the table, then createIndex(hnswSq) with LanceDB's defaults until it returns",
	}
}

// freshBuilds runs index_build_fresh and records each side's peak
// resident set and its growth over the set after the open (the largest
// over the runs).
func (c *coreRun) freshBuilds(ctx context.Context) error {
	if !buildChildHooked {
		return fmt.Errorf("bench: the fresh-process build starts this binary as its child: call bench.MaybeBuildChild first in main (or TestMain)")
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("bench: fresh-process build: %w", err)
	}
	req, err := json.Marshal(freshBuildRequest{Path: c.lancerPath("a0"), Partitions: c.o.Partitions})
	if err != nil {
		return err
	}
	var lancerPeak, lancerGrowth, lancePeak, lanceGrowth int64
	err = c.run(stepBuildFresh(c.o.Partitions), func(int) (time.Duration, time.Duration, error) {
		cmd := exec.CommandContext(ctx, exe)
		cmd.Env = append(os.Environ(), buildChildEnv+"="+string(req))
		r, err := runFresh(cmd, "lancer")
		if err != nil {
			return 0, 0, err
		}
		lancerPeak, lancerGrowth = max(lancerPeak, r.PeakRSS), max(lancerGrowth, r.PeakRSS-r.RSSBefore)
		return time.Duration(r.MS * float64(time.Millisecond)), time.Duration(r.CPUMS * float64(time.Millisecond)), nil
	}, func(int) (*lanceCoreReply, error) {
		cmd := c.ref.Command(lanceBuildScript, filepath.Join(c.o.Dir, "lance"), "a0", strconv.Itoa(c.o.Partitions))
		r, err := runFresh(cmd, "Lance")
		if err != nil {
			return nil, err
		}
		lancePeak, lanceGrowth = max(lancePeak, r.PeakRSS), max(lanceGrowth, r.PeakRSS-r.RSSBefore)
		return &lanceCoreReply{MS: r.MS, CPUMS: r.CPUMS, RSSBefore: r.RSSBefore, PeakRSS: r.PeakRSS}, nil
	})
	if err != nil {
		return err
	}
	c.rep.addMemory("peak_rss_build_fresh", lancerPeak, lancePeak,
		"peak resident set of a fresh process that opens the table and builds the index (VmHWM; the largest over the runs)")
	c.rep.addMemory("peak_rss_build_fresh_growth", lancerGrowth, lanceGrowth,
		"that peak minus the process's resident set after opening the table, before the build: the build's own memory, with no input held")
	return nil
}
