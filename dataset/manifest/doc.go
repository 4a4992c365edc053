// Package manifest is the Lance table model as Go values, and every codec
// of the table format: manifest files, transaction files, deletion files,
// row id sequences and version naming. It is the only package that knows
// the lance.table protobufs (internal/pb/tablepb); everything above it works
// on the typed values: Manifest, Fragment, DataFile, DeletionFile,
// BasePath, FeatureFlags, IndexMetadata/IndexInfo, WriterVersion,
// Transaction and its operations (*Append, *Delete, ...), RowIDSequence,
// and the schema as the flat list of format/schema Fields it records
// (converted exactly by internal/schemaproto, so no protobuf type appears
// in its API).
//
// It knows files, not datasets: which versions exist, how commits race and
// how operations rebase are package dataset's.
//
// # On-disk contract
//
// Manifest files live in a root's _versions/ and are named in one of two
// schemes (ManifestNaming), never mixed in one directory:
//
//	V1: _versions/{v}.manifest                          (1.manifest, 2.manifest, ...)
//	V2: _versions/{MaxUint64-v, 20 digits}.manifest     (v=1: 18446744073709551614.manifest)
//
// V2 names sort newest first, so the latest version is the first V2 name a
// lexical listing returns; with V1 names it is the largest number. A
// detached manifest, _versions/d{v}.manifest with bit 63 of v set, is not
// part of the history and never the latest. Every other file in _versions/
// (staging and temporary files, the hint) is not a manifest (ParseName).
//
// A manifest file is
//
//	[dictionary values]  [u32 len | IndexSection]  [u32 len | Transaction]  u32 len | Manifest
//	footer (16 B): u64 manifest_pos | u16 0 | u16 2 | "LANC"
//
// with the Manifest ending exactly at the footer; the dictionary values of
// legacy dictionary fields (dictionary.go) come first, where their fields
// say; the sections are located
// by the positions the Manifest records. All integers are little-endian;
// the messages are lance.table protobufs, written deterministically.
//
// A transaction file, _transactions/{read_version}-{uuid}.txn, holds the
// same Transaction message as the manifest's inline section.
//
// A deletion file, _deletions/{fragment}-{read_version}-{id}.{arrow|bin},
// lists the deleted row offsets of a fragment: an Arrow IPC file with one
// non-nullable uint32 column row_id, ZSTD body compression (.arrow, below
// 5000 rows), or a portable 32-bit Roaring bitmap without run containers
// (.bin).
//
// A fragment may carry data overlay files (flag 64,
// docs/spec/data-overlays.md): data files holding new values of some
// (physical offset, field) cells, one column per field and no key column,
// the value of a covered offset at its rank in the field's coverage, a
// portable 32-bit Roaring bitmap shared by all fields (dense) or one per
// field (sparse).
//
// A fragment of a dataset with stable row ids records a RowIdSequence (the
// id of each row, as segments: ranges, ranges with holes or a bitmap,
// sorted or unsorted arrays of u16/u32 offsets from a base or plain u64s)
// and two RowDatasetVersionSequences (the version that created and that
// last updated each row, as runs), inline or in a range of an external
// file.
//
// # Invariants
//
//   - M1. Names and layouts are exactly Lance's: Key and ParseName are
//     inverse on committed names; EncodeFile writes the layout above.
//   - M2. Bytes read are never trusted (dataset's I1): ReadFile and the
//     Decode functions check every position, length and count and fail
//     with an error wrapping lancer.ErrCorrupt; nothing panics.
//   - M3. A validated Manifest (Validate, which ReadFile runs) has
//     fragment ids below 2^32 (unique but where DuplicateFragmentIDs
//     names them: Lance reads such a manifest, and dataset refuses to
//     commit on it), plain data file names, base ids that name a
//     listed base path, row ids on every fragment when FlagStableRowIDs is
//     set, index segments with 16-byte uuids and readable fragment bitmaps,
//     overlay files only with FlagDataOverlays, each a 2.x data file with
//     a column index per field, committed at a version from 1 to the
//     manifest's, whose coverage decodes (Overlay.DecodeCoverage: one
//     shared bitmap or one per field, offsets below physical_rows), and no
//     reader feature flag lancer does not implement (ErrUnsupported).
//   - M4. Decoding and encoding are exact: every field a manifest or
//     transaction carries, including fields of newer writers that lancer
//     does not know, is written back byte for byte by a writer that builds
//     the next version from Manifest.Clone.
//   - M5. Row id and version sequences decode to exactly the fragment's
//     physical row count, or fail.
//   - M6. A deletion file deletes only offsets below the fragment's physical
//     row count.
package manifest
