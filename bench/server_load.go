package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/lancereftest"
)

// The server load test (issue #7): `clients` concurrent clients of the
// official LanceDB Node client (server-load.mjs, one Node process, one
// connection each) against lancer's server on loopback, mixing filtered
// vector searches, inserts of small batches with unique ids and row
// counts for a fixed time. The server runs in this process exactly as
// `lancer serve` runs it (server.New behind an http.Server, API key on,
// default options), logging nowhere. Afterwards the harness checks that
// nothing was lost or applied twice: the row count is the initial rows
// plus the rows acknowledged, and every id is there once.

// serverLoadScript is the Node side of the load test, in this folder.
const serverLoadScript = "server-load.mjs"

// ServerLoadOptions configures RunServerLoad. Zero fields take the defaults.
type ServerLoadOptions struct {
	Duration time.Duration // default 60s
	Clients  int           // concurrent clients, default 32
	Rows     int           // initial rows, default 20_000
	Dim      int           // vector dimension, default 128
	// Index is the vector index built on the initial rows: "ivf_hnsw_sq"
	// (default), another dataset.CreateIndexOptions type, or "none".
	Index string
	Batch int // rows per insert, default 10
	K     int // neighbours per search, default 10
	// Filter is the searches' filter (a prefilter, the client's default).
	// Default "id % 10 != 3"; "none" for plain searches.
	Filter string
	// Weights of search, insert and count in the mix. Default 80, 15, 5.
	SearchWeight, InsertWeight, CountWeight int
	Seed                                    uint64
	// Dir is the scratch folder, kept afterwards. Default a temporary
	// folder, removed.
	Dir string
	// Adversary mixes a bounded stream of hostile requests into the load
	// (see server_adversary.go): each must be refused as it deserves, and
	// the normal clients must notice nothing.
	Adversary bool
	// Servers is how many servers serve the one data folder. Default 1:
	// one server in this process. More: that many `lancer serve`
	// processes (built from this repository), the clients spread over
	// them round-robin, so their commits to the one table race as those
	// of separate machines would (issue #24).
	Servers int
}

