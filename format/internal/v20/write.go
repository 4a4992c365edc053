package v20

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/encpb"
)

// Writing files of version 2.0 (docs/spec/lance-format.md §7.2): the columns and page encodings
// Lance's default 2.0 writer emits, so that Lance reads what lancer writes
// the way it reads its own files.
//
// Every field gets columns in pre-order, as the reader expects (v20.go):
//
//   - a leaf (numbers, strings, fixed-size lists, dictionaries, a packed
//     struct) is one column of values, paged on its own;
//   - a legacy blob is one column of {position, size} descriptors, the
//     bytes themselves written out of line as they arrive;
//   - a struct has a header column holding one SimpleStruct page (no
//     buffers, the struct's length) written when the file is finished,
//     followed by its members' columns. 2.0 cannot store struct validity,
//     so a struct array with nulls is refused, as Lance refuses it;
//   - a list has an offsets column followed by its item field's columns,
//     which count items. Whenever an offsets page is written, the items
//     buffered so far are written too (all item columns), so an item page
//     never straddles two offsets pages: Lance's reader cannot schedule
//     that.
//
// Each column buffers values until about WriterOptions.PageSize bytes of
// input, then encodes them into a page (write_values.go); a large
// batch is cut into several pages. Dictionary columns with indices of 16
// bits or less stay one page. Fields may ask for compression of their
// strings with lance-encoding:compression (zstd, lz4, fsst), as in Lance.
// Maps and blob v2 fields cannot be written to 2.0 files.

// v20Writer encodes one field, and its descendants, into its columns.
type v20Writer interface {
	// write buffers arr, values of the field's value space (rows for a
	// top-level field, items for a list's item field), writing pages as
	// columns fill up.
	write(arr arrow.Array) error
	// flush writes what every column of the field buffers.
	flush() error
	// finish flushes, then writes the pages written once per file.
	finish() error
}

// NewFieldWriter returns the 2.0 encoder of field f, whose first column
// will be firstCol.
func NewFieldWriter(w *fileio.Sink, f *schema.Field, firstCol int) (fileio.FieldWriter, error) {
	if firstCol != len(w.Columns) {
		return nil, fmt.Errorf("field %q starts at column %d, the file has %d: %w", f.Name, firstCol, len(w.Columns), lancer.ErrInvalidArgument)
	}
	vw, err := newV20Writer(w, f)
	if err != nil {
		return nil, err
	}
	return v20FieldWriter{vw}, nil
}

// v20FieldWriter adapts a top-level v20Writer to fieldWriter. 2.0 fields
// write only to the data file itself, so the context serves to stop
// between batches.
type v20FieldWriter struct{ v20Writer }

func (f v20FieldWriter) Write(ctx context.Context, arr arrow.Array) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.v20Writer.write(arr)
}

func (f v20FieldWriter) Finish(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return f.v20Writer.finish()
}

// newV20Writer builds the encoder of f, registering its columns in
// pre-order.
func newV20Writer(w *fileio.Sink, f *schema.Field) (v20Writer, error) {
	if f.Type == nil {
		return nil, fmt.Errorf("field %q (id %d) has no type: %w", f.Name, f.ID, lancer.ErrInvalidArgument)
	}
	switch f.Blob {
	case schema.BlobV2:
		return nil, fmt.Errorf("blob v2 field %q: 2.0 files cannot store blob v2 columns: %w", f.Name, lancer.ErrUnsupported)
	case schema.BlobLegacy:
		if f.Type.ID() != arrow.LARGE_BINARY {
			// As Lance: its blob encoder takes large_binary only.
			return nil, fmt.Errorf("blob field %q is %s, not large_binary: %w", f.Name, f.Type, lancer.ErrUnsupported)
		}
		col := w.AddColumn(f.ID)
		err := w.SetColumnEncoding(col, &encpb.ColumnEncoding{ColumnEncoding: &encpb.ColumnEncoding_Blob{Blob: &encpb.Blob{
			Inner: &encpb.ColumnEncoding{ColumnEncoding: &encpb.ColumnEncoding_Values{Values: &emptypb.Empty{}}},
		}}})
		if err != nil {
			return nil, err
		}
		return &v20BlobWriter{w: w, col: col}, nil
	}
	switch t := f.Type.(type) {
	case *arrow.MapType:
		return nil, fmt.Errorf("map field %q: Lance cannot write maps to 2.0 files: %w", f.Name, lancer.ErrUnsupported)
	case *arrow.StructType:
		if f.Packed() {
			page, err := newV20PackedValues(f, t)
			if err != nil {
				return nil, err
			}
			return &v20LeafWriter{w: w, col: w.AddColumn(f.ID), page: page}, nil
		}
		if len(f.Children) != t.NumFields() {
			return nil, fmt.Errorf("struct field %q has %d children for %d members: %w", f.Name, len(f.Children), t.NumFields(), lancer.ErrInvalidArgument)
		}
		s := &v20StructWriter{w: w, col: w.AddColumn(f.ID), field: f}
		for _, c := range f.Children {
			cw, err := newV20Writer(w, c)
			if err != nil {
				return nil, err
			}
			s.children = append(s.children, cw)
		}
		return s, nil
	case *arrow.ListType, *arrow.LargeListType:
		if len(f.Children) != 1 {
			return nil, fmt.Errorf("list field %q has %d children: %w", f.Name, len(f.Children), lancer.ErrInvalidArgument)
		}
		l := &v20ListWriter{w: w, col: w.AddColumn(f.ID)}
		items, err := newV20Writer(w, f.Children[0])
		if err != nil {
			return nil, err
		}
		l.items = items
		return l, nil
	}
	page, err := newV20Values(f.Type, true)
	if err != nil {
		return nil, fmt.Errorf("field %q: %w", f.Name, err)
	}
	leaf := &v20LeafWriter{w: w, col: w.AddColumn(f.ID), page: page}
	switch p := page.(type) {
	case *v20BinaryValues:
		p.compressAs(f.Metadata)
	case *v20DictValues:
		// Readers join the dictionaries of the pages a batch spans; with
		// indices of 16 bits or less the joined dictionary may not fit
		// (Lance's merge is best-effort, arrow-go's refuses a full one),
		// so such a column is one page (unless a list's offsets pages cut
		// it). Its indices take a byte or two a row, its items no more
		// than the index type reaches.
		leaf.onePage = p.keyBits <= 16
	}
	return leaf, nil
}

