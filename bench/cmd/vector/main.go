// Command vector runs the vector-search suite: the clustered vectors of the
// real-Lance baseline (shared/bench/lance-baseline.mjs), written, indexed
// (IVF_HNSW_SQ) and searched by lancer and by real Lance (the pinned
// LanceDB for Node) in the same run, with the same vectors and queries; it
// prints build time, index size, memory, QPS and recall per setting, and
// issue #6's ratios, "!" marking a target not met. See package bench.
//
//	go run ./bench/cmd/vector                     # 200k x 128, as the baseline
//	go run ./bench/cmd/vector -rows 1000000
//	go run ./bench/cmd/vector -rows 100000 -dim 768
//	go run ./bench/cmd/vector -settings 10:0,10:100,20:100,50:100 -json out.json
//
// It fails when node or the Lance reference (scripts/test.sh installs it in
// .cache/lance-ref, or $LANCER_LANCE_REF) is missing, unless -lance=false.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/lancerdb/lancer/bench"
)

func main() {
	var (
		o        bench.VectorOptions
		seed     uint
		settings string
		jsonOut  string
	)
	flag.IntVar(&o.Rows, "rows", bench.DefaultVectorRows, "rows (vectors) in the table")
	flag.IntVar(&o.Dim, "dim", bench.DefaultVectorDim, "vector dimension")
	flag.IntVar(&o.Centers, "centers", bench.DefaultVectorCenters, "cluster centres of the generator")
	flag.IntVar(&o.Queries, "queries", bench.DefaultVectorQueries, "query vectors (not in the table)")
	flag.IntVar(&o.K, "k", bench.DefaultVectorK, "neighbours per query")
	flag.UintVar(&seed, "seed", bench.DefaultVectorSeed, "generator seed (mulberry32)")
	flag.IntVar(&o.Runs, "runs", 3, "passes over the queries per setting (QPS from the median)")
	flag.StringVar(&settings, "settings", "10:0,10:100,20:0,20:100", "search settings nprobes:ef, comma-separated (0 = the engine's default)")
	flag.StringVar(&o.IndexType, "index", "ivf_hnsw_sq", "lancer's index type (ivf_hnsw_sq, ivf_flat, hnsw, flat)")
	flag.IntVar(&o.Partitions, "partitions", 0, "IVF partitions of both indices (default round(sqrt(rows)))")
	flag.IntVar(&o.M, "m", 0, "lancer's HNSW M (default: lancer's)")
	flag.IntVar(&o.EfConstruction, "ef-construction", 0, "lancer's HNSW ef_construction (default: lancer's)")
	flag.BoolVar(&o.HNSW, "hnsw", false, "also build and search lancer's single-graph hnsw index")
	flag.IntVar(&o.FlatWorkers, "flat-workers", 0, "goroutines of lancer's exact search (default GOMAXPROCS)")
	flag.IntVar(&o.Fragments, "fragments", 1, "fragments (data files) both sides write the table as (the baseline's had 20)")
	flag.BoolVar(&o.ReadIDs, "read-ids", false, "lancer's queries read the id column (Search) as Lance's do, instead of SearchRowIDs")
	flag.BoolVar(&o.Lance, "lance", true, "also run real Lance (LanceDB for Node) on the same data")
	flag.StringVar(&o.Dir, "dir", "", "scratch folder, kept afterwards (default a temporary folder, removed)")
	flag.StringVar(&jsonOut, "json", "", "also write the report as JSON to this file")
	quiet := flag.Bool("q", false, "print no progress")
	flag.Parse()
	o.Seed = uint32(seed)
	var err error
	if o.Settings, err = bench.ParseVectorSettings(settings); err != nil {
		fail(err)
	}
	if !*quiet {
		o.Log = os.Stderr
	}
	rep, err := bench.RunVector(context.Background(), o)
	if err != nil {
		fail(err)
	}
	if err := rep.Print(os.Stdout); err != nil {
		fail(err)
	}
	if jsonOut != "" {
		if err := rep.WriteJSON(jsonOut); err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "vector:", err)
	os.Exit(1)
}
