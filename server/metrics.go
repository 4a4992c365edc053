package server

import (
	"bufio"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lcache "github.com/lancerdb/lancer/cache"
	"github.com/lancerdb/lancer/dataset"
)

// metrics are the server's counters, served at GET /metrics in
// Prometheus's text exposition format (version 0.0.4):
//
//	lancer_http_requests_total{endpoint,code}            counter
//	lancer_http_request_duration_seconds{endpoint}       histogram
//	lancer_http_requests_in_flight                       gauge
//	lancer_query_rows_returned_total{kind}               counter (kind: scan, search, take)
//	lancer_query_rows_searched_total{kind}               counter: live rows of the versions queried
//	lancer_commits_total{operation}                      counter: writes committed, by endpoint
//	lancer_group_commits_total{result}                   counter: group commits of inserts (ok, failed)
//	lancer_group_commit_requests                         histogram: inserts per group commit
//	lancer_group_commit_rows_total                       counter: rows the group commits held
//	lancer_commit_turn_waits_total                       counter: commits that waited for another's turn
//	                                                     (inserts behind a maintenance commit, or the reverse)
//	lancer_dataset_cache_hits_total, _misses_total       counters
//	lancer_dataset_cache_entries                         gauge
//	lancer_read_cache_hits_total, _misses_total,         counters: the byte-bounded cache
//	  _evictions_total                                   every table shares (Options.CacheBytes)
//	lancer_read_cache_bytes{kind}, _limit_bytes,         gauges (kind: what is kept: reader,
//	  _entries                                           deletions, index, index-partition, search)
//	lancer_maintenance_runs_total, _errors_total,        counters: the background maintenance
//	  _conflicts_total, _put_off_total,                  (maintenance.go): runs, failures, runs
//	  _fragments_compacted_total, _fragments_written_total, that yielded to a user's write, tables
//	  _index_segments_total, _versions_removed_total,    put off for a recent commit, and what
//	  _files_removed_total, _bytes_removed_total         the runs did
//
// endpoint is the route ("POST /v1/table/{id}/query"), never the raw path,
// so that table names do not multiply the series; requests refused before
// routing (a bad API key) count under "unauthorized", unknown paths under
// "unmatched". rows_searched is the number of live rows in the version a
// query ran on: what a scan or a flat search reads at most, not what an
// index or a filter let it skip.
type metrics struct {
	inFlight atomic.Int64

	mu       sync.Mutex
	requests map[[2]string]uint64 // endpoint, code
	latency  map[string]*histogram
	returned map[string]uint64
	searched map[string]uint64
	commits  map[string]uint64

	groups     map[string]uint64 // group commits by result
	groupSizes *histogram        // requests per group, over groupBuckets
	groupRows  uint64
	turnWaits  uint64 // commits that waited for the turn of a table's committer
}

// groupBuckets are the upper bounds of the group commit size histogram.
var groupBuckets = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}

// latencyBuckets are the histogram's upper bounds, in seconds.
var latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

type histogram struct {
	counts []uint64 // per bucket, not cumulative; one more for +Inf
	sum    float64
	count  uint64
}

func newMetrics() *metrics {
	return &metrics{
		requests: map[[2]string]uint64{},
		latency:  map[string]*histogram{},
		returned: map[string]uint64{},
		searched: map[string]uint64{},
		commits:  map[string]uint64{},

		groups:     map[string]uint64{},
		groupSizes: &histogram{counts: make([]uint64, len(groupBuckets)+1)},
	}
}

// group records a group commit of inserts.
func (m *metrics) group(info dataset.GroupCommitInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	result := "ok"
	if info.Err != nil {
		result = "failed"
	}
	m.groups[result]++
	n := float64(info.Requests)
	i, _ := slices.BinarySearch(groupBuckets, n)
	m.groupSizes.counts[i]++
	m.groupSizes.sum += n
	m.groupSizes.count++
	m.groupRows += uint64(info.Rows)
}

// turnWait records a commit that waited for its turn with a table's
// group committer (dataset.GroupCommitOptions.OnTurnWait).
func (m *metrics) turnWait() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.turnWaits++
}

