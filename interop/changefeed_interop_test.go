package interop_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/internal/checktest"
	"github.com/lancerdb/lancer/internal/lancereftest"
)

// TestChangeFeedOfLanceHistory: real Lance appends, updates (rows of
// several fragments), deletes and compacts a dataset lancer wrote, with
// and without stable row ids; lancer's change feed of that history has
// each update as its pre- and post-images, the compaction as no change.
func TestChangeFeedOfLanceHistory(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable=%v", stable), func(t *testing.T) {
			uri, _, main, _ := branchedIDs(t, "f.lance", stable)
			start := main.Version()
			rs := graphOps(t, node, ref,
				graphRequest{URI: uri, Op: "append", Rows: []map[string]any{{"id": 100, "val": "new"}}},
				graphRequest{URI: uri, Op: "update", Filter: "id IN (3, 25, 45)", ValuesSQL: map[string]string{"val": "concat('u', CAST(id AS VARCHAR))"}},
				graphRequest{URI: uri, Op: "delete", Filter: "id = 7 OR id = 100"},
				graphRequest{URI: uri, Op: "optimize"},
			)
			d, err := openDir(ctx, uri, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d.Version() <= rs[2].Version {
				t.Fatalf("Lance's optimize committed no version (at %d)", d.Version())
			}
			f, err := d.ChangeFeed(ctx, &dataset.ChangeFeedOptions{Since: start})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for rec, err := range f.Batches(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				n := int(rec.NumCols())
				for i := range int(rec.NumRows()) {
					got = append(got, fmt.Sprintf("%d %s %d %s", rec.Column(n-2).(*array.Int64).Value(i), rec.Column(n-3).(*array.String).Value(i),
						rec.Column(0).(*array.Int64).Value(i), rec.Column(1).(*array.String).Value(i)))
				}
			}
			v := func(i int) uint64 { return rs[i].Version }
			want := []string{fmt.Sprintf("%d insert 100 new", v(0))}
			for _, id := range []int{3, 25, 45} {
				want = append(want, fmt.Sprintf("%d update_preimage %d v%d", v(1), id, id), fmt.Sprintf("%d update_postimage %d u%d", v(1), id, id))
			}
			want = append(want, fmt.Sprintf("%d delete 7 v7", v(2)), fmt.Sprintf("%d delete 100 new", v(2)))
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("change feed of Lance's history:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// columnsRequest is a lance-ops.mjs request of the rewrite-columns test.
type columnsRequest struct {
	URI                  string           `json:"uri"`
	Op                   string           `json:"op"`
	Column               string           `json:"column,omitempty"`
	Type                 string           `json:"type,omitempty"`
	On                   []string         `json:"on,omitempty"`
	WhenMatchedUpdateAll bool             `json:"whenMatchedUpdateAll,omitempty"`
	Columns              []string         `json:"columns,omitempty"`
	Rows                 []map[string]any `json:"rows,omitempty"`
}

// TestChangeFeedOfLanceRewriteColumns: real Lance commits an Update
// transaction in rewrite-columns mode, and lancer's change feed reports
// the rows it changed as pre- and post-images with the columns it kept.
//
// Which call makes one: Lance 12 routes a merge insert whose source holds
// some of the table's columns through its in-place (v1) path, which
// attaches new data files for those columns to the fragments and commits
// Update{update_mode: REWRITE_COLUMNS}, only when the join key has a
// scalar index (lance-format/lance#6472 sent the other partial-schema
// upserts to the rewrite-rows path; LanceDB's node client cannot choose
// the mode). So Lance builds a BTREE on id and upserts (id, val) rows;
// the test checks the transaction is what it is named for.
func TestChangeFeedOfLanceRewriteColumns(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable=%v", stable), func(t *testing.T) {
			uri := filepath.Join(t.TempDir(), "c.lance")
			root, err := blob.NewLocalStore(uri)
			if err != nil {
				t.Fatal(err)
			}
			checktest.CleanRootWhenDone(t, root)
			r := idValN(ids(0, 30))
			d, err := dataset.Write(ctx, root, r, &dataset.WriteOptions{EnableStableRowIDs: stable, MaxRowsPerFile: 12})
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			start := d.Version()
			replies, err := lancereftest.Ask[columnsRequest, graphReply](script(node, ref), "lance-ops.mjs", []columnsRequest{
				{URI: uri, Op: "createIndex", Column: "id", Type: "btree"},
				// 3 and 14 (two fragments) change; 99 matches no row.
				{URI: uri, Op: "mergeInsert", On: []string{"id"}, WhenMatchedUpdateAll: true, Columns: []string{"id", "val"},
					Rows: []map[string]any{{"id": 3, "val": "m3"}, {"id": 14, "val": "m14"}, {"id": 99, "val": "m99"}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, rep := range replies {
				if rep.Error != "" {
					t.Fatalf("real Lance: %s", rep.Error)
				}
			}
			upsert := replies[1].Version
			if d, err = openDir(ctx, uri, nil); err != nil {
				t.Fatal(err)
			}
			if d.Version() != upsert {
				t.Fatalf("lancer opens version %d, Lance's upsert made %d", d.Version(), upsert)
			}
			body, err := root.ReadAll(ctx, "_transactions/"+d.Manifest().TransactionFile)
			if err != nil {
				t.Fatal(err)
			}
			txn, err := manifest.DecodeTransaction(body)
			if err != nil {
				t.Fatal(err)
			}
			if u, ok := txn.Operation.(*manifest.Update); !ok || u.Mode != manifest.RewriteColumns || len(u.NewFragments) != 0 {
				t.Fatalf("Lance's partial upsert committed %s %+v, want an Update in rewrite-columns mode with no new fragments", manifest.OperationName(txn), txn.Operation)
			}

			// lancer reads the fragments with their new column files.
			got := map[int64]string{}
			sc, err := d.Scan(nil)
			if err != nil {
				t.Fatal(err)
			}
			for rec, err := range sc.Batches(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				for i := range int(rec.NumRows()) {
					got[rec.Column(0).(*array.Int64).Value(i)] = rec.Column(1).(*array.String).Value(i) + "|" + rec.Column(2).(*array.String).Value(i)
				}
			}
			for id := range int64(30) {
				want := fmt.Sprintf("v%d|n%d", id, id)
				if id == 3 || id == 14 {
					want = fmt.Sprintf("m%d|n%d", id, id)
				}
				if got[id] != want {
					t.Errorf("lancer reads id %d as %q after Lance's rewrite-columns upsert, want %q", id, got[id], want)
				}
			}
			if len(got) != 30 {
				t.Errorf("lancer reads %d rows, want 30", len(got))
			}

			if stable {
				// The lineage columns of the rewritten rows, as Lance reads them.
				vs := []uint64{start, upsert}
				lance := lanceLineage(t, node, ref, uri, vs)
				sameLineage(t, "Lance's rewrite-columns upsert", lance, lancerLineage(t, uri, vs))
				if got := lance[upsert][14].updated; got != upsert {
					t.Errorf("Lance's _row_last_updated_at_version of the upserted id 14: %d, want %d", got, upsert)
				}
			}
			f, err := d.ChangeFeed(ctx, &dataset.ChangeFeedOptions{Since: start})
			if err != nil {
				t.Fatal(err)
			}
			var feed []string
			for rec, err := range f.Batches(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				n := int(rec.NumCols())
				for i := range int(rec.NumRows()) {
					feed = append(feed, fmt.Sprintf("%d %s %d %s %s", rec.Column(n-2).(*array.Int64).Value(i), rec.Column(n-3).(*array.String).Value(i),
						rec.Column(0).(*array.Int64).Value(i), rec.Column(1).(*array.String).Value(i), rec.Column(2).(*array.String).Value(i)))
				}
			}
			var want []string
			for _, id := range []int{3, 14} {
				want = append(want, fmt.Sprintf("%d update_preimage %d v%d n%d", upsert, id, id, id),
					fmt.Sprintf("%d update_postimage %d m%d n%d", upsert, id, id, id))
			}
			slices.Sort(feed)
			slices.Sort(want)
			if !slices.Equal(feed, want) {
				t.Fatalf("change feed of Lance's rewrite-columns upsert:\n got %q\nwant %q", feed, want)
			}
		})
	}
}

// idValN is rows id, val "v<id>" and n "n<id>".
func idValN(idList []int64) array.RecordReader {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "val", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, id := range idList {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("v%d", id))
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("n%d", id))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	return r
}
