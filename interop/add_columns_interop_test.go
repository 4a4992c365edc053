package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
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

// queryRequest asks lance-ops.mjs for the rows a filter keeps.
type queryRequest struct {
	URI    string `json:"uri"`
	Op     string `json:"op"`
	Filter string `json:"filter"`
}

type queryReply struct {
	Rows  []json.RawMessage `json:"rows"`
	Error string            `json:"error"`
}

// extraValue is the value of an added column for history row id (nil =
// null), as lancer computes it and as Lance's appends write it.
func extraValue(col string, id int64, withInfo bool) any {
	switch col {
	case "value2":
		if v := histValue("value", id); v != nil {
			return v.(float64) * 2
		}
	case "ulabel":
		if v := histValue("label", id); v != nil {
			return strings.ToUpper(v.(string))
		}
	case "score":
		if id%3 == 0 {
			return int32(id * 10)
		}
	case "info":
		if id%3 == 0 && withInfo {
			return map[string]any{"w": fmt.Sprintf("w%d", id%4), "n": id}
		}
	}
	return nil
}

// scoresData is the data AddColumnsFromData joins on id: a score (and,
// where the file version can store a null struct, a struct) for every
// third id in [0, n).
func scoresData(t *testing.T, mem memory.Allocator, n int64, withInfo bool) array.RecordReader {
	t.Helper()
	fields := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "score", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}
	info := arrow.StructOf(
		arrow.Field{Name: "w", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	if withInfo {
		fields = append(fields, arrow.Field{Name: "info", Type: info, Nullable: true})
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for id := n - 1; id >= 0; id-- {
		if id%3 != 0 {
			continue
		}
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.Int32Builder).Append(extraValue("score", id, withInfo).(int32))
		if withInfo {
			v := extraValue("info", id, withInfo).(map[string]any)
			sb := b.Field(2).(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.StringBuilder).Append(v["w"].(string))
			sb.FieldBuilder(1).(*array.Int64Builder).Append(v["n"].(int64))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAddColumnsInterop: lancer adds columns (by expression, all-null, and
// from data joined on id) to datasets of each file version, one with
// stable row ids, and deletes rows; real Lance reads every version as
// lancer does. Real Lance then appends rows holding the new columns and
// deletes, and lancer reads that as Lance does. Last, lancer's filtered
// scans return the rows Lance's filtered queries return.
func TestAddColumnsInterop(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts dataset.WriteOptions
	}{
		{"v2_0", dataset.WriteOptions{FileVersion: format.Version2_0, MaxRowsPerFile: 25}},
		{"v2_1", dataset.WriteOptions{FileVersion: format.Version2_1, MaxRowsPerFile: 25}},
		{"v2_2", dataset.WriteOptions{FileVersion: format.Version2_2, MaxRowsPerFile: 25}},
		{"v2_2_stable_rowids", dataset.WriteOptions{MaxRowsPerFile: 25, EnableStableRowIDs: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withInfo := tc.opts.FileVersion != format.Version2_0
			uri := filepath.Join(t.TempDir(), "add_"+tc.name+".lance")
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			opts := tc.opts
			opts.Allocator = mem
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
			roles := []string{"id", "label", "value", "vec", "flag", "tags"}
			r := histReader(t, mem, roles, roles, 0, 60)
			d := must(dataset.Write(ctx, store, r, &opts))
			r.Release()
			d = must(d.Delete(ctx, "id % 7 = 2", nil))
			d = must(d.AddColumns(ctx, []dataset.NewColumn{
				{Name: "value2", Expr: "value * 2"},
				{Name: "ulabel", Expr: "upper(label)"},
			}, nil))
			d = must(d.AddColumns(ctx, []dataset.NewColumn{{Name: "nothing", Expr: "CAST(NULL AS bigint)"}}, nil))
			r = scoresData(t, mem, 60, withInfo)
			d = must(d.AddColumnsFromData(ctx, r, "id", nil))
			r.Release()
			d = must(d.Delete(ctx, "id % 5 = 0 OR id = 26", nil))
			_ = d
			agree(t, node, ref, uri)

			// Real Lance appends rows holding the new columns, and deletes
			// across old and new fragments.
			rows := histRows(map[string]string{"id": "id", "label": "label", "value": "value", "vec": "vec", "flag": "flag", "tags": "tags"}, 1000, 1012)
			for _, row := range rows {
				id := row["id"].(int64)
				for _, col := range []string{"value2", "ulabel", "score", "info"} {
					if col == "info" && !withInfo {
						continue
					}
					row[col] = extraValue(col, id, withInfo)
				}
			}
			lanceOps(t, node, ref,
				opRequest{URI: uri, Op: "append", Rows: rows},
				opRequest{URI: uri, Op: "delete", Filter: "id = 1001 OR id = 3 OR id = 27"},
			)
			agree(t, node, ref, uri)
			if withInfo {
				compareFilters(t, node, ref, uri)
			}
		})
	}
}

// filterCases are the filters on which lancer's scans and Lance's queries
// must agree on the TestAddColumnsInterop datasets.
var filterCases = []string{
	"id > 30",
	"id >= 10 AND id < 20",
	"label = 'row-5' OR id = 7",
	"NOT (id < 50)",
	"id IN (1, 4, 9, 16, 25, 36, 1004)",
	"value BETWEEN 10 AND 40",
	"label IS NULL",
	"value2 IS NOT NULL AND value2 > 50",
	"label LIKE 'row-1%'",
	"id * 2 + 1 > 71",
	"id % 4 = 1 OR flag",
	"flag = false",
	"info.w = 'w3'",
	"info.n > 20 AND info IS NOT NULL",
	"lower(ulabel) = 'row-12'",
	"score IS NULL AND nothing IS NULL",
	"starts_with(label, 'row-2')",
	"array_has(tags, 'g1')",
	"_rowid < 10",
}

// compareFilters checks that lancer's filtered scans of the latest version
// of uri return exactly the rows Lance's filtered queries return.
func compareFilters(t *testing.T, node, ref, uri string) {
	t.Helper()
	ctx := context.Background()
	var reqs []queryRequest
	for _, f := range filterCases {
		reqs = append(reqs, queryRequest{URI: uri, Op: "query", Filter: f})
	}
	replies, err := lancereftest.Ask[queryRequest, queryReply](script(node, ref), "lance-ops.mjs", reqs)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d, err := openDir(ctx, uri, &dataset.OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	var counts []string
	for i, f := range filterCases {
		if replies[i].Error != "" {
			t.Errorf("real Lance refused filter %q: %s", f, replies[i].Error)
			continue
		}
		s, err := d.Scan(&dataset.ScanOptions{Filter: f, WithRowID: true})
		if err != nil {
			t.Errorf("lancer refused filter %q: %v", f, err)
			continue
		}
		var got [][]byte
		for rec, err := range s.Batches(ctx) {
			if err != nil {
				t.Errorf("lancer filter %q: %v", f, err)
				break
			}
			got = append(got, fixturetest.EncodeRows(t, rec)...)
		}
		if fixturetest.CompareRows(t, fmt.Sprintf("%s where %s (lancer vs real Lance)", filepath.Base(uri), f), got, replies[i].Rows, fixturetest.CompareOptions{}) {
			counts = append(counts, fmt.Sprintf("%q: %d", f, len(got)))
		}
	}
	t.Logf("%s: rows kept by lancer and Lance alike: %s", filepath.Base(uri), strings.Join(counts, ", "))
}