// endpointLabel names a request's route: the pattern it matched, without
// the trailing-slash variant's "/{$}".
func endpointLabel(pattern string) string {
	if pattern == "" || pattern == "/" {
		return "unmatched"
	}
	return strings.TrimSuffix(pattern, "/{$}")
}

// request records a finished request.
func (m *metrics) request(endpoint string, status int, d time.Duration) {
	sec := d.Seconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[[2]string{endpoint, strconv.Itoa(status)}]++
	h := m.latency[endpoint]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(latencyBuckets)+1)}
		m.latency[endpoint] = h
	}
	i, _ := slices.BinarySearch(latencyBuckets, sec) // first bound >= sec
	h.counts[i]++
	h.sum += sec
	h.count++
}

// query records a query's rows.
func (m *metrics) query(kind string, returned, searched uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.returned[kind] += returned
	m.searched[kind] += searched
}

// commit records a committed write.
func (m *metrics) commit(op string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commits[op]++
}

// commitOp names a write by its route's last word(s): "insert",
// "create_index", "tags/create", "branches/delete".
func commitOp(pattern string) string {
	p := endpointLabel(pattern)
	if i := strings.Index(p, "/{id}/"); i >= 0 {
		return p[i+len("/{id}/"):]
	}
	return p
}

// serveMetrics answers GET /metrics.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("content-type", "text/plain; version=0.0.4; charset=utf-8")
	bw := bufio.NewWriter(w)
	s.metrics.write(bw, s.cache, s.readCache.Stats())
	s.maint.writeMetrics(bw)
	return bw.Flush()
}

