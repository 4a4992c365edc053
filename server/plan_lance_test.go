package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/server"
)

// TestServerExplainLanceIndex: explain_plan of a search through a vector
// index Lance built (here the legacy IVF_PQ file of
// dataset/testdata/legacy_ivfpq) reports the SDK's plan: the index, its
// partitions probed and the rows scored exactly.
func TestServerExplainLanceIndex(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "dataset", "testdata", "legacy_ivfpq", "ivfpq_cosine.lance")
	if err := os.CopyFS(filepath.Join(dir, "t.lance"), os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	s, _ := newServer(t, server.Options{DataDir: dir})
	q := `{"vector":[4,0,0,0,0,0,0,0,4,0,0,0,0,0,0,0],"k":5,"nprobes":2,"refine_factor":3}`
	rec := do(t, s, "POST", "/v1/table/t/explain_plan/", []byte(`{"verbose":false,"query":`+q+`}`), nil)
	var text string
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &text) != nil {
		t.Fatalf("explain_plan: %d %s", rec.Code, rec.Body)
	}
	for _, want := range []string{"metric: cosine", "index: vector_idx (IvfPq, Lance legacy file v0.1), 1 segment(s), nprobes=2, 2 of 4 partitions probed",
		"unindexed: 1 fragments (60 rows) scored exactly", "refine_factor=3"} {
		if !strings.Contains(text, want) {
			t.Errorf("plan does not say %q:\n%s", want, text)
		}
	}
}
