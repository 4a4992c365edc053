package dataset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/dataset/scalarindex"
	"github.com/lancerdb/lancer/format"
)

// indexFile is one index file read whole: its schema metadata, columns
// and global buffers.
type indexFile struct {
	meta    map[string]string
	names   []string
	cols    []arrow.Array
	globals [][]byte
}

func (f *indexFile) col(name string) arrow.Array {
	return f.cols[slices.Index(f.names, name)]
}

func readIndexFile(t *testing.T, root, key string, mem memory.Allocator) *indexFile {
	t.Helper()
	ctx := context.Background()
	store, err := blob.NewLocalStore(root)
	if err != nil {
		t.Fatal(err)
	}
	r, err := format.Open(ctx, store, key, &format.OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	out := &indexFile{meta: r.Schema().Metadata}
	for _, f := range r.Schema().Fields {
		out.names = append(out.names, f.Name)
	}
	c, err := r.NewCursor(r.FileProjection(r.Schema().Fields))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if out.cols, err = c.ReadRange(ctx, 0, r.NumRows()); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	t.Cleanup(func() {
		for _, a := range out.cols {
			a.Release()
		}
	})
	raw, err := os.ReadFile(filepath.Join(root, key))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range r.GlobalBuffers()[1:] {
		out.globals = append(out.globals, raw[b.Offset:b.Offset+b.Size])
	}
	return out
}

// bitmapsByKey maps each key of a BITMAP file (its string form, "NULL" for
// the null key) to its decoded row set's values.
func bitmapsByKey(t *testing.T, f *indexFile) map[string][]uint64 {
	t.Helper()
	keys, bms := f.col("keys"), f.col("bitmaps").(*array.Binary)
	out := map[string][]uint64{}
	for i := range keys.Len() {
		k := "NULL"
		if keys.IsValid(i) {
			k = keys.ValueStr(i)
		}
		out[k] = rowSetValues(t, bms.Value(i))
	}
	return out
}

func rowSetValues(t *testing.T, b []byte) []uint64 {
	t.Helper()
	s, err := scalarindex.DecodeRowSet(b)
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, hi := range s.His() {
		bm, full := s.Part(hi)
		if full {
			t.Fatalf("a full fragment in a row set")
		}
		for _, lo := range bm.ToArray() {
			out = append(out, uint64(hi)<<32|uint64(lo))
		}
	}
	return out
}

// TestScalarIndexWriterMatchesLance rebuilds the indexed_v2_2 fixture's
// BTREE (id), BITMAP (category, with NULLs) and LABEL_LIST (tags, with NULL
// lists) indices over the fragment Lance indexed, with lancer's writer, and
// finds Lance's segments: the same files, schemas and schema metadata, the
// same pages, keys and row sets, the NULL lists, and the metadata Lance 12
// committed (details type URL, index version, files).
func TestScalarIndexWriterMatchesLance(t *testing.T) {
	root, _ := copyFixture(t, "indexed_v2_2")
	mem := checkedAlloc(t)
	d, err := openDir(context.Background(), root, &OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		index, column string
		kind          scalarindex.Kind
	}{
		{"id_idx", "id", scalarindex.BTree},
		{"category_idx", "category", scalarindex.Bitmap},
		{"tags_idx", "tags", scalarindex.LabelList},
	} {
		t.Run(tc.index, func(t *testing.T) {
			var lance *manifest.IndexMetadata
			for _, ix := range d.manifest.IndexSegments() {
				if ix.Name == tc.index {
					lance = ix
				}
			}
			field := d.manifest.Schema.Field(tc.column)
			seg, _, err := d.buildScalarSegment(context.Background(), field, tc.kind, tc.index, []uint64{0}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if seg.Details.TypeURL != lance.Details.TypeURL || len(lance.Details.Value) != 0 || *seg.IndexVersion != *lance.IndexVersion {
				t.Errorf("details %s v%d, Lance's %s (%d bytes) v%d", seg.Details.TypeURL, *seg.IndexVersion, lance.Details.TypeURL, len(lance.Details.Value), *lance.IndexVersion)
			}
			if !slices.Equal(seg.FragmentBitmap, lance.FragmentBitmap) && !equalBitmaps(t, seg.FragmentBitmap, lance.FragmentBitmap) {
				t.Errorf("fragment bitmap %x, Lance's %x", seg.FragmentBitmap, lance.FragmentBitmap)
			}
			names := func(fs []manifest.IndexFile) []string {
				var out []string
				for _, f := range fs {
					out = append(out, f.Path)
				}
				slices.Sort(out)
				return out
			}
			if len(lance.Files) > 0 && !slices.Equal(names(seg.Files), names(lance.Files)) {
				t.Errorf("files %v, Lance's %v", names(seg.Files), names(lance.Files))
			}
			t.Logf("Lance's files %v; lancer's %v", lance.Files, seg.Files)
			for _, f := range seg.Files {
				mine := readIndexFile(t, root, indicesDir+manifest.FormatUUID(seg.UUID)+"/"+f.Path, mem)
				theirs := readIndexFile(t, root, indicesDir+manifest.FormatUUID(lance.UUID)+"/"+f.Path, mem)
				if !slices.Equal(mine.names, theirs.names) {
					t.Errorf("%s: columns %v, Lance's %v", f.Path, mine.names, theirs.names)
					continue
				}
				for i := range mine.cols {
					if !arrow.TypeEqual(mine.cols[i].DataType(), theirs.cols[i].DataType()) {
						t.Errorf("%s: %s is %s, Lance's %s", f.Path, mine.names[i], mine.cols[i].DataType(), theirs.cols[i].DataType())
					}
				}
				mk, tk := slices.Sorted(maps.Keys(mine.meta)), slices.Sorted(maps.Keys(theirs.meta))
				if !slices.Equal(mk, tk) {
					t.Errorf("%s: schema metadata %v, Lance's %v", f.Path, mine.meta, theirs.meta)
				}
				for _, k := range []string{"batch_size", "lance:index_stats", "lance:label_list_nulls"} {
					if mine.meta[k] != theirs.meta[k] {
						t.Errorf("%s: metadata %s = %q, Lance's %q", f.Path, k, mine.meta[k], theirs.meta[k])
					}
				}
				switch f.Path {
				case scalarindex.BTreePagesFile, scalarindex.BTreeLookupFile:
					for i, name := range mine.names {
						if !array.Equal(mine.cols[i], theirs.cols[i]) {
							t.Errorf("%s: column %s differs:\n lancer %v\n Lance  %v", f.Path, name, mine.cols[i], theirs.cols[i])
						}
					}
				case scalarindex.BitmapFile:
					got, want := bitmapsByKey(t, mine), bitmapsByKey(t, theirs)
					if len(got) != len(want) {
						t.Errorf("%d keys, Lance's %d", len(got), len(want))
					}
					for k, ids := range want {
						if !slices.Equal(got[k], ids) {
							t.Errorf("key %s: rows %v, Lance's %v", k, got[k], ids)
						}
					}
					if len(mine.globals) != len(theirs.globals) {
						t.Errorf("%d global buffers, Lance's %d", len(mine.globals), len(theirs.globals))
					} else {
						for i := range mine.globals {
							if g, w := rowSetValues(t, mine.globals[i]), rowSetValues(t, theirs.globals[i]); !slices.Equal(g, w) {
								t.Errorf("global buffer %d: NULL lists %v, Lance's %v", i+1, g, w)
							}
						}
					}
				}
			}
		})
	}
}

func equalBitmaps(t *testing.T, a, b []byte) bool {
	x, err1 := manifest.DecodeRoaring(a)
	y, err2 := manifest.DecodeRoaring(b)
	return err1 == nil && err2 == nil && x.Equals(y)
}

// scalarTestSchema is the table of the randomized scalar index test.
var scalarTestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "cat", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "vec", Type: arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Float32), Nullable: true},
}, nil)

