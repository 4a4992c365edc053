// Package ipcwalk reads the framing and flatbuffer metadata of Arrow IPC
// data (the Arrow columnar format's "IPC Streaming Format" and "IPC File
// Format") without trusting it, for the decoders that see bytes from disk or
// the network before, or instead of, arrow-go's IPC reader.
//
// arrow-go trusts the lengths it reads: a flatbuffer vector claiming 2^31
// elements, or a message claiming a terabyte body, becomes an allocation of
// that size before any byte is found missing, and a Go out-of-memory error
// cannot be recovered. Here:
//
//  1. Every offset, length and count is checked against the buffer before it
//     is used; a failure is an error, never a panic.
//  2. Nothing is allocated in proportion to what the bytes claim: a walk
//     allocates nothing beyond the strings it is asked for.
//
// Table reads one flatbuffer table; Stream checks a whole IPC stream for
// arrow-go. The field numbers are those of Arrow's Schema.fbs, Message.fbs
// and File.fbs.
package ipcwalk

import (
	"encoding/binary"
	"fmt"
)

// Field numbers of the Arrow flatbuffer tables read by lancer.
const (
	FooterSchema        = 1 // Footer.schema
	FooterDictionaries  = 2 // Footer.dictionaries: [Block]
	FooterRecordBatches = 3 // Footer.recordBatches: [Block]

	MessageHeaderType = 1 // Message.header_type: MessageHeader union tag
	MessageHeader     = 2 // Message.header
	MessageBodyLength = 3 // Message.bodyLength

	SchemaEndianness = 0 // Schema.endianness
	SchemaFields     = 1 // Schema.fields
	SchemaMetadata   = 2 // Schema.custom_metadata
	SchemaFeatures   = 3 // Schema.features: [int64]

	FieldName     = 0 // Field.name
	FieldNullable = 1 // Field.nullable
	FieldTypeType = 2 // Field.type_type: Type union tag
	FieldType     = 3 // Field.type
	FieldDict     = 4 // Field.dictionary
	FieldChildren = 5 // Field.children
	FieldMetadata = 6 // Field.custom_metadata

	KeyValueKey   = 0 // KeyValue.key
	KeyValueValue = 1 // KeyValue.value

	IntBitWidth = 0 // Int.bitWidth
	IntIsSigned = 1 // Int.is_signed

	RecordBatchLength      = 0 // RecordBatch.length
	RecordBatchNodes       = 1 // RecordBatch.nodes: [FieldNode]
	RecordBatchBuffers     = 2 // RecordBatch.buffers: [Buffer]
	RecordBatchCompression = 3 // RecordBatch.compression

	CompressionCodec = 0 // BodyCompression.codec
)

// Union tags and enum values.
const (
	HeaderRecordBatch = 3 // MessageHeader.RecordBatch
	TypeInt           = 2 // Type.Int
	CodecLZ4Frame     = 0 // CompressionType.LZ4_FRAME
	CodecZSTD         = 1 // CompressionType.ZSTD
)

// Sizes of the flatbuffer structs in vectors.
const (
	BlockSize     = 24 // Block {offset int64, metaDataLength int32, pad, bodyLength int64}
	FieldNodeSize = 16 // FieldNode {length int64, null_count int64}
	BufferSize    = 16 // Buffer {offset int64, length int64}
)

// Table is a flatbuffer table inside a buffer, with bounds-checked
// accessors. Its vtable lies inside the buffer.
type Table struct {
	buf    []byte
	pos    int // the table's position
	vtable int
	vtSize int
}

// Root returns the root table of the flatbuffer buf.
func Root(buf []byte) (Table, error) {
	if len(buf) < 4 {
		return Table{}, fmt.Errorf("flatbuffer of %d bytes has no root offset", len(buf))
	}
	return TableAt(buf, int64(binary.LittleEndian.Uint32(buf)))
}

// TableAt returns the table at pos of buf.
func TableAt(buf []byte, pos int64) (Table, error) {
	if pos < 0 || pos > int64(len(buf))-4 {
		return Table{}, fmt.Errorf("table at %d outside %d bytes", pos, len(buf))
	}
	vt := pos - int64(int32(binary.LittleEndian.Uint32(buf[pos:])))
	if vt < 0 || vt > int64(len(buf))-4 {
		return Table{}, fmt.Errorf("vtable at %d outside %d bytes", vt, len(buf))
	}
	vtSize := int(binary.LittleEndian.Uint16(buf[vt:]))
	if vtSize < 4 || vt+int64(vtSize) > int64(len(buf)) {
		return Table{}, fmt.Errorf("vtable of %d bytes at %d in %d bytes", vtSize, vt, len(buf))
	}
	return Table{buf: buf, pos: int(pos), vtable: int(vt), vtSize: vtSize}, nil
}

