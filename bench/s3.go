package bench

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/lancereftest"
	"github.com/lancerdb/lancer/internal/s3test"
)

// The s3 suite (issue #8): the core suite's writes and reads, lancer and
// real Lance against the same local S3 server. The suite starts versitygw
// (POSIX backend, in the scratch folder) and a counting HTTP proxy in front
// of it; both engines are pointed at the proxy with the same storage
// options, so their requests and bytes are counted identically, at the
// wire. Each step's counts are the proxy's between the start and the end
// of one side's call (the sides alternate and never overlap).

// lanceS3Script is the Node side of the s3 suite, in this folder.
const lanceS3Script = "lance-s3.mjs"

// s3Bucket is the bucket both engines write to.
const s3Bucket = "bench"

// S3Options configures RunS3. Zero fields mean the defaults.
type S3Options struct {
	// Rows, Dim, Centers and Seed shape the data, as in CoreOptions.
	// Defaults: 200,000 × 128, 256 centres, seed 12345.
	Rows, Dim, Centers int
	Seed               uint32
	// Appends is the fragments of the table the read steps use (a create
	// and Appends-1 appends). Default 20.
	Appends int
	// Take is the rows of the take steps. Default 1000.
	Take int
	// Runs is how often each step runs per side, alternating. Default 3.
	Runs int
	// Latency is added by the proxy to every request before it is
	// forwarded, to stand for the round trip of a real object store
	// (tens of milliseconds; loopback has next to none). Default 0.
	Latency time.Duration
	// Dir is the scratch folder (the input files and the server's
	// buckets). Default: a temporary folder, removed afterwards.
	Dir string
	// Log, if set, gets a line per step.
	Log io.Writer
}

func (o S3Options) withDefaults() S3Options {
	def := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	def(&o.Rows, DefaultVectorRows)
	def(&o.Dim, DefaultVectorDim)
	def(&o.Centers, DefaultVectorCenters)
	def(&o.Appends, 20)
	def(&o.Take, 1000)
	def(&o.Runs, 3)
	if o.Seed == 0 {
		o.Seed = DefaultVectorSeed
	}
	o.Appends = min(o.Appends, o.Rows)
	o.Take = min(o.Take, o.Rows)
	return o
}

// s3Run is one run of the suite in progress.
type s3Run struct {
	o       S3Options
	rep     *S3Report
	lance   *s3Lance
	proxy   *countingProxy
	options map[string]string // storage options reaching the proxy
	logf    func(string, ...any)
}

// lancerURI is the URI of lancer's dataset name in the bucket.
func (c *s3Run) lancerURI(name string) string {
	return fmt.Sprintf("s3://%s/lancer/%s.lance", s3Bucket, name)
}

