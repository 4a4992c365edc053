// Command compare writes the benchmark workload with lancer and with real
// Lance (the pinned LanceDB for Node) in the same run and prints write and
// scan times and data file sizes side by side, per data file version; with
// -fixtures also the sizes of lancer's rewrites of the shared types_v2_*
// fixtures. See package bench.
//
//	go run ./bench/cmd/compare -rows 100000 -runs 3 -fixtures
//
// It fails when node or the Lance reference (scripts/test.sh installs it in
// .cache/lance-ref, or $LANCER_LANCE_REF) is missing.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/lancerdb/lancer/bench"
	"github.com/lancerdb/lancer/format"
)

func main() {
	var (
		o        bench.CompareOptions
		versions string
	)
	flag.IntVar(&o.Workload.Rows, "rows", bench.DefaultRows, "rows of the workload")
	flag.IntVar(&o.Workload.Dim, "dim", bench.DefaultDim, "embedding dimension")
	flag.IntVar(&o.Workload.BatchRows, "batch", bench.DefaultBatchRows, "rows per record batch")
	flag.Uint64Var(&o.Workload.Seed, "seed", bench.DefaultSeed, "generator seed")
	flag.IntVar(&o.Runs, "runs", 3, "timed runs per measurement (the medians are printed)")
	flag.StringVar(&versions, "versions", "2.0,2.1,2.2", "data file versions, comma-separated")
	flag.BoolVar(&o.Fixtures, "fixtures", true, "also rewrite the shared types_v2_* fixtures and compare sizes")
	flag.StringVar(&o.FixturesDir, "fixtures-dir", "", "folder holding lance/MANIFEST.json (default $LANCER_FIXTURES or shared/fixtures)")
	flag.BoolVar(&o.Verify, "verify", false, "have real Lance read back every row lancer wrote and compare them")
	flag.StringVar(&o.Dir, "dir", "", "scratch folder, kept afterwards (default a temporary folder, removed)")
	quiet := flag.Bool("q", false, "print no progress")
	flag.Parse()
	for _, s := range strings.Split(versions, ",") {
		v, err := format.ParseVersion(strings.TrimSpace(s))
		if err != nil {
			fail(err)
		}
		o.Versions = append(o.Versions, v)
	}
	if !*quiet {
		o.Log = os.Stderr
	}
	rep, err := bench.Compare(context.Background(), o)
	if err != nil {
		fail(err)
	}
	if err := rep.Print(os.Stdout); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "compare:", err)
	os.Exit(1)
}
