// Package ftsindex reads Lance's INVERTED (full-text search) indices, as
// Lance 12 writes them (index format 2), and answers match (with operator
// and fuzziness) and phrase queries over them with Lance's BM25 scores.
// query.go holds Lance's structured query tree (FTSQuery: match, phrase,
// boost, multi_match, boolean, in Lance's JSON form) and the bounds every
// query is checked against (MaxQueryDepth, MaxQueryLeaves, MaxFuzziness,
// MaxExpansions, MaxSlop, MaxTextBytes); package dataset evaluates the
// tree.
//
// A fuzzy match splits its text with the plain simple tokenizer (no
// lower-casing) and replaces, per partition, its words by the partition's
// tokens within the edit distance that keep the prefix, in byte order, at
// most max_expansions over all words; then it scores like a match.
//
// # On-disk contract
//
// An index is a directory _indices/<uuid>/ of Lance files (2.2). Numbered
// invariants, each checked on open or on first use; a violation is an
// error wrapping lancer.ErrCorrupt that names the file:
//
//	I1 metadata.lance's schema metadata holds params (the analyzer, JSON),
//	   partitions (JSON list of ids), format_version "2", token_set_format
//	   ("fst" or "arrow"), posting_block_size "128", posting_tail_codec
//	   "varint_delta_v1"; other values are lancer.ErrUnsupported, as are
//	   legacy (format 1) indices.
//	I2 metadata.lance's deleted_fragments column holds Roaring bitmaps of
//	   fragment ids whose rows are never returned.
//	I3 part_<id>_tokens.lance maps tokens to dense ids 0..n-1: one row of
//	   _token_fst_bytes (an fst crate Map), _token_next_id (n) and
//	   _token_total_length; or the arrow set (_token, _token_id).
//	I4 The FST is read node by node with bounds-checked offsets; every
//	   transition leads to a lower address, so a walk ends; keys are at
//	   most 4096 bytes and exactly the footer's count.
//	I5 part_<id>_docs.lance has one row per document: _rowid (row address)
//	   and _num_tokens; its total_tokens metadata is their sum. A document's
//	   id is its row.
//	I6 part_<id>_invert.lance has one row per token id (as many as
//	   tokens): _posting (list of blocks), _max_score, _length (1..docs).
//	I7 A posting list has ceil(_length/128) blocks, each an f32 block score
//	   then: a full block the first document id (u32), a bit width and 128
//	   BitPacker4x-packed id deltas, a bit width and 128 packed frequencies;
//	   the last partial block varints (ids as deltas, the first absolute,
//	   then the frequencies).
//	I8 Document ids are strictly increasing and below the partition's
//	   document count; a frequency is between 1 and the document's tokens.
//	I9 With positions, _compressed_position is one stream per token and
//	   _position_block_offset the byte offset of each posting block's
//	   positions in it: per document (frequency values), deltas with the
//	   first absolute, in BitPacker4x groups of 128 and a varint tail.
//	   Positions within a document strictly increase.
//
// BitPacker4x lays out 128 values as four interleaved lanes: value i in
// lane i%4, each lane packed LSB first into 32-bit words, word w of lane j
// stored as u32 number 4w+j; width b takes 16b bytes.
//
// # Writing (Builder)
//
//	W1 Builder writes format 2 with an arrow token set (token_set_format
//	   "arrow"), rows sorted by token bytes (Lance builds its FST from
//	   them in order), ids in order of first occurrence.
//	W2 Documents without tokens and NULLs are not indexed, as Lance does.
//	W3 _impacts holds per block, then for the whole list: the last
//	   document and the (frequency, length code) pairs no other beats;
//	   lengths coded exactly below 16, above as 8e + (n >> e) with four
//	   significant bits.
//	W4 Memory is bounded by BuildOptions.PartitionBytes: past it the
//	   partition is written and dropped.
//
// # Scores
//
// BM25 with K1 1.2 and B 0.75 in f32, in Lance's operation order, with the
// statistics summed over every partition: idf(n, N) = ln((N-n+0.5)/(n+0.5)+1),
// doc weight (K1+1) f / (f + K1 (1 - B + B dl/avgdl)), a row's score the sum
// over the query's tokens (repeats included). Deletions do not change the
// statistics. Rows Lance has not indexed are scored by the caller (package
// dataset) with Stats plus their own.
//
// Allocations are bounded by the files: token and document counts by the
// files' rows, posting lists by their recorded lengths.
package ftsindex
