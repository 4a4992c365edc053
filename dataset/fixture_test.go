package dataset

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// openFixture opens a fixture dataset at version (0 = latest) with a checked
// allocator that must be empty when the test ends.
func openFixture(t *testing.T, path string, version uint64) (*Dataset, *memory.CheckedAllocator) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	d, err := openDir(context.Background(), path, &OpenOptions{Version: version, Allocator: mem})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return d, mem
}

// scanRows scans d with opts and returns every row in the fixture encoding.
func scanRows(t *testing.T, d *Dataset, opts *ScanOptions) ([][]byte, *arrow.Schema, error) {
	t.Helper()
	s, err := d.Scan(opts)
	if err != nil {
		return nil, nil, err
	}
	var rows [][]byte
	for rec, err := range s.Batches(context.Background()) {
		if err != nil {
			return nil, s.Schema(), err
		}
		if !s.Schema().Equal(rec.Schema()) {
			t.Errorf("batch schema %s differs from scanner schema %s", rec.Schema(), s.Schema())
		}
		rows = append(rows, fixturetest.EncodeRows(t, rec)...)
	}
	return rows, s.Schema(), nil
}

// takeRows encodes a take result.
func takeRows(t *testing.T, rec arrow.RecordBatch, err error) [][]byte {
	t.Helper()
	if err != nil {
		t.Fatalf("take: %v", err)
	}
	defer rec.Release()
	return fixturetest.EncodeRows(t, rec)
}

// TestFixtures checks every fixture against what real Lance read back.
func TestFixtures(t *testing.T) {
	fixturetest.Each(t, func(t *testing.T, fx fixturetest.Fixture, exp *fixturetest.Expected) {
		t.Run("metadata", func(t *testing.T) { checkMetadata(t, fx, exp) })
		t.Run("schema", func(t *testing.T) { checkSchema(t, fx, exp) })
		t.Run("versions", func(t *testing.T) { checkVersions(t, fx, exp) })
		t.Run("rows", func(t *testing.T) { checkRows(t, fx, exp) })
		t.Run("time_travel", func(t *testing.T) { checkTimeTravel(t, fx, exp) })
		t.Run("takes", func(t *testing.T) { checkTakes(t, fx, exp) })
		t.Run("offset_limit", func(t *testing.T) { checkOffsetLimit(t, fx, exp) })
		if exp.Kind == "indexed" {
			t.Run("indices", func(t *testing.T) { checkIndices(t, fx, exp) })
		}
	})
}

func checkMetadata(t *testing.T, fx fixturetest.Fixture, exp *fixturetest.Expected) {
	d, _ := openFixture(t, fx.DatasetPath, 0)
	if d.Version() != exp.CurrentVersion {
		t.Errorf("Version() = %d, want %d", d.Version(), exp.CurrentVersion)
	}
	n, err := d.CountRows(context.Background())
	if err != nil || int64(n) != exp.NumRows {
		t.Errorf("CountRows() = %d, %v; want %d", n, err, exp.NumRows)
	}
	if got, want := d.Manifest().DataFormat.String(), exp.StorageVersion; got != want {
		t.Errorf("DataFormat = %s, want %s", got, want)
	}
	latest, err := LatestVersion(context.Background(), d.Store())
	if err != nil || latest != exp.CurrentVersion {
		t.Errorf("LatestVersion = %d, %v; want %d", latest, err, exp.CurrentVersion)
	}
	for _, tt := range exp.TimeTravel {
		old, err := d.Checkout(context.Background(), tt.Version)
		if err != nil {
			t.Errorf("Checkout(%d): %v", tt.Version, err)
			continue
		}
		n, err := old.CountRows(context.Background())
		if err != nil || int64(n) != tt.NumRows {
			t.Errorf("version %d: CountRows() = %d, %v; want %d", tt.Version, n, err, tt.NumRows)
		}
		var names []string
		for _, f := range old.Schema().Fields {
			names = append(names, f.Name)
		}
		if !reflect.DeepEqual(names, tt.SchemaFields) {
			t.Errorf("version %d: columns %v, want %v", tt.Version, names, tt.SchemaFields)
		}
	}
}

