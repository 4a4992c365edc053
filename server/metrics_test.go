package server_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/server"
)

// sample is one line of the text exposition format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$`)
	labelPair  = regexp.MustCompile(`^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)`)
)

// parseMetrics parses Prometheus's text format strictly enough to catch
// malformed output: HELP and TYPE before a family's samples, label syntax,
// numeric values, histogram buckets cumulative and ending in +Inf = count.
func parseMetrics(t *testing.T, text string) []sample {
	t.Helper()
	types := map[string]string{}
	var out []sample
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "# ") {
			f := strings.SplitN(line, " ", 4)
			if len(f) < 4 || (f[1] != "HELP" && f[1] != "TYPE") {
				t.Fatalf("line %d: bad comment %q", n, line)
			}
			if f[1] == "TYPE" {
				switch f[3] {
				case "counter", "gauge", "histogram", "summary", "untyped":
				default:
					t.Fatalf("line %d: bad type %q", n, line)
				}
				if _, dup := types[f[2]]; dup {
					t.Fatalf("line %d: second TYPE for %s", n, f[2])
				}
				types[f[2]] = f[3]
			}
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("line %d: malformed sample %q", n, line)
		}
		s := sample{name: m[1], labels: map[string]string{}}
		for rest := m[3]; rest != ""; {
			p := labelPair.FindStringSubmatch(rest)
			if p == nil {
				t.Fatalf("line %d: malformed labels %q", n, m[3])
			}
			s.labels[p[1]] = p[2]
			rest = rest[len(p[0]):]
		}
		v, err := strconv.ParseFloat(m[4], 64)
		if err != nil {
			t.Fatalf("line %d: value %q: %v", n, m[4], err)
		}
		s.value = v
		family := s.name
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(s.name, suf); ok && types[b] == "histogram" {
				family = b
			}
		}
		if _, ok := types[family]; !ok {
			t.Fatalf("line %d: sample of %s before its TYPE", n, family)
		}
		out = append(out, s)
	}
	// Histograms: cumulative buckets, +Inf last and equal to _count.
	last := map[string]float64{}
	inf := map[string]float64{}
	for _, s := range out {
		if b, ok := strings.CutSuffix(s.name, "_bucket"); ok && types[b] == "histogram" {
			key := b + s.labels["endpoint"]
			if s.value < last[key] {
				t.Errorf("%s %v: buckets not cumulative", s.name, s.labels)
			}
			last[key] = s.value
			if s.labels["le"] == "+Inf" {
				inf[key] = s.value
			}
		}
	}
	for _, s := range out {
		if b, ok := strings.CutSuffix(s.name, "_count"); ok && types[b] == "histogram" {
			if inf[b+s.labels["endpoint"]] != s.value {
				t.Errorf("%s %v: count %v, +Inf bucket %v", s.name, s.labels, s.value, inf[b+s.labels["endpoint"]])
			}
		}
	}
	return out
}

// find returns the value of the sample with the name and labels.
func find(samples []sample, name string, labels ...string) (float64, bool) {
next:
	for _, s := range samples {
		if s.name != name {
			continue
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if s.labels[labels[i]] != labels[i+1] {
				continue next
			}
		}
		return s.value, true
	}
	return 0, false
}

