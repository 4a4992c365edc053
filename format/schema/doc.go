// Package schema is the vocabulary of Lance schemas shared by data files
// (package format) and manifests (package dataset): a Schema of Fields with
// stable ids, their Lance logical type strings and the Arrow types those
// stand for, which fields keep their bytes out of line (blobs), and column
// selection by path. It does no I/O and knows no protobuf; the stored form
// is converted by internal/schemaproto.
//
// A Field carries everything Lance records of a field, what this lancer
// does not know of it included (kept unexported, reached only by
// internal/schemaproto), so that dataset/manifest keeps a manifest's schema
// as the flat list of Fields it records and writes it back byte for byte.
//
// # On-disk contract
//
// Lance stores a schema as a flat pre-order list of fields (parents before
// children, linked by parent id, -1 for top-level fields) with metadata;
// Unflatten builds the tree from that list. Each field's type is a logical
// type string: primitive names ("int64", "float", "string", "large_binary",
// "date32:day", "timestamp:us:UTC", "decimal:128:10:2", ...),
// "fixed_size_list:<item>:<n>", "dict:<value>:<index>:<ordered>", and the
// nested "struct", "list", "large_list" and "map" whose members are child
// fields. ParseLogicalType and LogicalType map between these strings and
// Arrow types. Field metadata "lance-encoding:blob" (with
// "lance-encoding:blob-version" "2" for blob v2) marks blob fields,
// "lance-encoding:packed" structs stored row-major as one column.
//
// # Invariants
//
//  1. Field ids are unique within a schema and never negative; a child's
//     ParentID is the id of the field that holds it. Unflatten refuses
//     anything else with an error wrapping lancer.ErrCorrupt.
//  2. Every field of a built schema has Type set from its LogicalType and
//     children, and Blob set from its metadata; ScanType differs from Type
//     only for blob fields and the structs that hold them.
//  3. FromArrow numbers fields depth-first in pre-order from the id it is
//     given, so new columns never reuse an id.
//  4. Logical types are parsed to a bounded depth: hostile strings yield
//     lancer.ErrUnsupported, never deep recursion or a panic.
//  5. Unflatten does not modify the list it is given: the schema's fields
//     are copies. Flatten returns copies too, each recording (EqualRecord)
//     what the tree field records, with a missing legacy encoding hint
//     filled and ExtensionName taken from the metadata.
package schema
