package legacy

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/internal/arrays"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/filepb"
	"github.com/lancerdb/lancer/internal/schemaproto"
)

// Legacy (v1) data files: table format 0.1, footer version 0.1 or 0.2.
//
// # Layout
//
// Lance's v1 writer appends one page per field and write batch, then the
// tables that locate them:
//
//	pages of batch 0, field by field in schema order, then of batch 1, ...
//	page table: (max−min+1) × batches × (i64 position, i64 length),
//	            field-major: entry (id−min)·batches + batch
//	[statistics pages and their page table]       (ignored by lancer)
//	dictionary values of dictionary fields        (located by Field.dictionary)
//	u32 length + lance.table.Manifest             (only fields and schema metadata)
//	u32 length + lance.file.Metadata              (manifest_position,
//	                                               batch_offsets, page_table_position)
//	footer (16 B): u64 metadata position | u16 0 | u16 minor | "LANC"
//
// min and max are the smallest and largest field ids of the file's schema.
// batch_offsets are cumulative row counts starting with 0, so batch b holds
// rows [offsets[b], offsets[b+1]). A page's length counts the values in it:
//
//   - fixed-stride types (numbers, dates, times, decimals, fixed-size binary,
//     fixed-size lists of those): the values back to back; booleans as an
//     LSB-first bitmap. length = rows (a fixed-size list's length counts
//     lists, not items).
//   - utf8/binary (large or not): the value bytes, then length+1 i64
//     absolute file positions of the value boundaries. The page position
//     points at the positions, not at the bytes.
//   - lists: a page of length = rows+1 offsets (i32 for list, i64 for
//     large_list) into the child field's page of the same batch; the offsets
//     need not start at 0.
//   - dictionaries: the indices, as plain integers of the index type. The
//     values are stored once per file: Field.dictionary gives the position
//     and count of a values page encoded like a page of the value type.
//   - structs have no page (0, 0); their members have their own.
//   - null-type fields have a page of length = rows and no bytes.
//
// # Lossy by design
//
// v1 stores no validity. Lance reads a null primitive back as whatever the
// writer left in the slot (0 from Arrow builders), a null list or struct as
// an empty list or a struct of such values, and a zero-length utf8 or binary
// value as null when its field is nullable (and as "" when it is not).
// Dictionary values are read as nullable, so an empty dictionary string
// reads as null. This reader returns exactly what Lance returns, which is
// what the fixtures' expected rows record.

// Reader is an open v1 file: the file and its parsed metadata.
type Reader struct {
	*fileio.File
	Legacy *File
}

// NumColumns counts the file's physical columns (legacyFile.numColumns).
func (r *Reader) NumColumns() int { return r.Legacy.numColumns() }

// File is the parsed metadata of a v1 file.
type File struct {
	// batchOffsets[b] is the first row of batch b; the last entry is the
	// number of rows. Empty when the file has no batches.
	batchOffsets []uint64
	// minFieldID is the field id of the page table's first row of entries;
	// numFieldIDs is how many field ids it covers.
	minFieldID  int32
	numFieldIDs int
	// pages is the page table, field-major: pages[(id−minFieldID)·numBatches + batch].
	pages []pageEntry
	// dictionaries holds the values of each dictionary field, by field id.
	// They wrap Go memory and live as long as the Reader.
	dictionaries map[int32]arrow.Array
}

// pageEntry is one page table entry: where the page starts and how many
// values it holds.
type pageEntry struct {
	Pos, Length uint64
}

// NumBatches returns how many write batches the file holds.
func (l *File) NumBatches() int {
	if len(l.batchOffsets) == 0 {
		return 0
	}
	return len(l.batchOffsets) - 1
}

// pageOf returns the page of field id in batch, or false when the page table
// has no entry for the id.
func (l *File) pageOf(id int32, batch int) (pageEntry, bool) {
	i := int64(id) - int64(l.minFieldID)
	if i < 0 || i >= int64(l.numFieldIDs) || batch < 0 || batch >= l.NumBatches() {
		return pageEntry{}, false
	}
	return l.pages[int(i)*l.NumBatches()+batch], true
}

