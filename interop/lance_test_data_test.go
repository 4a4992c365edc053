package interop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/lancereftest"
)

// lanceTestData holds the datasets old Lance releases wrote, each one
// defect class of issue #20 (its README says which release wrote which).
var lanceTestData = filepath.Join("..", "dataset", "testdata", "lance-test-data")

// versionsReply is lance-ops.mjs's answer to listVersions and countRows.
type versionsReply struct {
	Versions []struct {
		Version  uint64            `json:"version"`
		Metadata map[string]string `json:"metadata"`
	} `json:"versions"`
	Count uint64 `json:"count"`
	Error string `json:"error"`
}

// historicalRows scans version (0 = latest) of the dataset at uri with lancer,
// every row in the fixture encoding (with _rowid last if withRowID).
func historicalRows(t *testing.T, ctx context.Context, uri string, version uint64, withRowID bool) ([][]byte, error) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d, err := openDirAt(ctx, uri, branch.Ref{Version: version}, &dataset.OpenOptions{Allocator: mem})
	if err != nil {
		return nil, err
	}
	sc, err := d.Scan(&dataset.ScanOptions{WithRowID: withRowID})
	if err != nil {
		return nil, err
	}
	var rows [][]byte
	for rec, err := range sc.Batches(ctx) {
		if err != nil {
			return nil, err
		}
		rows = append(rows, fixturetest.EncodeRows(t, rec)...)
	}
	return rows, nil
}