// scalarTestRows makes the rows with the given ids; their values depend on
// the id and gen only.
func scalarTestRows(mem memory.Allocator, ids []int64, gen int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, scalarTestSchema)
	defer b.Release()
	floats := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1.5, -2.25}
	for _, id := range ids {
		rng := rand.New(rand.NewPCG(uint64(id), uint64(gen)))
		maybe := func(f int, null bool, add func()) {
			if null {
				b.Field(f).AppendNull()
			} else {
				add()
			}
		}
		b.Field(0).(*array.Int64Builder).Append(id)
		maybe(1, rng.IntN(10) == 0, func() { b.Field(1).(*array.Int32Builder).Append(int32(rng.IntN(40) - 20)) })
		maybe(2, rng.IntN(9) == 0, func() {
			f := math.Round(rng.NormFloat64()*100) / 10
			if rng.IntN(4) == 0 {
				f = floats[rng.IntN(len(floats))]
			}
			b.Field(2).(*array.Float64Builder).Append(f)
		})
		maybe(3, rng.IntN(7) == 0, func() { b.Field(3).(*array.StringBuilder).Append(fmt.Sprintf("s%03d", rng.IntN(200))) })
		maybe(4, rng.IntN(8) == 0, func() { b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("c%d", rng.IntN(6))) })
		maybe(5, rng.IntN(11) == 0, func() { b.Field(5).(*array.Date32Builder).Append(arrow.Date32(19000 + rng.IntN(300))) })
		maybe(6, rng.IntN(12) == 0, func() {
			b.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + rng.Int64N(86_400_000_000*10)))
		})
		lb := b.Field(7).(*array.ListBuilder)
		maybe(7, rng.IntN(9) == 0, func() {
			lb.Append(true)
			vb := lb.ValueBuilder().(*array.StringBuilder)
			for range rng.IntN(4) {
				if rng.IntN(15) == 0 {
					vb.AppendNull()
				} else {
					vb.Append(fmt.Sprintf("t%d", rng.IntN(8)))
				}
			}
		})
		b.Field(8).(*array.Int64Builder).Append(id % 50)
		vb := b.Field(9).(*array.FixedSizeListBuilder)
		vb.Append(true)
		for range 4 {
			vb.ValueBuilder().(*array.Float32Builder).Append(float32(rng.NormFloat64()))
		}
	}
	return b.NewRecordBatch()
}

