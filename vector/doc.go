// Package vector holds lancer's pure vector-search algorithms: distance
// kernels, exact search, HNSW, quantization and IVF partitioning.
//
// It knows no files, stores or datasets: it works on float32 slices and
// returns row positions, so it can be tested and benchmarked on its own. The
// dataset layer feeds it vectors and persists what it builds.
//
// # Distances
//
// A Metric (L2 = squared Euclidean, Cosine = 1 - cos, Dot = -a·b) is a
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
// neighbors. IDs are row positions. A Filter restricts a search to the ids
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
package vector
