package interop_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/lancereftest"
)

// updRequest asks lance-ops.mjs for an update or a merge insert.
type updRequest struct {
	URI                          string            `json:"uri"`
	Op                           string            `json:"op"`
	Filter                       string            `json:"filter,omitempty"`
	ValuesSQL                    map[string]string `json:"valuesSql,omitempty"`
	On                           []string          `json:"on,omitempty"`
	Rows                         []map[string]any  `json:"rows,omitempty"`
	WhenMatchedUpdateAll         bool              `json:"whenMatchedUpdateAll,omitempty"`
	MatchedWhere                 string            `json:"matchedWhere,omitempty"`
	WhenNotMatchedInsertAll      bool              `json:"whenNotMatchedInsertAll,omitempty"`
	WhenNotMatchedBySourceDelete bool              `json:"whenNotMatchedBySourceDelete,omitempty"`
	BySourceWhere                string            `json:"bySourceWhere,omitempty"`
	Name                         string            `json:"name,omitempty"`
}

type updReply struct {
	Version     uint64            `json:"version"`
	RowsUpdated uint64            `json:"rowsUpdated"`
	Inserted    uint64            `json:"inserted"`
	Updated     uint64            `json:"updated"`
	Deleted     uint64            `json:"deleted"`
	Rows        []json.RawMessage `json:"rows"`
	Error       string            `json:"error"`
}

// lanceUpdates performs the requests with real Lance, failing t on any
// error.
func lanceUpdates(t *testing.T, node, ref string, reqs ...updRequest) []updReply {
	t.Helper()
	replies, err := lancereftest.Ask[updRequest, updReply](script(node, ref), "lance-ops.mjs", reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range replies {
		if r.Error != "" {
			t.Fatalf("real Lance refused %s on %s: %s", reqs[i].Op, reqs[i].URI, r.Error)
		}
	}
	return replies
}

// mergeRows returns history rows [from, to) whose label says who merged
// them.
func mergeRows(who string, from, to int64) []map[string]any {
	rows := histRows(map[string]string{"id": "id", "label": "label", "value": "value", "vec": "vec", "flag": "flag", "tags": "tags"}, from, to)
	for _, r := range rows {
		r["label"] = fmt.Sprintf("%s-%v", who, r["id"])
	}
	return rows
}

// mergeReader is mergeRows as an Arrow reader, columns in another order
// than the dataset's.
func mergeReader(t *testing.T, mem memory.Allocator, who string, from, to int64) array.RecordReader {
	t.Helper()
	roles := []string{"tags", "id", "vec", "value", "flag", "label"}
	r := histReader(t, mem, roles, roles, from, to)
	defer r.Release()
	// Relabel: rebuild the label column.
	r.Next()
	rec := r.RecordBatch()
	lb := array.NewStringBuilder(mem)
	defer lb.Release()
	for id := from; id < to; id++ {
		lb.Append(fmt.Sprintf("%s-%d", who, id))
	}
	labels := lb.NewArray()
	defer labels.Release()
	cols := append(rec.Columns()[:5:5], labels)
	out := array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
	defer out.Release()
	rr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{out})
	if err != nil {
		t.Fatal(err)
	}
	return rr
}

