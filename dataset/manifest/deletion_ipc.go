package manifest

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/codec"
)

// A strict reader of the one Arrow IPC file shape Lance writes for deletion
// files: schema {row_id: uint32 not null}, record batches of that column,
// buffers raw or compressed (ZSTD, LZ4 frame) as the IPC body compression
// says. It exists because arrow-go's IPC reader trusts the file: a corrupted
// flatbuffer vector length becomes an allocation of that many elements, and
// a Go out-of-memory error cannot be recovered. Here every offset, length
// and count is checked against the file before use, and nothing is
// allocated beyond the row offsets the fragment can hold.
//
// File layout (Arrow columnar format, "IPC File Format"):
//
//	"ARROW1" 2 pad | messages ... | Footer flatbuffer | int32 footer size | "ARROW1"
//
// where each message is [0xFFFFFFFF] int32 size | Message flatbuffer | body,
// and the Footer lists the record batch messages as Blocks
// {offset int64, metaDataLength int32, pad, bodyLength int64}.

const arrowMagic = "ARROW1"

// Flatbuffer field numbers of the Arrow messages read here (Schema.fbs,
// Message.fbs, File.fbs).
const (
	footerSchema        = 1
	footerDictionaries  = 2
	footerRecordBatches = 3

	messageHeaderType = 1
	messageHeader     = 2
	messageBodyLength = 3

	schemaEndianness = 0
	schemaFields     = 1

	fieldName     = 0
	fieldNullable = 1
	fieldTypeType = 2
	fieldType     = 3
	fieldDict     = 4
	fieldChildren = 5

	intBitWidth = 0
	intIsSigned = 1

	recordBatchLength      = 0
	recordBatchNodes       = 1
	recordBatchBuffers     = 2
	recordBatchCompression = 3

	compressionCodec = 0

	headerRecordBatch = 3 // MessageHeader union tag
	typeInt           = 2 // Type union tag
	codecLZ4Frame     = 0
	codecZSTD         = 1
)

// fbTable is a flatbuffer table inside buf, with bounds-checked accessors:
// every failure is an error, never a panic or an allocation.
type fbTable struct {
	buf    []byte
	pos    int // the table's position
	vtable int
	vtSize int
}

var errFlatbuffer = errors.New("malformed flatbuffer")

func readU32(buf []byte, pos int) (uint32, bool) {
	if pos < 0 || pos > len(buf)-4 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(buf[pos:]), true
}

// fbRoot returns the root table of a flatbuffer.
func fbRoot(buf []byte) (fbTable, error) {
	off, ok := readU32(buf, 0)
	if !ok {
		return fbTable{}, errFlatbuffer
	}
	return fbTableAt(buf, int64(off))
}

func fbTableAt(buf []byte, pos int64) (fbTable, error) {
	if pos < 0 || pos > int64(len(buf))-4 {
		return fbTable{}, errFlatbuffer
	}
	soff := int64(int32(binary.LittleEndian.Uint32(buf[pos:])))
	vt := pos - soff
	if vt < 0 || vt > int64(len(buf))-4 {
		return fbTable{}, errFlatbuffer
	}
	vtSize := int(binary.LittleEndian.Uint16(buf[vt:]))
	if vtSize < 4 || vt+int64(vtSize) > int64(len(buf)) {
		return fbTable{}, errFlatbuffer
	}
	return fbTable{buf: buf, pos: int(pos), vtable: int(vt), vtSize: vtSize}, nil
}

// field returns the position of field i's value and whether it is present;
// size is the value's inline size, which must lie inside the buffer.
func (t fbTable) field(i, size int) (int, bool, error) {
	at := 4 + 2*i
	if at+2 > t.vtSize {
		return 0, false, nil
	}
	off := int(binary.LittleEndian.Uint16(t.buf[t.vtable+at:]))
	if off == 0 {
		return 0, false, nil
	}
	p := t.pos + off
	if p+size > len(t.buf) {
		return 0, false, errFlatbuffer
	}
	return p, true, nil
}

