package ipcwalk

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// testSchema has a nested field and metadata on both the schema and a
// field, so a walk visits every kind of vector CheckStream checks.
var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Uint32},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true,
		Metadata: arrow.NewMetadata([]string{"k"}, []string{"v"})},
}, func() *arrow.Metadata { m := arrow.NewMetadata([]string{"owner"}, []string{"lancer"}); return &m }())

func testRecord(t *testing.T) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, testSchema)
	defer b.Release()
	b.Field(0).(*array.Uint32Builder).AppendValues([]uint32{7, 8, 9}, nil)
	lb := b.Field(1).(*array.ListBuilder)
	for range 3 {
		lb.Append(true)
		lb.ValueBuilder().(*array.StringBuilder).Append("x")
	}
	return b.NewRecordBatch()
}

// arrowStream is an IPC stream of two record batches as arrow-go writes it.
func arrowStream(t *testing.T) []byte {
	t.Helper()
	rec := testRecord(t)
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(testSchema))
	for range 2 {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestTableReadsArrowFooter walks the footer of an IPC file arrow-go
// wrote and finds its schema and record batches.
func TestTableReadsArrowFooter(t *testing.T) {
	rec := testRecord(t)
	defer rec.Release()
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(testSchema))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	size := int(binary.LittleEndian.Uint32(data[len(data)-10:]))
	footer, err := Root(data[len(data)-10-size : len(data)-10])
	if err != nil {
		t.Fatal(err)
	}
	schema, ok, err := footer.Table(FooterSchema)
	if err != nil || !ok {
		t.Fatalf("footer schema: %v, %v", ok, err)
	}
	var names []string
	err = schema.Tables(SchemaFields, func(f Table) error {
		name, err := f.String(FieldName)
		names = append(names, name)
		return err
	})
	if err != nil || strings.Join(names, ",") != "id,tags" {
		t.Fatalf("fields %q, %v", names, err)
	}
	start, _, err := schema.Vector(SchemaFields, 4)
	if err != nil {
		t.Fatal(err)
	}
	id, err := schema.VectorTable(start, 0)
	if err != nil {
		t.Fatal(err)
	}
	if typ, err := id.Uint8(FieldTypeType, 0); err != nil || typ != TypeInt {
		t.Fatalf("id type tag %d, %v", typ, err)
	}
	it, ok, err := id.Table(FieldType)
	if err != nil || !ok {
		t.Fatalf("id type: %v, %v", ok, err)
	}
	if width, err := it.Int32(IntBitWidth, 0); err != nil || width != 32 {
		t.Fatalf("bit width %d, %v", width, err)
	}
	if has, err := id.Has(FieldDict); err != nil || has {
		t.Fatalf("id has a dictionary: %v, %v", has, err)
	}
	if _, n, err := footer.Vector(FooterRecordBatches, BlockSize); err != nil || n != 3 {
		t.Fatalf("%d record batches, %v; want 3", n, err)
	}
	// arrow-go leaves the default little-endian out: the default is given.
	if e, err := schema.Int16(SchemaEndianness, -1); err != nil || e != -1 {
		t.Fatalf("endianness %d, %v; want the default", e, err)
	}
}

// TestCheckStream accepts what arrow-go writes, in full and cut short.
func TestCheckStream(t *testing.T) {
	stream := arrowStream(t)
	if err := CheckStream(stream); err != nil {
		t.Fatalf("arrow-go's stream: %v", err)
	}
	for n := range stream {
		_ = CheckStream(stream[:n]) // must not panic
	}
}

// TestCheckStreamRefusesClaims: a schema vector or a body longer than the
// bytes received is an error before arrow-go would allocate it.
func TestCheckStreamRefusesClaims(t *testing.T) {
	stream := arrowStream(t)
	// The first message: 0xFFFFFFFF, its length, its metadata.
	metaLen := int(binary.LittleEndian.Uint32(stream[4:]))
	msg, err := Root(stream[8 : 8+metaLen])
	if err != nil {
		t.Fatal(err)
	}
	schema, _, err := msg.Table(MessageHeader)
	if err != nil {
		t.Fatal(err)
	}
	fields, _, err := schema.Vector(SchemaFields, 4)
	if err != nil {
		t.Fatal(err)
	}
	claims := bytes.Clone(stream)
	binary.LittleEndian.PutUint32(claims[8+fields-4:], 1<<31)
	if err := CheckStream(claims); err == nil || !strings.Contains(err.Error(), "vector of 2147483648") {
		t.Errorf("a field vector of 2^31 entries: %v", err)
	}

	// The second message is a record batch; make it claim a huge body.
	second := 8 + metaLen + int(mustInt64(t, msg, MessageBodyLength))
	batchLen := int(binary.LittleEndian.Uint32(stream[second+4:]))
	batch, err := Root(stream[second+8 : second+8+batchLen])
	if err != nil {
		t.Fatal(err)
	}
	p, ok, err := batch.field(MessageBodyLength, 8)
	if err != nil || !ok {
		t.Fatalf("record batch body length: %v, %v", ok, err)
	}
	huge := bytes.Clone(stream)
	binary.LittleEndian.PutUint64(huge[second+8+p:], 1<<40)
	if err := CheckStream(huge); err == nil || !strings.Contains(err.Error(), "claims a body") {
		t.Errorf("a body of 1 TiB: %v", err)
	}
}

func mustInt64(t *testing.T, tb Table, i int) int64 {
	t.Helper()
	v, err := tb.Int64(i, 0)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCheckStreamBoundsNesting refuses a schema nested deeper than
// maxFieldDepth, which would otherwise make the walk recurse as deep as the
// input says.
func TestCheckStreamBoundsNesting(t *testing.T) {
	stream := func(depth int) []byte {
		var typ arrow.DataType = arrow.PrimitiveTypes.Int8
		for range depth {
			typ = arrow.StructOf(arrow.Field{Name: "s", Type: typ, Nullable: true})
		}
		schema := arrow.NewSchema([]arrow.Field{{Name: "deep", Type: typ, Nullable: true}}, nil)
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	if err := CheckStream(stream(maxFieldDepth)); err != nil {
		t.Errorf("%d levels: %v", maxFieldDepth, err)
	}
	if err := CheckStream(stream(maxFieldDepth + 1)); err == nil || !strings.Contains(err.Error(), "nested more than") {
		t.Errorf("%d levels: %v", maxFieldDepth+1, err)
	}
}

// TestTableRejectsBadOffsets: offsets that leave the buffer are errors.
func TestTableRejectsBadOffsets(t *testing.T) {
	for _, buf := range [][]byte{
		nil,
		{1, 2},
		{0xff, 0xff, 0xff, 0x7f},             // root beyond the end
		{4, 0, 0, 0, 0, 0, 0, 0x80},          // vtable outside the buffer
		{8, 0, 0, 0, 2, 0, 4, 0, 4, 0, 0, 0}, // vtable of 2 bytes
	} {
		if _, err := Root(buf); err == nil {
			t.Errorf("Root(%x) succeeded", buf)
		}
	}
}