func TestServerMetrics(t *testing.T) {
	s, _ := newServer(t, server.Options{CacheBytes: 8 << 20})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 5, true), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	for range 3 {
		do(t, s, "POST", "/v1/table/t/insert/", rows(t, 2, true), arrowBody)
	}
	for range 2 {
		if rec := do(t, s, "POST", "/v1/table/t/query/", []byte(`{"vector":[1,1],"k":3}`), nil); rec.Code != 200 {
			t.Fatalf("query: %d %s", rec.Code, rec.Body)
		}
	}
	do(t, s, "POST", "/v1/table/t/query/", []byte(`{"k":4,"filter":"id < 3"}`), nil)
	do(t, s, "POST", "/v1/table/nope/query/", []byte(`{"k":4}`), nil)
	do(t, s, "GET", "/v1/no/such/endpoint", nil, nil)
	noKey := httptest.NewRecorder()
	s.ServeHTTP(noKey, httptest.NewRequest("GET", "/metrics", nil))
	if rec := noKey; rec.Code != http.StatusUnauthorized {
		t.Errorf("metrics without the key: %d", rec.Code)
	}

	rec := do(t, s, "GET", "/metrics", nil, nil)
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("content-type"), "text/plain; version=0.0.4") {
		t.Fatalf("metrics: %d %s %s", rec.Code, rec.Header().Get("content-type"), rec.Body)
	}
	samples := parseMetrics(t, rec.Body.String())
	const query = "POST /v1/table/{id}/query"
	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"lancer_http_requests_total", []string{"endpoint", query, "code", "200"}, 3},
		{"lancer_http_requests_total", []string{"endpoint", query, "code", "404"}, 1},
		{"lancer_http_requests_total", []string{"endpoint", "POST /v1/table/{id}/insert", "code", "200"}, 3},
		{"lancer_http_requests_total", []string{"endpoint", "unmatched", "code", "404"}, 1},
		{"lancer_http_requests_total", []string{"endpoint", "unauthorized", "code", "401"}, 1},
		{"lancer_http_request_duration_seconds_count", []string{"endpoint", query}, 4},
		{"lancer_http_requests_in_flight", nil, 1}, // the /metrics request itself
		{"lancer_query_rows_returned_total", []string{"kind", "search"}, 6},
		{"lancer_query_rows_returned_total", []string{"kind", "scan"}, 4},
		{"lancer_query_rows_searched_total", []string{"kind", "search"}, 22},
		{"lancer_commits_total", []string{"operation", "insert"}, 3},
		{"lancer_commits_total", []string{"operation", "create"}, 1},
		{"lancer_read_cache_limit_bytes", nil, 8 << 20},
	}
	for _, c := range checks {
		got, ok := find(samples, c.name, c.labels...)
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	// The read cache holds the tables' file readers and the vectors the
	// searches scored.
	for _, kind := range []string{"reader", "search"} {
		if got, ok := find(samples, "lancer_read_cache_bytes", "kind", kind); !ok || got <= 0 {
			t.Errorf("lancer_read_cache_bytes{kind=%q} = %v (found %v)", kind, got, ok)
		}
	}
	if got, _ := find(samples, "lancer_read_cache_misses_total"); got <= 0 {
		t.Errorf("lancer_read_cache_misses_total = %v", got)
	}
	for _, s := range samples {
		if strings.Contains(s.labels["endpoint"], "/t/") {
			t.Errorf("raw path in a label: %v", s.labels)
		}
	}
	if testing.Verbose() {
		fmt.Println(rec.Body.String())
	}
}

// TestServerReadCacheShared: every table the server serves reads through
// its one read cache.
func TestServerReadCacheShared(t *testing.T) {
	s, _ := newServer(t, server.Options{})
	misses := func() float64 {
		rec := do(t, s, "GET", "/metrics", nil, nil)
		v, _ := find(parseMetrics(t, rec.Body.String()), "lancer_read_cache_misses_total")
		return v
	}
	last := misses()
	for _, table := range []string{"a", "b"} {
		if rec := do(t, s, "POST", "/v1/table/"+table+"/create/", rows(t, 5, true), arrowBody); rec.Code != http.StatusOK {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
		if rec := do(t, s, "POST", "/v1/table/"+table+"/query/", []byte(`{"vector":[1,1],"k":3}`), nil); rec.Code != 200 {
			t.Fatalf("query: %d %s", rec.Code, rec.Body)
		}
		if now := misses(); now <= last {
			t.Fatalf("a search of table %s loaded nothing into the server's cache (%v misses, %v before)", table, now, last)
		} else {
			last = now
		}
	}
}
