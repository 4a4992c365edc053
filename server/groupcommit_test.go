package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/server"
	"github.com/lancerdb/lancer/table"
)

// idRows returns an Arrow IPC stream of rows {id, vector} for ids.
func idRows(t *testing.T, ids []int64) []byte {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "vector", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	vec := b.Field(1).(*array.FixedSizeListBuilder)
	vals := vec.ValueBuilder().(*array.Float32Builder)
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		vec.Append(true)
		vals.AppendValues([]float32{float32(id), 1}, nil)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestServerGroupCommit sends concurrent inserts over HTTP: every one is
// answered with a version holding its rows, every row is in the table
// once, inserts share versions, and /metrics counts the groups.
func TestServerGroupCommit(t *testing.T) {
	s, dir := newServer(t, server.Options{})
	hs := httptest.NewServer(s)
	defer hs.Close()
	post := func(path string, body []byte, header map[string]string) (int, []byte, error) {
		req, err := http.NewRequest("POST", hs.URL+path, bytes.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("x-api-key", testKey)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := hs.Client().Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	if code, b, err := post("/v1/table/t/create/", idRows(t, []int64{-1}), arrowBody); err != nil || code != 200 {
		t.Fatalf("create: %d %s %v", code, b, err)
	}
	const clients, each, batch = 16, 6, 10
	type answer struct {
		ids     []int64
		version uint64
	}
	answers := make(chan answer, clients*each)
	errs := make(chan string, clients*each)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				ids := make([]int64, batch)
				for j := range ids {
					ids[j] = int64(c*10_000 + i*100 + j)
				}
				code, b, err := post("/v1/table/t/insert/", idRows(t, ids), arrowBody)
				if err != nil || code != 200 {
					errs <- fmt.Sprintf("insert: %d %s %v", code, b, err)
					continue
				}
				var v struct{ Version uint64 }
				if err := json.Unmarshal(b, &v); err != nil {
					errs <- fmt.Sprintf("insert answer %s: %v", b, err)
					continue
				}
				answers <- answer{ids, v.Version}
			}
		}()
	}
	wg.Wait()
	close(answers)
	close(errs)
	for e := range errs {
		t.Error(e)
	}

	ctx := context.Background()
	tb, err := table.Open(ctx, filepath.Join(dir, "t.lance"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	idsAt := func(v uint64) []int64 {
		sc, err := tb.Dataset().Scan(&dataset.ScanOptions{Columns: []string{"id"}})
		if v != tb.Version() {
			old, cerr := tb.Checkout(ctx, table.Ref{Version: v})
			if cerr != nil {
				t.Fatal(cerr)
			}
			defer old.Close()
			sc, err = old.Scan(&dataset.ScanOptions{Columns: []string{"id"}})
		}
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for rec, err := range sc.Batches(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rec.Column(0).(*array.Int64).Int64Values()...)
		}
		slices.Sort(out)
		return out
	}
	want := []int64{-1}
	n := 0
	for a := range answers {
		n++
		want = append(want, a.ids...)
		at := idsAt(a.version)
		for _, id := range a.ids {
			if _, ok := slices.BinarySearch(at, id); !ok {
				t.Fatalf("row %d is not in version %d, its insert's answer", id, a.version)
			}
		}
	}
	slices.Sort(want)
	if got := idsAt(tb.Version()); !slices.Equal(got, want) {
		t.Errorf("the table holds %d rows, want %d, each once", len(got), len(want))
	}
	versions := int(tb.Version() - 1)
	if versions >= n {
		t.Errorf("%d versions for %d inserts: none shared a commit", versions, n)
	}
	t.Logf("%d inserts in %d versions", n, versions)

	code, b, err := func() (int, []byte, error) {
		req, _ := http.NewRequest("GET", hs.URL+"/metrics", nil)
		req.Header.Set("x-api-key", testKey)
		resp, err := hs.Client().Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}()
	if err != nil || code != 200 {
		t.Fatalf("metrics: %d %v", code, err)
	}
	for _, line := range []string{
		fmt.Sprintf("lancer_group_commits_total{result=\"ok\"} %d", versions),
		fmt.Sprintf("lancer_group_commit_requests_sum %d", n),
		fmt.Sprintf("lancer_group_commit_requests_count %d", versions),
		fmt.Sprintf("lancer_group_commit_rows_total %d", n*batch),
	} {
		if !strings.Contains(string(b), line+"\n") {
			t.Errorf("metrics lack %q", line)
		}
	}
}
