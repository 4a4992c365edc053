// Package vecindex reads and searches the vector indices real Lance builds
// (IVF_FLAT, IVF_PQ, IVF_SQ, IVF_HNSW_FLAT, IVF_HNSW_PQ, IVF_HNSW_SQ: Lance's
// "v3" index files), as Lance searches them, and writes IVF_FLAT, IVF_PQ,
// IVF_SQ, IVF_HNSW_SQ, IVF_HNSW_FLAT and IVF_HNSW_PQ segments in the same format
// (Write) from an index package vector built (W1-W3 below). Package dataset decides which segments a search uses, the
// fragments they cover and the rows they may return; this package knows
// one segment's files.
//
// The layout was learned from Lance's source (lance-format/lance, Rust):
// rust/lance/src/index/vector/ivf/v2.rs (IVFIndex::try_new,
// load_partition, search_in_partition), rust/lance-index/src/vector/
// {storage.rs, ivf/storage.rs, pq/storage.rs, pq/distance.rs, sq.rs,
// sq/storage.rs, flat/index.rs, flat/storage.rs, hnsw.rs,
// hnsw/builder.rs, graph.rs}, and rust/lance/src/io/exec/knn.rs; and
// checked against the files of docs/spec/lance-on-disk.md §8 (the
// fixture indexed_v2_2). The protobuf messages (IVF, Tensor) are those of
// internal/pb/indexpb.
//
// # On-disk contract
//
// I1. A segment is a directory _indices/<uuid>/ holding index.idx and
// auxiliary.idx, both Lance data files (v2.x, read with package format).
// A segment without auxiliary.idx is the legacy single-file format
// (L1-L4).
//
// I2. index.idx's schema metadata "lance:index" is JSON {"type": "IVF_PQ",
// "distance_type": "l2"}; the type names the sub-index and quantization
// (IVF_<sub>_<quant>, IVF_PQ meaning a flat sub-index over PQ codes).
// Other types (IVF_RQ, ...) are ErrUnsupported. distance_type is l2,
// cosine or dot.
//
// I3. Both files' metadata "lance:ivf" is the decimal index of a global
// buffer (buffer 0 is the file descriptor) holding an IVF protobuf.
// index.idx's holds the centroids (centroids_tensor, shape [partitions,
// dim], or the deprecated flat centroids) and, for HNSW, each partition's
// rows of index.idx; auxiliary.idx's holds each partition's rows of
// auxiliary.idx. Rows are offsets[p] .. offsets[p]+lengths[p], offsets
// defaulting to the running sum of lengths; both files agree on the
// number of partitions, and ranges lie within the file's rows.
//
// I4. auxiliary.idx holds the storage: _rowid (uint64) and one code
// column, "__pq_code" (fixed_size_list<uint8, m> for 8-bit PQ, m/2 for
// 4-bit: sub-vector 2i in the low nibble of byte i, 2i+1 in the high),
// "__sq_code" (fixed_size_list<uint8, dim>) or "flat"
// (fixed_size_list<float32, dim>). Its metadata "storage_metadata" is a
// JSON list whose first string is the quantizer's JSON: PQ
// {codebook_position, nbits, num_sub_vectors, dimension, transposed} with
// the codebook a Tensor in global buffer codebook_position (or inline in
// codebook_tensor), 2^nbits × dim floats laid out [sub-vector][centroid]
// [dim/m]; SQ {dim, num_bits, bounds: {start, end}}. "distance_type"
// repeats the metric. PQ codes written transposed (transposed: true) are
// laid out per partition [byte][row], each partition being its own batch.
//
// I5. index.idx's rows are the sub-index: none for a flat sub-index
// ("__flat_marker"; metadata "lance:flat" a list of one empty string per
// partition), or for HNSW the graph ("__vector_id" uint32,
// "__neighbors" list<uint32>, "_distance" list<float32>), with metadata
// "lance:hnsw" a JSON list of one string per partition: {entry_point,
// params: {max_level, m, ef_construction}, level_offsets}. A partition's
// rows are its levels one after the other, level l being rows
// level_offsets[l] .. level_offsets[l+1] of the partition; the bottom
// level holds every vector of the partition. Vector ids and neighbours
// are positions in the partition's storage (I4), so the row id of node i
// is the partition's _rowid[i].
//
// I6. Everything the files say is checked before it is used: row ranges
// within the files, codebooks of 2^nbits × dim values, sub-vectors
// dividing dim, code widths matching, HNSW node ids and neighbours below
// the partition's vector count, level offsets ascending within the
// partition. A violation is an error wrapping lancer.ErrCorrupt naming
// the index and file; nothing is allocated from a count the files give
// beyond what the files themselves hold.
//
// # The legacy IVF_PQ file (Lance before v3 indices, file version 0.1)
//
// Learned from Lance 0.10.18 (the core of vectordb 0.4.20, which built
// the fixtures in ../testdata/legacy_ivfpq): rust/lance/src/index.rs
// (open_index), rust/lance/src/index/vector.rs (open_vector_index),
// index/vector/ivf.rs and pq.rs, lance-index/src/vector/pq.rs and
// pq/builder.rs (from_proto), lance-io/src/utils.rs (read_message).
//
// L1. index.idx ends with 16 bytes: the little-endian uint64 position of
// the index message, uint16 major and minor version (0.1; 0.0 also read)
// and "LANC" (an index.idx ending in a Lance v2 file's footer is a v3
// segment that lost its auxiliary.idx: ErrCorrupt). At the position, a little-endian uint32 length, then a
// pb.Index message whose vector_index has the metric, the dimension and
// the stages: IVF then PQ. An OPQ transform stage, DiskANN, other PQ
// widths than 8 bits and the dot metric (Lance 0.10 summed 1 - dot per
// sub-vector, unlike v3; no reference answers) are ErrUnsupported.
//
// L2. The IVF stage holds the centroids (flat or as a tensor), and per
// partition the byte offset of its data (offsets) and its rows
// (lengths). A partition's data is its PQ codes, rows × m bytes
// row-major, followed by its row ids, rows × 8 bytes little-endian.
// Every partition lies before the index message.
//
// L3. The PQ stage holds num_bits, num_sub_vectors, dimension and the
// codebook (flat floats, or a tensor), 256 × dim values laid out
// [sub-vector][centroid][dim/m] as in v3 (I4).
//
// L4. The search is the v3 IVF_PQ's (S1, S2, S5): for cosine Lance 0.10
// normalizes the query, ranks centroids by L2 and uses PQ over L2 of the
// residuals (from_proto turns cosine into L2), as v3. TestLegacySearch
// checks ids and distances against Lance 0.10.18's answers.
//
// # Writing (as Lance's IvfIndexBuilder writes)
//
// W1. Write lays the files out as I1-I5 read them, with Lance's choices
// where the reader accepts several: PQ codes transposed, the codebook in
// global buffer 2, offsets recorded, empty partitions with an empty
// sub-index string. 4-bit PQ (WriteSpec.PQBits 4, Lance's num_bits=4) is
// given its codes packed as I4 says (PackPQ4) and written with a codebook
// of 16 codewords a sub-vector and nbits 4 (interop:
// TestLanceSearchesLancerIndices, TestLanceMaintainsLancerIndices).
//
// W2. SQ is Lance's: one range [start, end] over every value of every
// vector (normalized for cosine), the least and greatest, and the codes
// of S3. It is computed from the exact vectors (a first pass over the
// partitions), not from lancer's per-dimension SQ8.
//
// W3. A partition's HNSW graph is lancer's (package vector), renumbered
// so that its entry point, a node of the top level, is node 0 (where
// Lance's search starts) and written as Lance's HNSW to_batch does: its
// levels bottom up, each a row per node on it in node order, with the
// neighbours and their distances (exact, in the metric); params.max_level
// is Lance's default 7 (the levels above the graph's top empty, as Lance 12
// writes them) or the graph's number of levels if more, level_offsets one
// more than that.
// The details record the metric, the compression (PQ bits and
// sub-vectors, SQ bits, flat) and for HNSW m, ef_construction and
// Lance's default max_level 7.
//
// # Search semantics (as Lance's)
//
// S1. The query is normalized for cosine. The nprobes partitions whose
// centroids are nearest (squared L2 for l2 and cosine, 1 - dot for dot)
// are searched, each for k rows.
//
// S2. PQ is residual for l2 and cosine: the distance table is built from
// query minus the partition's centroid, per sub-vector squared L2 to each
// centroid (1 - dot and no residual for dot); a row's distance is the sum
// of its codes' entries (for dot minus m-1, so 1 - dot overall). Cosine
// PQ distances are squared L2 of normalized vectors, as Lance's.
//
// S3. SQ codes the query as floor((x - start) × 255 / (end - start)),
// saturated to [0, 255], in float64; a row's distance is the integer sum
// of squared code differences times (end-start)² / 255² (l2 and cosine).
// For dot it is 1 - q·x̂ with the row decoded, x̂ = start + code ×
// (end-start)/255: what Lance 12 returns (interop:
// TestLanceSearchesLancerIndices; the older Lance source read sums code
// products instead). SQ is never residual.
//
// S4. HNSW search starts at the recorded entry point (Lance 12's answers
// match it; the older Lance source read starts at node 0), descends
// greedily from level max_level-1 to 0, then beam-searches
// the bottom level with width ef × the partitions probed (ef below k is
// an error; default k + k/2, as in the older source). The scaling by the
// probes is not in the Lance source read; it is what reproduces Lance
// 12's answers (interop: TestLancerSearchesLanceIndices, which found
// every other rule tried differing),
// comparing each neighbour with the farthest result as it was when its
// node was expanded; a prefilter keeps the results to allowed nodes, and
// one leaving fewer than a tenth of the nodes is searched exactly.
//
// S5. A flat sub-index scores every allowed row of the partition and keeps
// the k nearest as Lance 12's Rust BinaryHeap does: one heap for the
// whole search, offered the rows of the probed partitions in probe order
// (then those of the late search, S7), ordered by distance alone, its top
// replaced only by a strictly nearer row; so that of equally distant rows
// the ones Lance keeps are kept, and come out by distance, then row id. 4-bit PQ without a
// prefilter computes distances as Lance's compute_pq_distance_4bit: the
// first max(200, k) rows and the last partial block of 16 exactly, the
// others through the distance table quantized to bytes (saturating sums,
// mapped back with one offset), so distances repeat as Lance's do; for dot
// less m-1, as Lance's distance_all (TestWritePQ4 found it missing).
//
// S6. Distances are those of the quantized vectors; Search returns the k
// nearest of all probed partitions. Re-scoring with exact vectors
// (refine, and Lance's re-scoring of candidates when fragments are
// unindexed) is package dataset's, which reads the vectors.
//
// S7. When the nprobes partitions yield fewer than k rows (a selective
// prefilter), the next partitions in centroid order are searched, one at a
// time, until k rows are found or none is left: Lance's late search
// (rust/lance/src/io/exec/knn.rs, ANNIvfSubIndexExec::late_search, whose
// maximum_nprobes defaults to every partition; it searches them in batches
// of its CPU parallelism, so it may search a few more than this does).
package vecindex
