package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/lancereftest"
)

// scalarIndexRequest asks lance-ops.mjs to build an index or run a query.
type scalarIndexRequest struct {
	URI    string `json:"uri"`
	Op     string `json:"op"`
	Column string `json:"column,omitempty"`
	Type   string `json:"type,omitempty"`
	Name   string `json:"name,omitempty"`
	Filter string `json:"filter,omitempty"`
}

var scalarSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "cat", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// scalarBatch makes rows [from, to) of the test table; the values depend
// on the row only, so appends and rewrites agree.
func scalarBatch(mem memory.Allocator, from, to int) array.RecordReader {
	b := array.NewRecordBuilder(mem, scalarSchema)
	defer b.Release()
	floats := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1.5, -2.25, 1e300}
	for i := from; i < to; i++ {
		rng := rand.New(rand.NewPCG(uint64(i), 99))
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		appendOrNull := func(f int, null bool, add func()) {
			if null {
				b.Field(f).AppendNull()
			} else {
				add()
			}
		}
		appendOrNull(1, i%11 == 0, func() { b.Field(1).(*array.Int32Builder).Append(int32(rng.IntN(50) - 25)) })
		appendOrNull(2, i%9 == 0, func() {
			f := rng.NormFloat64() * 10
			if i%5 == 0 {
				f = floats[rng.IntN(len(floats))]
			}
			b.Field(2).(*array.Float64Builder).Append(f)
		})
		appendOrNull(3, i%7 == 0, func() { b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("s%03d", rng.IntN(300))) })
		appendOrNull(4, i%13 == 0, func() { b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("c%d", rng.IntN(8))) })
		appendOrNull(5, i%19 == 0, func() { b.Field(5).(*array.Uint8Builder).Append(uint8(rng.IntN(6) * 50)) })
		appendOrNull(6, i%23 == 0, func() { b.Field(6).(*array.Date32Builder).Append(arrow.Date32(18000 + rng.IntN(1000))) })
		appendOrNull(7, i%29 == 0, func() {
			b.Field(7).(*array.TimestampBuilder).Append(arrow.Timestamp(1_600_000_000_000_000 + rng.Int64N(86_400_000_000*30)))
		})
		lb := b.Field(8).(*array.ListBuilder)
		appendOrNull(8, i%17 == 0, func() {
			lb.Append(true)
			vb := lb.ValueBuilder().(*array.StringBuilder)
			for range rng.IntN(4) {
				vb.Append(fmt.Sprintf("t%d", rng.IntN(10)))
			}
		})
		b.Field(9).(*array.Int64Builder).Append(int64(i % 100))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r, _ := array.NewRecordReader(scalarSchema, []arrow.RecordBatch{rec})
	return r
}

