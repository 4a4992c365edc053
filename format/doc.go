// Package format reads and writes Lance data files: bytes in a blob.Store ↔
// Arrow arrays. It knows nothing of datasets, manifests or branches; the
// dataset package tells it which file to open and which fields live in which
// columns. Open reads a file's footer and metadata and returns a Reader whose
// Cursors read row ranges and takes of a Projection; NewWriter writes a file
// of any writable version (2.0, 2.1, 2.2) and Finish reports what a
// manifest records of it (WrittenFile). The root holds this API and
// dispatches on the file Version to one package per file generation. The
// schema vocabulary (fields, logical types, blob kinds) is package
// format/schema; the byte codecs pages are built from (bit-packing, RLE,
// FSST, zstd/lz4, ...) are internal/codec. Protobufs of the file format are
// a detail of this package and its internal packages and never appear in
// its API.
//
// # On-disk contract
//
// A Lance 2.x data file (versions 2.0, 2.1, 2.2, and 2.3 which reads like
// 2.2) is laid out as
//
//	page buffers, out-of-line buffers           (anywhere, 64-byte aligned in 2.1+)
//	global buffer 0: FileDescriptor protobuf    (schema + row count)
//	column metadata 0..N-1: ColumnMetadata protobufs
//	CMO table: N × (u64 offset, u64 size)
//	GBO table: G × (u64 offset, u64 size)
//	footer (40 B): u64 column_meta_start | u64 cmo_table_pos | u64 gbo_table_pos
//	               | u32 G | u32 N | u16 major | u16 minor | "LANC"
//
// All integers are little-endian. 2.0 files say 0.3 in the footer. In 2.0
// every schema field has a physical column (structs a header column, lists an
// offsets column) and pages hold an ArrayEncoding tree; from 2.1 on only
// leaves have columns, pages hold a PageLayout (mini-block, full-zip,
// all-null/constant, blob), and struct and list structure travels as
// repetition and definition levels inside each leaf.
//
// Legacy v1 files (table format 0.1, footer 0.1/0.2) end in a 16-byte footer
// (u64 metadata position | u16 0 | u16 minor | "LANC") pointing at a
// protobuf Metadata with a page table per field and batch.
//
// # Invariants
//
//  1. Every offset and length read from a file is checked against the file
//     size before use; a bad one yields an error wrapping lancer.ErrCorrupt
//     that names the file. Decoders never panic and never allocate more than
//     the input can justify.
//  2. Reading a row range or a set of rows reads only the pages that hold
//     them, with ranged reads.
//  3. Arrays returned to callers are owned by the caller, who releases them.
//  4. Unknown encodings or layouts are refused with lancer.ErrUnsupported,
//     never guessed at.
//  5. A file written by Writer is invisible until Finish succeeds; Abort (or
//     a failed Finish) removes it and its blob sidecars, also when the
//     write's context was cancelled. No context outlives the call it was
//     passed to.
//  6. The file generations are apart: none imports another; what they share
//     (the open file, the page sink, the seams they implement, array
//     assembly) lives in internal/fileio and internal/arrays below them.
//
// # Subpackages
//
//	schema               fields, logical types, blob kinds (public vocabulary)
//	internal/fileio      the open file: checked and coalesced range reads, the
//	                     2.x container parse, the page sink, the Cursor,
//	                     RowTaker and FieldWriter seams, Version
//	internal/arrays      Arrow arrays from decoded buffers, synthetic-value bounds
//	internal/legacy      v1 files
//	internal/v20         2.0 files: ArrayEncoding pages, one column per field
//	internal/structural  2.1+ files: PageLayout pages, leaf columns with
//	                     repetition and definition levels, partial-page takes
package format
