package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/baselinetest"
	"github.com/lancerdb/lancer/internal/lancereftest"
	"github.com/lancerdb/lancer/internal/tailbuf"
)

// What the suites that race lancer against a node process of real Lance
// (core, s3) share: the scratch folder, the input files, the writes and
// reads on lancer's side, the node process, and the report's frame.

// stepLogger returns a logf writing a time-stamped line per call to w, or
// nothing when w is nil.
func stepLogger(w io.Writer) func(string, ...any) {
	return func(format string, args ...any) {
		if w != nil {
			fmt.Fprintf(w, time.Now().Format("15:04:05 ")+format+"\n", args...)
		}
	}
}

// scratchDir prepares a suite's scratch folder with the subfolders subs,
// empty: dir when set (removing what an earlier run left in subs), else a
// new temporary folder named after pattern, which cleanup removes.
func scratchDir(dir, pattern string, subs ...string) (_ string, cleanup func(), err error) {
	cleanup = func() {}
	if dir == "" {
		if dir, err = os.MkdirTemp("", pattern); err != nil {
			return "", nil, err
		}
		cleanup = func() { os.RemoveAll(dir) }
	} else {
		for _, sub := range subs {
			if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
				return "", nil, err
			}
		}
	}
	for _, sub := range subs {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			cleanup()
			return "", nil, err
		}
	}
	return dir, cleanup, nil
}

// writeInputs writes what node reads into the folder in: the whole table
// (whole.arrow) and each chunk (chunk-N.arrow), as Arrow IPC files.
func writeInputs(in string, schema *arrow.Schema, chunks []arrow.RecordBatch) (whole string, chunkFiles []string, err error) {
	whole = filepath.Join(in, "whole.arrow")
	if err := WriteIPC(whole, schema, chunks); err != nil {
		return "", nil, err
	}
	for i, r := range chunks {
		f := filepath.Join(in, fmt.Sprintf("chunk-%d.arrow", i))
		if err := WriteIPC(f, schema, []arrow.RecordBatch{r}); err != nil {
			return "", nil, err
		}
		chunkFiles = append(chunkFiles, f)
	}
	return whole, chunkFiles, nil
}

// writeChunks writes chunks as a new dataset in store: in one call, or, with
// appendEach, a create with the first chunk and an append per further one.
func writeChunks(ctx context.Context, store blob.Store, schema *arrow.Schema, chunks []arrow.RecordBatch, appendEach bool) error {
	if !appendEach {
		rr, err := array.NewRecordReader(schema, chunks)
		if err != nil {
			return err
		}
		defer rr.Release()
		_, err = dataset.Write(ctx, store, rr, nil)
		return err
	}
	var d *dataset.Dataset
	for i, r := range chunks {
		rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{r})
		if err != nil {
			return err
		}
		if i == 0 {
			d, err = dataset.Write(ctx, store, rr, nil)
		} else {
			d, err = d.Append(ctx, rr, nil)
		}
		rr.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// wantRows fails when a step's side returned other than want rows.
// openLocal opens the dataset lancer wrote in the local directory path.
// A local store holds nothing to close; the SDK's way in by URI is
// table.Open, which lancerScan times.
func openLocal(ctx context.Context, path string) (*dataset.Dataset, error) {
	store, err := blob.NewLocalStore(path)
	if err != nil {
		return nil, err
	}
	return dataset.Open(ctx, store, nil)
}

func wantRows(what string, got, want int64) error {
	if got != want {
		return fmt.Errorf("bench: %s returned %d rows, want %d", what, got, want)
	}
	return nil
}

// takeRows are the take steps' rows of a table of rows rows written in
// chunks of chunk rows: n distinct random offsets (mulberry32, seed 777,
// as the baseline, skipping repeats: Lance's takeRowIds returns a repeated
// row once, lancer's as often as asked), and the same rows by row id
// (fragment i holds rows i*chunk on).
func takeRows(n, rows, chunk int) (offsets, rowIDs []uint64) {
	rng := baselinetest.NewRNG(777)
	offsets = make([]uint64, 0, n)
	rowIDs = make([]uint64, 0, n)
	seen := make(map[uint64]bool, n)
	for len(offsets) < n {
		off := uint64(math.Floor(rng.Float() * float64(rows)))
		if seen[off] {
			continue
		}
		seen[off] = true
		offsets = append(offsets, off)
		rowIDs = append(rowIDs, off/uint64(chunk)<<32|off%uint64(chunk))
	}
	return offsets, rowIDs
}

// lancerTakeRows takes ids from d, by row id or by offset, and returns the
// rows it got.
func lancerTakeRows(ctx context.Context, d *dataset.Dataset, ids []uint64, byRowID bool) (int64, error) {
	var rec arrow.RecordBatch
	var err error
	if byRowID {
		rec, err = d.TakeRowIDs(ctx, ids, nil)
	} else {
		rec, err = d.Take(ctx, ids, nil)
	}
	if err != nil {
		return 0, err
	}
	defer rec.Release()
	return rec.NumRows(), nil
}

// onePercent is the rows of the 1% filter: round(rows/100), at least one.
func onePercent(rows int) int64 {
	return max(1, int64(math.Round(float64(rows)/100)))
}

// nodeProc is one running node script of a suite (lance-core.mjs,
// lance-s3.mjs), asked one request at a time: a JSON object a line on its
// stdin, answered by one on its stdout.
type nodeProc struct {
	script string
	mu     sync.Mutex
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	// stderr keeps the end of node's stderr, which Lance's warnings can
	// fill with megabytes over a run.
	stderr tailbuf.Buffer
}

// nodeReply is what every reply of those scripts may carry: the versions
// (op "versions") and an error.
type nodeReply struct {
	LanceDB string `json:"lancedb"`
	Lance   string `json:"lance"`
	ArrowJS string `json:"arrowJs"`
	Node    string `json:"node"`
	Error   string `json:"error"`
}

func (r *nodeReply) replyError() string { return r.Error }

// startNode starts script, a file of ref's scripts.
func startNode(ref lancereftest.Ref, script string) (*nodeProc, error) {
	p := &nodeProc{script: script, cmd: ref.Command(script), stderr: tailbuf.Buffer{Max: 8 << 10}}
	p.cmd.Stderr = &p.stderr
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.out = bufio.NewReaderSize(out, 1<<20)
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: starting node %s: %w", script, err)
	}
	return p, nil
}

