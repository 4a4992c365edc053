package manifest

import (
	"encoding/binary"
	"fmt"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/codec"
	"github.com/lancerdb/lancer/internal/ipcwalk"
)

// A strict reader of the one Arrow IPC file shape Lance writes for deletion
// files: schema {row_id: uint32 not null}, record batches of that column,
// buffers raw or compressed (ZSTD, LZ4 frame) as the IPC body compression
// says. It exists because arrow-go's IPC reader trusts the file: a corrupted
// flatbuffer vector length becomes an allocation of that many elements, and
// a Go out-of-memory error cannot be recovered. Here every offset, length
// and count is checked against the file before use (the flatbuffers are
// read with internal/ipcwalk), and nothing is allocated beyond the row
// offsets the fragment can hold.
//
// File layout (Arrow columnar format, "IPC File Format"):
//
//	"ARROW1" 2 pad | messages ... | Footer flatbuffer | int32 footer size | "ARROW1"
//
// where each message is [0xFFFFFFFF] int32 size | Message flatbuffer | body,
// and the Footer lists the record batch messages as Blocks
// {offset int64, metaDataLength int32, pad, bodyLength int64}.

const arrowMagic = "ARROW1"

// The body compression codecs decompressBuffer decodes.
const (
	codecLZ4Frame = ipcwalk.CodecLZ4Frame
	codecZSTD     = ipcwalk.CodecZSTD
)

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
	footer, err := ipcwalk.Root(data[footerStart : len(data)-trailer])
	if err != nil {
		return ipcCorrupt("footer: %v", err)
	}
	schema, ok, err := footer.Table(ipcwalk.FooterSchema)
	if err != nil || !ok {
		return ipcCorrupt("footer has no schema")
	}
	if err := checkRowIDSchema(schema); err != nil {
		return err
	}
	if _, n, err := footer.Vector(ipcwalk.FooterDictionaries, ipcwalk.BlockSize); err != nil || n != 0 {
		return ipcCorrupt("dictionaries in a deletion file")
	}
	blocks, nBlocks, err := footer.Vector(ipcwalk.FooterRecordBatches, ipcwalk.BlockSize)
	if err != nil {
		return ipcCorrupt("record batch list: %v", err)
	}
	fb := footer.Bytes()
	var total uint64
	for b := 0; b < nBlocks; b++ {
		p := blocks + ipcwalk.BlockSize*b
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
func checkRowIDSchema(schema ipcwalk.Table) error {
	if e, err := schema.Int16(ipcwalk.SchemaEndianness, 0); err != nil || e != 0 {
		return ipcCorrupt("schema is not little-endian")
	}
	fields, n, err := schema.Vector(ipcwalk.SchemaFields, 4)
	if err != nil || n != 1 {
		return ipcCorrupt("schema has %d fields, want one", n)
	}
	f, err := schema.VectorTable(fields, 0)
	if err != nil {
		return ipcCorrupt("schema field: %v", err)
	}
	name, err := f.String(ipcwalk.FieldName)
	if err != nil || name != "row_id" {
		return ipcCorrupt("column %q, want row_id", name)
	}
	typ, err := f.Uint8(ipcwalk.FieldTypeType, 0)
	if err != nil || typ != ipcwalk.TypeInt {
		return ipcCorrupt("column row_id of type %d, want Int", typ)
	}
	it, ok, err := f.Table(ipcwalk.FieldType)
	if err != nil || !ok {
		return ipcCorrupt("column row_id has no Int type")
	}
	width, err1 := it.Int32(ipcwalk.IntBitWidth, 0)
	signed, err2 := it.Uint8(ipcwalk.IntIsSigned, 0)
	if err1 != nil || err2 != nil || width != 32 || signed != 0 {
		return ipcCorrupt("column row_id is Int(%d, signed %d), want uint32", width, signed)
	}
	if ok, err := f.Has(ipcwalk.FieldDict); err != nil || ok {
		return ipcCorrupt("column row_id is dictionary-encoded")
	}
	if _, n, err := f.Vector(ipcwalk.FieldChildren, 4); err != nil || n != 0 {
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
	msg, err := ipcwalk.Root(meta[4 : 4+size])
	if err != nil {
		return 0, ipcCorrupt("message: %v", err)
	}
	if ht, err := msg.Uint8(ipcwalk.MessageHeaderType, 0); err != nil || ht != ipcwalk.HeaderRecordBatch {
		return 0, ipcCorrupt("message of type %d, want a record batch", ht)
	}
	if bl, err := msg.Int64(ipcwalk.MessageBodyLength, 0); err != nil || bl < 0 || bl > int64(len(body)) {
		return 0, ipcCorrupt("body of %d bytes in a block body of %d", bl, len(body))
	}
	rb, ok, err := msg.Table(ipcwalk.MessageHeader)
	if err != nil || !ok {
		return 0, ipcCorrupt("record batch header missing")
	}
	length, err := rb.Int64(ipcwalk.RecordBatchLength, 0)
	if err != nil || length < 0 || uint64(length) > maxRows {
		return 0, ipcCorrupt("record batch of %d rows, more than the fragment's %d", length, maxRows)
	}
	nodes, nNodes, err := rb.Vector(ipcwalk.RecordBatchNodes, ipcwalk.FieldNodeSize)
	if err != nil || nNodes != 1 {
		return 0, ipcCorrupt("%d field nodes, want one", nNodes)
	}
	nodeLen := int64(binary.LittleEndian.Uint64(rb.Bytes()[nodes:]))
	nulls := int64(binary.LittleEndian.Uint64(rb.Bytes()[nodes+8:]))
	if nodeLen != length || nulls != 0 {
		return 0, ipcCorrupt("column of %d rows with %d nulls in a batch of %d rows", nodeLen, nulls, length)
	}
	bufs, nBufs, err := rb.Vector(ipcwalk.RecordBatchBuffers, ipcwalk.BufferSize)
	if err != nil || nBufs != 2 {
		return 0, ipcCorrupt("%d buffers, want validity and values", nBufs)
	}
	codec := -1
	if comp, ok, err := rb.Table(ipcwalk.RecordBatchCompression); err != nil {
		return 0, ipcCorrupt("body compression: %v", err)
	} else if ok {
		c, err := comp.Uint8(ipcwalk.CompressionCodec, 0)
		if err != nil || (c != codecLZ4Frame && c != codecZSTD) {
			return 0, ipcCorrupt("unknown body compression codec %d", c)
		}
		codec = int(c)
	}
	// Buffer 1 holds the values; buffer 0 (validity) is ignored, as the
	// node has no nulls.
	p := bufs + ipcwalk.BufferSize
	off := int64(binary.LittleEndian.Uint64(rb.Bytes()[p:]))
	n := int64(binary.LittleEndian.Uint64(rb.Bytes()[p+8:]))
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
