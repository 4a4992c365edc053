// Package scalarindex reads the scalar indices Lance builds — BTREE,
// BITMAP and LABEL_LIST — and answers filter terms (filter.IndexTerm)
// with the row ids, or row addresses, the index records for them; and
// writes them (Builder), as Lance 12 does, for real Lance to use.
//
// # On-disk contract (as Lance 12 writes it)
//
// An index segment is a directory _indices/<uuid>/ of the dataset (or of
// the base its IndexMetadata names); every file in it is a Lance data file
// (2.0 or later; Lance 12 writes 2.2) read with package format. The
// manifest's IndexMetadata says which kind it is by its details' type URL
// (KindOf) and which rows it covers by its fragment bitmap; this package
// reads only the directory.
//
// BTREE (page_lookup.lance, page_data.lance). page_data.lance has columns
// values (the column's type, nullable) and ids (uint64): every indexed
// row's value and row id, sorted by value (nulls first, floats by total
// order), cut into pages of batch_size rows: page n is rows
// [n*batch_size, (n+1)*batch_size). batch_size is the lookup file's schema
// metadata "batch_size" (decimal; 4096 when absent). page_lookup.lance has
// one row per page: min and max (the page's first and last value, null
// when that value is null), null_count (uint32) and page_idx (uint32, the
// page number).
//
// BITMAP (bitmap_page_lookup.lance). Columns keys (the column's type,
// nullable) and bitmaps (binary): one row per distinct value, the null
// value included when some row is null, in no particular order; bitmaps
// holds the serialized set of the rows with that value (DecodeRowSet).
//
// LABEL_LIST (bitmap_page_lookup.lance). A BITMAP over the items of a list
// column: a row is in the bitmap of every distinct item its list holds.
// Lance 12 (index version 1) marks the file with schema metadata
// "lance:label_list_nulls"; NULL lists and NULL items are in no key's
// bitmap that this package reads.
//
// Writing (Builder) follows Lance 12's trainers: BTREE values sorted NULLs
// first, then ascending (floats by IEEE 754 total order, -NaN first and
// NaN last, as Lance's sort puts them), ties by row id, cut into pages of
// 4096 rows, "batch_size" and "range_partitioned" ("false") in the
// lookup's schema metadata; BITMAP and LABEL_LIST keys distinct by value
// (floats by their bits: -0 and 0 are two keys), in the same order, the
// NULL key first, with schema metadata "lance:index_stats"
// ({"num_bitmaps":N}); LABEL_LIST items of each non-NULL list (NULL items
// under the NULL key), the NULL lists' row set in global buffer 1, named
// by "lance:label_list_nulls". Details type URLs and index versions are
// Kind.DetailsTypeURL and Kind.IndexVersion.
//
// Row ids. In a dataset without stable row ids an index holds row
// addresses (fragment id << 32 | offset); with stable row ids it holds the
// stable row ids. RowSet is the same structure for both: Lance's
// RowIdTreeMap, keyed by the high 32 bits.
//
// # Invariants
//
//  1. Search(t) returns exactly the row ids the index records for values
//     satisfying t, judged as the filter package compares values: integers
//     and temporal values by number, strings and binaries bytewise,
//     floats with NaN equal to NaN and above every number, -0 equal to 0.
//     A NULL value satisfies only IndexIsNull. Rows the index does not
//     cover are not its business: callers filter them exactly.
//  2. A term whose values are not of the index's value domain (a string
//     against an integer index, a timestamp in another unit) is not
//     Supported, and Search refuses it with lancer.ErrUnsupported rather
//     than compare across types. Integers of any width compare by value.
//  3. A BTREE search reads page_lookup.lance once (at Open) and then only
//     the pages whose [min, max] may hold a matching value: a page is
//     skipped only when its max is below the range, its min above it, or
//     it is all nulls. Where Lance's order and the filter's disagree (a
//     float page starting with a null or a negative NaN) the page is read.
//  4. A BITMAP or LABEL_LIST search reads the keys once (at Open) and then
//     only the bitmaps of the matching keys.
//  5. array_has_any(list, [a, b]) is the union of the bitmaps of a and b,
//     array_has_all the intersection; a value the index has no key for
//     matches no row.
//  6. A serialized row set is a little-endian u32 entry count, then per
//     entry a u32 high half, a u32 byte length and that many bytes of
//     portable Roaring bitmap of low halves; length 0 means every low half
//     (Lance's "full fragment"). Entries repeat no high half and nothing
//     follows the last.
//  7. Every size the files control is bounded before it is used (pages,
//     batch size, keys, entry counts, bitmap lengths): bad bytes are an
//     error wrapping lancer.ErrCorrupt that names the file, never a panic
//     or an allocation the file's size does not justify.
package scalarindex
