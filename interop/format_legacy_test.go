package interop_test

// Legacy data files read by format against what real Lance returned for each
// version of the fixtures: the manifests that say which files a version
// holds are read with dataset/manifest, above format.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// TestFormatLegacyHistoryMatchesLance reads every data file of every version of
// the history and overwrite fixtures with Take, at the offsets real Lance
// reported (its row ids are fragment<<32 | offset), and compares each file's
// columns with the rows Lance returned for that version.
func TestFormatLegacyHistoryMatchesLance(t *testing.T) {
	for _, name := range []string{"history_vlegacy", "overwrite_vlegacy"} {
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			exp := fixturetest.LoadExpected(t, name)
			dir := fixturetest.DatasetPath(t, name)
			store, err := blob.NewLocalStore(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(exp.TimeTravel) == 0 {
				t.Fatal("no time_travel in expected.json")
			}
			for _, tt := range exp.TimeTravel {
				key := fmt.Sprintf("_versions/%d.manifest", uint64(math.MaxUint64)-tt.Version)
				mf, err := manifest.ReadFile(context.Background(), store, key, 0, false)
				if err != nil {
					t.Fatal(err)
				}
				m := mf.Manifest
				checkLegacyVersionFiles(t, store, mem, fmt.Sprintf("%s v%d", name, tt.Version), m, tt.Rows)
			}
		})
	}
}

// checkLegacyVersionFiles compares the data files of manifest m with rows.
func checkLegacyVersionFiles(t *testing.T, store blob.Store, mem memory.Allocator, what string, m *manifest.Manifest, rows []json.RawMessage) {
	t.Helper()
	// Rows by fragment, in the order Lance returned them.
	type located struct {
		offset uint64
		row    json.RawMessage
	}
	byFragment := map[uint64][]located{}
	for _, row := range rows {
		var v struct {
			RowID json.Number `json:"_rowid"`
		}
		if err := json.Unmarshal(row, &v); err != nil {
			t.Fatal(err)
		}
		var id uint64
		if _, err := fmt.Sscan(v.RowID.String(), &id); err != nil {
			t.Fatalf("_rowid %q: %v", v.RowID, err)
		}
		byFragment[id>>32] = append(byFragment[id>>32], located{id & math.MaxUint32, row})
	}
	names := map[int32]string{} // dataset field id → current name
	m.Schema.Walk(func(f *schema.Field) { names[f.ID] = f.Name })
	checked := 0
	for _, frag := range m.Fragments {
		want := byFragment[frag.ID]
		if len(want) == 0 {
			continue // every row of the fragment is deleted
		}
		for _, df := range frag.Files {
			r, err := format.Open(context.Background(), store, "data/"+df.Path, &format.OpenOptions{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			// The file's fields still in the dataset, under their current names.
			var fields []*schema.Field
			var arrowFields []arrow.Field
			var columns []string
			for _, f := range r.Schema().Fields {
				if name, ok := names[f.ID]; ok {
					fields = append(fields, f)
					af := f.ArrowField()
					af.Name = name
					arrowFields = append(arrowFields, af)
					columns = append(columns, name)
				}
			}
			offsets := make([]uint64, len(want))
			wantRows := make([]json.RawMessage, len(want))
			for i, w := range want {
				offsets[i], wantRows[i] = w.offset, w.row
			}
			cur, err := r.NewCursor(r.FileProjection(fields))
			if err != nil {
				t.Fatal(err)
			}
			arrs, err := cur.Take(context.Background(), offsets)
			cur.Close()
			if err != nil {
				t.Fatalf("%s: take from %s: %v", what, df.Path, err)
			}
			rec := legacyRecord(t, arrow.NewSchema(arrowFields, nil), arrs, int64(len(offsets)))
			got := fixturetest.EncodeRows(t, rec)
			rec.Release()
			fixturetest.CompareRows(t, what+" "+df.Path, got, wantRows, fixturetest.CompareOptions{Columns: columns})
			checked += len(got)
		}
	}
	if len(rows) > 0 && checked == 0 {
		t.Errorf("%s: no rows checked", what)
	}
}

// legacyRecord wraps arrays (taking over their references) as a record
// batch.
func legacyRecord(t testing.TB, sch *arrow.Schema, arrs []arrow.Array, n int64) arrow.RecordBatch {
	t.Helper()
	defer func() {
		for _, a := range arrs {
			a.Release()
		}
	}()
	for i, a := range arrs {
		if a.Len() != int(n) {
			t.Fatalf("column %q has %d rows, want %d", sch.Field(i).Name, a.Len(), n)
		}
	}
	return array.NewRecordBatch(sch, arrs, n)
}