func checkSchema(t *testing.T, fx fixturetest.Fixture, exp *fixturetest.Expected) {
	d, _ := openFixture(t, fx.DatasetPath, 0)
	compareSchema(t, "schema", d.Schema().LogicalArrow(), exp.Schema)
	s, err := d.Scan(&ScanOptions{WithRowID: true})
	if err != nil {
		t.Fatal(err)
	}
	compareSchema(t, "scan schema", s.Schema(), exp.ScanSchemaWithRowID)
}

func checkVersions(t *testing.T, fx fixturetest.Fixture, exp *fixturetest.Expected) {
	d, _ := openFixture(t, fx.DatasetPath, 0)
	got, err := d.Versions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(exp.Versions) {
		t.Fatalf("%d versions, want %d", len(got), len(exp.Versions))
	}
	ops := map[uint64]string{1: "Overwrite"}
	for _, op := range exp.Ops {
		ops[op.Version] = map[string]string{
			"create": "Overwrite", "append": "Append", "delete": "Delete", "update": "Update",
			"add_columns": "Merge", "alter_columns": "Project", "overwrite": "Overwrite",
			"create_index": "CreateIndex",
		}[op.Op]
	}
	for i, want := range exp.Versions {
		g := got[i]
		if g.Version != want.Version || g.Timestamp.UnixMilli() != want.TimestampMs {
			t.Errorf("version #%d = %d at %d ms, want %d at %d ms", i, g.Version, g.Timestamp.UnixMilli(), want.Version, want.TimestampMs)
		}
		if !reflect.DeepEqual(g.Metadata, want.Metadata) {
			t.Errorf("version %d metadata\n got %v\nwant %v", want.Version, g.Metadata, want.Metadata)
		}
		if op, ok := ops[want.Version]; ok && g.Operation != op {
			t.Errorf("version %d operation %q, want %q", want.Version, g.Operation, op)
		}
		if g.Operation == "" {
			t.Errorf("version %d: no operation", want.Version)
		}
	}
	listed, err := ListVersions(context.Background(), d.Store())
	if err != nil || len(listed) != len(exp.Versions) {
		t.Fatalf("ListVersions = %v, %v", listed, err)
	}
	for i, v := range listed {
		if v != exp.Versions[i].Version {
			t.Errorf("ListVersions[%d] = %d, want %d", i, v, exp.Versions[i].Version)
		}
	}
}

func checkRows(t *testing.T, fx fixturetest.Fixture, exp *fixturetest.Expected) {
	d, _ := openFixture(t, fx.DatasetPath, 0)
	rows, _, err := scanRows(t, d, &ScanOptions{WithRowID: true})
	if err != nil {
		t.Fatal(err)
	}
	fixturetest.CompareRows(t, fx.Name+" rows", rows, exp.Rows, fixturetest.CompareOptions{})
}

func checkTimeTravel(t *testing.T, fx fixturetest.Fixture, exp *fixturetest.Expected) {
	for _, tt := range exp.TimeTravel {
		if tt.Rows == nil {
			continue
		}
		t.Run(fmt.Sprint("v", tt.Version), func(t *testing.T) {
			d, _ := openFixture(t, fx.DatasetPath, 0)
			old, err := d.Checkout(context.Background(), tt.Version)
			if err != nil {
				t.Fatal(err)
			}
			rows, _, err := scanRows(t, old, &ScanOptions{WithRowID: true, BatchSize: 7})
			if err != nil {
				t.Fatal(err)
			}
			fixturetest.CompareRows(t, fmt.Sprintf("%s version %d", fx.Name, tt.Version), rows, tt.Rows, fixturetest.CompareOptions{})
		})
	}
}

// rowID extracts the _rowid of an expected row.
func rowID(t *testing.T, row json.RawMessage) uint64 {
	t.Helper()
	var r struct {
		RowID json.Number `json:"_rowid"`
	}
	dec := json.NewDecoder(bytes.NewReader(row))
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("row %s: %v", row, err)
	}
	var id uint64
	if _, err := fmt.Sscan(r.RowID.String(), &id); err != nil {
		t.Fatalf("row %s: _rowid: %v", row, err)
	}
	return id
}

