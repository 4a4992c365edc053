// Package vector holds lancer's pure vector-search algorithms: distance
// kernels, exact search, HNSW, quantization and IVF partitioning.
//
// It knows no files, stores or datasets: it works on float32 slices and
// returns row positions, so it can be tested and benchmarked on its own. The
// dataset layer feeds it vectors and persists what it builds.
//
// (Not yet implemented: this package is filled in by the vector-search
// work.)
package vector