// call sends req (operation op on table name) and decodes its answer into
// reply; a reply carrying an error is returned as one.
func (p *nodeProc) call(op, name string, req any, reply interface{ replyError() string }) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("bench: Lance %s: writing the request: %w\n%s", op, err, p.stderr.String())
	}
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("bench: Lance %s: node stopped answering: %w\n%s", op, err, p.stderr.String())
	}
	if err := json.Unmarshal(line, reply); err != nil {
		return fmt.Errorf("bench: Lance %s printed %.200q: %w", op, line, err)
	}
	if e := reply.replyError(); e != "" {
		return fmt.Errorf("bench: Lance %s %s: %s", op, name, e)
	}
	return nil
}

// close ends the process (closing its stdin ends its request loop).
func (p *nodeProc) close() error {
	p.in.Close()
	if err := p.cmd.Wait(); err != nil {
		return fmt.Errorf("bench: node %s: %w\n%s", p.script, err, p.stderr.String())
	}
	return nil
}

// suiteStart is what a suite's report records first: the time, the
// machine with its load average now, and lancer's versions.
func suiteStart() (time.Time, Machine, CoreVersions) {
	m := machine()
	m.Load[0] = loadAverage()
	return time.Now().UTC().Truncate(time.Second), m, CoreVersions{Go: runtime.Version(), Lancer: lancerCommit()}
}

// suiteEnd records the load average at the end in m and returns the
// seconds since began, to a tenth.
func suiteEnd(m *Machine, began time.Time) float64 {
	m.Load[1] = loadAverage()
	return math.Round(time.Since(began).Seconds()*10) / 10
}

// setLance records the versions a node script answered.
func (v *CoreVersions) setLance(r nodeReply) {
	v.LanceDB, v.Lance, v.ArrowJS, v.Node = r.LanceDB, r.Lance, r.ArrowJS, r.Node
}

// suiteHeader is the start of a suite report's Markdown after its title:
// the date, the machine and the duration, then the versions.
func suiteHeader(started time.Time, m Machine, seconds float64, v CoreVersions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s; %s/%s, %d CPUs (%s), %.1f GiB, GOMAXPROCS %d; load average %.2f at the start, %.2f at the end; the suite took %.0f s.\n\n",
		started.Format("2006-01-02 15:04 UTC"), m.OS, m.Arch, m.CPUs, m.CPUModel, m.MemGiB,
		m.GOMAXPROCS, m.Load[0], m.Load[1], seconds)
	fmt.Fprintf(&b, "Versions: lancer %s (%s); @lancedb/lancedb %s (lance %s), apache-arrow JS %s, node %s.\n\n",
		v.Lancer, v.Go, v.LanceDB, v.Lance, v.ArrowJS, v.Node)
	return b.String()
}

// writeJSON writes v, indented, to path.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