func checkTakes(t *testing.T, fx fixturetest.Fixture, exp *fixturetest.Expected) {
	d, _ := openFixture(t, fx.DatasetPath, 0)
	ctx := context.Background()
	opts := &TakeOptions{WithRowID: true}
	var (
		offsets, ids       []uint64
		offsetRows, idRows []json.RawMessage
	)
	switch tk := exp.Takes; {
	case tk != nil && tk.Error == "":
		offsets, offsetRows, ids = tk.Offsets, tk.OffsetRows, tk.RowIDs
		// LanceDB's takeRowIds returned the rows sorted by row id; TakeRowIDs
		// keeps the order asked for, so put the expected rows in that order.
		byID := map[uint64]json.RawMessage{}
		for _, r := range tk.RowIDRows {
			byID[rowID(t, r)] = r
		}
		if len(byID) != len(ids) {
			t.Fatalf("expected take by row id returned %d distinct rows for %d ids", len(byID), len(ids))
		}
		for _, id := range ids {
			idRows = append(idRows, byID[id])
		}
	default:
		// Lance recorded no takes (or could not take from legacy files):
		// take an unsorted sample with a repeat and expect the scan rows.
		if tk != nil {
			offsets = tk.Offsets
		} else if n := uint64(len(exp.Rows)); n > 0 {
			offsets = []uint64{n - 1, 0, n / 2, 0, n / 3}
		}
		for _, o := range offsets {
			offsetRows = append(offsetRows, exp.Rows[o])
		}
		for i := len(offsetRows) - 1; i >= 0; i-- {
			ids = append(ids, rowID(t, offsetRows[i]))
			idRows = append(idRows, offsetRows[i])
		}
	}
	rec, err := d.Take(ctx, offsets, opts)
	got := takeRows(t, rec, err)
	fixturetest.CompareRows(t, fx.Name+" take offsets", got, offsetRows, fixturetest.CompareOptions{})
	rec, err = d.TakeRowIDs(ctx, ids, opts)
	got = takeRows(t, rec, err)
	fixturetest.CompareRows(t, fx.Name+" take row ids", got, idRows, fixturetest.CompareOptions{})

	// A projection of one column, without row ids.
	if len(offsets) > 0 {
		col := d.Schema().Fields[0].Name
		rec, err := d.Take(ctx, offsets, &TakeOptions{Columns: []string{col}})
		got = takeRows(t, rec, err)
		fixturetest.CompareRows(t, fx.Name+" take one column", got, offsetRows,
			fixturetest.CompareOptions{Columns: []string{col}})
	}
}

// checkOffsetLimit scans windows of the rows and one column.
func checkOffsetLimit(t *testing.T, fx fixturetest.Fixture, exp *fixturetest.Expected) {
	d, _ := openFixture(t, fx.DatasetPath, 0)
	n := int64(len(exp.Rows))
	col := d.Schema().Fields[0].Name
	for _, w := range []struct{ offset, limit int64 }{
		{0, 1}, {1, 0}, {n / 2, 3}, {n - 1, 5}, {n, 0}, {n + 10, 1}, {3, n},
	} {
		rows, _, err := scanRows(t, d, &ScanOptions{Columns: []string{col, RowIDColumn}, Offset: w.offset, Limit: w.limit, BatchSize: 5})
		if err != nil {
			t.Fatalf("offset %d limit %d: %v", w.offset, w.limit, err)
		}
		lo := min(w.offset, n)
		hi := n
		if w.limit > 0 {
			hi = min(lo+w.limit, n)
		}
		fixturetest.CompareRows(t, fmt.Sprintf("%s offset %d limit %d", fx.Name, w.offset, w.limit), rows, exp.Rows[lo:hi],
			fixturetest.CompareOptions{Columns: []string{col, RowIDColumn}})
	}
}