// TestUpdateMergeInsertInterop: lancer updates and merge-inserts datasets
// of each file version (and one with stable row ids); real Lance reads
// every version exactly as lancer does; real Lance then updates and
// merge-inserts on top, and lancer reads Lance's versions exactly; lancer
// updates once more on top of Lance's commits.
func TestUpdateMergeInsertInterop(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	cases := []struct {
		name string
		opts dataset.WriteOptions
	}{
		{"v2_0", dataset.WriteOptions{FileVersion: format.Version2_0, MaxRowsPerFile: 30}},
		{"v2_1", dataset.WriteOptions{FileVersion: format.Version2_1, MaxRowsPerFile: 30}},
		{"v2_2", dataset.WriteOptions{FileVersion: format.Version2_2, MaxRowsPerFile: 30}},
		{"v2_2_stable_rowids", dataset.WriteOptions{MaxRowsPerFile: 30, EnableStableRowIDs: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			opts := tc.opts
			opts.Allocator = mem
			uri := filepath.Join(t.TempDir(), "u_"+tc.name+".lance")
			store, err := blob.NewLocalStore(uri)
			if err != nil {
				t.Fatal(err)
			}
			must := func(d *dataset.Dataset, err error) *dataset.Dataset {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			update := func(d *dataset.Dataset, set map[string]string, where string, want uint64) *dataset.Dataset {
				t.Helper()
				out, stats, err := d.Update(ctx, set, where, nil)
				if err != nil {
					t.Fatalf("update %v where %q: %v", set, where, err)
				}
				if stats.RowsUpdated != want {
					t.Errorf("update %v where %q: %d rows, want %d", set, where, stats.RowsUpdated, want)
				}
				return out
			}
			merge := func(d *dataset.Dataset, r array.RecordReader, o *dataset.MergeInsertOptions, want dataset.MergeInsertStats) *dataset.Dataset {
				t.Helper()
				defer r.Release()
				o.Allocator = mem
				out, stats, err := d.MergeInsert(ctx, r, o)
				if err != nil {
					t.Fatalf("merge insert: %v", err)
				}
				if stats != want {
					t.Errorf("merge insert: %+v, want %+v", stats, want)
				}
				return out
			}
			roles := []string{"id", "label", "value", "vec", "flag", "tags"}
			r := histReader(t, mem, roles, roles, 0, 100)
			d := must(dataset.Write(ctx, store, r, &opts))
			r.Release()
			d = must(d.Delete(ctx, "id % 5 = 0", nil))
			// Rows 0..39 less the deleted: 32 rows over two fragments.
			d = update(d, map[string]string{"value": "value * 2", "label": "'upd-' || CAST(id AS STRING)"}, "id < 40", 32)
			d = update(d, map[string]string{"value": "0"}, "id < 0", 0)
			d = update(d, map[string]string{"flag": "NOT flag", "tags": "NULL"}, "flag IS NOT NULL AND id > 80", 10)
			// 30..49 (16 live) updated; then the even live rows of 45..99
			// updated, the deleted ones and 100..109 inserted, and 1..9
			// deleted.
			d = merge(d, mergeReader(t, mem, "m1", 30, 50), &dataset.MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true},
				dataset.MergeInsertStats{RowsUpdated: 16})
			d = merge(d, mergeReader(t, mem, "m2", 45, 110), &dataset.MergeInsertOptions{
				On: []string{"id"}, WhenMatchedUpdateAll: true, WhenMatchedCondition: "target.id % 2 = 0 AND source.label IS NOT NULL",
				WhenNotMatchedInsertAll: true, WhenNotMatchedBySourceDelete: true, WhenNotMatchedBySourceCondition: "id < 10",
			}, dataset.MergeInsertStats{RowsUpdated: 22, RowsInserted: 21, RowsDeleted: 8})
			stale := d

			// Real Lance updates and merge-inserts on top (so it must read
			// lancer's versions).
			lr := lanceUpdates(t, node, ref,
				updRequest{URI: uri, Op: "update", Filter: "id >= 60 AND id < 70", ValuesSQL: map[string]string{"label": "'lance'", "value": "value + 1"}},
				updRequest{URI: uri, Op: "update", Filter: "id < 0", ValuesSQL: map[string]string{"value": "0"}},
				updRequest{URI: uri, Op: "mergeInsert", On: []string{"id"}, Rows: mergeRows("lm", 95, 120),
					WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true},
			)
			if lr[1].Version != lr[0].Version+1 || lr[1].RowsUpdated != 0 {
				t.Errorf("Lance's update matching nothing: version %d after %d, %d rows; lancer commits a version", lr[1].Version, lr[0].Version, lr[1].RowsUpdated)
			}
			if lr[0].RowsUpdated != 10 || lr[2].Updated != 15 || lr[2].Inserted != 10 {
				t.Errorf("Lance updated %d rows, merged %+v", lr[0].RowsUpdated, lr[2])
			}

			// lancer again, from the version before Lance's commits: an
			// update of rows Lance did not touch is rebased over Lance's
			// Update transactions; one of rows Lance updated conflicts and
			// runs again on the latest version.
			d = update(stale, map[string]string{"value": "-5"}, "id >= 20 AND id < 25", 4)
			d = update(stale, map[string]string{"label": "'again'"}, "id >= 95 AND id < 100 OR id = 61", 6)
			// Row 61 once, with Lance's new value and lancer's label.
			for filter, want := range map[string]uint64{"id = 61": 1, "id = 61 AND value = 92.5 AND label = 'again'": 1, "id >= 20 AND id < 25 AND value = -5": 4} {
				if n, err := d.Count(ctx, filter); err != nil || n != want {
					t.Errorf("%s: %d rows (%v), want %d", filter, n, err, want)
				}
			}
			d = merge(d, mergeReader(t, mem, "m3", 115, 125), &dataset.MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true},
				dataset.MergeInsertStats{RowsUpdated: 5, RowsInserted: 5})
			_ = d
			// One check covers the whole history: every version, lancer's
			// and Lance's, reads the same with both.
			agree(t, node, ref, uri)
		})
	}
}

