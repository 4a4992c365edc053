package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"
)

// The adversary of the server load test (issue #22): while the official
// clients run their mix, one goroutine sends a bounded stream of the
// requests that once crashed the server, exhausted its memory, got past
// its key or damaged data, and checks that each is refused with the 4xx
// it deserves. The load test's own checks then show that the normal
// clients kept being answered and lost nothing. Every request goes to
// the loopback server the test started; the stream stops by itself after
// adversaryMaxRequests requests or when the run ends.

// adversaryMaxRequests bounds the adversarial requests of one run.
const adversaryMaxRequests = 2_000

// adversaryPause separates two adversarial requests, so that the stream
// stays a small share of the load it is mixed into.
const adversaryPause = 20 * time.Millisecond

// adversaryTimeout bounds one adversarial request; a server that takes
// longer to refuse one has failed the check.
const adversaryTimeout = 20 * time.Second

// attack is one adversarial request and what the server must answer.
type attack struct {
	name string
	// do sends the request and returns the status answered.
	do func(ctx context.Context, a *adversary) (int, error)
	// want reports whether a status is an acceptable answer.
	want func(status int) bool
}

// AdversaryReport counts the adversarial requests of a run.
type AdversaryReport struct {
	Requests int            `json:"requests"`
	ByAttack map[string]int `json:"byAttack"`
	// Wrong counts the requests answered wrongly.
	Wrong int `json:"answeredWrongly"`
	// Failures are the attacks answered with a status they must not get
	// (a 5xx, a success, a dropped connection), the first few of each.
	Failures []string `json:"failures,omitempty"`
	// PeakHeapMiB is the largest Go heap of the process (server and
	// harness) sampled during the run.
	PeakHeapMiB float64 `json:"peakHeapMiB"`
}

type adversary struct {
	url, key, table string
	dim             int
	client          *http.Client
}

func is4xx(s int) bool { return s >= 400 && s < 500 }

func statusIs(want ...int) func(int) bool {
	return func(s int) bool {
		for _, w := range want {
			if s == w {
				return true
			}
		}
		return false
	}
}

// attacks lists the adversarial requests, one per defect issue #22 names.
func (a *adversary) attacks() []attack {
	vec := "[" + strings.TrimSuffix(strings.Repeat("0.5,", a.dim), ",") + "]"
	tbl := "/v1/table/" + a.table
	bigR := strings.Repeat("r", 10_000)
	replaceBomb := fmt.Sprintf("replace(replace(replace(cast(id as string), '0', '%s'), 'r', '%s'), 'r', '%s') = 'x'", bigR, bigR, bigR)
	offsets := "_rowoffset IN (" + strings.TrimSuffix(strings.Repeat("0,", 100_000), ",") + ")"
	longName := strings.Repeat("n", 10_000)
	return []attack{
		{name: "k=2147483647", want: is4xx, do: a.postJSON(tbl+"/query/", fmt.Sprintf(`{"vector":%s,"k":2147483647}`, vec))},
		{name: "refine_factor=1e9", want: is4xx, do: a.postJSON(tbl+"/query/", fmt.Sprintf(`{"vector":%s,"k":10,"refine_factor":1000000000}`, vec))},
		{name: "replace bomb in a filter", want: is4xx, do: a.postJSON(tbl+"/query/", jsonObject("filter", replaceBomb, "k", "10"))},
		{name: "replace bomb in count_rows", want: is4xx, do: a.postJSON(tbl+"/count_rows/", jsonObject("predicate", replaceBomb))},
		// A 0.6 MB list of one repeated offset must not return hundreds
		// of MB: refused, or answered within the server's bounds.
		{name: "_rowoffset IN 100k repeats", want: func(s int) bool { return s == 200 || is4xx(s) },
			do: a.postJSON(tbl+"/query/", jsonObject("filter", offsets, "k", "10"))},
		// A limit past the server's page bound is answered with one page
		// and a page token, as Lance answers the client's -1 (sent as
		// 4294967295) with every name: bounded either way.
		{name: "list limit past int64", want: func(s int) bool { return s == 200 || is4xx(s) }, do: a.get("/v1/table/?limit=9223372036854775807", true)},
		{name: "body larger than the cap, announced", want: statusIs(http.StatusRequestEntityTooLarge), do: a.announceHugeBody(tbl + "/insert/")},
		{name: "no key, ..%2F in the blob path", want: statusIs(http.StatusUnauthorized), do: a.get(tbl+"/blob/..%2F..%2Fversion%2Flist/0/bytes", false)},
		{name: "no key, query", want: statusIs(http.StatusUnauthorized), do: a.get(tbl+"/query/", false)},
		// A simple (CORS-free) cross-site request dropping a table that
		// does not exist: refused for its type before the table is looked
		// up (a 404 would mean the handler ran).
		{name: "text/plain drop", want: func(s int) bool { return s == 415 || s == 403 }, do: a.post("/v1/table/no-such-victim/drop/", "text/plain", "{}", nil)},
		{name: "foreign Origin drop", want: statusIs(http.StatusForbidden),
			do: a.post("/v1/table/no-such-victim/drop/", "application/json", "{}", map[string]string{"Origin": "http://evil.example"})},
		// Exactly 400: a 409 would mean a first attempt created it.
		{name: "branch named after an internal folder", want: statusIs(http.StatusBadRequest),
			do: a.postJSON(tbl+"/branches/create/", `{"name":"feature/_versions"}`)},
		{name: "10,000-character tag", want: statusIs(http.StatusBadRequest), do: a.postJSON(tbl+"/tags/create/", jsonObject("tag", longName, "version", "1"))},
	}
}