func (o ServerLoadOptions) withDefaults() ServerLoadOptions {
	if o.Duration <= 0 {
		o.Duration = 60 * time.Second
	}
	if o.Clients <= 0 {
		o.Clients = 32
	}
	if o.Rows <= 0 {
		o.Rows = 20_000
	}
	if o.Dim <= 0 {
		o.Dim = 128
	}
	if o.Index == "" {
		o.Index = "ivf_hnsw_sq"
	}
	if o.Batch <= 0 {
		o.Batch = 10
	}
	if o.K <= 0 {
		o.K = 10
	}
	if o.Filter == "" {
		o.Filter = "id % 10 != 3"
	}
	if o.SearchWeight == 0 && o.InsertWeight == 0 && o.CountWeight == 0 {
		o.SearchWeight, o.InsertWeight, o.CountWeight = 80, 15, 5
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Servers <= 0 {
		o.Servers = 1
	}
	return o
}

// OpStats summarizes one operation's latencies.
type OpStats struct {
	Count  int     `json:"count"`
	PerSec float64 `json:"perSec"`
	MeanMs float64 `json:"meanMs"`
	P50Ms  float64 `json:"p50Ms"`
	P95Ms  float64 `json:"p95Ms"`
	P99Ms  float64 `json:"p99Ms"`
	MaxMs  float64 `json:"maxMs"`
}

// ServerLoadReport is what RunServerLoad measured and checked.
type ServerLoadReport struct {
	Options      ServerLoadOptions  `json:"options"`
	ElapsedSec   float64            `json:"elapsedSec"`
	SetupSec     float64            `json:"setupSec"`
	Ops          map[string]OpStats `json:"ops"` // search, insert, count, all
	Throughput   float64            `json:"throughput"`
	InitialRows  int                `json:"initialRows"`
	RowsInserted int                `json:"rowsInserted"` // acknowledged
	FinalRows    int                `json:"finalRows"`
	Versions     uint64             `json:"versions"`
	// StartVersion is the table's version when the clients started;
	// VersionsPerInsert is (Versions - StartVersion) / acknowledged
	// inserts: every version the run made (group commits and the
	// background maintenance's) per insert request.
	StartVersion      uint64  `json:"startVersion"`
	VersionsPerInsert float64 `json:"versionsPerInsert"`
	// Fragments is the latest version's fragment count at the end,
	// MaxFragments the most any version had while the clients ran
	// (looked at every 250 ms).
	Fragments    int `json:"fragments"`
	MaxFragments int `json:"maxFragments"`
	// GroupCommits, MaintenanceRuns, MaintenanceErrors and
	// MaintenanceConflicts (runs that yielded to a concurrent write) are
	// the servers' counters (from /metrics, summed over the servers).
	GroupCommits         uint64   `json:"groupCommits"`
	MaintenanceRuns      uint64   `json:"maintenanceRuns"`
	MaintenanceErrors    uint64   `json:"maintenanceErrors"`
	MaintenanceConflicts uint64   `json:"maintenanceConflicts"`
	Errors               int      `json:"errors"`
	ErrorSamples         []string `json:"errorSamples,omitempty"`
	ShortResults         int      `json:"shortResults"`
	// Problems lists every failed check: errors, lost or duplicated
	// inserts. Empty when the run passed.
	Problems []string `json:"problems,omitempty"`
	// LoadAvg is /proc/loadavg's 1-minute load before and after the run.
	// CacheHits and CacheMisses are the server's dataset cache counters
	// (from its /metrics) at the end.
	CacheHits   uint64     `json:"cacheHits"`
	CacheMisses uint64     `json:"cacheMisses"`
	LoadAvg     [2]float64 `json:"loadAvg"`
	CPUs        int        `json:"cpus"`
	// Adversary is what the adversarial stream sent and saw, when
	// Options.Adversary is set.
	Adversary *AdversaryReport `json:"adversary,omitempty"`
}

// OK reports whether every check passed.
func (r *ServerLoadReport) OK() bool { return len(r.Problems) == 0 }

type serverLoadRequest struct {
	URL        string         `json:"url"`
	URLs       []string       `json:"urls,omitempty"` // the servers, clients round-robin; default [URL]
	APIKey     string         `json:"apiKey"`
	Table      string         `json:"table"`
	DurationMs int64          `json:"durationMs"`
	Clients    int            `json:"clients"`
	Dim        int            `json:"dim"`
	Batch      int            `json:"batch"`
	K          int            `json:"k"`
	Filter     string         `json:"filter"`
	Weights    map[string]int `json:"weights"`
	Seed       uint64         `json:"seed"`
	IDBase     int64          `json:"idBase"`
	Stride     int64          `json:"stride"`
}

type serverLoadReply struct {
	ElapsedMs     float64              `json:"elapsedMs"`
	LatMs         map[string][]float64 `json:"latMs"`
	Inserted      []int                `json:"inserted"`
	ShortResults  int                  `json:"shortResults"`
	ErrorCount    int                  `json:"errorCount"`
	Errors        []string             `json:"errors"`
	FailedInserts [][3]int64           `json:"failedInserts"`
	Error         string               `json:"error"`
}

// startLoadProfile writes a CPU profile of this process (the server)
// while the clients run to the file $LANCER_SERVERLOAD_CPUPROFILE names, if
// set: measurement only, for finding where the server spends its time.
func startLoadProfile() (stop func(), err error) {
	path := os.Getenv("LANCER_SERVERLOAD_CPUPROFILE")
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("bench: cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// loadStride separates the ids of the clients' inserts.
const loadStride = 100_000_000

// RunServerLoad runs the load test. It fails when node or the pinned
// client is missing; a run whose checks failed returns its report with
// Problems set and a nil error.
func RunServerLoad(ctx context.Context, o ServerLoadOptions) (*ServerLoadReport, error) {
	o = o.withDefaults()
	ref, err := findRef()
	if err != nil {
		return nil, err
	}
	dir := o.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "lancer-serverload-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	rep := &ServerLoadReport{Options: o, InitialRows: o.Rows, CPUs: runtime.NumCPU()}
	setup := time.Now()

	// The initial table, written and indexed by lancer directly.
	const table = "load"
	store, err := blob.NewLocalStore(filepath.Join(dir, table+".lance"))
	if err != nil {
		return nil, err
	}
	rec := loadRows(o.Rows, o.Dim, o.Seed)
	rr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	if err != nil {
		rec.Release()
		return nil, err
	}
	ds, err := dataset.Write(ctx, store, rr, nil)
	rr.Release()
	rec.Release()
	if err != nil {
		return nil, fmt.Errorf("bench: writing the initial table: %w", err)
	}
	if o.Index != "none" {
		if _, err := ds.CreateIndex(ctx, "vector", &dataset.CreateIndexOptions{Type: o.Index}); err != nil {
			return nil, fmt.Errorf("bench: building the %s index: %w", o.Index, err)
		}
	}

	// The servers, as lancer serve runs them.
	const key = "sk-lancer-load"
	urls, stopServers, err := startLoadServers(ctx, o, dir, key)
	if err != nil {
		return nil, err
	}
	defer stopServers()
	if rep.StartVersion, _, err = latestShape(ctx, store); err != nil {
		return nil, err
	}
	rep.SetupSec = time.Since(setup).Seconds()

	req := serverLoadRequest{
		URL: urls[0], URLs: urls, APIKey: key, Table: table,
		DurationMs: o.Duration.Milliseconds(), Clients: o.Clients, Dim: o.Dim, Batch: o.Batch, K: o.K,
		Filter:  searchFilter(o.Filter),
		Weights: map[string]int{"search": o.SearchWeight, "insert": o.InsertWeight, "count": o.CountWeight},
		Seed:    o.Seed, IDBase: int64(o.Rows), Stride: loadStride,
	}
	rep.LoadAvg[0] = loadAvg()
	stopProfile, err := startLoadProfile()
	if err != nil {
		return nil, err
	}
	advDone := make(chan *AdversaryReport, 1)
	advCtx, stopAdversary := context.WithCancel(ctx)
	defer stopAdversary()
	if o.Adversary {
		a := &adversary{url: req.URL, key: key, table: table, dim: o.Dim,
			client: &http.Client{Timeout: adversaryTimeout}}
		go func() { advDone <- runAdversary(advCtx, a) }()
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	maxFrags := make(chan int, 1)
	go func() { maxFrags <- watchFragments(watchCtx, store) }()
	replies, err := lancereftest.Ask[serverLoadRequest, serverLoadReply](ref, serverLoadScript, []serverLoadRequest{req})
	stopWatch()
	rep.MaxFragments = <-maxFrags
	stopAdversary()
	if o.Adversary {
		rep.Adversary = <-advDone
	}
	stopProfile()
	rep.LoadAvg[1] = loadAvg()
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if len(replies) != 1 {
		return nil, fmt.Errorf("bench: %s answered %d replies, want 1", serverLoadScript, len(replies))
	}
	r := replies[0]
	if r.Error != "" {
		return nil, fmt.Errorf("bench: %s: %s", serverLoadScript, r.Error)
	}
	rep.ElapsedSec = r.ElapsedMs / 1000
	rep.Errors, rep.ErrorSamples, rep.ShortResults = r.ErrorCount, r.Errors, r.ShortResults
	rep.Ops = map[string]OpStats{}
	var all []float64
	for op, lat := range r.LatMs {
		rep.Ops[op] = opStats(lat, rep.ElapsedSec)
		all = append(all, lat...)
	}
	rep.Ops["all"] = opStats(all, rep.ElapsedSec)
	rep.Throughput = rep.Ops["all"].PerSec
	for _, n := range r.Inserted {
		rep.RowsInserted += n
	}
	if rep.Errors > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d operations failed (first: %s)", rep.Errors, strings.Join(first(r.Errors, 3), "; ")))
	}
	if rep.Ops["all"].Count == 0 {
		rep.Problems = append(rep.Problems, "no operation completed")
	}
	if adv := rep.Adversary; adv != nil {
		if adv.Requests == 0 {
			rep.Problems = append(rep.Problems, "the adversary sent no request")
		}
		for _, f := range adv.Failures {
			rep.Problems = append(rep.Problems, "adversary: "+f)
		}
	}

	for _, u := range urls {
		c := serverCounters(u, key)
		rep.CacheHits += c["lancer_dataset_cache_hits_total"]
		rep.CacheMisses += c["lancer_dataset_cache_misses_total"]
		rep.GroupCommits += c["lancer_group_commits_total"]
		rep.MaintenanceRuns += c["lancer_maintenance_runs_total"]
		rep.MaintenanceErrors += c["lancer_maintenance_errors_total"]
		rep.MaintenanceConflicts += c["lancer_maintenance_conflicts_total"]
	}

	// No lost or duplicated inserts: read every id of the latest version.
	if err := checkLoadIDs(ctx, store, o, r, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// checkLoadIDs reads the ids of the table's latest version and checks
// them against the inserts the clients saw acknowledged.
func checkLoadIDs(ctx context.Context, store blob.Store, o ServerLoadOptions, r serverLoadReply, rep *ServerLoadReport) error {
	ds, err := dataset.Open(ctx, store, nil)
	if err != nil {
		return fmt.Errorf("bench: opening the table after the run: %w", err)
	}
	rep.Versions = ds.Manifest().Version
	rep.Fragments = len(ds.Manifest().Fragments)
	rep.MaxFragments = max(rep.MaxFragments, rep.Fragments)
	if inserts := rep.Ops["insert"].Count; inserts > 0 {
		rep.VersionsPerInsert = float64(rep.Versions-rep.StartVersion) / float64(inserts)
	}
	sc, err := ds.Scan(&dataset.ScanOptions{Columns: []string{"id"}})
	if err != nil {
		return err
	}
	seen := map[int64]int{}
	for rec, err := range sc.Batches(ctx) {
		if err != nil {
			return err
		}
		col := rec.Column(0).(*array.Int64)
		for i := range col.Len() {
			seen[col.Value(i)]++
		}
	}
	total := 0
	for _, n := range seen {
		total += n
	}
	rep.FinalRows = total
	dups := 0
	for id, n := range seen {
		if n > 1 {
			dups++
			if dups <= 3 {
				rep.Problems = append(rep.Problems, fmt.Sprintf("id %d is in the table %d times", id, n))
			}
		}
	}
	if dups > 3 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d ids in all are duplicated", dups))
	}
	failed := map[[2]int64]bool{}
	for _, f := range r.FailedInserts {
		failed[[2]int64{f[0], f[1]}] = true
	}
	// Each client's ids: batches from its base; the failed ones may or
	// may not have landed, every other one must be there.
	missing, extra := 0, 0
	for id := range int64(o.Rows) {
		if seen[id] == 0 {
			missing++
		}
	}
	landedFailed := 0
	for c, n := range r.Inserted {
		base := int64(o.Rows) + int64(c)*loadStride
		attempted := int64(n)
		for _, f := range r.FailedInserts {
			if int(f[0]) == c {
				attempted += f[2]
			}
		}
		for b := int64(0); b < attempted; b += int64(o.Batch) {
			if failed[[2]int64{int64(c), base + b}] {
				if seen[base+b] > 0 {
					landedFailed += o.Batch
				}
				continue
			}
			for id := base + b; id < base+b+int64(o.Batch); id++ {
				if seen[id] == 0 {
					missing++
				}
			}
		}
	}
	if missing > 0 {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d rows lost (initial or acknowledged inserts not in the table)", missing))
	}
	want := o.Rows + rep.RowsInserted + landedFailed
	if total != want {
		extra = total - want
		rep.Problems = append(rep.Problems, fmt.Sprintf("the table has %d rows, want %d initial + %d inserted = %d (%+d)",
			total, o.Rows, rep.RowsInserted+landedFailed, want, extra))
	}
	return nil
}

// opStats summarizes latencies (milliseconds) over a run of elapsed
// seconds.
func opStats(lat []float64, elapsed float64) OpStats {
	if len(lat) == 0 {
		return OpStats{}
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	var sum float64
	for _, v := range s {
		sum += v
	}
	pct := func(p float64) float64 {
		// Nearest rank.
		i := int(math.Ceil(p/100*float64(len(s)))) - 1
		return s[max(0, min(len(s)-1, i))]
	}
	st := OpStats{Count: len(s), MeanMs: sum / float64(len(s)), P50Ms: pct(50), P95Ms: pct(95), P99Ms: pct(99), MaxMs: s[len(s)-1]}
	if elapsed > 0 {
		st.PerSec = float64(len(s)) / elapsed
	}
	return st
}

// loadRows is n rows {id int64 0..n-1, vector fixed_size_list<float32,
// dim>} of uniform random vectors in [0, 1), as server-load.mjs draws its
// queries and inserts.
func loadRows(n, dim int, seed uint64) arrow.RecordBatch {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "vector", Type: arrow.FixedSizeListOf(int32(dim), arrow.PrimitiveTypes.Float32), Nullable: true},
	}, nil)
	rng := rand.New(rand.NewPCG(seed, 7))
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	ids := b.Field(0).(*array.Int64Builder)
	vec := b.Field(1).(*array.FixedSizeListBuilder)
	vals := vec.ValueBuilder().(*array.Float32Builder)
	vals.Reserve(n * dim)
	for i := range n {
		ids.Append(int64(i))
		vec.Append(true)
		for range dim {
			vals.UnsafeAppend(rng.Float32())
		}
	}
	return b.NewRecordBatch()
}

// serverCounters reads the counters of the server's /metrics, summed
// over their labels; none when that fails.
func serverCounters(url, key string) map[string]uint64 {
	out := map[string]uint64{}
	req, err := http.NewRequest("GET", url+"/metrics", nil)
	if err != nil {
		return out
	}
	req.Header.Set("x-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return out
	}
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		name, _, _ := strings.Cut(f[0], "{")
		var v uint64
		if _, err := fmt.Sscan(f[1], &v); err == nil {
			out[name] += v
		}
	}
	return out
}

// latestShape returns the version and fragment count of the table's
// latest version.
func latestShape(ctx context.Context, store blob.Store) (version uint64, fragments int, err error) {
	ds, err := dataset.Open(ctx, store, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("bench: opening the table: %w", err)
	}
	return ds.Manifest().Version, len(ds.Manifest().Fragments), nil
}

// watchFragments looks at the table's latest version every 250 ms until
// ctx ends and returns the most fragments it saw.
func watchFragments(ctx context.Context, store blob.Store) int {
	most := 0
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		if _, n, err := latestShape(ctx, store); err == nil {
			most = max(most, n)
		}
		select {
		case <-ctx.Done():
			return most
		case <-t.C:
		}
	}
}

