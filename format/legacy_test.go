package format

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/arrays"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/internal/legacy"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/pb/filepb"
)

// legacyDataFiles returns the paths of a legacy fixture's data files
// (main line and branches).
func legacyDataFiles(t testing.TB, name string) []string {
	t.Helper()
	dir := fixturetest.DatasetPath(t, name)
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".lance") && filepath.Base(filepath.Dir(path)) == "data" {
			files = append(files, path)
		}
		return err
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("no data files in %s: %v", dir, err)
	}
	return files
}

// openBytes opens data as a file in a memory store.
func openBytes(t testing.TB, key string, data []byte, mem memory.Allocator) (*Reader, error) {
	t.Helper()
	store := blob.NewMemStore(t.Name())
	if err := store.Write(context.Background(), key, data); err != nil {
		t.Fatal(err)
	}
	return Open(context.Background(), store, key, &OpenOptions{Allocator: mem})
}

// readAllRows reads every row of every field of r's own schema.
func readAllRows(t testing.TB, r *Reader) arrow.RecordBatch {
	t.Helper()
	cur, err := r.NewCursor(r.FileProjection(r.Schema().Fields))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	arrs, err := cur.ReadRange(context.Background(), 0, r.NumRows())
	if err != nil {
		t.Fatal(err)
	}
	return record(t, r.Schema().Arrow(), arrs, int64(r.NumRows()))
}

// record wraps arrays (taking over their references) as a record batch.
func record(t testing.TB, sch *arrow.Schema, arrs []arrow.Array, n int64) arrow.RecordBatch {
	t.Helper()
	defer fileio.ReleaseAll(arrs)
	for i, a := range arrs {
		if a.Len() != int(n) {
			t.Fatalf("column %q has %d rows, want %d", sch.Field(i).Name, a.Len(), n)
		}
	}
	return array.NewRecordBatch(sch, arrs, n)
}