// lanceSession is one lance-ops.mjs process answering requests one at a
// time, so that lancer can commit between two of them.
type lanceSession struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr bytes.Buffer
}

func startLance(t *testing.T, node, ref string) *lanceSession {
	t.Helper()
	s := &lanceSession{t: t, cmd: script(node, ref).Command("lance-ops.mjs")}
	s.cmd.Stderr = &s.stderr
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.out = bufio.NewScanner(out)
	s.out.Buffer(make([]byte, 1<<20), 1<<28)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return s
}

// do sends one request and waits for its reply, failing t on an error.
func (s *lanceSession) do(req updRequest) updReply {
	s.t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.in.Write(append(b, '\n')); err != nil {
		s.t.Fatalf("lance-ops.mjs: %v\n%s", err, s.stderr.String())
	}
	if !s.out.Scan() {
		s.t.Fatalf("lance-ops.mjs stopped: %v\n%s", s.out.Err(), s.stderr.String())
	}
	var r updReply
	if err := json.Unmarshal(s.out.Bytes(), &r); err != nil {
		s.t.Fatalf("lance-ops.mjs printed %.200q: %v", s.out.Text(), err)
	}
	if r.Error != "" {
		s.t.Fatalf("real Lance refused %s on %s: %s", req.Op, req.URI, r.Error)
	}
	return r
}

func (s *lanceSession) close() {
	if s.in != nil {
		s.in.Close()
		s.in = nil
		_ = s.cmd.Wait()
	}
}

// TestLanceRebasesOverLancerUpdate: real Lance commits from table handles
// opened before lancer's updates and merge inserts (a LanceDB table does not
// look for other writers' versions by default), so Lance's conflict
// resolver reads lancer's Update transactions: a delete of other rows is
// rebased, and a delete or update of rows lancer moved meanwhile is retried
// by Lance on the rows' new copies.
func TestLanceRebasesOverLancerUpdate(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable=%t", stable), func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			uri := filepath.Join(t.TempDir(), "r.lance")
			store, err := blob.NewLocalStore(uri)
			if err != nil {
				t.Fatal(err)
			}
			roles := []string{"id", "label", "value", "vec", "flag", "tags"}
			r := histReader(t, mem, roles, roles, 0, 40)
			d, err := dataset.Write(ctx, store, r, &dataset.WriteOptions{MaxRowsPerFile: 10, EnableStableRowIDs: stable, CommitOptions: dataset.CommitOptions{Allocator: mem}})
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			update := func(set map[string]string, where string) {
				t.Helper()
				if d, _, err = d.Update(ctx, set, where, nil); err != nil {
					t.Fatal(err)
				}
			}
			s := startLance(t, node, ref)

			held := s.do(updRequest{URI: uri, Op: "hold", Name: "a"}).Version
			update(map[string]string{"label": "'l1'"}, "id < 5")
			if v := s.do(updRequest{URI: uri, Op: "heldDelete", Name: "a", Filter: "id = 20"}).Version; v != held+2 {
				t.Errorf("Lance's delete committed version %d, want %d", v, held+2)
			}
			d, err = d.Checkout(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}

			s.do(updRequest{URI: uri, Op: "hold", Name: "b"})
			update(map[string]string{"value": "-1"}, "id = 25")
			s.do(updRequest{URI: uri, Op: "heldUpdate", Name: "b", Filter: "id = 25", ValuesSQL: map[string]string{"label": "'lance'"}})
			if d, err = d.Checkout(ctx, 0); err != nil {
				t.Fatal(err)
			}

			s.do(updRequest{URI: uri, Op: "hold", Name: "c"})
			src := mergeReader(t, mem, "m", 1, 4)
			if d, _, err = d.MergeInsert(ctx, src, &dataset.MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, CommitOptions: dataset.CommitOptions{Allocator: mem}}); err != nil {
				t.Fatal(err)
			}
			src.Release()
			s.do(updRequest{URI: uri, Op: "heldDelete", Name: "c", Filter: "id = 2"})
			s.close()

			if d, err = d.Checkout(ctx, 0); err != nil {
				t.Fatal(err)
			}
			for filter, want := range map[string]uint64{
				"id = 20": 0, "id = 25": 1, "id = 25 AND value = -1 AND label = 'lance'": 1,
				"id = 2": 0, "id = 1 AND label = 'm-1'": 1, "label = 'l1'": 2, "id < 40": 38,
			} {
				if n, err := d.Count(ctx, filter); err != nil || n != want {
					t.Errorf("%s: %d rows (%v), want %d", filter, n, err, want)
				}
			}
			agree(t, node, ref, uri)
		})
	}
}

