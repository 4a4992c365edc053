package server

import (
	"encoding/json"
	"math"
	"strconv"
)

// The bounds of the numbers a request controls, in one place. Handlers
// read such a number with intParam (or nonNegative where MaxInt means "no
// limit") and check it against a bound here, so a value past its bound is
// a 400 naming the field and the bound, never an allocation, a panic or a
// wrapped count. The lower layers do not trust them either: dataset.Search
// and the vector package allocate by the rows they find, not by k, ef or
// nprobes, and dataset rejects a k × refine factor that overflows.
//
// LanceDB's own query path has no such bounds (k, nprobes and ef are
// usize, refine_factor a u32, in Lance's Query), so these are lancer's:
// far above what a client asks for in practice, low enough that one request
// cannot make the server rank, read or answer more than a bounded amount.
//
// Bounded elsewhere, by what they are: a request body's size by
// Options.MaxBodyBytes (so also the query vectors, the columns list and a
// take's "_rowoffset IN (...)" list); a table name by MaxTableNameLength; a
// tag or branch name by branch.MaxRefNameLength; the browser UI's pages by
// the uiMax* constants of ui_api.go. A plain scan's k (limit) and offset are
// not bounded: the client sends k = i64 max for "no limit", the scan stops
// at the table's end, and offset only skips.
const (
	// maxSearchK bounds k + offset of a vector search: the neighbours one
	// query vector ranks. A query vector's answer is ranked in memory
	// before it is written, and 10,000 rows of 1536-dimension vectors is
	// about 60 MiB, the order of DefaultMaxBodyBytes. It is the result
	// window of Elasticsearch (index.max_result_window) and the top_k
	// bound of Pinecone; deeper pages are better reached with a filter or
	// distance bounds.
	maxSearchK = 10_000
	// maxQueryVectors bounds the query vectors of one batch search: each
	// is a search of its own over the table.
	maxQueryVectors = 1_000
	// maxSearchRows bounds the rows of a batch search's answer: query
	// vectors × (k + offset), ten full windows.
	maxSearchRows = 10 * maxSearchK
	// maxRefineCandidates bounds (k + offset) × refine_factor, the
	// candidates re-ranked by their exact vectors: each is read from the
	// table (100,000 vectors of 1536 dimensions are about 600 MiB): a
	// refine factor of up to 10,000 at k = 10, of 10 at the largest k.
	maxRefineCandidates = 10 * maxSearchK
	// maxNProbes bounds nprobes. A search probes at most the partitions an
	// index has (lancer's default is √rows), so a larger nprobes means
	// "all"; 2^20 partitions is an index of 10^12 rows, and the most an
	// index dataset/vecindex opens may have. A larger nprobes is clamped
	// to it, not refused (clampParam): Lance probes min(nprobes,
	// partitions), the same partitions, and the client sends its "all"
	// (-1) as 4294967295.
	maxNProbes = 1 << 20
	// maxEf bounds ef, the HNSW beam width, as vector.BuildHNSW bounds its
	// build-time twin EfConstruction. A beam wider than a partition walks
	// the whole partition, so a larger ef is clamped to it, as nprobes is:
	// the same answer for every partition of up to 2^20 rows (a √rows
	// partitioning of 10^12 rows), and the work of a 2^20 beam.
	maxEf = 1 << 20
	// maxListLimit bounds ?limit= of the table list: each name listed
	// costs a lookup of the table's versions (a request on object storage).
	// No limit (or 0) lists every table, a page of existsConcurrency
	// lookups at a time.
	maxListLimit = 10_000
	// maxBodyCap bounds Options.MaxBodyBytes (and so the JSON cap) where
	// a larger value would overflow what is computed from it: 1 TiB.
	maxBodyCap = 1 << 40
	// maxErrorMessageBytes bounds the message of an error answer, which
	// may quote a filter or a name from the request.
	maxErrorMessageBytes = 4 << 10
	// maxListedVersions bounds version/list/: each version listed costs one
	// manifest read. A table with more lists its latest ones.
	maxListedVersions = 10_000
	// maxOrderKeys bounds the columns of an order_by.
	maxOrderKeys = 16
	// maxOrderBytes bounds the rows an order_by holds to sort them: a
	// scan's best k + offset rows (twice that while it reads), or every
	// row without a limit; past it the query is a 400 asking for a
	// smaller limit.
	maxOrderBytes = 256 << 20
)

// nonNegative parses an optional JSON integer; empty is def, and values
// past MaxInt (k's "no limit") are MaxInt.
func nonNegative(field string, n json.Number, def int) (int, error) {
	if n == "" {
		return def, nil
	}
	u, err := strconv.ParseUint(n.String(), 10, 64)
	if err != nil {
		return 0, invalidf("%s must be a non-negative integer, got %s", field, n)
	}
	if u > math.MaxInt {
		return math.MaxInt, nil
	}
	return int(u), nil
}

// listLimit parses ?limit= of a list: a non-negative integer, where a
// limit above maxListLimit is a page of maxListLimit names (with its page
// token), as the namespace spec lets a server answer fewer than asked:
// the client sends its "no limit" (-1) as 4294967295, which embedded
// LanceDB answers with every name.
func listLimit(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, invalidf("limit must be a non-negative integer, got %s", s)
	}
	return int(min(u, maxListLimit)), nil
}

// clampParam parses an optional non-negative integer as intParam does,
// but a value past maxValue is maxValue: for the numbers whose bound
// already means "all" (nprobes, ef), where refusing what Lance answers
// would only break the client's -1.
func clampParam(field, s string, def, maxValue int) (int, error) {
	if s == "" {
		return def, nil
	}
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, invalidf("%s must be a non-negative integer, got %s", field, s)
	}
	return int(min(u, uint64(maxValue))), nil
}

// intParam parses an optional non-negative integer (a JSON number or a
// URL parameter) of at most maxValue; empty is def. Anything else is a 400
// naming field and, past the bound, the bound.
func intParam(field, s string, def, maxValue int) (int, error) {
	if s == "" {
		return def, nil
	}
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, invalidf("%s must be a non-negative integer, got %s", field, s)
	}
	if u > uint64(maxValue) {
		return 0, invalidf("%s is %s, at most %d", field, s, maxValue)
	}
	return int(u), nil
}
