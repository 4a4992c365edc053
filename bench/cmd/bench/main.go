// Command bench runs issue #8's benchmark suites, lancer against real
// Lance (the pinned LanceDB for Node) on the workload of
// shared/bench/lance-baseline.mjs, and writes the report: report.md,
// report.json and PNG plots (recall against QPS, time per step) in -out.
//
//	go run ./bench/cmd/bench -suite=core                 # 200k rows, 3 runs per side, bench/results/
//	go run ./bench/cmd/bench -suite=core -n 20000 -out /tmp/core
//	go run ./bench/cmd/bench -suite=scale                # 1M x 128 and 100k x 768, one folder each
//	go run ./bench/cmd/bench -suite=server               # 32 official clients against lancer serve, 60 s
//	go run ./bench/cmd/bench -suite=text                 # FTS build and queries on 1M sentences, bench/results/text
//	go run ./bench/cmd/bench -suite=s3 -n 20000          # lancer and Lance on a local S3 server (versitygw)
//	nice go run ./bench/cmd/bench -n 100000 -build-only -out /tmp/build   # index builds only, fresh-process memory
//	go run ./bench/cmd/bench -n 20000 -cpuprofile cpu.out && go tool pprof -tagfocus step=flat_search cpu.out
//
// Each step runs -runs times per side, alternating lancer and Lance; the
// report gives medians, min and max, and the ratio Lance / lancer (above 1:
// lancer faster). It fails when node or the Lance reference (scripts/test.sh
// installs it in .cache/lance-ref, or $LANCER_LANCE_REF) is missing. See
// package bench.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/lancerdb/lancer/bench"
)

