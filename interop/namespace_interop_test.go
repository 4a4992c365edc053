package interop_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"github.com/lancerdb/lancer/internal/lancereftest"
	"github.com/lancerdb/lancer/server"
)

// TestServerNamespaces runs lancedb-namespace.mjs: the official client's
// namespace calls through connect() to the server, connectNamespace("rest")
// with the server as the catalog, and real Lance's directory namespace
// (connectNamespace("dir")) on the server's data folder, both ways.
func TestServerNamespaces(t *testing.T) {
	ref := lancereftest.ForTest(t)
	dataDir := t.TempDir()
	const key = "sk-lancer-test"
	var logs bytes.Buffer
	h, err := server.New(&server.Options{DataDir: dataDir, APIKey: key, Addr: "127.0.0.1:0",
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	cmd := ref.Command("lancedb-namespace.mjs")
	cmd.Env = append(cmd.Env, "LANCER_URL=http://"+ln.Addr().String(), "LANCER_API_KEY="+key, "LANCER_DIR="+dataDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("lancedb-namespace.mjs: %v\n%s\nserver log:\n%s", err, stderr.String(), logs.String())
	}
	var res struct {
		Steps map[string]json.RawMessage `json:"steps"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("lancedb-namespace.mjs printed %.500q: %v", out, err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	}()
	for _, c := range namespaceExpectations {
		got, ok := res.Steps[c.step]
		if !ok {
			t.Errorf("%s: no result", c.step)
			continue
		}
		if !matchJSON(t, got, c.want) {
			t.Errorf("%s:\n got  %s\n want %s", c.step, got, c.want)
		}
	}
}

var namespaceExpectations = []struct{ step, want string }{
	{"createNamespace", `{"properties":{"owner":"me"}}`},
	{"createNamespaceAgain", `{"errorContains":"409 Conflict"}`},
	{"createNamespaceExistOk", `{"properties":{"owner":"me"}}`},
	{"createChild", `{}`},
	{"createOrphan", `{"errorContains":"404 Not Found"}`},
	{"createBadName", `{"errorContains":"Invalid namespace name"}`},
	{"listRoot", `{"namespaces":["ns1","ns2"]}`},
	{"listRootPaged", `{"first":{"namespaces":["ns1"],"pageToken":"ns1"},"second":{"namespaces":["ns2"]}}`},
	{"listChild", `{"namespaces":["child"]}`},
	{"listMissing", `{"errorContains":"404 Not Found"}`},
	{"describe", `{"properties":{"owner":"me"}}`},
	{"describeMissing", `{"errorContains":"Namespace not found"}`},
	{"createTableInNs", `{"name":"t1","rows":3}`},
	{"createTableInMissingNs", `{"errorContains":"Namespace not found"}`},
	{"tableNamesInNs", `["t1"]`},
	{"listTablesInNs", `{"tables":["t1"]}`},
	{"rootTableNames", `[]`},
	{"openTableInNs", `[2,3,10]`},
	{"openMissingInNs", `{"errorContains":"Table 'zz' was not found"}`},
	{"dropNonEmpty", `{"errorContains":"409 Conflict"}`},
	{"dropMissing", `{"errorContains":"404 Not Found"}`},
	{"dropMissingSkip", `{}`},
	{"dropNs2", `{}`},
	{"dropTableInNs", `[]`},
	{"listAfterDrop", `{"namespaces":["ns1"]}`},
	{"restConnect", `{"namespaces":{"namespaces":["ns1"]},"tables":["t1"],"ids":[2,3,10],"created":2,"restTables":["rt"]}`},
	{"dirReadsServer", `{"namespaces":{"namespaces":["ns1","restns"]},"child":{"namespaces":["child"]},"tables":["t1"],"ids":[2,3,10],"props":{"properties":{"owner":"me"}}}`},
	{"serverReadsDir", `{"namespaces":{"namespaces":["lancens","ns1","restns"]},"props":{"properties":{"by":"lance"}},"tables":["lt"],"ids":[40,41]}`},
}

// matchJSON reports whether got is the JSON text want, or (want being
// {"errorContains": s}) an error whose message holds s.
func matchJSON(t *testing.T, got json.RawMessage, want string) bool {
	t.Helper()
	var w map[string]string
	if json.Unmarshal([]byte(want), &w) == nil && w["errorContains"] != "" {
		var g struct{ Error string }
		return json.Unmarshal(got, &g) == nil && bytes.Contains([]byte(g.Error), []byte(w["errorContains"]))
	}
	var g, e any
	if err := json.Unmarshal(got, &g); err != nil {
		return false
	}
	if err := json.Unmarshal([]byte(want), &e); err != nil {
		t.Fatalf("bad expectation %s: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	eb, _ := json.Marshal(e)
	return bytes.Equal(gb, eb)
}