func scalarTestReader(mem memory.Allocator, ids []int64, gen int) array.RecordReader {
	rec := scalarTestRows(mem, ids, gen)
	defer rec.Release()
	r, _ := array.NewRecordReader(scalarTestSchema, []arrow.RecordBatch{rec})
	return r
}

func scalarIDRange(from, to int64) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// randomScalarPredicate makes a filter of one to three terms over the
// indexed columns and v (which no index covers), joined by AND or OR,
// sometimes negated.
func randomScalarPredicate(rng *rand.Rand, maxID int) string {
	term := func() string {
		op := []string{"=", "<", "<=", ">", ">="}[rng.IntN(5)]
		switch rng.IntN(11) {
		case 0:
			return fmt.Sprintf("id %s %d", op, rng.IntN(maxID+10))
		case 1:
			a := rng.IntN(maxID)
			return fmt.Sprintf("id BETWEEN %d AND %d", a, a+rng.IntN(200))
		case 2:
			if rng.IntN(4) == 0 {
				return "i32 IS NULL"
			}
			return fmt.Sprintf("i32 %s %d", op, rng.IntN(50)-25)
		case 3:
			if rng.IntN(5) == 0 {
				return "f64 IS NULL"
			}
			lits := []string{"0", "-0.0", "1.5", "-2.25", "CAST('NaN' AS DOUBLE)", "1e308", fmt.Sprintf("%.1f", rng.NormFloat64()*10)}
			return fmt.Sprintf("f64 %s %s", op, lits[rng.IntN(len(lits))])
		case 4:
			return fmt.Sprintf("s %s 's%03d'", op, rng.IntN(210))
		case 5:
			if rng.IntN(4) == 0 {
				return "cat IS NULL"
			}
			return fmt.Sprintf("cat %s 'c%d'", op, rng.IntN(7))
		case 6:
			return fmt.Sprintf("cat IN ('c%d', 'c%d')", rng.IntN(7), rng.IntN(7))
		case 7:
			day := time.Unix(int64(19000+rng.IntN(300))*86400, 0).UTC().Format("2006-01-02")
			return fmt.Sprintf("d %s DATE '%s'", op, day)
		case 8:
			at := time.UnixMicro(1_700_000_000_000_000 + rng.Int64N(86_400_000_000*10)).UTC().Format("2006-01-02 15:04:05.000000")
			return fmt.Sprintf("ts %s TIMESTAMP '%s'", op, at)
		case 9:
			fn := []string{"array_has_any", "array_has_all"}[rng.IntN(2)]
			var labels []string
			for range 1 + rng.IntN(3) {
				labels = append(labels, fmt.Sprintf("'t%d'", rng.IntN(9)))
			}
			return fmt.Sprintf("%s(tags, [%s])", fn, strings.Join(labels, ", "))
		}
		return fmt.Sprintf("v %s %d", op, rng.IntN(50))
	}
	terms := make([]string, 1+rng.IntN(3))
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
	return strings.Join(terms, join)
}