func main() {
	// The core suite starts this binary again for its fresh-process index
	// build: then it builds, reports and exits here.
	bench.MaybeBuildChild()
	var (
		o        bench.CoreOptions
		suite    string
		out      string
		settings string
		seed     uint
	)
	flag.StringVar(&suite, "suite", "core", "suite to run: core, scale (1M x 128 and 100k x 768), server (the load test of lancer serve), s3 (core reads and writes on a local S3 server) build (the CLI's cold build time and size) or text (FTS index build and queries, 1M sentences)")
	flag.IntVar(&o.Rows, "n", bench.DefaultVectorRows, "rows of the table (core suite)")
	flag.IntVar(&o.Dim, "dim", bench.DefaultVectorDim, "vector dimension (core suite)")
	flag.IntVar(&o.Runs, "runs", 5, "timed runs of each step per side (alternating lancer, Lance), after one warm-up run each")
	flag.BoolVar(&o.BuildOnly, "build-only", false, "core and scale suites: run the writes (they make the tables) and then only the index builds, in the suite's process and in a fresh process per side, with their memory")
	flag.BoolVar(&o.WritesOnly, "writes-only", false, "core suite: run only the write steps (one-shot write, create + appends) and their sizes")
	flag.BoolVar(&o.NoWarmup, "no-warmup", false, "time every run, without the untimed warm-up run per step and side")
	flag.BoolVar(&profileSteps, "profiles", false, "core and scale suites: write lancer's CPU and allocation profiles of each step to <out>/profiles/<step>.{cpu,allocs}.pprof")
	flag.UintVar(&seed, "seed", bench.DefaultVectorSeed, "generator seed")
	flag.StringVar(&settings, "settings", "", "search settings nprobes:ef, comma-separated (default 1:20,5:40,10:0,10:100,20:100,50:200)")
	flag.StringVar(&out, "out", "", "folder of the report (default bench/results for core, bench/results/scale for scale)")
	flag.StringVar(&o.Dir, "dir", "", "scratch folder, kept afterwards (default a temporary folder, removed)")
	latency := flag.Duration("latency", 0, "s3 suite: delay the proxy adds to every request, standing for an object store's round trip (e.g. 20ms)")
	coldModules := flag.Bool("cold-modules", false, "build suite: also start from an empty module cache, downloading every module as a fresh machine does")
	quiet := flag.Bool("q", false, "print no progress")
	servers := flag.Int("servers", 1, "server suite: servers on the one data folder (more than 1: lancer serve processes, clients round-robin)")
	flag.BoolVar(&readme, "readme", false, "core suite: rewrite README.md's core-suite figures (between its generated-section markers) from this run's report")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of lancer's side of the suite to this file; samples carry the step's name (go tool pprof -tagfocus step=flat_search)")
	textRuns := flag.Int("text-runs", 3, "text suite: timed runs of each step per side")
	textQueries := flag.Int("text-queries", bench.DefaultTextQueries, "text suite: queries of each kind (term, or, and, phrase)")
	flag.Parse()
	// -n's default is the core suite's; the text suite has its own (1M).
	rowsSet := false
	flag.Visit(func(f *flag.Flag) { rowsSet = rowsSet || f.Name == "n" })
	if readme && suite != "core" {
		fail(fmt.Errorf("bench: -readme rewrites the README's core-suite figures: it needs -suite=core"))
	}
	if readme && (o.WritesOnly || o.BuildOnly) {
		fail(fmt.Errorf("bench: -readme needs every step's figures: it cannot be combined with -writes-only or -build-only"))
	}
	if profileSteps && *cpuProfile != "" {
		fail(fmt.Errorf("bench: -profiles and -cpuprofile cannot be combined: Go runs one CPU profile at a time"))
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
		defer func() {
			pprof.StopCPUProfile()
			if err := f.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "bench: cpu profile:", err)
			}
		}()
	}
	o.Seed = uint32(seed)
	if settings != "" {
		var err error
		if o.Settings, err = bench.ParseVectorSettings(settings); err != nil {
			fail(err)
		}
	}
	if !*quiet {
		o.Log = os.Stderr
	}
	ctx := context.Background()
	switch suite {
	case "core":
		if out == "" {
			out = filepath.Join(bench.RepoRoot(), "bench", "results")
		}
		run(ctx, o, out)
	case "scale":
		if out == "" {
			out = filepath.Join(bench.RepoRoot(), "bench", "results", "scale")
		}
		for _, s := range []struct {
			name      string
			rows, dim int
		}{{"1m-128", 1_000_000, 128}, {"100k-768", 100_000, 768}} {
			so := o
			so.Suite, so.Rows, so.Dim = "scale "+s.name, s.rows, s.dim
			if o.Dir != "" {
				so.Dir = filepath.Join(o.Dir, s.name)
			}
			run(ctx, so, filepath.Join(out, s.name))
		}
	case "server":
		// The load test of issue #7 (see bench/cmd/serverload for its
		// knobs): 32 official clients against lancer serve for 60 s.
		if out == "" {
			out = filepath.Join(bench.RepoRoot(), "bench", "results", "server")
			if *servers > 1 {
				out += fmt.Sprintf("-%d", *servers)
			}
		}
		rep, err := bench.RunServerLoad(ctx, bench.ServerLoadOptions{Servers: *servers, Dir: o.Dir})
		if err != nil {
			fail(err)
		}
		if err := rep.Print(os.Stdout); err != nil {
			fail(err)
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			fail(err)
		}
		if err := rep.WriteJSON(filepath.Join(out, "report.json")); err != nil {
			fail(err)
		}
		if !rep.OK() {
			fail(fmt.Errorf("the load test saw errors or lost inserts"))
		}
	case "s3":
		// The core suite's writes and reads, both engines against one
		// local S3 server (versitygw), with request and byte counts.
		if out == "" {
			out = filepath.Join(bench.RepoRoot(), "bench", "results", "s3")
		}
		rep, err := bench.RunS3(ctx, bench.S3Options{Rows: o.Rows, Dim: o.Dim, Seed: o.Seed, Runs: o.Runs, Dir: o.Dir, Log: o.Log, Latency: *latency})
		if err != nil {
			fail(err)
		}
		if err := rep.Write(out); err != nil {
			fail(err)
		}
		fmt.Print(rep.Markdown())
	case "text":
		// Issue #18's text workload: FTS index builds and queries on
		// generated sentences (-n rows, default 1M).
		if out == "" {
			out = filepath.Join(bench.RepoRoot(), "bench", "results", "text")
		}
		to := bench.TextOptions{Runs: *textRuns, NoWarmup: o.NoWarmup, Dir: o.Dir, Log: o.Log, Queries: *textQueries}
		if rowsSet {
			to.Rows = o.Rows
		}
		if profileSteps {
			to.ProfileDir = filepath.Join(out, "profiles")
		}
		rep, err := bench.RunText(ctx, to)
		if err != nil {
			fail(err)
		}
		if err := rep.Write(out); err != nil {
			fail(err)
		}
		fmt.Print(rep.Markdown())
	case "build":
		// Issue #23's "fast to start": the CLI's cold build, a warm
		// rebuild, its size and the modules behind it.
		if out == "" {
			out = filepath.Join(bench.RepoRoot(), "bench", "results", "build")
		}
		rep, err := bench.RunBuild(ctx, bench.BuildOptions{ColdModules: *coldModules, Dir: o.Dir, Log: o.Log})
		if err != nil {
			fail(err)
		}
		if err := os.MkdirAll(out, 0o755); err != nil {
			fail(err)
		}
		if err := rep.WriteJSON(filepath.Join(out, "build.json")); err != nil {
			fail(err)
		}
		md := rep.Markdown(20)
		if err := os.WriteFile(filepath.Join(out, "build.md"), []byte(md), 0o644); err != nil {
			fail(err)
		}
		fmt.Print(md)
	default:
		fail(fmt.Errorf("unknown suite %q (core, scale, server, s3, build, text)", suite))
	}
}

// profileSteps is -profiles: run sets the suite's ProfileDir beside its
// report.
var profileSteps bool

// readme is -readme: run rewrites the README's generated section.
var readme bool

func run(ctx context.Context, o bench.CoreOptions, out string) {
	start := time.Now()
	if profileSteps {
		o.ProfileDir = filepath.Join(out, "profiles")
	}
	rep, err := bench.RunCore(ctx, o)
	if err != nil {
		fail(err)
	}
	if err := rep.Write(out); err != nil {
		fail(err)
	}
	fmt.Print(rep.Markdown(false))
	if readme {
		path := filepath.Join(bench.RepoRoot(), "README.md")
		if err := bench.UpdateReadme(path, rep); err != nil {
			fail(err)
		}
		fmt.Fprintf(os.Stderr, "rewrote the core-suite figures in %s\n", path)
	}
	fmt.Fprintf(os.Stderr, "report in %s (%s)\n", out, time.Since(start).Round(time.Second))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