func (t fbTable) uint8(i int, def uint8) (uint8, error) {
	p, ok, err := t.field(i, 1)
	if err != nil || !ok {
		return def, err
	}
	return t.buf[p], nil
}

func (t fbTable) int16(i int, def int16) (int16, error) {
	p, ok, err := t.field(i, 2)
	if err != nil || !ok {
		return def, err
	}
	return int16(binary.LittleEndian.Uint16(t.buf[p:])), nil
}

func (t fbTable) int32(i int, def int32) (int32, error) {
	p, ok, err := t.field(i, 4)
	if err != nil || !ok {
		return def, err
	}
	return int32(binary.LittleEndian.Uint32(t.buf[p:])), nil
}

func (t fbTable) int64(i int, def int64) (int64, error) {
	p, ok, err := t.field(i, 8)
	if err != nil || !ok {
		return def, err
	}
	return int64(binary.LittleEndian.Uint64(t.buf[p:])), nil
}

// indirect follows the offset stored in field i.
func (t fbTable) indirect(i int) (int64, bool, error) {
	p, ok, err := t.field(i, 4)
	if err != nil || !ok {
		return 0, ok, err
	}
	return int64(p) + int64(binary.LittleEndian.Uint32(t.buf[p:])), true, nil
}

func (t fbTable) table(i int) (fbTable, bool, error) {
	pos, ok, err := t.indirect(i)
	if err != nil || !ok {
		return fbTable{}, ok, err
	}
	sub, err := fbTableAt(t.buf, pos)
	return sub, err == nil, err
}

// vector returns the position of the first element and the length of the
// vector in field i, checking that n elements of elemSize bytes fit.
func (t fbTable) vector(i, elemSize int) (int, int, error) {
	pos, ok, err := t.indirect(i)
	if err != nil || !ok {
		return 0, 0, err
	}
	if pos < 0 || pos > int64(len(t.buf))-4 {
		return 0, 0, errFlatbuffer
	}
	n := binary.LittleEndian.Uint32(t.buf[pos:])
	start := pos + 4
	if int64(n)*int64(elemSize) > int64(len(t.buf))-start {
		return 0, 0, errFlatbuffer
	}
	return int(start), int(n), nil
}

// vectorTable returns element j of a vector of tables starting at start.
func (t fbTable) vectorTable(start, j int) (fbTable, error) {
	p := start + 4*j
	return fbTableAt(t.buf, int64(p)+int64(binary.LittleEndian.Uint32(t.buf[p:])))
}

func (t fbTable) string(i int) (string, error) {
	start, n, err := t.vector(i, 1)
	if err != nil {
		return "", err
	}
	return string(t.buf[start : start+n]), nil
}

// ipcCorrupt wraps a description of what is wrong with a deletion file.
func ipcCorrupt(format string, args ...any) error {
	return fmt.Errorf("arrow IPC: %s: %w", fmt.Sprintf(format, args...), lancer.ErrCorrupt)
}