// sortedRows returns the rows of d the predicate keeps, in the fixture
// encoding, sorted.
func sortedRows(t *testing.T, d *Dataset, predicate string, noIndex bool) []string {
	t.Helper()
	rows, _, err := scanRows(t, d, &ScanOptions{Filter: predicate, NoScalarIndex: noIndex})
	if err != nil {
		t.Fatalf("%s: %v", predicate, err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = string(r)
	}
	sort.Strings(out)
	return out
}

// TestScalarIndexRandomized builds BTREE, BITMAP and LABEL_LIST indices
// with lancer's writer on a table of ints, floats (NaN, -0, ±Inf), strings,
// dates, timestamps, lists (NULL lists and items) and NULLs, with and
// without stable row ids, and runs a fixed-seed series of appends,
// deletes, updates (of indexed columns too), merge inserts, compactions
// and index optimizations on it and on a twin without indices. After each
// step random filters give the same rows through the indices as the
// twin's scans (and as the scan without indices), the same counts and
// the same prefiltered exact vector searches; every update, delete and
// merge leaves both tables equal.
func TestScalarIndexRandomized(t *testing.T) {
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable_row_ids=%v", stable), func(t *testing.T) { testScalarIndexRandomized(t, stable) })
	}
}

func testScalarIndexRandomized(t *testing.T, stable bool) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	co := CommitOptions{Allocator: mem}
	open := func() *Dataset {
		r := scalarTestReader(mem, scalarIDRange(0, 3000), 0)
		defer r.Release()
		d, err := Write(ctx, blob.NewMemStore("mem://scalar"), r, &WriteOptions{MaxRowsPerFile: 1200, EnableStableRowIDs: stable, CommitOptions: co})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d, twin := open(), open()
	var err error
	for _, ix := range []struct{ col, typ string }{
		{"id", IndexBTree}, {"i32", IndexBTree}, {"f64", IndexBTree}, {"s", "BTREE"}, {"d", IndexBTree}, {"ts", IndexBTree},
		{"cat", IndexBitmap}, {"tags", "LABEL_LIST"},
	} {
		if d, err = d.CreateIndex(ctx, ix.col, &CreateIndexOptions{Type: ix.typ, CommitOptions: co}); err != nil {
			t.Fatalf("index %s on %s: %v", ix.typ, ix.col, err)
		}
	}
	if got := len(d.Indices()); got != 8 {
		t.Fatalf("%d indices", got)
	}
	rng := rand.New(rand.NewPCG(18, uint64(len(fmt.Sprint(stable)))))
	nextID := int64(3000)
	used := map[string]int{}
	check := func(step string) {
		t.Helper()
		if g, w := sortedRows(t, d, "", false), sortedRows(t, twin, "", false); !slices.Equal(g, w) {
			for i := range min(len(g), len(w)) {
				if g[i] != w[i] {
					t.Fatalf("%s: the tables differ: %d rows, the twin %d; row %d:\n %s\n %s", step, len(g), len(w), i, g[i], w[i])
				}
			}
			t.Fatalf("%s: the tables differ: %d rows, the twin %d", step, len(g), len(w))
		}
		for range 25 {
			pred := randomScalarPredicate(rng, int(nextID))
			got, uses := scanIDs(t, d, pred, ScanOptions{BatchSize: 1 + rng.IntN(3000)})
			want, _ := scanIDs(t, twin, pred, ScanOptions{})
			plain, _ := scanIDs(t, d, pred, ScanOptions{NoScalarIndex: true})
			// Compaction lays the twins out alike only while no index
			// tells fragments apart: their scan orders may differ.
			if !slices.Equal(got, plain) || !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
				t.Errorf("%s: %s: with indices %d rows, twin %d, without %d (indices %v)", step, pred, len(got), len(want), len(plain), uses)
			}
			for _, u := range uses {
				used[u.Type]++
			}
			if n, err := d.Count(ctx, pred); err != nil || n != uint64(len(want)) {
				t.Errorf("%s: %s: Count %d, %v; want %d", step, pred, n, err, len(want))
			}
			q := []float32{float32(rng.NormFloat64()), float32(rng.NormFloat64()), float32(rng.NormFloat64()), float32(rng.NormFloat64())}
			o := &SearchOptions{K: 7, Filter: pred, Exact: true, WithRowID: true, Columns: []string{"id"}}
			g, err1 := d.Search(ctx, "vec", q, o)
			w, err2 := twin.Search(ctx, "vec", q, o)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: search %s: %v, %v", step, pred, err1, err2)
			}
			gi, wi := g.Column(0).(*array.Int64).Int64Values(), w.Column(0).(*array.Int64).Int64Values()
			if !slices.Equal(gi, wi) {
				t.Errorf("%s: search filtered by %s: %v, twin %v", step, pred, gi, wi)
			}
			g.Release()
			w.Release()
		}
	}
	both := func(step string, f func(*Dataset) (*Dataset, error)) {
		t.Helper()
		var err1, err2 error
		d, err1 = f(d)
		twin, err2 = f(twin)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v; twin: %v", step, err1, err2)
		}
	}
	check("built")
	for step := range 14 {
		name := fmt.Sprint(step)
		switch step % 7 {
		case 0:
			n := 200 + rng.IntN(600)
			ids := scalarIDRange(nextID, nextID+int64(n))
			nextID += int64(n)
			name += ": append"
			both(name, func(x *Dataset) (*Dataset, error) {
				r := scalarTestReader(mem, ids, 0)
				defer r.Release()
				return x.Append(ctx, r, &AppendOptions{CommitOptions: co})
			})
		case 1:
			pred := randomScalarPredicate(rng, int(nextID))
			name += ": delete " + pred
			both(name, func(x *Dataset) (*Dataset, error) { return x.Delete(ctx, pred, &co) })
		case 2, 5:
			pred := randomScalarPredicate(rng, int(nextID))
			set := map[string]string{"v": "v + 1"}
			if step%7 == 5 {
				set = map[string]string{"cat": "'c9'", "i32": "i32 + 100", "s": "s || 'x'"}
			}
			name += fmt.Sprintf(": update %v where %s", set, pred)
			var n1, n2 uint64
			var err1, err2 error
			var s UpdateStats
			d, s, err1 = d.Update(ctx, set, pred, &co)
			n1 = s.RowsUpdated
			twin, s, err2 = twin.Update(ctx, set, pred, &co)
			n2 = s.RowsUpdated
			if err1 != nil || err2 != nil || n1 != n2 {
				t.Fatalf("%s: %d rows, %v; twin %d, %v", name, n1, err1, n2, err2)
			}
		case 3:
			// Merge on id: some rows replaced (new values), some inserted.
			var ids []int64
			for range 50 + rng.IntN(200) {
				ids = append(ids, rng.Int64N(nextID+100))
			}
			slices.Sort(ids)
			ids = slices.Compact(ids)
			gen := 1 + step
			name += fmt.Sprintf(": merge %d keys", len(ids))
			var s1, s2 MergeInsertStats
			var err1, err2 error
			mi := func(x *Dataset) (*Dataset, MergeInsertStats, error) {
				r := scalarTestReader(mem, ids, gen)
				defer r.Release()
				return x.MergeInsert(ctx, r, &MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true, CommitOptions: co})
			}
			d, s1, err1 = mi(d)
			twin, s2, err2 = mi(twin)
			if err1 != nil || err2 != nil || s1.RowsInserted != s2.RowsInserted || s1.RowsUpdated != s2.RowsUpdated || s1.RowsDeleted != s2.RowsDeleted {
				t.Fatalf("%s: %+v, %v; twin %+v, %v", name, s1, err1, s2, err2)
			}
			if s1.KeyIndex != "id_idx" || s2.KeyIndex != "" {
				t.Errorf("%s: key lookup through %q (twin %q), want id_idx", name, s1.KeyIndex, s2.KeyIndex)
			}
			for _, id := range ids {
				nextID = max(nextID, id+1)
			}
		case 4:
			name += ": compact"
			both(name, func(x *Dataset) (*Dataset, error) {
				out, _, err := x.Compact(ctx, &CompactOptions{TargetRowsPerFragment: 2500, CommitOptions: co})
				return out, err
			})
		case 6:
			name += ": optimize indices"
			if d, err = d.OptimizeIndexes(ctx, &OptimizeIndexesOptions{CommitOptions: co}); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, ix := range d.Indices() {
				if len(ix.Fragments) != len(d.Manifest().Fragments) {
					t.Errorf("%s: index %s covers fragments %v of %d", name, ix.Name, ix.Fragments, len(d.Manifest().Fragments))
				}
			}
		}
		check(name)
	}
	t.Logf("index uses by type: %v", used)
	for _, typ := range []string{"BTREE", "BITMAP", "LABEL_LIST"} {
		if used[typ] < 15 {
			t.Errorf("%s served %d terms, want at least 15", typ, used[typ])
		}
	}
}

