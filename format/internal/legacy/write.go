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
// optional: readers that find none scan). A dictionary field's pages hold
// keys into the dataset's dictionary (NewWriter's dicts), which the file
// stores as its own copy: Lance 12 decodes every file's keys with the
// manifest's values, so a file keyed into its own values would read
// wrong in Lance as soon as they differ from the dataset's.
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
	// dicts are the values each dictionary field's keys point into.
	dicts map[int32]*schema.DictionaryValues
}

// NewWriter starts a v1 file for rows of s on sink (whose Out is open).
// dicts holds, by field id, the values of every dictionary field of s (the
// dataset's, from its manifest).
func NewWriter(sink *fileio.Sink, s *schema.Schema, minor uint16, dicts map[int32]*schema.DictionaryValues) (*Writer, error) {
	if minor != 1 && minor != 2 {
		return nil, fmt.Errorf("format: write %s: legacy footer version 0.%d: %w", sink.Key, minor, lancer.ErrUnsupported)
	}
	w := &Writer{sink: sink, schema: s, minor: minor, minID: math.MaxInt32, maxID: -1, offsets: []int32{0}, dicts: dicts}
	var err error
	s.Walk(func(f *schema.Field) {
		w.minID = min(w.minID, f.ID)
		w.maxID = max(w.maxID, f.ID)
		if err == nil {
			err = writable(f)
		}
		if err == nil && f.Type.ID() == arrow.DICTIONARY && dicts[f.ID] == nil {
			err = fmt.Errorf("field %q: a legacy dictionary column without the dataset's dictionary: %w", f.Name, lancer.ErrUnsupported)
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
		_, binaryValues := arrays.BinaryType(t.ValueType)
		if !arrow.IsInteger(t.IndexType.ID()) || !(binaryValues || arrow.IsInteger(t.ValueType.ID())) {
			// What Lance's legacy reader and writer take.
			return fmt.Errorf("field %q: a legacy dictionary of %s keyed by %s: %w", f.Name, t.ValueType, t.IndexType, lancer.ErrUnsupported)
		}
		return nil
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
	case *arrow.DictionaryType:
		return w.writeDictionaryKeys(f, t, a, batch)
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

// writeDictionaryKeys writes the keys of a's values in the dataset's
// dictionary as a plain page of the index type; a null's slot holds key 0
// (v1 stores no validity). A value the dictionary lacks is refused: Lance
// commits keep the manifest's values as they are, so a key past them would
// be out of range for Lance.
func (w *Writer) writeDictionaryKeys(f *schema.Field, t *arrow.DictionaryType, a arrow.Array, batch int) error {
	da, ok := a.(*array.Dictionary)
	if !ok {
		return fmt.Errorf("a %s array for a dictionary field: %w", a.DataType(), lancer.ErrInvalidArgument)
	}
	dict := w.dicts[f.ID]
	values := da.Dictionary()
	width := t.IndexType.(arrow.FixedWidthDataType).BitWidth() / 8
	out := make([]byte, 0, a.Len()*width)
	var key [8]byte
	for i := range a.Len() {
		k := 0
		if da.IsValid(i) {
			v, err := dictionaryValueBytes(values, da.GetValueIndex(i))
			if err != nil {
				return err
			}
			var found bool
			if k, found = dict.Key(v); !found {
				return fmt.Errorf("row %d: value %q is not in the dataset's dictionary of %d values (lancer writes no new dictionary values into a legacy dataset): %w",
					i, v, len(dict.Values), lancer.ErrUnsupported)
			}
		}
		binary.LittleEndian.PutUint64(key[:], uint64(k))
		out = append(out, key[:width]...)
	}
	pos := w.sink.Pos
	if err := w.sink.WriteRaw(out); err != nil {
		return err
	}
	w.setPage(f.ID, batch, pageEntry{pos, uint64(a.Len())})
	return nil
}

// dictionaryValueBytes returns value i of a dictionary's values as
// DictionaryValues hold it.
func dictionaryValueBytes(values arrow.Array, i int) ([]byte, error) {
	switch v := values.(type) {
	case *array.String:
		return []byte(v.Value(i)), nil
	case *array.LargeString:
		return []byte(v.Value(i)), nil
	case *array.Binary:
		return v.Value(i), nil
	case *array.LargeBinary:
		return v.Value(i), nil
	}
	if t, ok := values.DataType().(arrow.FixedWidthDataType); ok && arrow.IsInteger(values.DataType().ID()) {
		width := t.BitWidth() / 8
		buf, off := arrays.FixedBuffer(values)
		return buf[(off+i)*width : (off+i+1)*width], nil
	}
	return nil, fmt.Errorf("dictionary values of %s: %w", values.DataType(), lancer.ErrUnsupported)
}

// writeDictionaries writes the values of every dictionary field as a
// legacy page of the value type (the layout readLegacyDictionaries reads)
// and returns the schema with each field's Dictionary pointing at them.
func (w *Writer) writeDictionaries() (*schema.Schema, error) {
	has := false
	w.schema.Walk(func(f *schema.Field) { has = has || f.Type.ID() == arrow.DICTIONARY })
	if !has {
		return w.schema, nil
	}
	out := &schema.Schema{Fields: make([]*schema.Field, len(w.schema.Fields)), Metadata: w.schema.Metadata}
	for i, f := range w.schema.Fields {
		out.Fields[i] = f.Clone()
	}
	var err error
	out.Walk(func(f *schema.Field) {
		if err != nil || f.Type.ID() != arrow.DICTIONARY {
			return
		}
		dict := w.dicts[f.ID]
		_, binaryValues := arrays.BinaryType(f.Type.(*arrow.DictionaryType).ValueType)
		var page []byte
		at := w.sink.Pos
		if binaryValues {
			positions := binary.LittleEndian.AppendUint64(nil, at)
			for _, v := range dict.Values {
				page = append(page, v...)
				positions = binary.LittleEndian.AppendUint64(positions, at+uint64(len(page)))
			}
			at += uint64(len(page))
			page = append(page, positions...)
		} else {
			for _, v := range dict.Values {
				page = append(page, v...)
			}
		}
		if err = w.sink.WriteRaw(page); err == nil {
			f.Dictionary = &schema.Dictionary{Offset: int64(at), Length: int64(len(dict.Values))}
			f.Encoding = schema.EncodingDictionary
		}
	})
	return out, err
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
	// The dictionaries follow the page table, as in Lance's files.
	withDicts, err := w.writeDictionaries()
	if err != nil {
		return 0, err
	}
	// The schema goes in a lance.table.Manifest, of which it fills fields
	// 1 and 5: the wire layout of a lance.file.Schema.
	fields, md := schemaproto.Encode(withEncodings(withDicts))
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