// RunS3 runs the s3 suite and returns its report. It fails when node, the
// Lance reference or versitygw is missing.
func RunS3(ctx context.Context, opts S3Options) (*S3Report, error) {
	o := opts.withDefaults()
	began := time.Now()
	c := &s3Run{o: o, logf: stepLogger(o.Log)}
	ref, err := findRef()
	if err != nil {
		return nil, err
	}
	if _, err := s3test.Find(); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	dir, cleanup, err := scratchDir(o.Dir, "lancer-s3-", "input", "s3")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	o.Dir, c.o.Dir = dir, dir
	c.rep = newS3Report(o)

	c.logf("generating %d x %d vectors and texts (seed %d)", o.Rows, o.Dim, o.Seed)
	// The core suite's stream, queries included, so the rows are the core
	// suite's rows.
	vecs, _, texts := CoreData(o.Rows, o.Dim, o.Centers, DefaultVectorQueries, o.Seed)
	chunk := (o.Rows + o.Appends - 1) / o.Appends
	schema, chunks := coreRecords(vecs, texts, o.Dim, chunk)
	defer releaseAll(chunks)
	texts = nil
	c.rep.Workload.RawBytes = RawBytes(chunks)
	wholeFile, chunkFiles, err := writeInputs(filepath.Join(o.Dir, "input"), schema, chunks)
	if err != nil {
		return nil, err
	}

	c.logf("starting versitygw and the counting proxy")
	srv, err := s3test.Start(ctx, filepath.Join(o.Dir, "s3"), s3Bucket)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer srv.Stop()
	if c.proxy, err = startCountingProxy(srv.Endpoint, o.Latency); err != nil {
		return nil, err
	}
	defer c.proxy.Close()
	c.options = srv.Options()
	c.options["aws_endpoint"] = c.proxy.URL
	c.rep.Server = "versitygw " + s3test.Version + " (POSIX backend on the local disk, sidecar metadata, keep-alive) behind a counting HTTP proxy, on loopback"
	if o.Latency > 0 {
		c.rep.Server += fmt.Sprintf("; the proxy delays every request by %v before forwarding it, standing for an object store's round trip", o.Latency)
	}

	c.logf("starting node (%s)", lanceS3Script)
	if c.lance, err = startS3Lance(ref); err != nil {
		return nil, err
	}
	defer func() {
		if c.lance != nil {
			c.lance.close()
		}
	}()
	v, err := c.lance.ask(s3LanceRequest{Op: "versions"})
	if err != nil {
		return nil, err
	}
	c.rep.Versions.setLance(v.nodeReply)
	if _, err := c.lance.ask(s3LanceRequest{Op: "init", URI: fmt.Sprintf("s3://%s/lance", s3Bucket),
		StorageOptions: c.options, Whole: wholeFile, Chunks: chunkFiles}); err != nil {
		return nil, err
	}

	if err := c.writes(ctx, schema, chunks); err != nil {
		return nil, err
	}
	if err := c.reads(ctx, chunk); err != nil {
		return nil, err
	}
	if err := c.lance.close(); err != nil {
		return nil, err
	}
	c.lance = nil
	c.rep.finish(began)
	return c.rep, nil
}

// openStore opens lancer's store for uri through the proxy.
func (c *s3Run) openStore(ctx context.Context, uri string) (blob.Store, func(), error) {
	s, err := blob.OpenWithOptions(ctx, uri, c.options)
	if err != nil {
		return nil, nil, err
	}
	return s, func() { s.(*blob.CloudStore).Close() }, nil
}

// run times one step, alternating lancer and Lance o.Runs times, with the
// proxy's counts of each call, and records it.
func (c *s3Run) run(s s3StepSpec, lancerFn func(run int) error, lanceFn func(run int) (*s3LanceReply, error)) error {
	c.logf("%s: %d runs each, alternating", s.Name, c.o.Runs)
	var got s3Samples
	for r := range c.o.Runs {
		runtime.GC()
		before := c.proxy.Snapshot()
		start := time.Now()
		err := lancerFn(r)
		wall := time.Since(start)
		if err != nil {
			return fmt.Errorf("bench: lancer %s: %w", s.Name, err)
		}
		mid := c.proxy.Snapshot()
		L, err := lanceFn(r)
		if err != nil {
			return err
		}
		after := c.proxy.Snapshot()
		got.lancer = append(got.lancer, ms(wall))
		got.lance = append(got.lance, L.MS)
		got.lanceEngine = append(got.lanceEngine, L.EngineMS)
		got.lancerCounts = append(got.lancerCounts, mid.Sub(before))
		got.lanceCounts = append(got.lanceCounts, after.Sub(mid))
	}
	c.rep.addStep(s, got)
	return nil
}

