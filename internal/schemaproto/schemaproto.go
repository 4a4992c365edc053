// Package schemaproto converts Lance schemas between the hand-written model
// of format/schema and the lance.file.Field protobufs that data file
// descriptors (format) and manifests (dataset) embed. It is the one place
// that knows both; neither model leaks into the other's exported API.
//
// # On-disk contract
//
// A schema is stored as a flat list of Field messages in pre-order (parents
// before children, linked by parent_id, -1 for top-level fields) plus a
// map of schema metadata with byte-string values. Field metadata values are
// bytes too; the Arrow extension name travels in extension_name as well as
// in the ARROW:extension:name metadata key.
//
// # Invariants
//
//  1. Decode(Encode(s)) yields s's fields, ids, types, nullability and
//     metadata unchanged.
//  2. Encode writes field metadata in key order and fills a missing legacy
//     encoding hint from the field's type, as Lance's writer does.
//  3. Decode refuses malformed lists with errors wrapping lancer.ErrCorrupt
//     (schema.Unflatten), never a panic.
package schemaproto

import (
	"maps"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/filepb"
)

// Decode builds a Schema from the flattened pre-order field list used by
// manifests and file descriptors (see schema.Unflatten).
func Decode(fields []*filepb.Field, metadata map[string][]byte) (*schema.Schema, error) {
	flat := make([]*schema.Field, len(fields))
	for i, pf := range fields {
		if pf == nil {
			continue // Unflatten names the empty field
		}
		f := &schema.Field{
			ID:                   pf.GetId(),
			ParentID:             pf.GetParentId(),
			Name:                 pf.GetName(),
			LogicalType:          pf.GetLogicalType(),
			Nullable:             pf.GetNullable(),
			Metadata:             bytesMap(pf.GetMetadata()),
			Encoding:             schema.LegacyEncoding(pf.GetEncoding()),
			UnenforcedPrimaryKey: pf.GetUnenforcedPrimaryKey(),
		}
		if d := pf.GetDictionary(); d != nil {
			f.Dictionary = &schema.Dictionary{Offset: d.GetOffset(), Length: d.GetLength()}
		}
		if ext := pf.GetExtensionName(); ext != "" {
			if f.Metadata == nil {
				f.Metadata = map[string]string{}
			}
			if _, ok := f.Metadata[schema.MetaExtensionName]; !ok {
				f.Metadata[schema.MetaExtensionName] = ext
			}
		}
		flat[i] = f
	}
	return schema.Unflatten(flat, bytesMap(metadata))
}

func bytesMap(m map[string][]byte) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// legacyEncodingHint is the v1 Field.encoding Lance still writes: plain for
// fixed-width types and lists, var-binary for strings and binaries,
// dictionary for dictionaries, nothing for structs.
func legacyEncodingHint(dt arrow.DataType) filepb.Encoding {
	switch dt.ID() {
	case arrow.STRUCT, arrow.MAP:
		return filepb.Encoding_NONE
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
		return filepb.Encoding_VAR_BINARY
	case arrow.DICTIONARY:
		return filepb.Encoding_DICTIONARY
	}
	return filepb.Encoding_PLAIN
}

// Encode flattens s into the pre-order field list and metadata map that
// manifests and file descriptors store.
func Encode(s *schema.Schema) ([]*filepb.Field, map[string][]byte) {
	var fields []*filepb.Field
	s.Walk(func(f *schema.Field) {
		pf := &filepb.Field{
			Name:                 f.Name,
			Id:                   f.ID,
			ParentId:             f.ParentID,
			LogicalType:          f.LogicalType,
			Nullable:             f.Nullable,
			Encoding:             filepb.Encoding(f.Encoding),
			UnenforcedPrimaryKey: f.UnenforcedPrimaryKey,
		}
		if f.Dictionary != nil {
			pf.Dictionary = &filepb.Dictionary{Offset: f.Dictionary.Offset, Length: f.Dictionary.Length}
		}
		if pf.Encoding == filepb.Encoding_NONE && f.Type != nil {
			pf.Encoding = legacyEncodingHint(f.Type)
		}
		if len(f.Metadata) > 0 {
			pf.Metadata = make(map[string][]byte, len(f.Metadata))
			for _, k := range slices.Sorted(maps.Keys(f.Metadata)) {
				pf.Metadata[k] = []byte(f.Metadata[k])
			}
			pf.ExtensionName = f.Metadata[schema.MetaExtensionName]
		}
		fields = append(fields, pf)
	})
	var md map[string][]byte
	if len(s.Metadata) > 0 {
		md = make(map[string][]byte, len(s.Metadata))
		for k, v := range s.Metadata {
			md[k] = []byte(v)
		}
	}
	return fields, md
}