func checkIndices(t *testing.T, fx fixturetest.Fixture, exp *fixturetest.Expected) {
	d, _ := openFixture(t, fx.DatasetPath, 0)
	got := map[string]manifest.IndexInfo{}
	for _, ix := range d.Indices() {
		got[ix.Name] = ix
	}
	if len(got) != len(exp.Indices) {
		t.Errorf("%d indices, want %d", len(got), len(exp.Indices))
	}
	for _, want := range exp.Indices {
		g, ok := got[want.Name]
		if !ok {
			t.Errorf("index %q missing", want.Name)
			continue
		}
		wantType := want.IndexType
		switch {
		case wantType == "FTS":
			wantType = "Inverted"
		case strings.HasPrefix(wantType, "Ivf"):
			wantType = "Vector"
		}
		if g.UUID != want.IndexUUID || g.TypeURL != want.TypeURL || g.Type != wantType ||
			!reflect.DeepEqual(g.Fields, want.Columns) || int(g.IndexVersion) != want.IndexVersion {
			t.Errorf("index %q = %+v, want uuid %s type %s (%s) columns %v version %d",
				want.Name, g, want.IndexUUID, wantType, want.TypeURL, want.Columns, want.IndexVersion)
		}
		if ms := g.CreatedAt.UnixMilli(); fmt.Sprint(g.CreatedAt.Format("2006-01-02T15:04:05.000Z")) != want.CreatedAt {
			t.Errorf("index %q created at %d ms (%s), want %s", want.Name, ms, g.CreatedAt, want.CreatedAt)
		}
		// Every index was built before the last append: it covers the
		// first fragment only, whose rows are the indexed ones.
		var indexed int64
		for _, f := range d.Manifest().Fragments {
			for _, id := range g.Fragments {
				if uint64(id) == f.ID {
					indexed += int64(f.PhysicalRows)
				}
			}
		}
		if indexed != want.NumIndexedRows || g.DatasetVersion >= d.Version() {
			t.Errorf("index %q covers fragments %v (%d rows) built at version %d, want %d rows before version %d",
				want.Name, g.Fragments, indexed, g.DatasetVersion, want.NumIndexedRows, d.Version())
		}
	}
}

// TestBranchRoot opens a branch directory as a dataset of its own: its
// manifests name the main dataset's root by the absolute path it had when
// the fixtures were made, which ResolveBase maps onto the fixture here.
func TestBranchRoot(t *testing.T) {
	for _, name := range []string{"history_v2_2", "history_v2_2_stable_rowids"} {
		t.Run(name, func(t *testing.T) {
			exp := fixturetest.LoadExpected(t, name)
			if exp.Branch == nil || exp.Branch.Error != "" {
				t.Fatalf("fixture records no branch: %+v", exp.Branch)
			}
			root := fixturetest.DatasetPath(t, name)
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			var resolved []string
			opts := &OpenOptions{Allocator: mem, ResolveBase: func(ctx context.Context, bp manifest.BasePath) (blob.Store, error) {
				resolved = append(resolved, bp.Path)
				rel, ok := strings.CutPrefix(bp.Path, "/fixtures/lance/")
				if !ok || !bp.IsDatasetRoot {
					return nil, fmt.Errorf("unexpected base path %+v", bp)
				}
				return blob.NewLocalStore(filepath.Join(filepath.Dir(root), rel))
			}}
			d, err := openDir(context.Background(), filepath.Join(root, "tree", exp.Branch.Name), opts)
			if err != nil {
				t.Fatal(err)
			}
			if d.Version() != exp.Branch.CurrentVersion || d.Manifest().Branch != exp.Branch.Name {
				t.Errorf("branch at version %d named %q, want %d %q", d.Version(), d.Manifest().Branch,
					exp.Branch.CurrentVersion, exp.Branch.Name)
			}
			if n, err := d.CountRows(context.Background()); err != nil || int64(n) != exp.Branch.NumRows {
				t.Errorf("CountRows = %d, %v; want %d", n, err, exp.Branch.NumRows)
			}
			versions, err := d.Versions(context.Background())
			if err != nil || len(versions) != len(exp.Branch.Versions) {
				t.Fatalf("Versions = %v, %v; want %d", versions, err, len(exp.Branch.Versions))
			}
			for i, v := range versions {
				if w := exp.Branch.Versions[i]; v.Version != w.Version || !reflect.DeepEqual(v.Metadata, w.Metadata) {
					t.Errorf("branch version %d %v, want %d %v", v.Version, v.Metadata, w.Version, w.Metadata)
				}
			}
			rows, _, err := scanRows(t, d, &ScanOptions{WithRowID: true})
			if err != nil {
				t.Fatal(err)
			}
			fixturetest.CompareRows(t, name+" branch rows", rows, exp.Branch.Rows, fixturetest.CompareOptions{})
			if len(resolved) != 1 {
				t.Errorf("ResolveBase called for %v, want once", resolved)
			}
		})
	}
}