// randomPredicate makes a filter of one to three terms over the indexed
// columns (and v, which no index covers), joined by AND or OR, sometimes
// negated; lanceSafe reports whether it avoids floats, whose index order
// (-0 before 0) Lance's queries are not compared on.
func randomPredicate(rng *rand.Rand) (pred string, lanceSafe bool) {
	lanceSafe = true
	term := func() string {
		ops := []string{"=", "<", "<=", ">", ">="}
		op := ops[rng.IntN(len(ops))]
		switch rng.IntN(12) {
		case 0:
			return fmt.Sprintf("id %s %d", op, rng.IntN(14000))
		case 1:
			return fmt.Sprintf("id BETWEEN %d AND %d", rng.IntN(13000), rng.IntN(14000))
		case 2:
			if rng.IntN(4) == 0 {
				return "i32 IS NULL"
			}
			return fmt.Sprintf("i32 %s %d", op, rng.IntN(60)-30)
		case 3:
			lanceSafe = false
			if rng.IntN(5) == 0 {
				return "f64 IS NULL"
			}
			lits := []string{"0", "0.0", "-0.0", "1.5", "-2.25", "1e300", "1e308", "-1e308", fmt.Sprintf("%.2f", rng.NormFloat64()*10)}
			return fmt.Sprintf("f64 %s %s", op, lits[rng.IntN(len(lits))])
		case 4:
			return fmt.Sprintf("s %s 's%03d'", op, rng.IntN(320))
		case 5:
			if rng.IntN(4) == 0 {
				return "cat IS NULL"
			}
			return fmt.Sprintf("cat %s 'c%d'", op, rng.IntN(9))
		case 6:
			return fmt.Sprintf("cat IN ('c%d', 'c%d', NULL)", rng.IntN(9), rng.IntN(9))
		case 7:
			return fmt.Sprintf("u8 %s %d", op, rng.IntN(6)*50+rng.IntN(2))
		case 8:
			day := time.Unix(int64(18000+rng.IntN(1000))*86400, 0).UTC().Format("2006-01-02")
			return fmt.Sprintf("d %s DATE '%s'", op, day)
		case 9:
			at := time.UnixMicro(1_600_000_000_000_000 + rng.Int64N(86_400_000_000*30)).UTC().Format("2006-01-02 15:04:05.000000")
			return fmt.Sprintf("ts %s TIMESTAMP '%s'", op, at)
		case 10:
			fn := []string{"array_has_any", "array_has_all"}[rng.IntN(2)]
			n := 1 + rng.IntN(3)
			var labels []string
			for range n {
				labels = append(labels, fmt.Sprintf("'t%d'", rng.IntN(11)))
			}
			return fmt.Sprintf("%s(tags, [%s])", fn, strings.Join(labels, ", "))
		}
		return fmt.Sprintf("v %s %d", op, rng.IntN(100))
	}
	n := 1 + rng.IntN(3)
	terms := make([]string, n)
	for i := range terms {
		terms[i] = term()
		if rng.IntN(10) == 0 {
			terms[i] = "NOT (" + terms[i] + ")"
		}
	}
	join := " AND "
	if rng.IntN(3) == 0 {
		join = " OR "
	}
	return strings.Join(terms, join), lanceSafe
}

// TestScalarIndexInterop: real Lance builds BTREE, BITMAP and LABEL_LIST
// indices on a table lancer wrote (ints, floats with NaN and -0, strings,
// dates, timestamps, lists, nulls everywhere; several BTREE pages); lancer
// then appends an unindexed fragment, deletes rows, and (with stable row
// ids) moves rows by an update the indices keep covering. For many random
// predicates (fixed seed) lancer's index-served scans and counts return
// exactly its scans without indices, the indices are used, and for those
// without floats the ids real Lance's index-backed queries return.
func TestScalarIndexInterop(t *testing.T) {
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable_row_ids=%v", stable), func(t *testing.T) { testScalarIndexInterop(t, stable) })
	}
}