// numColumns counts the field ids that have at least one page, which is
// every field except structs.
func (l *File) numColumns() int {
	nb := l.NumBatches()
	count := 0
	for f := 0; f < l.numFieldIDs; f++ {
		for b := 0; b < nb; b++ {
			if p := l.pages[f*nb+b]; p != (pageEntry{}) {
				count++
				break
			}
		}
	}
	return count
}

// Open parses the footer and metadata of a v1 file; tail holds the
// last bytes of the file.
func (r *Reader) Open(ctx context.Context, tail []byte) error {
	footerPos := uint64(r.Size) - fileio.LegacyFooterSize
	metaPos := binary.LittleEndian.Uint64(tail[len(tail)-fileio.LegacyFooterSize:])
	var md filepb.Metadata
	if err := r.readLegacyMessage(ctx, tail, metaPos, footerPos, "metadata", &md); err != nil {
		return err
	}
	l := &File{}
	if err := r.parseBatchOffsets(l, md.GetBatchOffsets()); err != nil {
		return err
	}
	r.NumRows = 0
	if n := len(l.batchOffsets); n > 0 {
		r.NumRows = l.batchOffsets[n-1]
	}

	// The manifest always precedes the metadata; 0 means the writer kept the
	// schema elsewhere (only Lance's own tests write such files).
	manifestPos := md.GetManifestPosition()
	if manifestPos == 0 {
		return fmt.Errorf("format: %s: legacy file does not store its own schema (manifest_position 0): %w", r.Key, lancer.ErrUnsupported)
	}
	// The schema is stored as a lance.table.Manifest message; its fields
	// (1) and schema metadata (5) have the wire layout of a
	// lance.file.Schema, which is all a data file reader needs of it (the
	// table protobufs are dataset/manifest's).
	var manifest filepb.Schema
	if err := r.readLegacyMessage(ctx, tail, manifestPos, metaPos, "schema manifest", &manifest); err != nil {
		return err
	}
	fileSchema, err := schemaproto.Decode(manifest.GetFields(), manifest.GetMetadata())
	if err != nil {
		return fmt.Errorf("format: %s: file schema: %w", r.Key, err)
	}
	r.Schema = fileSchema

	if err := r.readLegacyPageTable(ctx, tail, l, md.GetPageTablePosition(), footerPos); err != nil {
		return err
	}
	if err := r.readLegacyDictionaries(ctx, tail, l); err != nil {
		return err
	}
	r.Legacy = l
	// What the Reader keeps: the schema and metadata messages (read from
	// manifestPos to the footer), the page table and the dictionaries.
	r.MetadataBytes = int64(uint64(r.Size)-manifestPos) + 16*int64(len(l.pages))
	for _, d := range l.dictionaries {
		r.MetadataBytes += arrayBytes(d.Data())
	}
	return nil
}

// arrayBytes sums the lengths of the buffers of d and its children.
func arrayBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += arrayBytes(c)
	}
	return n
}

// readLegacyMessage reads a u32-length-prefixed protobuf message at pos
// that must end by limit.
func (r *Reader) readLegacyMessage(ctx context.Context, tail []byte, pos, limit uint64, what string, msg proto.Message) error {
	if pos > limit || limit-pos < 4 {
		return r.Corruptf("%s position %d leaves no room for its length before %d", what, pos, limit)
	}
	lenBytes, err := r.ReadWithTail(ctx, tail, pos, 4)
	if err != nil {
		return err
	}
	n := uint64(binary.LittleEndian.Uint32(lenBytes))
	if n > limit-pos-4 {
		return r.Corruptf("%s at %d of %d bytes runs past %d", what, pos, n, limit)
	}
	b, err := r.ReadWithTail(ctx, tail, pos+4, n)
	if err != nil {
		return err
	}
	if err := proto.Unmarshal(b, msg); err != nil {
		return r.Corruptf("%s at %d: %v", what, pos, err)
	}
	return nil
}