// writes: the one-shot write and the create + appends, each run a new
// dataset (a0 is what the read steps use).
func (c *s3Run) writes(ctx context.Context, schema *arrow.Schema, chunks []arrow.RecordBatch) error {
	write := func(uri string, appendEach bool) error {
		store, closeStore, err := c.openStore(ctx, uri)
		if err != nil {
			return err
		}
		defer closeStore()
		return writeChunks(ctx, store, schema, chunks, appendEach)
	}
	for _, w := range []struct {
		prefix, op string
		spec       s3StepSpec
		appendEach bool
	}{
		{"o", "write_oneshot", s3StepSpec{Name: "write_oneshot",
			What:   fmt.Sprintf("write the %d rows as a new dataset in the bucket in one call", c.o.Rows),
			Lancer: "dataset.Write of the in-memory Arrow batches to the s3:// store until the version is committed",
			Lance:  "the native createTable (db.inner) given the Arrow IPC bytes, read before the timing"}, false},
		{"a", "write_appends", s3StepSpec{Name: "write_appends",
			What:   fmt.Sprintf("create a dataset with the first ⌈%d/%d⌉ rows, then %d appends, one fragment and one commit each", c.o.Rows, c.o.Appends, c.o.Appends-1),
			Lancer: "dataset.Write then Dataset.Append per chunk",
			Lance:  "native createTable then native Table.add per chunk, given IPC bytes"}, true},
	} {
		err := c.run(w.spec, func(r int) error {
			return write(c.lancerURI(fmt.Sprint(w.prefix, r)), w.appendEach)
		}, func(r int) (*s3LanceReply, error) {
			L, err := c.lance.ask(s3LanceRequest{Op: w.op, Name: fmt.Sprint(w.prefix, r)})
			if err == nil && L.Rows != int64(c.o.Rows) {
				err = fmt.Errorf("bench: Lance %s wrote %d rows, want %d", w.op, L.Rows, c.o.Rows)
			}
			return L, err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// reads: open, the full scan, the takes, the 1% filter and the count on
// the appended dataset a0, as in the core suite.
func (c *s3Run) reads(ctx context.Context, chunk int) error {
	o := c.o
	uri := c.lancerURI("a0")

	// Open: a new store and dataset, as a fresh reader pays.
	err := c.run(s3StepSpec{Name: "open", What: fmt.Sprintf("open the %d-fragment dataset at its latest version, from nothing cached", o.Appends),
		Lancer: "blob.OpenWithOptions + dataset.Open (finds the latest manifest and reads it)",
		Lance:  "lancedb.connect + openTable on a fresh connection"},
		func(int) error {
			store, closeStore, err := c.openStore(ctx, uri)
			if err != nil {
				return err
			}
			defer closeStore()
			_, err = dataset.Open(ctx, store, nil)
			return err
		}, func(int) (*s3LanceReply, error) {
			return c.lance.ask(s3LanceRequest{Op: "open", Name: "a0"})
		})
	if err != nil {
		return err
	}

	// The read steps share one opened dataset per side, as the core suite.
	store, closeStore, err := c.openStore(ctx, uri)
	if err != nil {
		return err
	}
	defer closeStore()
	d, err := dataset.Open(ctx, store, nil)
	if err != nil {
		return err
	}
	if _, err := c.lance.ask(s3LanceRequest{Op: "count", Name: "a0"}); err != nil {
		return err
	}
	n := int64(o.Rows)
	// check runs a query step once per side, untimed and before its runs,
	// and checks the rows each side returns: analyzePlan() does not give
	// Lance's exactly. Both sides start the timed runs equally warm.
	check := func(name string, lancerRows func() (int64, error), req s3LanceRequest, rows int64) error {
		got, err := lancerRows()
		if err != nil {
			return fmt.Errorf("bench: lancer %s: %w", name, err)
		}
		if err := wantRows("lancer "+name, got, rows); err != nil {
			return err
		}
		req.Op, req.Name, req.Check = "query", "a0", true
		L, err := c.lance.ask(req)
		if err != nil {
			return err
		}
		return wantRows("Lance "+name, L.Rows, rows)
	}
	scan := func(spec s3StepSpec, filter string, rows int64) error {
		lancerRows := func() (int64, error) { return lancerScanRows(ctx, d, &dataset.ScanOptions{Filter: filter}) }
		if err := check(spec.Name, lancerRows, s3LanceRequest{Filter: filter}, rows); err != nil {
			return err
		}
		return c.run(spec, func(int) error {
			got, err := lancerRows()
			if err == nil {
				err = wantRows("lancer "+spec.Name, got, rows)
			}
			return err
		}, func(int) (*s3LanceReply, error) {
			return c.lance.ask(s3LanceRequest{Op: "query", Name: "a0", Filter: filter})
		})
	}
	if err := scan(s3StepSpec{Name: "scan_full", What: fmt.Sprintf("scan every column of every row (%d fragments)", o.Appends),
		Lancer: "Dataset.Scan, every batch read into Arrow memory and dropped",
		Lance:  "analyzePlan() of table.query(): the query run to the end in Rust, no Arrow data into JS"}, "", n); err != nil {
		return err
	}

	// The core suite's take rows.
	offsets, rowIDs := takeRows(o.Take, o.Rows, chunk)
	take := func(spec s3StepSpec, ids []uint64, byRowID bool) error {
		lancerRows := func() (int64, error) { return lancerTakeRows(ctx, d, ids, byRowID) }
		req := s3LanceRequest{Op: "query", Name: "a0", Offsets: ids}
		if byRowID {
			req.Offsets, req.RowIDs = nil, ids
		}
		if err := check(spec.Name, lancerRows, req, int64(len(ids))); err != nil {
			return err
		}
		return c.run(spec, func(int) error {
			got, err := lancerRows()
			if err == nil {
				err = wantRows("lancer "+spec.Name, got, int64(len(ids)))
			}
			return err
		}, func(int) (*s3LanceReply, error) {
			return c.lance.ask(req)
		})
	}
	if err := take(s3StepSpec{Name: "take_offsets", What: fmt.Sprintf("take %d distinct random rows, every column, by offset", o.Take),
		Lancer: "Dataset.Take", Lance: "analyzePlan() of takeOffsets"}, offsets, false); err != nil {
		return err
	}
	if err := take(s3StepSpec{Name: "take_rowids", What: fmt.Sprintf("take the same %d rows by row id", o.Take),
		Lancer: "Dataset.TakeRowIDs", Lance: "analyzePlan() of takeRowIds"}, rowIDs, true); err != nil {
		return err
	}

	pct := onePercent(o.Rows)
	pred := fmt.Sprintf("id > %d", n-pct-1)
	if err := scan(s3StepSpec{Name: "filter_1pct", What: fmt.Sprintf("scan every column where %s (%d rows, 1%%), no scalar index", pred, pct),
		Lancer: "Dataset.Scan with Filter", Lance: "analyzePlan() of query().where()"}, pred, pct); err != nil {
		return err
	}

	return c.run(s3StepSpec{Name: "count_rows", What: "count the rows",
		Lancer: "Dataset.CountRows (from the manifest)", Lance: "table.countRows()"},
		func(int) error {
			got, err := d.CountRows(ctx)
			if err == nil {
				err = wantRows("lancer count", int64(got), n)
			}
			return err
		}, func(int) (*s3LanceReply, error) {
			L, err := c.lance.ask(s3LanceRequest{Op: "count", Name: "a0"})
			if err == nil {
				err = wantRows("Lance count", L.Rows, n)
			}
			return L, err
		})
}

// s3LanceRequest is one request to lance-s3.mjs (see its header).
type s3LanceRequest struct {
	Op             string            `json:"op"`
	URI            string            `json:"uri,omitempty"`
	StorageOptions map[string]string `json:"storageOptions,omitempty"`
	Whole          string            `json:"whole,omitempty"`
	Chunks         []string          `json:"chunks,omitempty"`
	Name           string            `json:"name,omitempty"`
	Filter         string            `json:"filter,omitempty"`
	Offsets        []uint64          `json:"offsets,omitempty"`
	RowIDs         []uint64          `json:"rowIds,omitempty"`
	Check          bool              `json:"check,omitempty"`
}

// s3LanceReply is its answer.
type s3LanceReply struct {
	nodeReply
	MS       float64 `json:"ms"`
	EngineMS float64 `json:"engineMs"`
	Rows     int64   `json:"rows"`
}

// s3Lance is one running lance-s3.mjs, asked one request at a time.
type s3Lance struct{ *nodeProc }

func startS3Lance(ref lancereftest.Ref) (*s3Lance, error) {
	p, err := startNode(ref, lanceS3Script)
	if err != nil {
		return nil, err
	}
	return &s3Lance{p}, nil
}

// ask sends req and waits for its reply; a reply carrying an error is
// returned as one.
func (p *s3Lance) ask(req s3LanceRequest) (*s3LanceReply, error) {
	var r s3LanceReply
	if err := p.call(req.Op, req.Name, req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