func testScalarIndexInterop(t *testing.T, stable bool) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	uri := filepath.Join(t.TempDir(), "s.lance")
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r := scalarBatch(mem, 0, 12000)
	d, err := dataset.Write(ctx, store, r, &dataset.WriteOptions{MaxRowsPerFile: 6000, EnableStableRowIDs: stable, CommitOptions: dataset.CommitOptions{Allocator: mem}})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	ask := func(reqs ...scalarIndexRequest) []reply {
		t.Helper()
		replies, err := lancereftest.Ask[scalarIndexRequest, reply](script(node, ref), "lance-ops.mjs", reqs)
		if err != nil {
			t.Fatal(err)
		}
		return replies
	}
	var reqs []scalarIndexRequest
	for _, ix := range []struct{ col, typ string }{
		{"id", "btree"}, {"i32", "btree"}, {"f64", "btree"}, {"s", "btree"}, {"d", "btree"}, {"ts", "btree"},
		{"cat", "bitmap"}, {"u8", "bitmap"}, {"tags", "labelList"},
	} {
		reqs = append(reqs, scalarIndexRequest{URI: uri, Op: "createIndex", Column: ix.col, Type: ix.typ, Name: ix.col + "_idx"})
	}
	for i, rep := range ask(reqs...) {
		if rep.Error != "" {
			t.Fatalf("real Lance builds %s on %s: %s", reqs[i].Type, reqs[i].Column, rep.Error)
		}
	}
	if d, err = openDir(ctx, uri, &dataset.OpenOptions{Allocator: mem}); err != nil {
		t.Fatal(err)
	}
	r = scalarBatch(mem, 12000, 13500)
	d, err = d.Append(ctx, r, nil)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	if d, err = d.Delete(ctx, "id % 37 = 3 OR (id >= 100 AND id < 160)", nil); err != nil {
		t.Fatal(err)
	}
	// A delete whose predicate the indices answer deletes exactly the rows
	// a scan without them finds.
	const del = "cat = 'c3' AND id < 3000"
	gone, _ := scalarScan(t, d, del, dataset.ScanOptions{NoScalarIndex: true})
	before, _ := d.CountRows(ctx)
	if d, err = d.Delete(ctx, del, nil); err != nil {
		t.Fatal(err)
	}
	after, _ := d.CountRows(ctx)
	if left, _ := scalarScan(t, d, del, dataset.ScanOptions{NoScalarIndex: true}); len(gone) == 0 || before-after != uint64(len(gone)) || len(left) != 0 {
		t.Errorf("delete %s: %d rows to delete, %d deleted, %d left", del, len(gone), before-after, len(left))
	}
	if stable {
		if d, _, err = d.Update(ctx, map[string]string{"v": "v + 1000"}, "id % 41 = 5 AND id < 12000", nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, ix := range d.Indices() {
		t.Logf("index %s (%s) covers fragments %v", ix.Name, ix.Type, ix.Fragments)
	}

	rng := rand.New(rand.NewPCG(2026, 12))
	type lanceCheck struct {
		pred string
		ids  []int64
	}
	var toLance []lanceCheck
	used := map[string]int{}
	for i := range 400 {
		pred, safe := randomPredicate(rng)
		got, uses := scalarScan(t, d, pred, dataset.ScanOptions{BatchSize: 1 + rng.IntN(5000)})
		want, _ := scalarScan(t, d, pred, dataset.ScanOptions{NoScalarIndex: true})
		if !slices.Equal(got, want) {
			t.Errorf("%s: with indices %d rows, without %d (indices %v)\n with:    %v\n without: %v", pred, len(got), len(want), uses, head(got), head(want))
		}
		for _, u := range uses {
			used[u.Type]++
		}
		if i%10 == 0 {
			if n, err := d.Count(ctx, pred); err != nil || n != uint64(len(want)) {
				t.Errorf("%s: Count %d, %v; scan %d", pred, n, err, len(want))
			}
		}
		if safe && len(toLance) < 60 {
			toLance = append(toLance, lanceCheck{pred, want})
		}
	}
	t.Logf("index uses by type: %v; %d predicates checked against real Lance", used, len(toLance))
	for _, typ := range []string{"BTREE", "BITMAP", "LABEL_LIST"} {
		if used[typ] < 20 {
			t.Errorf("%s served %d terms, want at least 20", typ, used[typ])
		}
	}
	reqs = reqs[:0]
	for _, c := range toLance {
		reqs = append(reqs, scalarIndexRequest{URI: uri, Op: "query", Filter: c.pred})
	}
	for i, rep := range ask(reqs...) {
		if rep.Error != "" {
			t.Errorf("%s: real Lance: %s", toLance[i].pred, rep.Error)
			continue
		}
		var ids []int64
		for _, raw := range rep.Rows {
			var row struct {
				ID int64 `json:"id"`
			}
			if err := json.Unmarshal(raw, &row); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, row.ID)
		}
		slices.Sort(ids)
		want := slices.Sorted(slices.Values(toLance[i].ids))
		if !slices.Equal(ids, want) {
			t.Errorf("%s: real Lance %d rows, lancer %d\n Lance:  %v\n lancer: %v", toLance[i].pred, len(ids), len(want), head(ids), head(want))
		}
	}
}

// scalarScan returns the ids a filtered scan finds, in scan order, and the
// indices it used.
func scalarScan(t *testing.T, d *dataset.Dataset, pred string, o dataset.ScanOptions) ([]int64, []dataset.FilterIndex) {
	t.Helper()
	o.Columns, o.Filter = []string{"id"}, pred
	s, err := d.Scan(&o)
	if err != nil {
		t.Fatalf("%s: %v", pred, err)
	}
	var ids []int64
	for rec, err := range s.Batches(context.Background()) {
		if err != nil {
			t.Fatalf("%s: %v", pred, err)
		}
		ids = append(ids, rec.Column(0).(*array.Int64).Int64Values()...)
	}
	return ids, s.FilterIndices()
}

