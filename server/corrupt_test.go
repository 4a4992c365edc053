package server_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/server"
)

// TestServerTruncatedDataFile: a data file cut short on disk is corrupt
// data, a 500, not the client's fault.
func TestServerTruncatedDataFile(t *testing.T) {
	for _, keep := range []float64{0.5, 0.9, 0.99} {
		s, dir := newServer(t, server.Options{CacheSize: -1})
		if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 2000, true), arrowBody); rec.Code != 200 {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
		files, err := filepath.Glob(filepath.Join(dir, "t.lance", "data", "*.lance"))
		if err != nil || len(files) != 1 {
			t.Fatalf("data files: %v %v", files, err)
		}
		fi, err := os.Stat(files[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(files[0], int64(float64(fi.Size())*keep)); err != nil {
			t.Fatal(err)
		}
		for _, body := range []string{`{"k":10000}`, `{"filter":"_rowoffset IN (1, 1999)"}`, `{"vector":[1,1],"k":3}`} {
			rec := do(t, s, "POST", "/v1/table/t/query/", []byte(body), nil)
			if msg, _ := errorOf(t, rec); rec.Code != 500 || !strings.Contains(msg, "corrupt") {
				t.Errorf("kept %.0f%%, query %s: %d %s, want 500 saying the data is corrupt", keep*100, body, rec.Code, rec.Body)
			}
		}
		if rec := do(t, s, "POST", "/v1/table/t/count_rows/", []byte(`{"predicate":"id > 5"}`), nil); rec.Code != 500 {
			t.Errorf("kept %.0f%%, count_rows: %d %s, want 500", keep*100, rec.Code, rec.Body)
		}
	}
}
