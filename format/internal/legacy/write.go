package legacy

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/internal/arrays"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/filepb"
	"github.com/lancerdb/lancer/internal/schemaproto"
)

// MaxRowsPerGroup is how many rows one write batch (one page per field)
// holds at most: Lance's max_rows_per_group default, by which its v1 writer
// chunks the stream.
const MaxRowsPerGroup = 1024

// Writer writes a v1 file in the layout Open reads (see the package's
// Layout): one page per field and batch, then the page table, the schema
// (as a manifest message holding fields and schema metadata), the file
// metadata and the footer. It writes no statistics pages (they are
// optional: readers that find none scan) and no dictionaries: dictionary
// fields are refused, as lancer refuses writes to legacy datasets with
// dictionary columns.
type Writer struct {
	sink   *fileio.Sink
	schema *schema.Schema
	// minor is the footer's minor version: 1 or 2 (the layouts are the
	// same; releases before Lance 0.9 wrote 1).
	minor uint16
	// pages[id-minID][batch] is the page of field id in batch.
	pages        [][]pageEntry
	minID, maxID int32
	offsets      []int32 // cumulative rows: batch_offsets
}

// NewWriter starts a v1 file for rows of s on sink (whose Out is open).
func NewWriter(sink *fileio.Sink, s *schema.Schema, minor uint16) (*Writer, error) {
	if minor != 1 && minor != 2 {
		return nil, fmt.Errorf("format: write %s: legacy footer version 0.%d: %w", sink.Key, minor, lancer.ErrUnsupported)
	}
	w := &Writer{sink: sink, schema: s, minor: minor, minID: math.MaxInt32, maxID: -1, offsets: []int32{0}}
	var err error
	s.Walk(func(f *schema.Field) {
		w.minID = min(w.minID, f.ID)
		w.maxID = max(w.maxID, f.ID)
		if err == nil {
			err = writable(f)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("format: write %s: %w", sink.Key, err)
	}
	if w.maxID < 0 {
		return nil, fmt.Errorf("format: write %s: a legacy file needs at least one field: %w", sink.Key, lancer.ErrInvalidArgument)
	}
	w.pages = make([][]pageEntry, int(w.maxID-w.minID)+1)
	return w, nil
}

// writable refuses the fields a v1 file cannot hold as lancer writes it.
func writable(f *schema.Field) error {
	switch t := f.Type.(type) {
	case *arrow.NullType, *arrow.ListType, *arrow.LargeListType:
		return nil
	case *arrow.StructType:
		if len(t.Fields()) == 0 {
			return fmt.Errorf("field %q: an empty struct has no page in a legacy file: %w", f.Name, lancer.ErrUnsupported)
		}
		return nil
	case *arrow.DictionaryType:
		return fmt.Errorf("field %q: legacy dictionary columns: %w", f.Name, lancer.ErrUnsupported)
	}
	if _, ok := arrays.BinaryType(f.Type); ok {
		return nil
	}
	if _, _, ok := FixedStride(f.Type); ok {
		return nil
	}
	return fmt.Errorf("field %q: %s in a legacy file: %w", f.Name, f.Type, lancer.ErrUnsupported)
}

// Fields returns the ids of every field of the file, ascending: what
// DataFile.fields records for a v1 file (which has no column indices).
func (w *Writer) Fields() []int32 {
	var ids []int32
	w.schema.Walk(func(f *schema.Field) { ids = append(ids, f.ID) })
	slices.Sort(ids)
	return ids
}

// Write appends the rows of cols (the schema's top-level fields in order)
// as batches of at most MaxRowsPerGroup rows.
func (w *Writer) Write(cols []arrow.Array, rows int) error {
	for start := 0; start < rows; start += MaxRowsPerGroup {
		end := min(start+MaxRowsPerGroup, rows)
		if uint64(w.offsets[len(w.offsets)-1])+uint64(end-start) > math.MaxInt32 {
			return fmt.Errorf("more than 2^31 rows in one legacy file: %w", lancer.ErrInvalidArgument)
		}
		batch := len(w.offsets) - 1
		for i, f := range w.schema.Fields {
			col := array.NewSlice(cols[i], int64(start), int64(end))
			err := w.writeArray(f, col, batch)
			col.Release()
			if err != nil {
				return fmt.Errorf("field %q: %w", f.Name, err)
			}
		}
		w.offsets = append(w.offsets, w.offsets[len(w.offsets)-1]+int32(end-start))
	}
	return nil
}

func (w *Writer) setPage(id int32, batch int, p pageEntry) {
	row := &w.pages[id-w.minID]
	for len(*row) <= batch {
		*row = append(*row, pageEntry{})
	}
	(*row)[batch] = p
}

// writeArray writes the page (and the pages of the children) of field f
// for one batch.
func (w *Writer) writeArray(f *schema.Field, a arrow.Array, batch int) error {
	n := uint64(a.Len())
	switch t := f.Type.(type) {
	case *arrow.NullType:
		w.setPage(f.ID, batch, pageEntry{w.sink.Pos, n})
		return nil
	case *arrow.StructType:
		s := a.(*array.Struct)
		for i, c := range f.Children {
			if err := w.writeArray(c, s.Field(i), batch); err != nil {
				return err
			}
		}
		return nil // structs have no page of their own
	case *arrow.ListType, *arrow.LargeListType:
		return w.writeList(f, a, batch, t.ID() == arrow.LARGE_LIST)
	}
	if _, ok := arrays.BinaryType(f.Type); ok {
		return w.writeBinary(f, a, batch)
	}
	pos := w.sink.Pos
	if err := w.writeFixed(a); err != nil {
		return err
	}
	w.setPage(f.ID, batch, pageEntry{pos, n})
	return nil
}

// writeFixed writes the values of a fixed-stride array back to back:
// booleans as an LSB-first bitmap, fixed-size lists as their items. The
// slots of nulls hold whatever the array holds there (v1 stores no
// validity).
func (w *Writer) writeFixed(a arrow.Array) error {
	switch t := a.DataType().(type) {
	case *arrow.FixedSizeListType:
		l := a.(*array.FixedSizeList)
		size := int64(t.Len())
		off := int64(l.Data().Offset())
		items := array.NewSlice(l.ListValues(), off*size, (off+int64(a.Len()))*size)
		defer items.Release()
		return w.writeFixed(items)
	case *arrow.BooleanType:
		b := a.(*array.Boolean)
		out := make([]byte, (a.Len()+7)/8)
		for i := range a.Len() {
			if b.Value(i) {
				out[i/8] |= 1 << (i % 8)
			}
		}
		return w.sink.WriteRaw(out)
	case arrow.FixedWidthDataType:
		width := t.BitWidth() / 8
		buf, off := arrays.FixedBuffer(a)
		need := (off + a.Len()) * width
		if len(buf) < need {
			// An array without a values buffer (all null, length 0).
			full := make([]byte, a.Len()*width)
			copy(full, buf[min(off*width, len(buf)):])
			return w.sink.WriteRaw(full)
		}
		return w.sink.WriteRaw(buf[off*width : need])
	}
	return fmt.Errorf("%s values in a legacy plain page: %w", a.DataType(), lancer.ErrUnsupported)
}

// writeBinary writes the value bytes, then len+1 absolute file positions of
// the value boundaries; the page points at the positions. A null is written
// as a zero-length value, which Lance reads back as null in a nullable
// field.
func (w *Writer) writeBinary(f *schema.Field, a arrow.Array, batch int) error {
	start := w.sink.Pos
	positions := make([]byte, 0, 8*(a.Len()+1))
	positions = binary.LittleEndian.AppendUint64(positions, start)
	at := start
	value := func(i int) []byte {
		switch v := a.(type) {
		case *array.String:
			return []byte(v.Value(i))
		case *array.LargeString:
			return []byte(v.Value(i))
		case *array.Binary:
			return v.Value(i)
		case *array.LargeBinary:
			return v.Value(i)
		}
		return nil
	}
	for i := range a.Len() {
		if a.IsValid(i) {
			b := value(i)
			if err := w.sink.WriteRaw(b); err != nil {
				return err
			}
			at += uint64(len(b))
		}
		positions = binary.LittleEndian.AppendUint64(positions, at)
	}
	pos := w.sink.Pos
	if err := w.sink.WriteRaw(positions); err != nil {
		return err
	}
	w.setPage(f.ID, batch, pageEntry{pos, uint64(a.Len())})
	return nil
}

// writeList writes the rows+1 offsets (i32, or i64 for large lists) rebased
// to start at 0 as a plain page, then the items the batch's lists span as
// the child's page of the same batch.
func (w *Writer) writeList(f *schema.Field, a arrow.Array, batch int, large bool) error {
	if len(f.Children) != 1 {
		return fmt.Errorf("list field with %d children: %w", len(f.Children), lancer.ErrInvalidArgument)
	}
	var (
		first, last int64
		offsetAt    func(i int) int64
		values      arrow.Array
	)
	// Offsets() and ListValues() are the unsliced buffers: the array's
	// own offsets start at its data offset.
	at := a.Data().Offset()
	if large {
		l := a.(*array.LargeList)
		offs := l.Offsets()
		offsetAt = func(i int) int64 { return offs[at+i] }
		values = l.ListValues()
	} else {
		l := a.(*array.List)
		offs := l.Offsets()
		offsetAt = func(i int) int64 { return int64(offs[at+i]) }
		values = l.ListValues()
	}
	first, last = offsetAt(0), offsetAt(a.Len())
	var out []byte
	for i := 0; i <= a.Len(); i++ {
		rel := offsetAt(i) - first
		if large {
			out = binary.LittleEndian.AppendUint64(out, uint64(rel))
		} else {
			out = binary.LittleEndian.AppendUint32(out, uint32(rel))
		}
	}
	pos := w.sink.Pos
	if err := w.sink.WriteRaw(out); err != nil {
		return err
	}
	w.setPage(f.ID, batch, pageEntry{pos, uint64(a.Len() + 1)})
	items := array.NewSlice(values, first, last)
	defer items.Release()
	return w.writeArray(f.Children[0], items, batch)
}

// Finish writes the page table, the schema, the metadata and the footer,
// and returns the number of rows written. The caller closes the sink's
// writer.
func (w *Writer) Finish() (uint64, error) {
	batches := len(w.offsets) - 1
	tablePos := w.sink.Pos
	table := make([]byte, 0, 16*len(w.pages)*batches)
	for _, row := range w.pages {
		for b := range batches {
			var p pageEntry
			if b < len(row) {
				p = row[b]
			}
			table = binary.LittleEndian.AppendUint64(table, p.Pos)
			table = binary.LittleEndian.AppendUint64(table, p.Length)
		}
	}
	if err := w.sink.WriteRaw(table); err != nil {
		return 0, err
	}
	// The schema goes in a lance.table.Manifest, of which it fills fields
	// 1 and 5: the wire layout of a lance.file.Schema.
	fields, md := schemaproto.Encode(withEncodings(w.schema))
	manifestPos, err := w.writeMessage(&filepb.Schema{Fields: fields, Metadata: md})
	if err != nil {
		return 0, err
	}
	var offsets []int32
	if batches > 0 {
		offsets = w.offsets
	}
	metaPos, err := w.writeMessage(&filepb.Metadata{BatchOffsets: offsets, PageTablePosition: tablePos, ManifestPosition: manifestPos})
	if err != nil {
		return 0, err
	}
	footer := binary.LittleEndian.AppendUint64(nil, metaPos)
	footer = binary.LittleEndian.AppendUint16(footer, 0)
	footer = binary.LittleEndian.AppendUint16(footer, w.minor)
	footer = append(footer, fileio.Magic...)
	if err := w.sink.WriteRaw(footer); err != nil {
		return 0, err
	}
	return uint64(w.offsets[len(w.offsets)-1]), nil
}

// writeMessage writes a u32-length-prefixed protobuf message and returns
// where it starts.
func (w *Writer) writeMessage(m proto.Message) (uint64, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return 0, err
	}
	pos := w.sink.Pos
	if err := w.sink.WriteRaw(binary.LittleEndian.AppendUint32(nil, uint32(len(b)))); err != nil {
		return 0, err
	}
	return pos, w.sink.WriteRaw(b)
}

// withEncodings returns s with the encoding hint Lance gives each field of
// a v1 file where s records none: plain for fixed-stride values and list
// offsets, var-binary for strings and binaries.
func withEncodings(s *schema.Schema) *schema.Schema {
	needs := false
	s.Walk(func(f *schema.Field) { needs = needs || f.Encoding == schema.EncodingNone })
	if !needs {
		return s
	}
	out := &schema.Schema{Fields: make([]*schema.Field, len(s.Fields)), Metadata: s.Metadata}
	for i, f := range s.Fields {
		out.Fields[i] = f.Clone()
	}
	out.Walk(func(f *schema.Field) {
		if f.Encoding != schema.EncodingNone {
			return
		}
		switch f.Type.ID() {
		case arrow.LIST, arrow.LARGE_LIST:
			f.Encoding = schema.EncodingPlain
		case arrow.STRUCT, arrow.NULL:
		default:
			if _, ok := arrays.BinaryType(f.Type); ok {
				f.Encoding = schema.EncodingVarBinary
			} else if _, _, ok := FixedStride(f.Type); ok {
				f.Encoding = schema.EncodingPlain
			}
		}
	})
	return out
}