// TestUpdateIndexedInterop: lancer updates and merge-inserts a copy of real
// Lance's indexed dataset (btree, bitmap and vector indices); real Lance's
// filtered queries, which use the indices on the fragments they cover and
// scan the fragments lancer wrote, keep the same rows as lancer's scans.
func TestUpdateIndexedInterop(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	uri := filepath.Join(t.TempDir(), "indexed.lance")
	copyDir(t, fixturetest.DatasetPath(t, "indexed_v2_2"), uri)
	d, err := openDir(ctx, uri, &dataset.OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if d, _, err = d.Update(ctx, map[string]string{"category": "'updated'"}, "id < 50", nil); err != nil {
		t.Fatal(err)
	}
	// Merge rows 100..109 back in as they are (rewriting them).
	s, err := d.Scan(&dataset.ScanOptions{Filter: "id >= 100 AND id < 110"})
	if err != nil {
		t.Fatal(err)
	}
	var recs []arrow.RecordBatch
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		rec.Retain()
		recs = append(recs, rec)
	}
	src, err := array.NewRecordReader(s.Schema(), recs)
	for _, rec := range recs {
		rec.Release()
	}
	if err != nil {
		t.Fatal(err)
	}
	d, stats, err := d.MergeInsert(ctx, src, &dataset.MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, CommitOptions: dataset.CommitOptions{Allocator: mem}})
	src.Release()
	if err != nil || stats.RowsUpdated != 10 {
		t.Fatalf("merge: %+v, %v", stats, err)
	}
	filters := []string{"category = 'updated'", "id < 60", "id >= 100 AND id < 110", "category = 'updated' AND id >= 40", "category != 'updated'"}
	var reqs []updRequest
	for _, f := range filters {
		reqs = append(reqs, updRequest{URI: uri, Op: "query", Filter: f})
	}
	for i, r := range lanceUpdates(t, node, ref, reqs...) {
		var theirs []int64
		for _, row := range r.Rows {
			var v struct {
				ID int64 `json:"id"`
			}
			if err := json.Unmarshal(row, &v); err != nil {
				t.Fatal(err)
			}
			theirs = append(theirs, v.ID)
		}
		slices.Sort(theirs)
		s, err := d.Scan(&dataset.ScanOptions{Columns: []string{"id"}, Filter: filters[i]})
		if err != nil {
			t.Fatal(err)
		}
		var ours []int64
		for rec, err := range s.Batches(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			ours = append(ours, rec.Column(0).(*array.Int64).Int64Values()...)
		}
		slices.Sort(ours)
		if !slices.Equal(theirs, ours) {
			t.Errorf("%s: real Lance keeps %d rows, lancer %d", filters[i], len(theirs), len(ours))
		}
		if i == 0 && len(ours) != 50 {
			t.Errorf("%s: %d rows, want 50", filters[i], len(ours))
		}
	}
}