// parseBatchOffsets checks that the cumulative row counts start at 0 and
// never decrease.
func (r *Reader) parseBatchOffsets(l *File, offsets []int32) error {
	if len(offsets) == 0 {
		return nil
	}
	if offsets[0] != 0 {
		return r.Corruptf("batch offsets start at %d, want 0", offsets[0])
	}
	l.batchOffsets = make([]uint64, len(offsets))
	for i, o := range offsets {
		if i > 0 && o < offsets[i-1] {
			return r.Corruptf("batch offset %d (%d) is below the one before it (%d)", i, o, offsets[i-1])
		}
		l.batchOffsets[i] = uint64(o)
	}
	return nil
}

// readLegacyPageTable loads the page table, which covers the field ids
// min..max of the file's schema for every batch.
func (r *Reader) readLegacyPageTable(ctx context.Context, tail []byte, l *File, pos, limit uint64) error {
	minID, maxID := int32(math.MaxInt32), int32(-1)
	r.Schema.Walk(func(f *schema.Field) {
		minID = min(minID, f.ID)
		maxID = max(maxID, f.ID)
	})
	nb := uint64(l.NumBatches())
	if maxID < 0 || nb == 0 {
		return nil // nothing to read: no fields or no batches
	}
	ids := uint64(maxID) - uint64(minID) + 1
	hi, entries := bits.Mul64(ids, nb)
	if hi != 0 || entries > limit/16 || pos > limit || entries*16 > limit-pos {
		return r.Corruptf("page table at %d for field ids %d..%d × %d batches runs past %d", pos, minID, maxID, nb, limit)
	}
	b, err := r.ReadWithTail(ctx, tail, pos, entries*16)
	if err != nil {
		return err
	}
	l.minFieldID, l.numFieldIDs = minID, int(ids)
	l.pages = make([]pageEntry, entries)
	for i := range l.pages {
		l.pages[i] = pageEntry{binary.LittleEndian.Uint64(b[16*i:]), binary.LittleEndian.Uint64(b[16*i+8:])}
	}
	return nil
}

// readLegacyDictionaries loads the values of every dictionary field. Lance
// reads them as a nullable page of the value type, so empty strings among
// them become nulls.
func (r *Reader) readLegacyDictionaries(ctx context.Context, tail []byte, l *File) error {
	var dictFields []*schema.Field
	r.Schema.Walk(func(f *schema.Field) {
		if f.Type.ID() == arrow.DICTIONARY {
			dictFields = append(dictFields, f)
		}
	})
	if len(dictFields) == 0 {
		return nil
	}
	l.dictionaries = make(map[int32]arrow.Array, len(dictFields))
	for _, f := range dictFields {
		dt := f.Type.(*arrow.DictionaryType)
		loc := f.Dictionary
		if loc == nil {
			return r.Corruptf("dictionary field %q (id %d) does not say where its values are", f.Name, f.ID)
		}
		if loc.Offset < 0 || loc.Length < 0 {
			return r.Corruptf("dictionary field %q (id %d) has values at %d, count %d", f.Name, f.ID, loc.Offset, loc.Length)
		}
		page := pageEntry{uint64(loc.Offset), uint64(loc.Length)}
		valueField := &schema.Field{ID: f.ID, Name: f.Name, Type: dt.ValueType, Nullable: true}
		s := newLegacyScan(r, nil)
		// Lance writes the values just before the schema, so they are
		// usually in the tail already read.
		s.spans = []legacySpan{{uint64(r.Size) - uint64(len(tail)), tail}}
		var node legacyNode
		var err error
		_, isBinary := arrays.BinaryType(dt.ValueType)
		switch {
		case isBinary:
			node, err = s.binaryNode(valueField, page, 0, page.Length)
		case arrow.IsInteger(dt.ValueType.ID()):
			node, err = s.plainNode(valueField, page, 0, page.Length)
		default:
			return fmt.Errorf("format: %s: dictionary field %q (id %d): legacy dictionaries of %s values: %w",
				r.Key, f.Name, f.ID, dt.ValueType, lancer.ErrUnsupported)
		}
		if err != nil {
			return fmt.Errorf("%w (dictionary values)", err)
		}
		if err := s.run(ctx); err != nil {
			return err
		}
		// Built on Go memory, not r.mem: the values outlive every cursor and
		// the Reader has no Close to release them.
		values, err := node.build(nil)
		if err != nil {
			return err
		}
		l.dictionaries[f.ID] = values
	}
	return nil
}
