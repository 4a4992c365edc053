package server

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// arrow-go's IPC reader trusts the lengths in a stream's schema message:
// a field vector that claims 2^31 entries makes it allocate that many
// fields before it reads one (found by FuzzServerBodies). checkSchemaMessage
// reads the stream's first message itself and checks, before arrow-go
// sees it, that every vector the schema holds fits in the message.

// checkedStream reads the whole body of size bytes (-1: unknown; see
// readAll; http.MaxBytesReader bounds it) and
// walks its IPC messages before arrow-go does: every message's metadata
// and declared body must lie within the bytes received, and the first
// message's schema vectors must fit in it. arrow-go would otherwise
// allocate what a message claims (a field vector of 2^31 entries, a body
// of a terabyte) before it finds the bytes missing.
func checkedStream(body io.Reader, size int64) (io.Reader, error) {
	buf, err := readAll(body, size)
	if err != nil {
		return nil, invalidf("reading the Arrow IPC stream body: %v", err)
	}
	if err := checkMessages(buf); err != nil {
		return nil, invalidf("the Arrow IPC stream body is malformed: %v", err)
	}
	return bytes.NewReader(buf), nil
}

// checkMessages walks the framing of an IPC stream: [0xFFFFFFFF] length,
// metadata (a flatbuffer Message), body of the Message's bodyLength; a zero
// length ends the stream. A stream cut short is left to the reader (it
// reports it, and streamReader the missing end-of-stream marker).
func checkMessages(buf []byte) error {
	pos := 0
	for first := true; pos+4 <= len(buf); first = false {
		n := int(binary.LittleEndian.Uint32(buf[pos:]))
		pos += 4
		if uint32(n) == 0xFFFFFFFF {
			if pos+4 > len(buf) {
				return nil
			}
			n = int(binary.LittleEndian.Uint32(buf[pos:]))
			pos += 4
		}
		if n == 0 {
			return nil // end of stream
		}
		if n < 0 || n > len(buf)-pos {
			return fmt.Errorf("message %d bytes long at offset %d of %d", n, pos, len(buf))
		}
		msg := flatbuf(buf[pos : pos+n])
		pos += n
		if first {
			if err := checkSchemaMessage(msg); err != nil {
				return fmt.Errorf("schema message: %w", err)
			}
		}
		root, err := msg.u32(0)
		if err != nil {
			return err
		}
		p, err := msg.field(root, 3) // Message.bodyLength
		if err != nil {
			return err
		}
		var bodyLen uint64
		if p != 0 {
			if p+8 > len(msg) {
				return fmt.Errorf("message body length outside the message")
			}
			bodyLen = binary.LittleEndian.Uint64(msg[p:])
		}
		if bodyLen > uint64(len(buf)-pos) {
			return fmt.Errorf("a message claims a body of %d bytes, %d remain", bodyLen, len(buf)-pos)
		}
		pos += int(bodyLen)
	}
	return nil
}

// flatbuf reads a flatbuffer with bounds checks.
type flatbuf []byte

func (b flatbuf) u32(p int) (int, error) {
	if p < 0 || p+4 > len(b) {
		return 0, fmt.Errorf("offset %d outside %d bytes", p, len(b))
	}
	return int(binary.LittleEndian.Uint32(b[p:])), nil
}

// field returns the position of field i of the table at t, 0 if absent.
func (b flatbuf) field(t, i int) (int, error) {
	so, err := b.u32(t)
	if err != nil {
		return 0, err
	}
	vt := t - int(int32(uint32(so)))
	if vt < 0 || vt+4 > len(b) {
		return 0, fmt.Errorf("vtable at %d outside %d bytes", vt, len(b))
	}
	size := int(binary.LittleEndian.Uint16(b[vt:]))
	at := 4 + 2*i
	if at+2 > size || vt+at+2 > len(b) {
		return 0, nil
	}
	off := int(binary.LittleEndian.Uint16(b[vt+at:]))
	if off == 0 {
		return 0, nil
	}
	return t + off, nil
}

// ref follows the offset field i of the table at t holds (a table, vector
// or string); 0 if absent.
func (b flatbuf) ref(t, i int) (int, error) {
	p, err := b.field(t, i)
	if err != nil || p == 0 {
		return 0, err
	}
	o, err := b.u32(p)
	if err != nil {
		return 0, err
	}
	return p + o, nil
}

// vector checks the vector field i of table t (elements of size bytes)
// fits in the buffer and returns its element count and first element.
func (b flatbuf) vector(t, i, size int) (n, start int, err error) {
	v, err := b.ref(t, i)
	if err != nil || v == 0 {
		return 0, 0, err
	}
	if n, err = b.u32(v); err != nil {
		return 0, 0, err
	}
	start = v + 4
	if n > (len(b)-start)/size {
		return 0, 0, fmt.Errorf("a vector of %d elements at %d in %d bytes", n, v, len(b))
	}
	return n, start, nil
}

// tables checks the vector of tables in field i of table t and calls
// each on every table.
func (b flatbuf) tables(t, i int, each func(int) error) error {
	n, start, err := b.vector(t, i, 4)
	if err != nil {
		return err
	}
	for k := range n {
		p := start + 4*k
		o, err := b.u32(p)
		if err != nil {
			return err
		}
		if err := each(p + o); err != nil {
			return err
		}
	}
	return nil
}

// checkSchemaMessage checks an IPC Message holding a Schema: the fields
// (names, children, metadata, recursively) and the schema's metadata and
// features vectors all fit.
func checkSchemaMessage(msg []byte) error {
	b := flatbuf(msg)
	root, err := b.u32(0)
	if err != nil {
		return err
	}
	schema, err := b.ref(root, 2) // Message.header
	if err != nil {
		return err
	}
	if schema == 0 {
		return fmt.Errorf("no header")
	}
	metadata := func(t, i int) error {
		return b.tables(t, i, func(kv int) error {
			for f := range 2 { // KeyValue.key, value
				if _, _, err := b.vector(kv, f, 1); err != nil {
					return err
				}
			}
			return nil
		})
	}
	var field func(t, depth int) error
	field = func(t, depth int) error {
		if depth > 64 {
			return fmt.Errorf("fields nested more than 64 deep")
		}
		if _, _, err := b.vector(t, 0, 1); err != nil { // Field.name
			return err
		}
		if err := b.tables(t, 5, func(c int) error { return field(c, depth+1) }); err != nil { // children
			return err
		}
		return metadata(t, 6)
	}
	if err := b.tables(schema, 1, func(f int) error { return field(f, 0) }); err != nil { // Schema.fields
		return err
	}
	if err := metadata(schema, 2); err != nil {
		return err
	}
	_, _, err = b.vector(schema, 3, 8) // features
	return err
}