// peakAllocator tracks the most memory a checked allocator ever held. It
// is safe for concurrent use: arrow's compute kernels allocate from
// several goroutines.
type peakAllocator struct {
	*memory.CheckedAllocator
	mu   sync.Mutex
	peak int
}

func (p *peakAllocator) Allocate(n int) []byte {
	b := p.CheckedAllocator.Allocate(n)
	p.note()
	return b
}

func (p *peakAllocator) Reallocate(n int, b []byte) []byte {
	b = p.CheckedAllocator.Reallocate(n, b)
	p.note()
	return b
}

func (p *peakAllocator) note() {
	p.mu.Lock()
	p.peak = max(p.peak, p.CurrentAlloc())
	p.mu.Unlock()
}

// maxScanPeak bounds the live Arrow memory of a scan of pages_2_2 (1.1
// million rows of two integer columns, about 13 MiB as Arrow arrays) in
// batches of 8192 rows: a batch is 128 KiB, so this leaves room for a few
// decoded pages per column but not for materializing the dataset.
const maxScanPeak = 8 << 20

// TestScanBoundedMemory scans a dataset of 1.1 million rows in two
// fragments and checks both every row and that memory stayed bounded.
func TestScanBoundedMemory(t *testing.T) {
	const name = "pages_2_2"
	mem := &peakAllocator{CheckedAllocator: memory.NewCheckedAllocator(memory.NewGoAllocator())}
	defer mem.AssertSize(t, 0)
	d, err := openDir(context.Background(), fixturetest.EncodingDatasetPath(t, name), &OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Manifest().Fragments) != 2 {
		t.Fatalf("%d fragments, want 2", len(d.Manifest().Fragments))
	}
	s, err := d.Scan(&ScanOptions{WithRowID: true, BatchSize: 8192})
	if err != nil {
		t.Fatal(err)
	}
	check := fixturetest.NewRowChecker(t, name, fixturetest.CompareOptions{})
	n, _ := fixturetest.FormulaRowCount(name)
	// Not every decoder allocates through the Allocator (some wrap Go
	// slices), so also sample the live Go heap every few batches.
	baseline := liveHeap()
	var heapPeak uint64
	row, batches := 0, 0
	for rec, err := range s.Batches(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if rec.NumRows() > 8192 {
			t.Fatalf("batch of %d rows", rec.NumRows())
		}
		if batches++; batches%8 == 0 {
			heapPeak = max(heapPeak, liveHeap()-min(baseline, liveHeap()))
		}
		for _, got := range fixturetest.EncodeRows(t, rec) {
			if row < n {
				check.Check(row, got, fixturetest.FormulaRow(name, row))
			}
			row++
		}
	}
	check.Finish(row, n)
	t.Logf("peak live Arrow memory %d bytes; sampled live Go heap growth %d bytes", mem.peak, heapPeak)
	if mem.peak > maxScanPeak {
		t.Errorf("peak live Arrow memory %d bytes, want at most %d", mem.peak, maxScanPeak)
	}
	if heapPeak > maxScanHeap {
		t.Errorf("live Go heap grew by %d bytes during the scan, want at most %d", heapPeak, maxScanHeap)
	}
}

// maxScanHeap bounds the growth of the live Go heap during the same scan.
const maxScanHeap = 16 << 20

// liveHeap returns the live Go heap after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// compareSchema compares an Arrow schema with gen.mjs's description.
func compareSchema(t *testing.T, what string, got *arrow.Schema, want fixturetest.Schema) {
	t.Helper()
	var gotFields []fixturetest.Field
	for _, f := range got.Fields() {
		gotFields = append(gotFields, describeField(f))
	}
	wantFields := make([]fixturetest.Field, len(want.Fields))
	for i, f := range want.Fields {
		wantFields[i] = normalizeField(f)
	}
	if len(gotFields) != len(wantFields) {
		t.Errorf("%s: %d fields %v, want %d", what, len(gotFields), got, len(wantFields))
	}
	for i := 0; i < len(gotFields) && i < len(wantFields); i++ {
		if !reflect.DeepEqual(gotFields[i], wantFields[i]) {
			g, _ := json.Marshal(gotFields[i])
			w, _ := json.Marshal(wantFields[i])
			t.Errorf("%s field %d:\n got %s\nwant %s", what, i, g, w)
		}
	}
	md := got.Metadata()
	gotMD := map[string]string{}
	for i, k := range md.Keys() {
		gotMD[k] = md.Values()[i]
	}
	wantMD := want.Metadata
	if wantMD == nil {
		wantMD = map[string]string{}
	}
	if !reflect.DeepEqual(gotMD, wantMD) {
		t.Errorf("%s metadata %v, want %v", what, gotMD, wantMD)
	}
}