// readArrowRowIDs returns the row offsets of a Lance .arrow deletion file.
// maxRows bounds how many a file may hold (the fragment's physical rows).
func readArrowRowIDs(data []byte, maxRows uint64, add func([]uint32)) error {
	const trailer = 4 + len(arrowMagic)
	if len(data) < 8+trailer || string(data[:len(arrowMagic)]) != arrowMagic ||
		string(data[len(data)-len(arrowMagic):]) != arrowMagic {
		return ipcCorrupt("no ARROW1 magic at both ends of %d bytes", len(data))
	}
	footerSize := int64(int32(binary.LittleEndian.Uint32(data[len(data)-trailer:])))
	footerStart := int64(len(data)-trailer) - footerSize
	if footerSize <= 0 || footerStart < 8 {
		return ipcCorrupt("footer of %d bytes does not fit", footerSize)
	}
	footer, err := fbRoot(data[footerStart : len(data)-trailer])
	if err != nil {
		return ipcCorrupt("footer: %v", err)
	}
	schema, ok, err := footer.table(footerSchema)
	if err != nil || !ok {
		return ipcCorrupt("footer has no schema")
	}
	if err := checkRowIDSchema(schema); err != nil {
		return err
	}
	if _, n, err := footer.vector(footerDictionaries, 24); err != nil || n != 0 {
		return ipcCorrupt("dictionaries in a deletion file")
	}
	blocks, nBlocks, err := footer.vector(footerRecordBatches, 24)
	if err != nil {
		return ipcCorrupt("record batch list: %v", err)
	}
	fb := footer.buf
	var total uint64
	for b := 0; b < nBlocks; b++ {
		p := blocks + 24*b
		offset := int64(binary.LittleEndian.Uint64(fb[p:]))
		metaLen := int64(int32(binary.LittleEndian.Uint32(fb[p+8:])))
		bodyLen := int64(binary.LittleEndian.Uint64(fb[p+16:]))
		if offset < 8 || metaLen < 8 || bodyLen < 0 || offset > footerStart ||
			metaLen > footerStart-offset || bodyLen > footerStart-offset-metaLen {
			return ipcCorrupt("record batch %d at %d (+%d, body %d) outside the file", b, offset, metaLen, bodyLen)
		}
		meta := data[offset : offset+metaLen]
		body := data[offset+metaLen : offset+metaLen+bodyLen]
		n, err := readRowIDBatch(meta, body, maxRows-total, add)
		if err != nil {
			return fmt.Errorf("record batch %d: %w", b, err)
		}
		total += n
	}
	return nil
}

// checkRowIDSchema accepts exactly one little-endian column row_id of type
// uint32 without dictionary or children.
func checkRowIDSchema(schema fbTable) error {
	if e, err := schema.int16(schemaEndianness, 0); err != nil || e != 0 {
		return ipcCorrupt("schema is not little-endian")
	}
	fields, n, err := schema.vector(schemaFields, 4)
	if err != nil || n != 1 {
		return ipcCorrupt("schema has %d fields, want one", n)
	}
	f, err := schema.vectorTable(fields, 0)
	if err != nil {
		return ipcCorrupt("schema field: %v", err)
	}
	name, err := f.string(fieldName)
	if err != nil || name != "row_id" {
		return ipcCorrupt("column %q, want row_id", name)
	}
	typ, err := f.uint8(fieldTypeType, 0)
	if err != nil || typ != typeInt {
		return ipcCorrupt("column row_id of type %d, want Int", typ)
	}
	it, ok, err := f.table(fieldType)
	if err != nil || !ok {
		return ipcCorrupt("column row_id has no Int type")
	}
	width, err1 := it.int32(intBitWidth, 0)
	signed, err2 := it.uint8(intIsSigned, 0)
	if err1 != nil || err2 != nil || width != 32 || signed != 0 {
		return ipcCorrupt("column row_id is Int(%d, signed %d), want uint32", width, signed)
	}
	if _, ok, err := f.indirect(fieldDict); err != nil || ok {
		return ipcCorrupt("column row_id is dictionary-encoded")
	}
	if _, n, err := f.vector(fieldChildren, 4); err != nil || n != 0 {
		return ipcCorrupt("column row_id has children")
	}
	return nil
}