func head(ids []int64) []int64 {
	if len(ids) > 30 {
		return ids[:30]
	}
	return ids
}

// TestScalarIndexBytesRead: a selective filter on a column real Lance
// indexed (BTREE and BITMAP) reads the index's lookup, one page of it and
// the matching rows: a small share of what the same scan reads without
// the index (the whole column). Counted with blob.CountingStore.
func TestScalarIndexBytesRead(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	const n = 400_000
	uri := filepath.Join(t.TempDir(), "b.lance")
	local, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "c", Type: arrow.BinaryTypes.String},
		{Name: "payload", Type: arrow.BinaryTypes.Binary},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	rng := rand.New(rand.NewPCG(5, 6))
	keys := make([]int64, n)
	payload := make([]byte, 64)
	for i := range n {
		keys[i] = rng.Int64()
		b.Field(0).(*array.Int64Builder).Append(keys[i])
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("c%04d", rng.IntN(5000)))
		for j := range payload {
			payload[j] = byte(rng.Uint32())
		}
		b.Field(2).(*array.BinaryBuilder).Append(payload)
	}
	rec := b.NewRecordBatch()
	b.Release()
	r, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	rec.Release()
	if _, err := dataset.Write(ctx, local, r, nil); err != nil {
		t.Fatal(err)
	}
	r.Release()
	replies, err := lancereftest.Ask[scalarIndexRequest, reply](script(node, ref), "lance-ops.mjs", []scalarIndexRequest{
		{URI: uri, Op: "createIndex", Column: "k", Type: "btree"},
		{URI: uri, Op: "createIndex", Column: "c", Type: "bitmap"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, rep := range replies {
		if rep.Error != "" {
			t.Fatalf("real Lance: %s", rep.Error)
		}
	}
	// share is the most of the unindexed scan's bytes the indexed one may
	// read: the index's lookup and one page of it, the files' footers, and
	// for each matching row the chunk of each column holding it.
	cases := []struct {
		filter string
		want   int
		share  int64
	}{
		{fmt.Sprintf("k = %d", keys[123_456]), 1, 10},
		{fmt.Sprintf("k IN (%d, %d)", keys[7], keys[n-1]), 2, 10},
		{fmt.Sprintf("k >= %d AND k <= %d", keys[99]-1_000_000_000_000, keys[99]+1_000_000_000_000), -1, 10},
		{"c = 'c0042'", -1, 5},
	}
	for _, tc := range cases {
		measure := func(noIndex bool) (int, blob.Counts) {
			counting := blob.NewCountingStore(local)
			d, err := dataset.Open(ctx, counting, nil)
			if err != nil {
				t.Fatal(err)
			}
			before := counting.Snapshot()
			s, err := d.Scan(&dataset.ScanOptions{Columns: []string{"k"}, Filter: tc.filter, NoScalarIndex: noIndex})
			if err != nil {
				t.Fatal(err)
			}
			rows := 0
			for rec, err := range s.Batches(ctx) {
				if err != nil {
					t.Fatal(err)
				}
				rows += int(rec.NumRows())
			}
			if !noIndex && len(s.FilterIndices()) == 0 {
				t.Errorf("%s: no index used", tc.filter)
			}
			return rows, counting.Snapshot().Sub(before)
		}
		rows, indexed := measure(false)
		plainRows, plain := measure(true)
		if rows != plainRows || tc.want >= 0 && rows != tc.want {
			t.Errorf("%s: %d rows with the index, %d without, want %d", tc.filter, rows, plainRows, tc.want)
		}
		t.Logf("%s: %d rows; with the index %s; without %s", tc.filter, rows, indexed, plain)
		// The scan without the index reads at least the whole column k
		// (8 bytes a key, incompressible); with it, a small share.
		if plain.BytesRead() < 8*n*9/10 {
			t.Errorf("%s: the scan without index read %d bytes, less than the column's %d", tc.filter, plain.BytesRead(), 8*n)
		}
		if indexed.BytesRead()*tc.share > plain.BytesRead() {
			t.Errorf("%s: with the index %d bytes read, not under 1/%d of the %d without", tc.filter, indexed.BytesRead(), tc.share, plain.BytesRead())
		}
	}
}