// write prints every metric, series sorted by label values.
func (m *metrics) write(w *bufio.Writer, cache *datasetCache, rc lcache.Stats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	header := func(name, typ, help string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
	}

	header("lancer_http_requests_total", "counter", "HTTP requests answered, by route and status code.")
	reqKeys := make([][2]string, 0, len(m.requests))
	for k := range m.requests {
		reqKeys = append(reqKeys, k)
	}
	slices.SortFunc(reqKeys, func(a, b [2]string) int {
		if c := strings.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return strings.Compare(a[1], b[1])
	})
	for _, k := range reqKeys {
		fmt.Fprintf(w, "lancer_http_requests_total{endpoint=%s,code=%s} %d\n", quote(k[0]), quote(k[1]), m.requests[k])
	}

	header("lancer_http_request_duration_seconds", "histogram", "Time to answer a request, by route.")
	for _, ep := range sortedKeys(m.latency) {
		h := m.latency[ep]
		var cum uint64
		for i, le := range latencyBuckets {
			cum += h.counts[i]
			fmt.Fprintf(w, "lancer_http_request_duration_seconds_bucket{endpoint=%s,le=%s} %d\n", quote(ep), quote(formatFloat(le)), cum)
		}
		cum += h.counts[len(latencyBuckets)]
		fmt.Fprintf(w, "lancer_http_request_duration_seconds_bucket{endpoint=%s,le=\"+Inf\"} %d\n", quote(ep), cum)
		fmt.Fprintf(w, "lancer_http_request_duration_seconds_sum{endpoint=%s} %s\n", quote(ep), formatFloat(h.sum))
		fmt.Fprintf(w, "lancer_http_request_duration_seconds_count{endpoint=%s} %d\n", quote(ep), h.count)
	}

	header("lancer_http_requests_in_flight", "gauge", "Requests being answered.")
	fmt.Fprintf(w, "lancer_http_requests_in_flight %d\n", m.inFlight.Load())

	header("lancer_query_rows_returned_total", "counter", "Rows returned by queries, by kind (scan, search, take).")
	for _, k := range sortedKeys(m.returned) {
		fmt.Fprintf(w, "lancer_query_rows_returned_total{kind=%s} %d\n", quote(k), m.returned[k])
	}
	header("lancer_query_rows_searched_total", "counter", "Live rows of the table versions queries ran on (an upper bound of the rows they read), by kind.")
	for _, k := range sortedKeys(m.searched) {
		fmt.Fprintf(w, "lancer_query_rows_searched_total{kind=%s} %d\n", quote(k), m.searched[k])
	}

	header("lancer_commits_total", "counter", "Writes committed by the server, by operation.")
	for _, k := range sortedKeys(m.commits) {
		fmt.Fprintf(w, "lancer_commits_total{operation=%s} %d\n", quote(k), m.commits[k])
	}

	header("lancer_group_commits_total", "counter", "Group commits of concurrent inserts to one table, by result (ok, failed).")
	for _, k := range sortedKeys(m.groups) {
		fmt.Fprintf(w, "lancer_group_commits_total{result=%s} %d\n", quote(k), m.groups[k])
	}
	header("lancer_group_commit_requests", "histogram", "Inserts per group commit: how many requests shared one version.")
	var cum uint64
	for i, le := range groupBuckets {
		cum += m.groupSizes.counts[i]
		fmt.Fprintf(w, "lancer_group_commit_requests_bucket{le=%s} %d\n", quote(formatFloat(le)), cum)
	}
	cum += m.groupSizes.counts[len(groupBuckets)]
	fmt.Fprintf(w, "lancer_group_commit_requests_bucket{le=\"+Inf\"} %d\n", cum)
	fmt.Fprintf(w, "lancer_group_commit_requests_sum %s\n", formatFloat(m.groupSizes.sum))
	fmt.Fprintf(w, "lancer_group_commit_requests_count %d\n", m.groupSizes.count)
	header("lancer_group_commit_rows_total", "counter", "Rows written by group commits.")
	fmt.Fprintf(w, "lancer_group_commit_rows_total %d\n", m.groupRows)
	header("lancer_commit_turn_waits_total", "counter", "Commits to a table that waited for another commit of this server to it: inserts behind a maintenance commit, or the reverse.")
	fmt.Fprintf(w, "lancer_commit_turn_waits_total %d\n", m.turnWaits)

	var hits, misses uint64
	if cache != nil {
		hits, misses = cache.hits.Load(), cache.misses.Load()
	}
	header("lancer_dataset_cache_hits_total", "counter", "Requests served by a cached opened version.")
	fmt.Fprintf(w, "lancer_dataset_cache_hits_total %d\n", hits)
	header("lancer_dataset_cache_misses_total", "counter", "Requests that opened a version afresh.")
	fmt.Fprintf(w, "lancer_dataset_cache_misses_total %d\n", misses)
	header("lancer_dataset_cache_entries", "gauge", "Opened versions held in the cache.")
	fmt.Fprintf(w, "lancer_dataset_cache_entries %d\n", cache.len())

	header("lancer_read_cache_hits_total", "counter", "Lookups the read cache answered.")
	fmt.Fprintf(w, "lancer_read_cache_hits_total %d\n", rc.Hits)
	header("lancer_read_cache_misses_total", "counter", "Lookups that loaded a value (a file reader, deletion vector, index part or search state).")
	fmt.Fprintf(w, "lancer_read_cache_misses_total %d\n", rc.Misses)
	header("lancer_read_cache_evictions_total", "counter", "Values dropped to keep the read cache within its limit.")
	fmt.Fprintf(w, "lancer_read_cache_evictions_total %d\n", rc.Evictions)
	header("lancer_read_cache_bytes", "gauge", "Bytes held in the read cache, by kind of value.")
	for _, ns := range sortedKeys(rc.BytesByNamespace) {
		fmt.Fprintf(w, "lancer_read_cache_bytes{kind=%s} %d\n", quote(strings.TrimPrefix(ns, "dataset.")), rc.BytesByNamespace[ns])
	}
	header("lancer_read_cache_limit_bytes", "gauge", "The read cache's bound on its bytes.")
	fmt.Fprintf(w, "lancer_read_cache_limit_bytes %d\n", rc.Limit)
	header("lancer_read_cache_entries", "gauge", "Values held in the read cache.")
	fmt.Fprintf(w, "lancer_read_cache_entries %d\n", rc.Entries)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// quote writes a label value: double-quoted, with backslash, quote and
// newline escaped as the exposition format asks.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

func formatFloat(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}