// readRowIDBatch decodes one record batch message (meta: the encapsulated
// flatbuffer, body: its body) of at most maxRows rows and passes its values
// to add. It returns the number of rows.
func readRowIDBatch(meta, body []byte, maxRows uint64, add func([]uint32)) (uint64, error) {
	if binary.LittleEndian.Uint32(meta) == 0xFFFFFFFF {
		meta = meta[4:] // continuation marker of the current format
	}
	size := int64(int32(binary.LittleEndian.Uint32(meta)))
	if size <= 0 || size > int64(len(meta))-4 {
		return 0, ipcCorrupt("message of %d bytes in a block of %d", size, len(meta))
	}
	msg, err := fbRoot(meta[4 : 4+size])
	if err != nil {
		return 0, ipcCorrupt("message: %v", err)
	}
	if ht, err := msg.uint8(messageHeaderType, 0); err != nil || ht != headerRecordBatch {
		return 0, ipcCorrupt("message of type %d, want a record batch", ht)
	}
	if bl, err := msg.int64(messageBodyLength, 0); err != nil || bl < 0 || bl > int64(len(body)) {
		return 0, ipcCorrupt("body of %d bytes in a block body of %d", bl, len(body))
	}
	rb, ok, err := msg.table(messageHeader)
	if err != nil || !ok {
		return 0, ipcCorrupt("record batch header missing")
	}
	length, err := rb.int64(recordBatchLength, 0)
	if err != nil || length < 0 || uint64(length) > maxRows {
		return 0, ipcCorrupt("record batch of %d rows, more than the fragment's %d", length, maxRows)
	}
	nodes, nNodes, err := rb.vector(recordBatchNodes, 16)
	if err != nil || nNodes != 1 {
		return 0, ipcCorrupt("%d field nodes, want one", nNodes)
	}
	nodeLen := int64(binary.LittleEndian.Uint64(rb.buf[nodes:]))
	nulls := int64(binary.LittleEndian.Uint64(rb.buf[nodes+8:]))
	if nodeLen != length || nulls != 0 {
		return 0, ipcCorrupt("column of %d rows with %d nulls in a batch of %d rows", nodeLen, nulls, length)
	}
	bufs, nBufs, err := rb.vector(recordBatchBuffers, 16)
	if err != nil || nBufs != 2 {
		return 0, ipcCorrupt("%d buffers, want validity and values", nBufs)
	}
	codec := -1
	if comp, ok, err := rb.table(recordBatchCompression); err != nil {
		return 0, ipcCorrupt("body compression: %v", err)
	} else if ok {
		c, err := comp.uint8(compressionCodec, 0)
		if err != nil || (c != codecLZ4Frame && c != codecZSTD) {
			return 0, ipcCorrupt("unknown body compression codec %d", c)
		}
		codec = int(c)
	}
	// Buffer 1 holds the values; buffer 0 (validity) is ignored, as the
	// node has no nulls.
	p := bufs + 16
	off := int64(binary.LittleEndian.Uint64(rb.buf[p:]))
	n := int64(binary.LittleEndian.Uint64(rb.buf[p+8:]))
	if off < 0 || n < 0 || off > int64(len(body)) || n > int64(len(body))-off {
		return 0, ipcCorrupt("values buffer [%d, +%d) outside a body of %d bytes", off, n, len(body))
	}
	want := 4 * length
	values, err := decompressBuffer(body[off:off+n], codec, want)
	if err != nil {
		return 0, err
	}
	if int64(len(values)) < want {
		return 0, ipcCorrupt("values buffer of %d bytes for %d rows", len(values), length)
	}
	const chunk = 4096
	var rows [chunk]uint32
	for i := int64(0); i < length; {
		k := min(length-i, chunk)
		for j := int64(0); j < k; j++ {
			rows[j] = binary.LittleEndian.Uint32(values[4*(i+j):])
		}
		add(rows[:k])
		i += k
	}
	return uint64(length), nil
}

// decompressBuffer returns a body buffer's bytes: raw without compression;
// with it, an int64 uncompressed length, then either the raw bytes (length
// -1) or a compressed frame of that length. want is the size the caller
// needs; a buffer claiming more than want plus alignment padding is corrupt.
func decompressBuffer(buf []byte, compression int, want int64) ([]byte, error) {
	if compression < 0 || len(buf) == 0 {
		return buf, nil
	}
	if len(buf) < 8 {
		return nil, ipcCorrupt("compressed buffer of %d bytes has no length", len(buf))
	}
	size := int64(binary.LittleEndian.Uint64(buf))
	frame := buf[8:]
	if size == -1 {
		return frame, nil
	}
	if size < 0 || size > want+64 {
		return nil, ipcCorrupt("buffer claims %d uncompressed bytes, at most %d expected", size, want+64)
	}
	scheme := codec.CompressionLZ4
	if compression == codecZSTD {
		scheme = codec.CompressionZstd
	}
	out, err := codec.DecompressFrame(scheme, frame, int(size))
	if err != nil {
		return nil, fmt.Errorf("arrow IPC: %w", err)
	}
	return out, nil
}