// searchFilter is the filter the clients send: none for "none".
func searchFilter(f string) string {
	if f == "none" {
		return ""
	}
	return f
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// loadAvg is the 1-minute load average, or -1 where /proc/loadavg is
// missing.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	var l float64
	if _, err := fmt.Sscan(string(b), &l); err != nil {
		return -1
	}
	return l
}

// Print writes the report as a table.
func (r *ServerLoadReport) Print(w io.Writer) error {
	o := r.Options
	var b strings.Builder
	fmt.Fprintf(&b, "lancer server load test: %d clients (LanceDB Node client, one connection each) on loopback, %d server(s) on one data folder, %.1f s\n", o.Clients, o.Servers, r.ElapsedSec)
	fmt.Fprintf(&b, "table: %d x %d rows (index %s), mix search/insert/count %d/%d/%d, insert batch %d, k %d, filter %q\n",
		r.InitialRows, o.Dim, o.Index, o.SearchWeight, o.InsertWeight, o.CountWeight, o.Batch, o.K, o.Filter)
	fmt.Fprintf(&b, "machine: %d CPUs, load average %.2f before, %.2f after (client and server share the machine)\n\n", r.CPUs, r.LoadAvg[0], r.LoadAvg[1])
	fmt.Fprintf(&b, "%-8s %8s %9s %9s %9s %9s %9s %9s\n", "op", "count", "ops/s", "mean ms", "p50 ms", "p95 ms", "p99 ms", "max ms")
	for _, op := range []string{"search", "insert", "count", "all"} {
		s, ok := r.Ops[op]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "%-8s %8d %9.1f %9.2f %9.2f %9.2f %9.2f %9.2f\n", op, s.Count, s.PerSec, s.MeanMs, s.P50Ms, s.P95Ms, s.P99Ms, s.MaxMs)
	}
	fmt.Fprintf(&b, "\nthroughput %.1f ops/s; rows: %d initial + %d inserted = %d in the table (version %d); errors %d; searches with fewer than k rows %d\n",
		r.Throughput, r.InitialRows, r.RowsInserted, r.FinalRows, r.Versions, r.Errors, r.ShortResults)
	inserts := r.Ops["insert"].Count
	fmt.Fprintf(&b, "versions: %d made during the run for %d inserts (%.3f per insert); %d group commits; fragments: %d at the end, at most %d during the run\n",
		r.Versions-r.StartVersion, inserts, r.VersionsPerInsert, r.GroupCommits, r.Fragments, r.MaxFragments)
	fmt.Fprintf(&b, "maintenance: %d runs, %d failed, %d yielded to a concurrent write\n", r.MaintenanceRuns, r.MaintenanceErrors, r.MaintenanceConflicts)
	fmt.Fprintf(&b, "server dataset cache: %d hits, %d misses\n", r.CacheHits, r.CacheMisses)
	if adv := r.Adversary; adv != nil {
		fmt.Fprintf(&b, "adversary: %d hostile requests (%d kinds), %d answered wrongly; peak Go heap %.0f MiB\n",
			adv.Requests, len(adv.ByAttack), adv.Wrong, adv.PeakHeapMiB)
	}
	if r.OK() {
		b.WriteString("checks: PASS (no errors, no lost or duplicated inserts)\n")
	} else {
		b.WriteString("checks: FAIL\n")
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "  - %s\n", p)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report as indented JSON to path.
func (r *ServerLoadReport) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// errServerLoadFailed is returned by callers that treat failed checks as
// an error.
var errServerLoadFailed = errors.New("bench: server load test checks failed")

// Err returns nil when every check passed, else an error listing them.
func (r *ServerLoadReport) Err() error {
	if r.OK() {
		return nil
	}
	return fmt.Errorf("%w: %s", errServerLoadFailed, strings.Join(r.Problems, "; "))
}
