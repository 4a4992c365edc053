package ipcwalk

import (
	"encoding/binary"
	"fmt"
)

// maxFieldDepth bounds the nesting of a schema's fields, so that a walk's
// recursion is bounded by a constant rather than by the input.
const maxFieldDepth = 64

// CheckStream walks the framing of an IPC stream before arrow-go reads it:
// messages of [0xFFFFFFFF] int32 length, metadata (a flatbuffer Message)
// and a body of the Message's bodyLength, up to a zero length, which ends
// the stream. Every message's metadata and declared body must lie within
// buf, and the first message's schema (its fields' names, children and
// metadata, recursively, and the schema's metadata and features) must fit
// in its metadata. A stream cut short between messages is left to the
// reader, which reports it.
func CheckStream(buf []byte) error {
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
		msg, err := Root(buf[pos : pos+n])
		if err != nil {
			return err
		}
		pos += n
		if first {
			if err := checkSchemaMessage(msg); err != nil {
				return fmt.Errorf("schema message: %w", err)
			}
		}
		bodyLen, err := msg.Int64(MessageBodyLength, 0)
		if err != nil {
			return fmt.Errorf("message body length: %w", err)
		}
		if bodyLen < 0 || bodyLen > int64(len(buf)-pos) {
			return fmt.Errorf("a message claims a body of %d bytes, %d remain", uint64(bodyLen), len(buf)-pos)
		}
		pos += int(bodyLen)
	}
	return nil
}

// checkSchemaMessage checks an IPC Message holding a Schema: the fields
// (names, children, metadata, recursively) and the schema's metadata and
// features vectors all fit.
func checkSchemaMessage(msg Table) error {
	schema, ok, err := msg.Table(MessageHeader)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no header")
	}
	metadata := func(t Table, i int) error {
		return t.Tables(i, func(kv Table) error {
			for _, f := range []int{KeyValueKey, KeyValueValue} {
				if _, _, err := kv.Vector(f, 1); err != nil {
					return err
				}
			}
			return nil
		})
	}
	var field func(t Table, depth int) error
	field = func(t Table, depth int) error {
		if depth > maxFieldDepth {
			return fmt.Errorf("fields nested more than %d deep", maxFieldDepth)
		}
		if _, _, err := t.Vector(FieldName, 1); err != nil {
			return err
		}
		if err := t.Tables(FieldChildren, func(c Table) error { return field(c, depth+1) }); err != nil {
			return err
		}
		return metadata(t, FieldMetadata)
	}
	if err := schema.Tables(SchemaFields, func(f Table) error { return field(f, 0) }); err != nil {
		return err
	}
	if err := metadata(schema, SchemaMetadata); err != nil {
		return err
	}
	_, _, err = schema.Vector(SchemaFeatures, 8)
	return err
}