func TestLegacyTypesMatchLance(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	exp := fixturetest.LoadExpected(t, "types_vlegacy")
	files := legacyDataFiles(t, "types_vlegacy")
	if len(files) != 1 {
		t.Fatalf("types_vlegacy has %d data files, want 1", len(files))
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	r, err := openBytes(t, "data/types.lance", data, mem)
	if err != nil {
		t.Fatal(err)
	}
	if r.Version() != VersionLegacy || r.NumRows() != 100 {
		t.Fatalf("version %v, %d rows; want legacy, 100", r.Version(), r.NumRows())
	}
	// 59 field ids, of which the 8 structs have no pages.
	if got := r.NumColumns(); got != 51 {
		t.Errorf("NumColumns = %d, want 51", got)
	}
	rec := readAllRows(t, r)
	defer rec.Release()
	got := fixturetest.EncodeRows(t, rec)
	fixturetest.CompareRows(t, "types_vlegacy", got, exp.Rows, fixturetest.CompareOptions{IgnoreKeys: []string{"_rowid"}})
}

// legacyParts splits a v1 file into its metadata and schema manifest. The
// manifest (a lance.table.Manifest) is decoded as the lance.file.Schema its
// fields 1 and 5 are, as the reader does: unknown fields survive a
// re-encoding, and the table protobufs stay dataset/manifest's.
func legacyParts(t testing.TB, data []byte) (*filepb.Metadata, *filepb.Schema) {
	t.Helper()
	metaPos := binary.LittleEndian.Uint64(data[len(data)-16:])
	md := &filepb.Metadata{}
	n := uint64(binary.LittleEndian.Uint32(data[metaPos:]))
	if err := proto.Unmarshal(data[metaPos+4:metaPos+4+n], md); err != nil {
		t.Fatal(err)
	}
	manPos := md.GetManifestPosition()
	man := &filepb.Schema{}
	n = uint64(binary.LittleEndian.Uint32(data[manPos:]))
	if err := proto.Unmarshal(data[manPos+4:manPos+4+n], man); err != nil {
		t.Fatal(err)
	}
	return md, man
}

// legacyPage is one entry of a v1 file's page table: where the page
// starts and how many values it holds.
type legacyPage struct{ Pos, Length uint64 }

// legacyTable is a v1 file's page table as the layout comment of
// internal/legacy describes it, read by the test itself rather than taken
// from the reader: entries for field ids min..max of the schema manifest,
// field-major, each field's batches in a row.
type legacyTable struct {
	minID   int32
	batches int
	pages   []legacyPage
}

// readLegacyTable reads data's page table.
func readLegacyTable(t testing.TB, data []byte) *legacyTable {
	t.Helper()
	md, man := legacyParts(t, data)
	minID, maxID := int32(math.MaxInt32), int32(-1)
	for _, f := range man.Fields {
		minID, maxID = min(minID, f.Id), max(maxID, f.Id)
	}
	lt := &legacyTable{minID: minID, batches: max(len(md.BatchOffsets)-1, 0)}
	pos := md.GetPageTablePosition()
	for range int(maxID-minID+1) * lt.batches {
		lt.pages = append(lt.pages, legacyPage{binary.LittleEndian.Uint64(data[pos:]), binary.LittleEndian.Uint64(data[pos+8:])})
		pos += 16
	}
	return lt
}

// index returns the position of field id's page of batch in pages.
func (lt *legacyTable) index(id int32, batch int) int {
	return int(id-lt.minID)*lt.batches + batch
}

// page returns field id's page of batch.
func (lt *legacyTable) page(id int32, batch int) legacyPage { return lt.pages[lt.index(id, batch)] }

// appendLegacyTail appends a new schema manifest (if man is not nil), page
// table (if pages is not nil), metadata and footer to data, the way Lance's
// writer ends a file, so the old ones are ignored.
func appendLegacyTail(t testing.TB, data []byte, md *filepb.Metadata, man *filepb.Schema, pages []legacyPage) []byte {
	t.Helper()
	out := slices.Clone(data)
	md = proto.Clone(md).(*filepb.Metadata)
	if pages != nil {
		md.PageTablePosition = uint64(len(out))
		for _, p := range pages {
			out = binary.LittleEndian.AppendUint64(out, p.Pos)
			out = binary.LittleEndian.AppendUint64(out, p.Length)
		}
	}
	appendMsg := func(m proto.Message) uint64 {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		pos := uint64(len(out))
		out = binary.LittleEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
		return pos
	}
	if man != nil {
		md.ManifestPosition = appendMsg(man)
	}
	metaPos := appendMsg(md)
	out = binary.LittleEndian.AppendUint64(out, metaPos)
	out = binary.LittleEndian.AppendUint16(out, 0)
	out = binary.LittleEndian.AppendUint16(out, 2)
	return append(out, fileio.Magic...)
}

// typesFile returns the bytes of the types_vlegacy data file.
func typesFile(t testing.TB) []byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(fixturetest.DatasetPath(t, "types_vlegacy"), "data", "*.lance"))
	if err != nil || len(files) != 1 {
		t.Fatalf("types_vlegacy data file: %v %v", files, err)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// splitBatches rewrites a single-batch v1 file as batches starting at the
// given rows (multiples of 8, so boolean pages split on byte boundaries),
// without moving any page: each batch's page table entry points into the
// middle of the original page. Pages under a list are shared whole by every
// batch, since list offsets index into them. The rows read back must not
// change.
func splitBatches(t testing.TB, data []byte, bounds []int32) []byte {
	t.Helper()
	md, _ := legacyParts(t, data)
	r, err := openBytes(t, "split.lance", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	lt := readLegacyTable(t, data)
	if lt.batches != 1 {
		t.Fatalf("file has %d batches, want 1", lt.batches)
	}
	nb := len(bounds) - 1
	split := &legacyTable{minID: lt.minID, batches: nb, pages: make([]legacyPage, len(lt.pages)*nb)}
	var visit func(f *schema.Field, underList bool)
	visit = func(f *schema.Field, underList bool) {
		orig := lt.page(f.ID, 0)
		for b := 0; b < nb; b++ {
			start, count := uint64(bounds[b]), uint64(bounds[b+1]-bounds[b])
			p := legacyPage{}
			switch {
			case underList:
				p = orig
			case f.Type.ID() == arrow.STRUCT:
			case f.Type.ID() == arrow.NULL:
				p = legacyPage{Pos: orig.Pos, Length: count}
			case f.Type.ID() == arrow.LIST:
				p = legacyPage{Pos: orig.Pos + 4*start, Length: count + 1}
			case f.Type.ID() == arrow.LARGE_LIST:
				p = legacyPage{Pos: orig.Pos + 8*start, Length: count + 1}
			case isBinaryType(f.Type):
				p = legacyPage{Pos: orig.Pos + 8*start, Length: count}
			case f.Type.ID() == arrow.DICTIONARY:
				w := f.Type.(*arrow.DictionaryType).IndexType.(arrow.FixedWidthDataType).BitWidth()
				p = legacyPage{Pos: orig.Pos + start*uint64(w)/8, Length: count}
			default:
				leaf, perRow, ok := legacy.FixedStride(f.Type)
				if !ok {
					t.Fatalf("field %q: cannot split %s", f.Name, f.Type)
				}
				bitsPerRow := perRow * uint64(leaf.(arrow.FixedWidthDataType).BitWidth())
				p = legacyPage{Pos: orig.Pos + start*bitsPerRow/8, Length: count}
			}
			split.pages[split.index(f.ID, b)] = p
		}
		for _, c := range f.Children {
			visit(c, underList || f.Type.ID() == arrow.LIST || f.Type.ID() == arrow.LARGE_LIST)
		}
	}
	for _, f := range r.Schema().Fields {
		visit(f, false)
	}
	md = proto.Clone(md).(*filepb.Metadata)
	md.BatchOffsets = bounds
	return appendLegacyTail(t, data, md, nil, split.pages)
}

func isBinaryType(dt arrow.DataType) bool { _, ok := arrays.BinaryType(dt); return ok }

// shrinkRows rewrites a single-batch v1 file to hold only its first rows,
// copying just the bytes those rows use (each page rebased, string
// positions and list offsets rewritten) and every dictionary. It makes small
// seeds for fuzzing out of big fixture files.
func shrinkRows(t testing.TB, data []byte, rows uint64) []byte {
	t.Helper()
	md, man := legacyParts(t, data)
	r, err := openBytes(t, "shrink.lance", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	lt := readLegacyTable(t, data)
	if lt.batches != 1 || rows > r.NumRows() {
		t.Fatalf("cannot shrink %d batches of %d rows to %d rows", lt.batches, r.NumRows(), rows)
	}
	var out []byte
	pages := make([]legacyPage, len(lt.pages))
	u64 := func(off uint64) uint64 { return binary.LittleEndian.Uint64(data[off:]) }
	// copyBinary copies values [start, end) of a positions page and returns
	// where the new positions start.
	copyBinary := func(p legacyPage, start, end uint64) uint64 {
		first, last := u64(p.Pos+8*start), u64(p.Pos+8*end)
		dataStart := uint64(len(out))
		out = append(out, data[first:last]...)
		posStart := uint64(len(out))
		for i := start; i <= end; i++ {
			out = binary.LittleEndian.AppendUint64(out, u64(p.Pos+8*i)-first+dataStart)
		}
		return posStart
	}
	var copyField func(f *schema.Field, start, end uint64)
	copyField = func(f *schema.Field, start, end uint64) {
		p := lt.page(f.ID, 0)
		n := end - start
		switch {
		case f.Type.ID() == arrow.STRUCT:
			for _, c := range f.Children {
				copyField(c, start, end)
			}
			return
		case f.Type.ID() == arrow.NULL:
			pages[lt.index(f.ID, 0)] = legacyPage{Pos: uint64(len(out)), Length: n}
		case f.Type.ID() == arrow.LIST || f.Type.ID() == arrow.LARGE_LIST:
			w := uint64(4)
			if f.Type.ID() == arrow.LARGE_LIST {
				w = 8
			}
			read := func(i uint64) uint64 {
				if w == 4 {
					return uint64(binary.LittleEndian.Uint32(data[p.Pos+4*i:]))
				}
				return u64(p.Pos + 8*i)
			}
			first, last := read(start), read(end)
			pages[lt.index(f.ID, 0)] = legacyPage{Pos: uint64(len(out)), Length: n + 1}
			for i := start; i <= end; i++ {
				if w == 4 {
					out = binary.LittleEndian.AppendUint32(out, uint32(read(i)-first))
				} else {
					out = binary.LittleEndian.AppendUint64(out, read(i)-first)
				}
			}
			copyField(f.Children[0], first, last)
		case isBinaryType(f.Type):
			pages[lt.index(f.ID, 0)] = legacyPage{Pos: copyBinary(p, start, end), Length: n}
		default:
			dt := f.Type
			if d, ok := dt.(*arrow.DictionaryType); ok {
				dt = d.IndexType
			}
			leaf, perRow, ok := legacy.FixedStride(dt)
			if !ok {
				t.Fatalf("field %q: cannot copy %s", f.Name, f.Type)
			}
			pages[lt.index(f.ID, 0)] = legacyPage{Pos: uint64(len(out)), Length: n}
			bitsPerRow := perRow * uint64(leaf.(arrow.FixedWidthDataType).BitWidth())
			if bitsPerRow%8 != 0 {
				b := make([]byte, (n*bitsPerRow+7)/8)
				bitutil.CopyBitmap(data[p.Pos:], int(start*bitsPerRow), int(n*bitsPerRow), b, 0)
				out = append(out, b...)
				break
			}
			out = append(out, data[p.Pos+start*bitsPerRow/8:p.Pos+end*bitsPerRow/8]...)
		}
	}
	for _, f := range r.Schema().Fields {
		copyField(f, 0, rows)
	}
	man = proto.Clone(man).(*filepb.Schema)
	for _, pf := range man.Fields {
		if d := pf.GetDictionary(); d != nil {
			d.Offset = int64(copyBinary(legacyPage{Pos: uint64(d.Offset), Length: uint64(d.Length)}, 0, uint64(d.Length)))
		}
	}
	md = proto.Clone(md).(*filepb.Metadata)
	md.BatchOffsets = []int32{0, int32(rows)}
	return appendLegacyTail(t, out, md, man, pages)
}

func TestLegacyShrunkMatchesLance(t *testing.T) {
	exp := fixturetest.LoadExpected(t, "types_vlegacy")
	orig := typesFile(t)
	data := shrinkRows(t, orig, 5)
	if len(data) >= len(orig)/5 {
		t.Fatalf("shrunk file has %d bytes, the original %d", len(data), len(orig))
	}
	r, err := openBytes(t, "data/small.lance", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := readAllRows(t, r)
	defer rec.Release()
	fixturetest.CompareRows(t, "types_vlegacy, first 5 rows", fixturetest.EncodeRows(t, rec), exp.Rows[:5], fixturetest.CompareOptions{IgnoreKeys: []string{"_rowid"}})
}

// typesSplitBounds splits the 100 rows of types_vlegacy into batches of 24,
// 0 (an empty batch), 40, 32 and 4 rows.
var typesSplitBounds = []int32{0, 24, 24, 64, 96, 100}

func TestLegacyManyBatchesMatchLance(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	exp := fixturetest.LoadExpected(t, "types_vlegacy")
	data := splitBatches(t, typesFile(t), typesSplitBounds)
	r, err := openBytes(t, "data/split.lance", data, mem)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.legacy.Legacy.NumBatches(); got != 5 {
		t.Fatalf("%d batches, want 5", got)
	}
	rec := readAllRows(t, r)
	defer rec.Release()
	got := fixturetest.EncodeRows(t, rec)
	fixturetest.CompareRows(t, "types_vlegacy in 5 batches", got, exp.Rows, fixturetest.CompareOptions{IgnoreKeys: []string{"_rowid"}})
}

// TestLegacyRangesAndTakes checks that ranges and takes, within and across
// batches, equal the matching rows of a full read.
func TestLegacyRangesAndTakes(t *testing.T) {
	files := map[string][]byte{
		"one batch": typesFile(t),
		"5 batches": splitBatches(t, typesFile(t), typesSplitBounds),
	}
	ranges := [][2]uint64{{0, 0}, {0, 1}, {5, 17}, {23, 25}, {24, 64}, {20, 99}, {96, 100}, {99, 100}, {0, 100}, {100, 100}}
	takes := [][]uint64{{0}, {99, 0, 50}, {3, 3, 3}, {24, 23, 63, 64, 95, 96}, {7, 6, 5, 4, 3, 2, 1, 0}}
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			r, err := openBytes(t, "data/f.lance", data, mem)
			if err != nil {
				t.Fatal(err)
			}
			full := readAllRows(t, r)
			all := fixturetest.EncodeRows(t, full)
			full.Release()
			cur, err := r.NewCursor(r.FileProjection(r.Schema().Fields))
			if err != nil {
				t.Fatal(err)
			}
			defer cur.Close()
			for _, rg := range ranges {
				arrs, err := cur.ReadRange(context.Background(), rg[0], rg[1])
				if err != nil {
					t.Fatalf("range %v: %v", rg, err)
				}
				rec := record(t, r.Schema().Arrow(), arrs, int64(rg[1]-rg[0]))
				fixturetest.CompareRows(t, fmt.Sprintf("range %v", rg), fixturetest.EncodeRows(t, rec), all[rg[0]:rg[1]], fixturetest.CompareOptions{})
				rec.Release()
			}
			for _, rows := range takes {
				arrs, err := cur.Take(context.Background(), rows)
				if err != nil {
					t.Fatalf("take %v: %v", rows, err)
				}
				rec := record(t, r.Schema().Arrow(), arrs, int64(len(rows)))
				want := make([][]byte, len(rows))
				for i, row := range rows {
					want[i] = all[row]
				}
				fixturetest.CompareRows(t, fmt.Sprintf("take %v", rows), fixturetest.EncodeRows(t, rec), want, fixturetest.CompareOptions{})
				rec.Release()
			}
			// A projection of some members, in another order.
			proj, err := r.Schema().Project([]string{"dict_utf8", "nested.kv", "bool", "list_utf8"})
			if err != nil {
				t.Fatal(err)
			}
			pc, err := r.NewCursor(r.FileProjection(proj.Fields))
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			arrs, err := pc.ReadRange(context.Background(), 10, 90)
			if err != nil {
				t.Fatal(err)
			}
			rec := record(t, proj.Arrow(), arrs, 80)
			fixturetest.CompareRows(t, "projection", fixturetest.EncodeRows(t, rec), projectRows(t, all[10:90], "dict_utf8", "nested", "bool", "list_utf8"),
				fixturetest.CompareOptions{Columns: []string{"dict_utf8", "nested", "bool", "list_utf8"}})
			rec.Release()
		})
	}
}

// projectRows keeps the named members of JSON rows, nested's only member kv.
func projectRows(t *testing.T, rows [][]byte, keep ...string) [][]byte {
	t.Helper()
	out := make([][]byte, len(rows))
	for i, row := range rows {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(row, &m); err != nil {
			t.Fatal(err)
		}
		kept := map[string]json.RawMessage{}
		for _, k := range keep {
			kept[k] = m[k]
		}
		var nested map[string]json.RawMessage
		if err := json.Unmarshal(m["nested"], &nested); err != nil {
			t.Fatal(err)
		}
		kept["nested"], _ = json.Marshal(map[string]json.RawMessage{"kv": nested["kv"]})
		out[i], _ = json.Marshal(kept)
	}
	return out
}

// TestLegacyMalformed damages the types file in the ways a reader must
// survive; each must yield an error wrapping lancer.ErrCorrupt that names the
// file, from Open or from reading every row.
func TestLegacyMalformed(t *testing.T) {
	orig := typesFile(t)
	md, man := legacyParts(t, orig)
	metaPos := binary.LittleEndian.Uint64(orig[len(orig)-16:])
	footer := orig[len(orig)-16:]
	lt := readLegacyTable(t, orig)
	pages := lt.pages
	withPage := func(id int32, p legacyPage) []legacyPage {
		ps := slices.Clone(pages)
		ps[lt.index(id, 0)] = p
		return ps
	}
	withMeta := func(edit func(*filepb.Metadata)) []byte {
		m := proto.Clone(md).(*filepb.Metadata)
		edit(m)
		return appendLegacyTail(t, orig, m, nil, nil)
	}
	withManifest := func(edit func(*filepb.Schema)) []byte {
		m := proto.Clone(man).(*filepb.Schema)
		edit(m)
		return appendLegacyTail(t, orig, md, m, nil)
	}
	field := func(m *filepb.Schema, name string) *filepb.Field {
		for _, f := range m.Fields {
			if f.Name == name {
				return f
			}
		}
		t.Fatalf("no field %q", name)
		return nil
	}
	// patch overwrites bytes at off.
	patch := func(off uint64, b []byte) []byte {
		out := slices.Clone(orig)
		copy(out[off:], b)
		return out
	}
	le64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	le32 := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
	utf8Page := lt.page(field(man, "utf8").Id, 0)
	listPage := lt.page(field(man, "list_i32").Id, 0)

	// A page that starts 8 bytes before the end of the rewritten file (whose
	// length does not depend on the page's position).
	size := len(appendLegacyTail(t, orig, md, nil, pages))
	pagePastEnd := appendLegacyTail(t, orig, md, nil, withPage(0, legacyPage{Pos: uint64(size) - 8, Length: 100}))

	cases := []struct {
		name string
		data []byte
	}{
		{"truncated", orig[:len(orig)/2]},
		{"truncated before the metadata, footer kept", append(slices.Clone(orig[:metaPos-10]), footer...)},
		{"metadata position past the end", append(slices.Clone(orig[:len(orig)-16]), append(le64(uint64(len(orig))+100), footer[8:]...)...)},
		{"metadata length past the footer", patch(metaPos, le32(math.MaxUint32))},
		{"metadata not protobuf", patch(metaPos+4, bytes.Repeat([]byte{0xff}, 16))},
		{"manifest position past the metadata", withMeta(func(m *filepb.Metadata) { m.ManifestPosition = metaPos + 100 })},
		{"manifest length past the metadata", patch(md.GetManifestPosition(), le32(1<<30))},
		{"page table past the end", withMeta(func(m *filepb.Metadata) { m.PageTablePosition = uint64(len(orig)) - 8 })},
		{"page table position beyond the file", withMeta(func(m *filepb.Metadata) { m.PageTablePosition = math.MaxUint64 - 4 })},
		{"batch offsets not from 0", withMeta(func(m *filepb.Metadata) { m.BatchOffsets = []int32{5, 100} })},
		{"batch offsets decrease", withMeta(func(m *filepb.Metadata) { m.BatchOffsets = []int32{0, 100, 50} })},
		{"absurd row count", withMeta(func(m *filepb.Metadata) { m.BatchOffsets = []int32{0, math.MaxInt32} })},
		{"absurd batch count", withMeta(func(m *filepb.Metadata) { m.BatchOffsets = make([]int32, 1<<16) })},
		{"absurd field id", withManifest(func(m *filepb.Schema) { field(m, "dict_utf8").Id = 1 << 30 })},
		{"page past the end", pagePastEnd},
		{"page position beyond the file", appendLegacyTail(t, orig, md, nil, withPage(0, legacyPage{Pos: math.MaxUint64 - 100, Length: 100}))},
		{"page shorter than the batch", appendLegacyTail(t, orig, md, nil, withPage(0, legacyPage{Pos: 0, Length: 10}))},
		{"struct member without a page", appendLegacyTail(t, orig, md, nil, withPage(field(man, "a").Id, legacyPage{}))},
		{"string positions decrease", patch(utf8Page.Pos+8, le64(0))},
		{"string positions past the end", patch(utf8Page.Pos+8*100, le64(uint64(len(orig))+1))},
		{"string not UTF-8", patch(binary.LittleEndian.Uint64(orig[utf8Page.Pos+8:]), []byte{0xff})},
		{"list offsets decrease", patch(listPage.Pos+4, le32(math.MaxUint32))},
		{"list items past their page", patch(listPage.Pos+4*100, le32(1<<20))},
		{"dictionary index out of range", withManifest(func(m *filepb.Schema) { field(m, "dict_utf8").Dictionary.Length = 2 })},
		{"dictionary values past the end", withManifest(func(m *filepb.Schema) { field(m, "dict_utf8").Dictionary.Offset = int64(len(orig)) })},
		{"dictionary offset negative", withManifest(func(m *filepb.Schema) { field(m, "dict_utf8").Dictionary.Offset = -8 })},
		{"dictionary without location", withManifest(func(m *filepb.Schema) { field(m, "dict_utf8").Dictionary = nil })},
		{"schema parent missing", withManifest(func(m *filepb.Schema) { field(m, "a").ParentId = 999 })},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			const key = "data/broken-file.lance"
			err := openAndReadAll(t, key, c.data, mem)
			if !errors.Is(err, lancer.ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), key) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

// openAndReadAll opens data and reads every row of every field, releasing
// what it read; it returns the first error.
func openAndReadAll(t testing.TB, key string, data []byte, mem memory.Allocator) error {
	r, err := openBytes(t, key, data, mem)
	if err != nil {
		return err
	}
	cur, err := r.NewCursor(r.FileProjection(r.Schema().Fields))
	if err != nil {
		return err
	}
	defer cur.Close()
	arrs, err := cur.ReadRange(context.Background(), 0, r.NumRows())
	fileio.ReleaseAll(arrs)
	return err
}

func TestLegacyUnsupported(t *testing.T) {
	orig := typesFile(t)
	md, man := legacyParts(t, orig)
	blobMan := proto.Clone(man).(*filepb.Schema)
	for _, f := range blobMan.Fields {
		if f.Name == "large_binary" {
			f.Metadata = map[string][]byte{schema.MetaBlob: []byte("true")}
		}
	}
	noSchema := proto.Clone(md).(*filepb.Metadata)
	noSchema.ManifestPosition = 0
	floatDict := proto.Clone(man).(*filepb.Schema)
	for _, f := range floatDict.Fields {
		if f.Name == "dict_utf8" {
			f.LogicalType = "dict:double:int32:false"
		}
	}
	cases := []struct {
		name string
		data []byte
	}{
		// Lance panics reading these back.
		{"legacy blob column", appendLegacyTail(t, orig, md, blobMan, nil)},
		// Only Lance's own tests write files that keep the schema elsewhere.
		{"schema not in the file", appendLegacyTail(t, orig, noSchema, nil, nil)},
		// Lance refuses dictionaries of other than integer or binary values.
		{"float dictionary", appendLegacyTail(t, orig, md, floatDict, nil)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := openAndReadAll(t, "data/f.lance", c.data, nil)
			if !errors.Is(err, lancer.ErrUnsupported) {
				t.Fatalf("err = %v, want ErrUnsupported", err)
			}
		})
	}
}

// TestLegacyReadRequests pins how many requests reads take: a file's pages
// are read in rounds (values, then what positions and offsets point at), and
// a round takes its bytes from earlier rounds' requests when it can.
func TestLegacyReadRequests(t *testing.T) {
	ctx := context.Background()
	for name, data := range map[string][]byte{
		"one batch": typesFile(t),
		"5 batches": splitBatches(t, typesFile(t), typesSplitBounds),
	} {
		t.Run(name, func(t *testing.T) {
			mem := blob.NewMemStore(t.Name())
			if err := mem.Write(ctx, "f.lance", data); err != nil {
				t.Fatal(err)
			}
			store := blob.NewCountingStore(mem)
			r, err := Open(ctx, store, "f.lance", nil)
			if err != nil {
				t.Fatal(err)
			}
			// The tail holds the metadata, schema, page table and dictionary.
			if reads := store.Snapshot().ReadRange.Requests; reads != 1 {
				t.Errorf("Open made %d requests, want 1", reads)
			}
			cases := []struct {
				columns   []string
				start     uint64
				end       uint64
				wantReads int
				maxBytes  int
			}{
				// Everything lies in one run of pages: one request.
				{nil, 0, 100, 1, len(data)},
				// Positions first, then the bytes they point at.
				{[]string{"utf8"}, 10, 20, 2, 11*8 + 10*32},
				{[]string{"i32"}, 10, 20, 1, 10 * 4},
			}
			for _, c := range cases {
				proj := r.Schema()
				if c.columns != nil {
					if proj, err = r.Schema().Project(c.columns); err != nil {
						t.Fatal(err)
					}
				}
				store.Reset()
				arrs, err := r.readRange(ctx, r.FileProjection(proj.Fields), c.start, c.end)
				if err != nil {
					t.Fatal(err)
				}
				fileio.ReleaseAll(arrs)
				got := store.Snapshot().ReadRange
				if got.Requests != int64(c.wantReads) || got.Bytes > int64(c.maxBytes) {
					t.Errorf("%v rows [%d, %d): %d requests for %d bytes, want %d for at most %d",
						c.columns, c.start, c.end, got.Requests, got.Bytes, c.wantReads, c.maxBytes)
				}
			}
		})
	}
}

// TestLegacyMissingItemsBounded: a list whose item field has no column
// reads its items as nulls, and how many there are comes from the offsets
// in the file. Nulls with no bytes behind them are bounded as in 2.0 files:
// offsets claiming 16 million items for 100 rows are refused, not turned
// into 64 MiB of nulls.
func TestLegacyMissingItemsBounded(t *testing.T) {
	orig := typesFile(t)
	r, err := openBytes(t, "data/f.lance", orig, nil)
	if err != nil {
		t.Fatal(err)
	}
	list := r.Schema().Field("list_i32")
	listPage := readLegacyTable(t, orig).page(list.ID, 0)
	data := slices.Clone(orig)
	binary.LittleEndian.PutUint32(data[listPage.Pos+4*r.NumRows():], 1<<24) // the last list's end
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r, err = openBytes(t, "data/f.lance", data, mem)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := r.NewCursor(Projection{Fields: []*schema.Field{list}, Column: func(id int32) (int, bool) {
		return int(id), id == list.ID // the items have no column
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	arrs, err := cur.ReadRange(context.Background(), 0, r.NumRows())
	fileio.ReleaseAll(arrs)
	if !errors.Is(err, lancer.ErrUnsupported) || !strings.Contains(err.Error(), "data/f.lance") {
		t.Fatalf("err = %v, want ErrUnsupported naming the file", err)
	}
	// The same projection of the intact file reads its items as nulls.
	r, err = openBytes(t, "data/f.lance", orig, mem)
	if err != nil {
		t.Fatal(err)
	}
	arrs, err = r.readRange(context.Background(), Projection{Fields: []*schema.Field{list}, Column: func(id int32) (int, bool) {
		return int(id), id == list.ID
	}}, 0, r.NumRows())
	if err != nil {
		t.Fatal(err)
	}
	defer fileio.ReleaseAll(arrs)
	items := arrs[0].(*array.List).ListValues()
	if items.Len() == 0 || items.NullN() != items.Len() {
		t.Errorf("items: %d of %d null, want all of them", items.NullN(), items.Len())
	}
}