// v20LeafWriter writes a column of values: pages of what page buffers.
type v20LeafWriter struct {
	w       *fileio.Sink
	col     int
	page    v20Values
	onePage bool // pages end only when flushed (by finish or a list)
}

func (l *v20LeafWriter) write(arr arrow.Array) error {
	limit := l.w.PageSize
	if l.onePage {
		limit = math.MaxInt
	}
	for i, n := 0, arr.Len(); i < n; {
		j := l.page.span(arr, i, n, limit-l.page.size())
		if err := l.page.add(arr, i, j); err != nil {
			return err
		}
		if l.page.size() >= limit {
			if err := l.flush(); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}

func (l *v20LeafWriter) flush() error {
	n := l.page.len()
	if n == 0 {
		return nil
	}
	enc, bufs, err := l.page.encode(nil)
	if err != nil {
		return err
	}
	err = l.w.AddPage(l.col, bufs, enc, uint64(n), 0)
	l.page.reset()
	return err
}

func (l *v20LeafWriter) finish() error { return l.flush() }

// v20StructWriter writes a struct's header column and its members.
type v20StructWriter struct {
	w        *fileio.Sink
	col      int
	field    *schema.Field
	rows     uint64
	children []v20Writer
}

func (s *v20StructWriter) write(arr arrow.Array) error {
	st, ok := arr.(*array.Struct)
	if !ok {
		return fmt.Errorf("struct field %q got a %s array: %w", s.field.Name, arr.DataType(), lancer.ErrInvalidArgument)
	}
	if st.NullN() > 0 {
		return fmt.Errorf("struct field %q has %d null rows; 2.0 files cannot store struct validity (Lance refuses them too): %w",
			s.field.Name, st.NullN(), lancer.ErrUnsupported)
	}
	for i, c := range s.children {
		if err := c.write(st.Field(i)); err != nil {
			return err
		}
	}
	s.rows += uint64(st.Len())
	return nil
}

func (s *v20StructWriter) flush() error {
	for _, c := range s.children {
		if err := c.flush(); err != nil {
			return err
		}
	}
	return nil
}

func (s *v20StructWriter) finish() error {
	header := &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Struct{Struct: &encpb.SimpleStruct{}}}
	if err := s.w.AddPage(s.col, nil, header, s.rows, 0); err != nil {
		return err
	}
	for _, c := range s.children {
		if err := c.finish(); err != nil {
			return err
		}
	}
	return nil
}

// v20ListWriter writes a list's offsets column and hands the items to the
// item field's writer.
type v20ListWriter struct {
	w     *fileio.Sink
	col   int
	items v20Writer
	// The offsets page being built: ends[i] is where list i ends, relative
	// to the page's first item; numItems the items the page covers.
	ends     []uint64
	validity v20Bits
	nulls    int
	numItems uint64
}

func (l *v20ListWriter) write(arr arrow.Array) error {
	list, ok := arr.(array.ListLike)
	if !ok {
		return fmt.Errorf("list column got a %s array: %w", arr.DataType(), lancer.ErrInvalidArgument)
	}
	if n := arr.Len(); n > 0 {
		width := 4
		if arr.DataType().ID() == arrow.LARGE_LIST {
			width = 8
		}
		d := arr.Data()
		if bufs := d.Buffers(); len(bufs) < 2 || bufs[1] == nil || bufs[1].Len() < (d.Offset()+n+1)*width {
			return fmt.Errorf("list array of %d rows without its offsets: %w", n, lancer.ErrInvalidArgument)
		}
	}
	limit := l.w.PageSize
	for i, n := 0, arr.Len(); i < n; {
		j := min(n, i+max(1, (limit-8*len(l.ends))/8))
		first, _ := list.ValueOffsets(i)
		_, last := list.ValueOffsets(j - 1)
		if first < 0 || last < first {
			return fmt.Errorf("list offsets %d..%d of rows %d..%d: %w", first, last, i, j, lancer.ErrInvalidArgument)
		}
		prev := first
		for k := i; k < j; k++ {
			start, end := list.ValueOffsets(k)
			if start != prev || end < start {
				return fmt.Errorf("list %d spans items %d..%d after one ending at %d: %w", k, start, end, prev, lancer.ErrInvalidArgument)
			}
			prev = end
			l.ends = append(l.ends, l.numItems+uint64(end-first))
		}
		l.nulls += l.validity.appendValidity(arr, i, j)
		l.numItems += uint64(last - first)
		if last > first {
			values := list.ListValues()
			if last > int64(values.Len()) {
				return fmt.Errorf("lists end at item %d of %d: %w", last, values.Len(), lancer.ErrInvalidArgument)
			}
			items := array.NewSlice(values, first, last)
			err := l.items.write(items)
			items.Release()
			if err != nil {
				return err
			}
		}
		if 8*len(l.ends) >= limit {
			if err := l.flush(); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}

// flush writes the offsets page and then every item page buffered.
func (l *v20ListWriter) flush() error {
	if n := len(l.ends); n > 0 {
		// A null list stores its end plus the adjustment, one more than
		// any end: the reader tells nulls by value >= adjustment.
		adjustment := l.numItems + 1
		buf := make([]byte, 0, 8*n)
		for i, end := range l.ends {
			if l.nulls > 0 && !l.validity.get(i) {
				end += adjustment
			}
			buf = binary.LittleEndian.AppendUint64(buf, end)
		}
		enc := &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_List{List: &encpb.List{
			Offsets:              v20NoNullsEnc(v20FlatEnc(64, 0)),
			NullOffsetAdjustment: adjustment,
			NumItems:             l.numItems,
		}}}
		if err := l.w.AddPage(l.col, [][]byte{buf}, enc, uint64(n), 0); err != nil {
			return err
		}
		l.ends, l.nulls, l.numItems = l.ends[:0], 0, 0
		l.validity.reset()
	}
	return l.items.flush()
}

func (l *v20ListWriter) finish() error {
	if err := l.flush(); err != nil {
		return err
	}
	return l.items.finish()
}

// v20BlobWriter writes a legacy blob column: each value's bytes go out of
// line into the file as they arrive (64-byte aligned), and the column's
// pages hold a packed {position, size} per row. An empty value is (0, 0),
// a null one (1, 0).
type v20BlobWriter struct {
	w    *fileio.Sink
	col  int
	desc []byte // 16 bytes per row: position, size (little-endian u64s)
}

func (b *v20BlobWriter) write(arr arrow.Array) error {
	bin, ok := arr.(array.BinaryLike)
	if !ok {
		return fmt.Errorf("blob column got a %s array: %w", arr.DataType(), lancer.ErrInvalidArgument)
	}
	values := v20BinaryReader{arr: bin}
	for i := range arr.Len() {
		var pos, size uint64
		switch {
		case arr.IsNull(i):
			pos = 1
		default:
			v, err := values.value(i)
			if err != nil {
				return err
			}
			if len(v) > 0 {
				off, err := b.w.WriteBuffer(v)
				if err != nil {
					return err
				}
				pos, size = off, uint64(len(v))
			}
		}
		b.desc = binary.LittleEndian.AppendUint64(b.desc, pos)
		b.desc = binary.LittleEndian.AppendUint64(b.desc, size)
		if len(b.desc) >= b.w.PageSize {
			if err := b.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *v20BlobWriter) flush() error {
	if len(b.desc) == 0 {
		return nil
	}
	u64 := v20NoNullsEnc(v20FlatEnc(64, 0))
	enc := &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_PackedStruct{PackedStruct: &encpb.PackedStruct{
		Inner:  []*encpb.ArrayEncoding{u64, u64},
		Buffer: &encpb.Buffer{BufferIndex: 0},
	}}}
	err := b.w.AddPage(b.col, [][]byte{b.desc}, enc, uint64(len(b.desc)/16), 0)
	b.desc = b.desc[:0]
	return err
}

func (b *v20BlobWriter) finish() error { return b.flush() }