// TestCreateScalarIndexErrors: the columns and options a scalar index
// refuses, and the replacing of an index of the same name.
func TestCreateScalarIndexErrors(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	co := CommitOptions{Allocator: mem}
	r := scalarTestReader(mem, scalarIDRange(0, 100), 0)
	d, err := Write(ctx, blob.NewMemStore("mem://scalar"), r, &WriteOptions{CommitOptions: co})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		col, typ string
		want     error
	}{
		{"nope", IndexBTree, lancer.ErrNotFound},
		{"vec", IndexBTree, lancer.ErrInvalidArgument},
		{"tags", IndexBitmap, lancer.ErrInvalidArgument},
		{"id", IndexLabelList, lancer.ErrInvalidArgument},
		{"id", "hash", lancer.ErrInvalidArgument},
	} {
		if _, err := d.CreateIndex(ctx, tc.col, &CreateIndexOptions{Type: tc.typ, CommitOptions: co}); !errors.Is(err, tc.want) {
			t.Errorf("%s on %s: %v, want %v", tc.typ, tc.col, err, tc.want)
		}
	}
	if d, err = d.CreateIndex(ctx, "id", &CreateIndexOptions{Type: IndexBTree, CommitOptions: co}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateIndex(ctx, "id", &CreateIndexOptions{Type: IndexBitmap, CommitOptions: co}); !errors.Is(err, lancer.ErrAlreadyExists) {
		t.Errorf("a second id_idx: %v", err)
	}
	if d, err = d.CreateIndex(ctx, "id", &CreateIndexOptions{Type: IndexBitmap, Replace: true, CommitOptions: co}); err != nil {
		t.Fatal(err)
	}
	if ix := d.Indices(); len(ix) != 1 || ix[0].Type != "Bitmap" || ix[0].IndexVersion != 0 {
		t.Errorf("after replacing: %+v", ix)
	}
	if d, err = d.DropIndex(ctx, "id_idx", &co); err != nil || len(d.Indices()) != 0 {
		t.Errorf("drop: %v, %d indices", err, len(d.Indices()))
	}
}