// normalizeField drops what describeField cannot produce (the Arrow JS type
// name) and empty metadata.
func normalizeField(f fixturetest.Field) fixturetest.Field {
	f.ArrowJS = ""
	if len(f.Metadata) == 0 {
		f.Metadata = nil
	}
	norm := func(p *fixturetest.Field) *fixturetest.Field {
		if p == nil {
			return nil
		}
		n := normalizeField(*p)
		return &n
	}
	f.Item, f.Entries, f.Index, f.Value = norm(f.Item), norm(f.Entries), norm(f.Index), norm(f.Value)
	for i := range f.Fields {
		f.Fields[i] = normalizeField(f.Fields[i])
	}
	return f
}

// describeField describes an Arrow field the way gen.mjs does.
func describeField(f arrow.Field) fixturetest.Field {
	out := describeType(f.Type)
	out.Name, out.Nullable = f.Name, f.Nullable
	if f.Metadata.Len() > 0 {
		out.Metadata = map[string]string{}
		for i, k := range f.Metadata.Keys() {
			out.Metadata[k] = f.Metadata.Values()[i]
		}
	}
	return out
}

func describeType(dt arrow.DataType) fixturetest.Field {
	names := map[arrow.Type]string{
		arrow.NULL: "null", arrow.BOOL: "bool",
		arrow.INT8: "int8", arrow.INT16: "int16", arrow.INT32: "int32", arrow.INT64: "int64",
		arrow.UINT8: "uint8", arrow.UINT16: "uint16", arrow.UINT32: "uint32", arrow.UINT64: "uint64",
		arrow.FLOAT16: "float16", arrow.FLOAT32: "float32", arrow.FLOAT64: "float64",
		arrow.STRING: "utf8", arrow.LARGE_STRING: "large_utf8", arrow.BINARY: "binary", arrow.LARGE_BINARY: "large_binary",
		arrow.DATE32: "date32", arrow.DATE64: "date64",
	}
	if n, ok := names[dt.ID()]; ok {
		return fixturetest.Field{Type: n}
	}
	item := func(f arrow.Field) *fixturetest.Field { d := describeField(f); return &d }
	switch t := dt.(type) {
	case *arrow.FixedSizeBinaryType:
		return fixturetest.Field{Type: "fixed_size_binary", ByteWidth: t.ByteWidth}
	case *arrow.TimestampType:
		f := fixturetest.Field{Type: "timestamp", Unit: t.Unit.String()}
		if t.TimeZone != "" {
			tz := t.TimeZone
			f.TZ = &tz
		}
		return f
	case *arrow.Decimal128Type:
		return fixturetest.Field{Type: "decimal128", Precision: int(t.Precision), Scale: int(t.Scale)}
	case *arrow.ListType:
		return fixturetest.Field{Type: "list", Item: item(t.ElemField())}
	case *arrow.FixedSizeListType:
		return fixturetest.Field{Type: "fixed_size_list", Size: int(t.Len()), Item: item(t.ElemField())}
	case *arrow.MapType:
		return fixturetest.Field{Type: "map", KeysSorted: t.KeysSorted, Entries: item(t.ElemField())}
	case *arrow.StructType:
		f := fixturetest.Field{Type: "struct"}
		for _, c := range t.Fields() {
			f.Fields = append(f.Fields, describeField(c))
		}
		return f
	case *arrow.DictionaryType:
		idx, val := describeType(t.IndexType), describeType(t.ValueType)
		return fixturetest.Field{Type: "dictionary", Index: &idx, Value: &val, Ordered: t.Ordered}
	}
	return fixturetest.Field{Type: "unknown:" + dt.String()}
}
