// Command serverload runs lancer's server load test (issue #7): 32
// concurrent clients of the official LanceDB Node client on loopback,
// mixing filtered vector searches, inserts of small batches and row
// counts against lancer's server for 60 s, then checks that no request
// failed and no insert was lost or applied twice, and prints throughput
// and p50/p95/p99 latency per operation. See bench.RunServerLoad.
//
//	go run ./bench/cmd/serverload -duration 60s -clients 32
//	go run ./bench/cmd/serverload -rows 20000 -index ivf_hnsw_sq -json out.json
//
// It fails when node or the LanceDB client (scripts/test.sh installs it
// in .cache/lance-ref, or $LANCER_LANCE_REF) is missing, and exits 1 when
// a check failed.
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
		o       bench.ServerLoadOptions
		seed    uint
		jsonOut string
	)
	flag.DurationVar(&o.Duration, "duration", 60e9, "how long the clients run")
	flag.IntVar(&o.Clients, "clients", 32, "concurrent clients (connections)")
	flag.IntVar(&o.Rows, "rows", 20_000, "initial rows")
	flag.IntVar(&o.Dim, "dim", 128, "vector dimension")
	flag.StringVar(&o.Index, "index", "ivf_hnsw_sq", "vector index on the initial rows (ivf_hnsw_sq, ivf_flat, ivf_pq, none)")
	flag.IntVar(&o.Batch, "batch", 10, "rows per insert")
	flag.IntVar(&o.K, "k", 10, "neighbours per search")
	flag.StringVar(&o.Filter, "filter", "id % 10 != 3", "filter of the searches (none: no filter)")
	flag.IntVar(&o.SearchWeight, "search", 80, "weight of searches in the mix")
	flag.IntVar(&o.InsertWeight, "insert", 15, "weight of inserts in the mix")
	flag.IntVar(&o.CountWeight, "count", 5, "weight of countRows in the mix")
	flag.UintVar(&seed, "seed", 1, "random seed")
	flag.StringVar(&o.Dir, "dir", "", "scratch folder, kept afterwards (default a temporary folder, removed)")
	flag.StringVar(&jsonOut, "json", "", "also write the report as JSON to this file")
	flag.BoolVar(&o.Adversary, "adversary", false, "mix a bounded stream of hostile requests into the load (issue #22); each must be refused")
	flag.IntVar(&o.Servers, "servers", 1, "servers on the one data folder: 1 in this process, more as lancer serve processes (clients round-robin)")
	flag.Parse()
	o.Seed = uint64(seed)

	rep, err := bench.RunServerLoad(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "serverload:", err)
		os.Exit(2)
	}
	if err := rep.Print(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "serverload:", err)
		os.Exit(2)
	}
	if jsonOut != "" {
		if err := rep.WriteJSON(jsonOut); err != nil {
			fmt.Fprintln(os.Stderr, "serverload:", err)
			os.Exit(2)
		}
	}
	if !rep.OK() {
		os.Exit(1)
	}
}