// TestScalarIndexBytesReadWrites: a merge insert of a few keys and an
// update of a few rows, on a 200,000-row table whose key has a BTREE,
// read a small share (under 1/8) of the bytes the same writes read on a
// twin without the index (the whole table, payload included), and leave
// both tables equal. Counted with blob.CountingStore.
func TestScalarIndexBytesReadWrites(t *testing.T) {
	ctx := context.Background()
	const n = 200_000
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "payload", Type: arrow.BinaryTypes.Binary},
		{Name: "v", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	rows := func(keys []int64, v int64) array.RecordReader {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		payload := make([]byte, 64)
		for _, k := range keys {
			rng := rand.New(rand.NewPCG(uint64(k), 1))
			for j := range payload {
				payload[j] = byte(rng.Uint32())
			}
			b.Field(0).(*array.Int64Builder).Append(k)
			b.Field(1).(*array.BinaryBuilder).Append(payload)
			b.Field(2).(*array.Int64Builder).Append(v)
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		r, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
		return r
	}
	keys := make([]int64, n)
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range keys {
		keys[i] = rng.Int64()
	}
	var stores [2]*blob.CountingStore
	var ds [2]*Dataset
	for i := range ds {
		stores[i] = blob.NewCountingStore(blob.NewMemStore(fmt.Sprintf("mem://bytes%d", i)))
		r := rows(keys, 0)
		d, err := Write(ctx, stores[i], r, &WriteOptions{MaxRowsPerFile: 50_000})
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if d, err = d.CreateIndex(ctx, "k", &CreateIndexOptions{Type: IndexBTree}); err != nil {
				t.Fatal(err)
			}
		}
		ds[i] = d
	}
	measure := func(what string, f func(i int, d *Dataset) (*Dataset, error)) {
		t.Helper()
		var read [2]int64
		for i := range ds {
			before := stores[i].Snapshot()
			d, err := f(i, ds[i])
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			ds[i] = d
			read[i] = stores[i].Snapshot().Sub(before).BytesRead()
		}
		t.Logf("%s: %d bytes read through the index, %d without", what, read[0], read[1])
		// Without the index the whole table is read (64 bytes of payload
		// a row); with it the index's lookup and pages, and the pages of
		// the data files holding the rows found.
		if read[1] < 64*n || read[0]*8 > read[1] {
			t.Errorf("%s: %d bytes read through the index, not under 1/8 of the %d without", what, read[0], read[1])
		}
		if g, w := sortedRows(t, ds[0], "", false), sortedRows(t, ds[1], "", false); !slices.Equal(g, w) {
			t.Errorf("%s: the tables differ", what)
		}
	}
	src := []int64{keys[5], keys[77_777], keys[n-1], -1, -2}
	measure("merge insert of 5 keys", func(i int, d *Dataset) (*Dataset, error) {
		r := rows(src, 1)
		defer r.Release()
		out, s, err := d.MergeInsert(ctx, r, &MergeInsertOptions{On: []string{"k"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true})
		if err == nil && (s.RowsUpdated != 3 || s.RowsInserted != 2 || (i == 0) != (s.KeyIndex == "k_idx")) {
			err = fmt.Errorf("stats %+v", s)
		}
		return out, err
	})
	measure("update of 2 rows", func(i int, d *Dataset) (*Dataset, error) {
		out, s, err := d.Update(ctx, map[string]string{"v": "v + 10"}, fmt.Sprintf("k IN (%d, %d)", keys[1000], keys[150_000]), nil)
		if err == nil && s.RowsUpdated != 2 {
			err = fmt.Errorf("stats %+v", s)
		}
		return out, err
	})
}
