// Package vector holds lancer's pure vector-search algorithms: distance
// kernels, exact search, HNSW, quantization and IVF partitioning.
//
// It knows no files, stores or datasets: it works on float32 slices and
// returns row positions, so it can be tested and benchmarked on its own. The
// dataset layer feeds it vectors and persists what it builds.
//
// # Distances
//
// A Metric (L2 = squared Euclidean, Cosine = 1 - cos, Dot = 1 - a·b) is a
// distance where smaller is nearer, as Lance's _distance. L2Squared,
// DotProduct, DotDistance and CosineDistance, Metric.Func and the batch
// Distances (one query against packed rows, the hot loop of exact search)
// run AVX2+FMA assembly on amd64 CPUs that have it and 8-way unrolled Go
// elsewhere; Kernels says which, and the purego build tag forces Go. SIMD
// sums in another order than a plain loop, so results differ from one in
// the last bits; within a process every path to a distance uses the same
// kernel, so equal inputs give bit-identical distances.
//
// Vectors stored as IEEE binary16 (Lance's float16) are []uint16 bits:
// HalfToFloat32, Float32ToHalf and HalvesToFloat32 convert them (F16C on
// amd64), HalfDistance and DistancesHalf score a float32 query against them
// without converting the whole vector.
//
// # Exact search
//
// FlatSearch scores every row and keeps the k nearest in a TopK, a bounded
// max-heap whose order is (distance, id): ties go to the smaller id, so the
// result is deterministic and FlatSearchParallel, which splits the rows into
// chunks over goroutines and merges their heaps, returns exactly the same
// neighbors. A TopK grows as it keeps neighbors: k is a bound, not an
// allocation, so every search entry point accepts any k, ef or NProbes (a
// caller's 2^31-1 means every row) and allocates by the rows it finds. IDs are row positions. A Filter restricts a search to the ids
// it contains; nil allows all. AllowList, a roaring64 bitmap, is walked
// rather than probed, so a selective allow-list costs what it selects.
// Rows with a NaN distance are never returned.
//
// # Scalar quantization
//
// SQ8 maps each dimension's trained [min, max] onto 0..255 (one byte per
// dimension; Lance's SQ uses one range for all dimensions). An SQ8Query
// precomputes the query-dependent terms so that scoring a code is one fused
// pass (assembly on amd64); the distance is the exact distance to the
// decoded vector. Search codes for a few times k candidates, then Rerank them
// with exact distances: on clustered data 4k candidates give recall@10 of
// 0.99 or better.
//
// # HNSW
//
// BuildHNSW builds a hierarchical navigable small-world graph (Malkov and
// Yashunin) over packed vectors: dense uint32 node ids (row positions),
// flat adjacency arrays (2M slots per node on layer 0, M above), the
// neighbour-selection heuristic with pruned connections kept, a separate
// efConstruction, and a parallel build with striped locks. Search(q, k, ef,
// allow) walks the graph with ef candidates and returns the k nearest with
// their distances; Delete marks a tombstone that searches walk through but
// never return. A filter that allows few rows (A < k, or A² ≤ 16·ef·n) is
// answered by exact search over the allowed rows instead, so a filter that
// keeps 0.1% of rows is exact and fast. MarshalBinary stores the graph
// without its vectors; UnmarshalBinary validates every count and id before
// it allocates.
//
// # IVF
//
// TrainKMeans clusters vectors: k-means++ initialization and Lloyd
// iterations on a deterministic sample (min(n, 256k) rows by default, as
// Lance), L2 for L2 and Dot (Lance also partitions dot indexes by L2),
// spherical (unit centroids) for Cosine. Assignments are exact, sped up by
// Elkan's triangle-inequality bound from a guess; empty clusters are
// re-seeded by splitting the largest; sums are taken in row order, so the
// centroids do not depend on Workers. AssignPartitions maps rows to their
// nearest centroid in parallel.
//
// BuildIVF partitions n vectors with caller ids (Lance row ids) into
// Partitions (default √n) k-means cells and builds every partition on its
// own goroutine: SubFlat scans a partition, SubHNSW gives it an HNSW graph
// (for partitions up to 2048 rows built layer by layer from exact
// candidate lists with HNSW's selection heuristic, larger ones by
// incremental insertion; always on the exact vectors). StoreFloat32 keeps
// the vectors; StoreSQ8 keeps SQ8 codes (one quantizer over all rows) and
// distances are to the decoded vectors. IVF.Search ranks the centroids, searches the NProbes nearest
// partitions (default 20) and merges their results by (distance, caller
// id); for L2 a partition whose rows are all provably farther than the
// k-th result (centroid distance minus partition radius) is skipped.
// Selective filters are answered exactly. The index is immutable, safe for
// concurrent searches, and a pure function of its input and options
// (Workers aside). On the 200k×128 clustered benchmark IVF_HNSW_SQ with 447
// partitions builds in about 4.5 s on two cores, takes 54 MB serialized and
// answers over 4000 queries/s on one goroutine at recall@10 0.96 (the
// ceiling SQ8 leaves) with the default options; TestIVFClusteredBench
// (LANCER_IVF_BENCH=1) measures it.
//
// # Product quantization
//
// StorePQ (Lance's IVF_PQ, SubFlat only) splits each row's residual to its
// partition centroid (of the normalized row for Cosine) into
// PQOptions.SubVectors sub-vectors (default dim/8 when 8 divides dim) and
// keeps, per sub-vector, the byte naming the nearest of 256 codewords
// trained by k-means on a sample of residuals (65536 rows by default), one
// codebook per sub-space: 16 bytes for a 128-dimension row. A search builds
// lookup tables of the query's distances to the codewords (per probed
// partition for L2, once per query plus a partition constant for Dot and
// Cosine), so a code costs SubVectors table lookups; the distance is the
// metric's distance to the decoded vector (exact cosine, the decoded norm
// coming from a second table). Quantization error is large: rerank a few
// times k candidates with exact vectors (Rerank, or the dataset's
// RefineFactor). On the 200k×128 clustered benchmark with 447 partitions and
// 16 sub-vectors the index builds in about 24 s on two (shared) cores,
// takes 5.2 MB and gives recall@10 0.317 alone and 0.876 reranking 100
// candidates (Lance: 21.7 s, 4.7 MB, 0.317 and 0.857);
// TestIVFPQClusteredBench measures it.
//
// # Serialization and lazy loading
//
// WriteToContext (and WriteTo, MarshalBinary) store the index as
// "LNCRIVF1" format version 2 (layout in ivf_codec.go): a fixed header
// (dimension, metric, sub-index, storage, partitions, rows, HNSW and PQ
// parameters), then everything a search needs before it reads a
// partition — centroids, SQ8 ranges or PQ
// codebooks, partition radii and sizes, all row ids — then the partitions
// (vectors or codes, and graphs), and at the end a directory of the
// partitions (offset, length, CRC-32C) and a CRC-32C of the header, front
// matter and directory. UnmarshalIVF decodes versions 2 and 1 (the
// earlier format, a single checksum at the end) whole, checking checksums
// and every count before it allocates.
//
// OpenIVF serves indexes larger than memory: given the file's size and a
// ranged reader it reads the header, front matter and directory (row ids
// cost 8 bytes a row, since IDs and filters need them), and loads each
// partition, checking its CRC-32C and contents, when a search first probes
// it, with that search's ctx (no ctx is kept in the index), into a
// least-recently-used cache bounded by OpenIVFOptions.CacheBytes (default
// unbounded) or into the caller's OpenIVFOptions.Partitions; concurrent
// searches share loads. Search fails when a partition it needs fails to
// load (the ctx's error, a read error, or lancer.ErrCorrupt naming the
// partition); otherwise it gives exactly the results of the fully decoded
// index.
package vector
