// Package schemaproto converts Lance schemas between the hand-written model
// of format/schema and the lance.file.Field protobufs that data file
// descriptors (format) and manifests (dataset/manifest) embed. It is the
// one place that knows both; neither model leaks into the other's exported
// API. DecodeFields and EncodeFields convert the flat field list exactly
// (the manifest's schema as recorded); Decode and Encode convert a Schema.
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
//  2. EncodeFields(DecodeFields(p)) marshals to p's bytes: every field of
//     lance.file.Field and of its Dictionary, the unknown ones of newer
//     writers included (as wire bytes), is carried by schema.Field.
//  3. Encode fills a missing legacy encoding hint from the field's type, as
//     Lance's writer does (Schema.Flatten).
//  4. Decode refuses malformed lists with errors wrapping lancer.ErrCorrupt
//     (schema.Unflatten), never a panic.
package schemaproto

import (
	"slices"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/filepb"
	"github.com/lancerdb/lancer/internal/schemaproto/wire"
)

// Decode builds a Schema from the flattened pre-order field list used by
// manifests and file descriptors (see schema.Unflatten).
func Decode(fields []*filepb.Field, metadata map[string][]byte) (*schema.Schema, error) {
	return schema.Unflatten(DecodeFields(fields), bytesMap(metadata))
}

// Encode flattens s into the pre-order field list and metadata map that
// manifests and file descriptors store (see Schema.Flatten).
func Encode(s *schema.Schema) ([]*filepb.Field, map[string][]byte) {
	var md map[string][]byte
	if len(s.Metadata) > 0 {
		md = make(map[string][]byte, len(s.Metadata))
		for k, v := range s.Metadata {
			md[k] = []byte(v)
		}
	}
	return EncodeFields(s.Flatten()), md
}

// DecodeFields converts a stored field list exactly, as flat schema.Fields
// (no Children, Type or Blob): every attribute as recorded, those this
// lancer does not know kept as wire bytes. A nil entry stays nil.
func DecodeFields(fields []*filepb.Field) []*schema.Field {
	if fields == nil {
		return nil
	}
	out := make([]*schema.Field, len(fields))
	for i, pf := range fields {
		if pf == nil {
			continue // Unflatten names the empty field
		}
		f := &schema.Field{
			ID:                              pf.GetId(),
			ParentID:                        pf.GetParentId(),
			Name:                            pf.GetName(),
			LogicalType:                     pf.GetLogicalType(),
			Nullable:                        pf.GetNullable(),
			Metadata:                        bytesMap(pf.GetMetadata()),
			Encoding:                        schema.LegacyEncoding(pf.GetEncoding()),
			UnenforcedPrimaryKey:            pf.GetUnenforcedPrimaryKey(),
			UnenforcedPrimaryKeyPosition:    pf.GetUnenforcedPrimaryKeyPosition(),
			UnenforcedClusteringKey:         pf.GetUnenforcedClusteringKey(),
			UnenforcedClusteringKeyPosition: pf.GetUnenforcedClusteringKeyPosition(),
			ExtensionName:                   pf.GetExtensionName(),
			Role:                            schema.FieldRole(pf.GetType()),
		}
		u := wire.Of(f)
		u.Field = unknownOf(pf)
		if d := pf.GetDictionary(); d != nil {
			f.Dictionary = &schema.Dictionary{Offset: d.GetOffset(), Length: d.GetLength()}
			u.Dictionary = unknownOf(d)
		}
		out[i] = f
	}
	return out
}

// EncodeFields converts flat schema.Fields to the stored list, exactly
// (the inverse of DecodeFields): nothing is derived or filled in. Children,
// Type and Blob are ignored. A nil entry stays nil.
func EncodeFields(fields []*schema.Field) []*filepb.Field {
	if fields == nil {
		return nil
	}
	out := make([]*filepb.Field, len(fields))
	for i, f := range fields {
		if f == nil {
			continue
		}
		pf := &filepb.Field{
			Type:                            filepb.Field_Type(f.Role),
			Name:                            f.Name,
			Id:                              f.ID,
			ParentId:                        f.ParentID,
			LogicalType:                     f.LogicalType,
			Nullable:                        f.Nullable,
			UnenforcedPrimaryKey:            f.UnenforcedPrimaryKey,
			UnenforcedPrimaryKeyPosition:    f.UnenforcedPrimaryKeyPosition,
			UnenforcedClusteringKey:         f.UnenforcedClusteringKey,
			UnenforcedClusteringKeyPosition: f.UnenforcedClusteringKeyPosition,
			Encoding:                        filepb.Encoding(f.Encoding),
			ExtensionName:                   f.ExtensionName,
		}
		if len(f.Metadata) > 0 {
			pf.Metadata = make(map[string][]byte, len(f.Metadata))
			for k, v := range f.Metadata {
				pf.Metadata[k] = []byte(v)
			}
		}
		u := wire.Of(f)
		if f.Dictionary != nil {
			pf.Dictionary = &filepb.Dictionary{Offset: f.Dictionary.Offset, Length: f.Dictionary.Length}
			setUnknown(pf.Dictionary, u.Dictionary)
		}
		setUnknown(pf, u.Field)
		out[i] = pf
	}
	return out
}

func unknownOf(m protoreflect.ProtoMessage) []byte {
	if u := m.ProtoReflect().GetUnknown(); len(u) > 0 {
		return slices.Clone(u)
	}
	return nil
}

func setUnknown(m protoreflect.ProtoMessage, u []byte) {
	if len(u) > 0 {
		m.ProtoReflect().SetUnknown(slices.Clone(u))
	}
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