// TestLanceHistoricalDatasets: the datasets that old Lance releases wrote
// with the defects of issue #20 (row counts of a manifest without a writer
// version, duplicate field ids and legacy files keyed by the manifest's
// ids, a wrong storage version record, a version Lance says to roll back
// from). For each: lancer reads every version as Lance 12 does (and as the
// writing release did, where its script recorded that); lancer writes on it
// and Lance 12 reads lancer's version as lancer does; Lance 12 writes on it
// (its commit repairs what it repairs) and lancer reads Lance's version as
// Lance does.
func TestLanceHistoricalDatasets(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// release is what the writing release read at the latest version,
		// where its script asserted it; nil otherwise.
		release []string
		// write is lancer's commit on the latest version of the dataset
		// at uri; it returns the version committed.
		write func(t *testing.T, d *dataset.Dataset, uri string) *dataset.Dataset
	}{
		{
			name: "v0.8.0-migrated_from_v0.7.5.lance",
			write: func(t *testing.T, d *dataset.Dataset, uri string) *dataset.Dataset {
				d, err := d.Delete(ctx, "x = 50", nil)
				if err != nil {
					t.Fatalf("lancer delete: %v", err)
				}
				return d
			},
		},
		{
			name: "v0.10.5-corrupt_schema.lance",
			// datagen.py of Lance 0.10.5 asserts this table.
			release: []string{`{"x":0,"y":0,"b":0,"c":0}`, `{"x":1,"y":2,"b":3,"c":-1}`, `{"x":2,"y":4,"b":6,"c":-2}`, `{"x":3,"y":6,"b":9,"c":-3}`},
			write: func(t *testing.T, d *dataset.Dataset, uri string) *dataset.Dataset {
				d, err := d.Delete(ctx, "x = 1", nil)
				if err != nil {
					t.Fatalf("lancer delete: %v", err)
				}
				return d
			},
		},
		{
			name: "v0.16.0-wrong_data_version_can_fix.lance",
			write: func(t *testing.T, d *dataset.Dataset, uri string) *dataset.Dataset {
				rr := readerLike(t, d.Schema().Arrow(), 7, 2)
				defer rr.Release()
				d, err := d.Append(ctx, rr, nil)
				if err != nil {
					t.Fatalf("lancer append: %v", err)
				}
				if d.Manifest().DataFormat.IsLegacy() {
					t.Errorf("lancer's append left the record of storage version %s over 2.0 files", d.Manifest().DataFormat)
				}
				return d
			},
		},
		{
			// Version 2 lists fragment 1 twice over files of two
			// versions and records storage version 0.1; Lance 12 reads
			// it as it is (the loop below compares rows, row ids, counts
			// and the version listing) but refuses to commit on it
			// ("rollback to an earlier version"). So does lancer, and
			// its restore of version 1 is the way out Lance names.
			name: "v0.16.0-wrong_data_version_no_fix.lance",
			write: func(t *testing.T, d *dataset.Dataset, uri string) *dataset.Dataset {
				if d.Version() != 2 {
					t.Fatalf("the latest is version %d, want 2", d.Version())
				}
				rr := readerLike(t, d.Schema().Arrow(), 7, 1)
				defer rr.Release()
				if _, err := d.Append(ctx, rr, nil); !errors.Is(err, lancer.ErrCorrupt) {
					t.Errorf("lancer appends on version 2 (%v); Lance 12 refuses to", err)
				}
				replies, err := lancereftest.Ask[refRequest, versionsReply](script(node, ref), "lance-ops.mjs",
					[]refRequest{{URI: uri, Op: "append", Rows: []map[string]any{{"foo": 7}}}, {URI: uri, Op: "delete", Filter: "false"}})
				if err != nil {
					t.Fatal(err)
				}
				for i, r := range replies {
					if !strings.Contains(r.Error, "rollback to an earlier version") {
						t.Errorf("Lance 12's write #%d on version 2: %q, want its refusal to write on it", i, r.Error)
					}
				}
				v1, err := openDirAt(ctx, uri, branch.Ref{Version: 1}, nil)
				if err != nil {
					t.Fatal(err)
				}
				d, err = v1.Restore(ctx, nil)
				if err != nil {
					t.Fatalf("restore version 1: %v", err)
				}
				return d
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uri := filepath.Join(t.TempDir(), tc.name)
			if err := os.CopyFS(uri, os.DirFS(filepath.Join(lanceTestData, tc.name))); err != nil {
				t.Fatal(err)
			}
			root, err := openDirAt(ctx, uri, branch.Ref{Version: 1}, nil)
			if err != nil {
				t.Fatalf("open version 1: %v", err)
			}
			hist, err := dataset.History(ctx, root.Store())
			if err != nil {
				t.Fatalf("history: %v", err)
			}
			var (
				reqs   []request
				counts = []refRequest{{URI: uri, Op: "listVersions"}}
			)
			for _, h := range hist {
				reqs = append(reqs, request{URI: uri, Version: h.Version, WithRowID: true})
				counts = append(counts, refRequest{URI: uri, Op: "countRows", Version: h.Version})
			}
			replies := lanceRows(t, node, ref, reqs)
			meta, err := lancereftest.Ask[refRequest, versionsReply](script(node, ref), "lance-ops.mjs", counts)
			if err != nil {
				t.Fatal(err)
			}
			if len(meta[0].Versions) != len(hist) {
				t.Errorf("Lance 12 lists %d versions, lancer %d", len(meta[0].Versions), len(hist))
			}
			for i, h := range hist {
				if h.Err != nil {
					t.Errorf("%s@%d: lancer's history calls it damaged: %v", tc.name, h.Version, h.Err)
				}
				if i < len(meta[0].Versions) {
					lv := meta[0].Versions[i]
					if lv.Version != h.Version || !maps.Equal(lv.Metadata, h.Metadata) {
						t.Errorf("%s@%d: lancer lists %v, Lance 12 lists version %d with %v", tc.name, h.Version, h.Metadata, lv.Version, lv.Metadata)
					}
				}
				d, err := openDirAt(ctx, uri, branch.Ref{Version: h.Version}, nil)
				if err != nil {
					t.Errorf("%s@%d: %v", tc.name, h.Version, err)
					continue
				}
				if n, err := d.CountRows(ctx); err != nil || meta[i+1].Error != "" || n != meta[i+1].Count {
					t.Errorf("%s@%d: lancer counts %d (%v), Lance 12 %d (%s)", tc.name, h.Version, n, err, meta[i+1].Count, meta[i+1].Error)
				}
			}
			for i, req := range reqs {
				name := fmt.Sprintf("%s@%d", tc.name, req.Version)
				got, err := historicalRows(t, ctx, uri, req.Version, true)
				if err != nil {
					t.Errorf("%s: lancer: %v", name, err)
					continue
				}
				if replies[i].Error != "" {
					t.Errorf("%s: Lance 12 cannot read it: %s", name, replies[i].Error)
					continue
				}
				fixturetest.CompareRows(t, name+" (lancer vs Lance 12)", got, replies[i].Rows, fixturetest.CompareOptions{})
			}
			if tc.release != nil {
				latest, err := historicalRows(t, ctx, uri, 0, false)
				if err != nil {
					t.Fatal(err)
				}
				fixturetest.CompareRows(t, tc.name+" latest (lancer vs the writing release)", latest, byteRows(tc.release), fixturetest.CompareOptions{})
			}

			// lancer writes; Lance 12 reads lancer's version as lancer does.
			d, err := openDirAt(ctx, uri, branch.Ref{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			v := tc.write(t, d, uri).Version()
			got, err := historicalRows(t, ctx, uri, v, false)
			if err != nil {
				t.Fatalf("lancer reads its own version %d: %v", v, err)
			}
			reply := lanceRows(t, node, ref, []request{{URI: uri, Version: v}})[0]
			if reply.Error != "" {
				t.Fatalf("Lance 12 cannot read lancer's version %d: %s", v, reply.Error)
			}
			fixturetest.CompareRows(t, fmt.Sprintf("%s@%d lancer's write (lancer vs Lance 12)", tc.name, v), got, reply.Rows, fixturetest.CompareOptions{})

			// Lance 12 writes on lancer's version (a delete of nothing:
			// Lance's commit repairs what it repairs); lancer reads it.
			after := lanceRefOps(t, node, ref, refRequest{URI: uri, Op: "delete", Filter: "false"})[0].Version
			got, err = historicalRows(t, ctx, uri, after, false)
			if err != nil {
				t.Fatalf("lancer reads Lance 12's version %d: %v", after, err)
			}
			reply = lanceRows(t, node, ref, []request{{URI: uri, Version: after}})[0]
			if reply.Error != "" {
				t.Fatalf("Lance 12 cannot read its own version %d: %s", after, reply.Error)
			}
			fixturetest.CompareRows(t, fmt.Sprintf("%s@%d Lance 12's write (lancer vs Lance 12)", tc.name, after), got, reply.Rows, fixturetest.CompareOptions{})
		})
	}
}

// TestLanceRepairsCorruptSchemaLancerReads: Lance 12's own commit on Lance
// 0.10.5's dataset renumbers the duplicated ids b and c to 4 and 5 while
// their legacy file's own schema still says 2 and 3: lancer reads that
// file keyed on the manifest's ids (Lance's field_id_offset), as Lance 12
// reads it, at every version Lance wrote.
func TestLanceRepairsCorruptSchemaLancerReads(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	const name = "v0.10.5-corrupt_schema.lance"
	uri := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(uri, os.DirFS(filepath.Join(lanceTestData, name))); err != nil {
		t.Fatal(err)
	}
	v := lanceRefOps(t, node, ref, refRequest{URI: uri, Op: "delete", Filter: "false"})[0].Version
	got, err := historicalRows(t, ctx, uri, v, false)
	if err != nil {
		t.Fatalf("lancer reads Lance 12's repaired version %d: %v", v, err)
	}
	reply := lanceRows(t, node, ref, []request{{URI: uri, Version: v}})[0]
	if reply.Error != "" {
		t.Fatal(reply.Error)
	}
	want := []string{`{"x":0,"y":0,"b":0,"c":0}`, `{"x":1,"y":2,"b":4,"c":5}`, `{"x":2,"y":4,"b":8,"c":10}`, `{"x":3,"y":6,"b":12,"c":15}`}
	if !fixturetest.CompareRows(t, "Lance 12's repaired version (Lance 12 vs its own fix's test)", reply.Rows, byteRows(want), fixturetest.CompareOptions{}) {
		b, _ := json.Marshal(reply.Rows)
		t.Logf("Lance 12 reads %s", b)
	}
	fixturetest.CompareRows(t, "Lance 12's repaired version (lancer vs Lance 12)", got, reply.Rows, fixturetest.CompareOptions{})
}

func byteRows(rows []string) [][]byte {
	out := make([][]byte, len(rows))
	for i, r := range rows {
		out[i] = []byte(r)
	}
	return out
}