// Bytes returns the buffer the table lies in, for reading the structs of a
// vector whose bounds Vector has checked.
func (t Table) Bytes() []byte { return t.buf }

// field returns the position of field i's value and whether it is present;
// size is the value's inline size, which must lie inside the buffer.
func (t Table) field(i, size int) (int, bool, error) {
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
		return 0, false, fmt.Errorf("field %d at %d (%d bytes) outside %d bytes", i, p, size, len(t.buf))
	}
	return p, true, nil
}

// Uint8 returns scalar field i, def when absent.
func (t Table) Uint8(i int, def uint8) (uint8, error) {
	p, ok, err := t.field(i, 1)
	if err != nil || !ok {
		return def, err
	}
	return t.buf[p], nil
}

// Int16 returns scalar field i, def when absent.
func (t Table) Int16(i int, def int16) (int16, error) {
	p, ok, err := t.field(i, 2)
	if err != nil || !ok {
		return def, err
	}
	return int16(binary.LittleEndian.Uint16(t.buf[p:])), nil
}

// Int32 returns scalar field i, def when absent.
func (t Table) Int32(i int, def int32) (int32, error) {
	p, ok, err := t.field(i, 4)
	if err != nil || !ok {
		return def, err
	}
	return int32(binary.LittleEndian.Uint32(t.buf[p:])), nil
}

// Int64 returns scalar field i, def when absent.
func (t Table) Int64(i int, def int64) (int64, error) {
	p, ok, err := t.field(i, 8)
	if err != nil || !ok {
		return def, err
	}
	return int64(binary.LittleEndian.Uint64(t.buf[p:])), nil
}

// indirect follows the offset stored in field i (a table, vector or
// string).
func (t Table) indirect(i int) (int64, bool, error) {
	p, ok, err := t.field(i, 4)
	if err != nil || !ok {
		return 0, ok, err
	}
	return int64(p) + int64(binary.LittleEndian.Uint32(t.buf[p:])), true, nil
}

// Has reports whether the offset field i (a table, vector or string) is
// present.
func (t Table) Has(i int) (bool, error) {
	_, ok, err := t.indirect(i)
	return ok, err
}

// Table returns the table in field i and whether it is present.
func (t Table) Table(i int) (Table, bool, error) {
	pos, ok, err := t.indirect(i)
	if err != nil || !ok {
		return Table{}, ok, err
	}
	sub, err := TableAt(t.buf, pos)
	return sub, err == nil, err
}

// Vector returns the position of the first element and the length of the
// vector in field i, checking that its n elements of elemSize bytes fit in
// the buffer. An absent vector is empty.
func (t Table) Vector(i, elemSize int) (start, n int, err error) {
	pos, ok, err := t.indirect(i)
	if err != nil || !ok {
		return 0, 0, err
	}
	if pos < 0 || pos > int64(len(t.buf))-4 {
		return 0, 0, fmt.Errorf("vector at %d outside %d bytes", pos, len(t.buf))
	}
	count := binary.LittleEndian.Uint32(t.buf[pos:])
	begin := pos + 4
	if int64(count)*int64(elemSize) > int64(len(t.buf))-begin {
		return 0, 0, fmt.Errorf("a vector of %d elements of %d bytes at %d in %d bytes", count, elemSize, pos, len(t.buf))
	}
	return int(begin), int(count), nil
}

// VectorTable returns element j of the vector of tables starting at start
// (as Vector returned it, with elemSize 4).
func (t Table) VectorTable(start, j int) (Table, error) {
	p := start + 4*j
	return TableAt(t.buf, int64(p)+int64(binary.LittleEndian.Uint32(t.buf[p:])))
}

// Tables calls each on every table of the vector of tables in field i.
func (t Table) Tables(i int, each func(Table) error) error {
	start, n, err := t.Vector(i, 4)
	if err != nil {
		return err
	}
	for j := range n {
		sub, err := t.VectorTable(start, j)
		if err != nil {
			return err
		}
		if err := each(sub); err != nil {
			return err
		}
	}
	return nil
}

// String returns the string in field i ("" when absent).
func (t Table) String(i int) (string, error) {
	start, n, err := t.Vector(i, 1)
	if err != nil {
		return "", err
	}
	return string(t.buf[start : start+n]), nil
}