// jsonObject builds a JSON object from key, value pairs: values that
// are JSON numbers stay numbers, others become strings.
func jsonObject(kv ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:", kv[i])
		v := kv[i+1]
		if isNumber(v) {
			b.WriteString(v)
		} else {
			fmt.Fprintf(&b, "%q", v)
		}
	}
	b.WriteByte('}')
	return b.String()
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func (a *adversary) postJSON(path, body string) func(context.Context, *adversary) (int, error) {
	return a.post(path, "application/json", body, nil)
}

func (a *adversary) post(path, contentType, body string, headers map[string]string) func(context.Context, *adversary) (int, error) {
	return func(ctx context.Context, a *adversary) (int, error) {
		req, err := http.NewRequestWithContext(ctx, "POST", a.url+path, strings.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("content-type", contentType)
		req.Header.Set("x-api-key", a.key)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		return a.send(req)
	}
}

func (a *adversary) get(path string, withKey bool) func(context.Context, *adversary) (int, error) {
	return func(ctx context.Context, a *adversary) (int, error) {
		req, err := http.NewRequestWithContext(ctx, "GET", a.url+path, nil)
		if err != nil {
			return 0, err
		}
		if withKey {
			req.Header.Set("x-api-key", a.key)
		}
		return a.send(req)
	}
}

func (a *adversary) send(req *http.Request) (int, error) {
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// Read at most 1 MiB of the answer: a refusal is short, and a
	// bounded success need not be read whole to be judged.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, nil
}

// announceHugeBody sends the headers of an insert announcing a 1 TiB
// body and no body at all: the server must answer 413 from the headers,
// without waiting for (or reading) the bytes.
func (a *adversary) announceHugeBody(path string) func(context.Context, *adversary) (int, error) {
	return func(ctx context.Context, a *adversary) (int, error) {
		host := strings.TrimPrefix(a.url, "http://")
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", host)
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		if dl, ok := ctx.Deadline(); ok {
			_ = conn.SetDeadline(dl)
		}
		_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nx-api-key: %s\r\ncontent-type: application/vnd.apache.arrow.stream\r\ncontent-length: %d\r\n\r\n",
			path, host, a.key, int64(1)<<40)
		if err != nil {
			return 0, err
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			return 0, fmt.Errorf("no answer before the body: %w", err)
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
}

// runAdversary sends the attacks in turn until ctx ends or the bound is
// reached, and samples the heap meanwhile.
func runAdversary(ctx context.Context, a *adversary) *AdversaryReport {
	rep := &AdversaryReport{ByAttack: map[string]int{}}
	var peak uint64
	var wg sync.WaitGroup
	sampleCtx, stopSampling := context.WithCancel(ctx)
	wg.Go(func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-sampleCtx.Done():
				return
			case <-t.C:
			}
		}
	})
	failures := map[string]int{}
	attacks := a.attacks()
	for i := 0; i < adversaryMaxRequests && ctx.Err() == nil; i++ {
		at := attacks[i%len(attacks)]
		rctx, cancel := context.WithTimeout(ctx, adversaryTimeout)
		status, err := at.do(rctx, a)
		cancel()
		if ctx.Err() != nil {
			break // the run ended mid-request: not the server's failure
		}
		rep.Requests++
		rep.ByAttack[at.name]++
		if err != nil || !at.want(status) {
			rep.Wrong++
			failures[at.name]++
			if failures[at.name] <= 2 {
				what := fmt.Sprintf("status %d", status)
				if err != nil {
					what = err.Error()
				}
				rep.Failures = append(rep.Failures, fmt.Sprintf("%s: %s", at.name, what))
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(adversaryPause):
		}
	}
	stopSampling()
	wg.Wait()
	rep.PeakHeapMiB = float64(peak) / (1 << 20)
	return rep
}
