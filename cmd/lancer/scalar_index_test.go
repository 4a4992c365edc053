package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIndexCreateScalar: index create --type btree|bitmap|label_list
// builds the scalar indices, index list names them as Lance does, count,
// delete and update --explain name the index that serves the filter, and
// index optimize and drop maintain them.
func TestIndexCreateScalar(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "rows.jsonl")
	var b strings.Builder
	for i := range 500 {
		fmt.Fprintf(&b, `{"id": %d, "cat": "c%d", "tags": ["t%d", "u%d"], "v": %d}`+"\n", i, i%5, i%7, i%3, i)
	}
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ds := filepath.Join(dir, "t.lance")
	mustRun(t, "import", src, ds)
	for _, tc := range []struct{ col, typ, want string }{
		{"id", "btree", `created index "id_idx" on id over 500 rows`},
		{"cat", "bitmap", `created index "cat_idx" on cat over 500 rows`},
		{"tags", "label_list", `created index "tags_idx" on tags over 500 rows`},
	} {
		if out := mustRun(t, "index", "create", ds, "--column", tc.col, "--type", tc.typ); !strings.HasPrefix(out, tc.want) {
			t.Errorf("index create %s: %q, want %q...", tc.typ, out, tc.want)
		}
	}
	var list []struct {
		Name, Type string
	}
	if err := json.Unmarshal([]byte(mustRun(t, "index", "list", ds, "--format", "json")), &list); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(list); got != "[{id_idx BTree} {cat_idx Bitmap} {tags_idx LabelList}]" {
		t.Errorf("index list: %s", got)
	}
	code, out, errOut := runLancer(t, "count", ds, "--filter", "array_has_any(tags, ['t3']) AND cat = 'c1'", "--explain")
	if code != 0 || out != "14\n" || !strings.Contains(errOut, "index tags_idx (LABEL_LIST) on tags") || !strings.Contains(errOut, "index cat_idx (BITMAP) on cat") {
		t.Errorf("count --explain: exit %d, %q, %q", code, out, errOut)
	}
	code, out, errOut = runLancer(t, "update", ds, "--set", "v=v+1000", "--filter", "id >= 490", "--explain")
	if code != 0 || !strings.HasPrefix(out, "updated 10 rows") || !strings.Contains(errOut, "explain: index id_idx (BTREE) on id answers id >= 490 in fragments [0]") {
		t.Errorf("update --explain: exit %d, %q, %q", code, out, errOut)
	}
	code, out, errOut = runLancer(t, "delete", ds, "--filter", "cat = 'c4'", "--explain")
	if code != 0 || !strings.HasPrefix(out, "deleted 100 rows") || !strings.Contains(errOut, "explain: index cat_idx (BITMAP) on cat answers cat = 'c4' in fragments [0]") {
		t.Errorf("delete --explain: exit %d, %q, %q", code, out, errOut)
	}
	// The updated rows are in a new fragment the indices do not cover
	// until optimize rebuilds them over every fragment.
	if out := mustRun(t, "index", "optimize", ds); !strings.HasPrefix(out, "indexed the new fragments") {
		t.Errorf("index optimize: %q", out)
	}
	_, out, errOut = runLancer(t, "count", ds, "--filter", "id >= 490 AND v > 1000", "--explain")
	if out != "8\n" || !strings.Contains(errOut, "in fragments [0 1]") { // 494 and 499 are deleted
		t.Errorf("count after optimize: %q, %q", out, errOut)
	}
	if out := mustRun(t, "index", "drop", ds, "cat_idx"); !strings.HasPrefix(out, `dropped index "cat_idx"`) {
		t.Errorf("index drop: %q", out)
	}
	if code, _, errOut := runLancer(t, "index", "create", ds, "--column", "tags", "--type", "btree"); code == 0 || !strings.Contains(errOut, "list") {
		t.Errorf("a btree of a list column: exit %d, %q", code, errOut)
	}
}
