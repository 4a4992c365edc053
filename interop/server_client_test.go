package interop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/internal/lancereftest"
	"github.com/lancerdb/lancer/internal/s3test"
	"github.com/lancerdb/lancer/server"
)

// TestServerClient runs the official LanceDB Node client (pinned, unmodified)
// against lancer's server through lancedb-client.mjs's scenario: create,
// list, add, count, query, vector and batch search, update, delete,
// merge-insert (with a delete of unmatched rows), index create/list/stats/
// drop, BTREE, BITMAP and LABEL_LIST indices (listed, counted, filtered
// through, updated, deleted and searched through as embedded LanceDB does
// on the same rows), versions, tags, checkout by version and by tag, restore, empty
// tables, row ids, aliases, takeOffsets, takeRowIds, stats, rename, drop,
// column operations (add, alter, drop), explain and analyze plans, a
// 1.2M-row add() as a multipart write, blob values (fetchBlobs,
// fetchBlobFiles), and the errors
// the client maps (missing table, version and index, bad filter, bad key,
// full-text search without an FTS index).
// Then real Lance opens the table the server wrote, from disk.
func TestServerClient(t *testing.T) {
	ref := lancereftest.ForTest(t)
	dataDir := t.TempDir()
	runClientScenario(t, ref, server.Options{DataDir: dataDir}, clientTarget{
		location: dataDir,
		gone: func(table string) error {
			if _, err := os.Stat(filepath.Join(dataDir, table+".lance")); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("the dropped table's folder: %v", err)
			}
			return nil
		},
		lanceIDs: func() ([]float64, error) {
			replies := lanceRows(t, ref.Node, ref.Dir, []request{{URI: filepath.Join(dataDir, "items.lance")}})
			if replies[0].Error != "" {
				return nil, errors.New(replies[0].Error)
			}
			return rowIDs(replies[0].Rows)
		},
	})
}

// TestServerClientS3 runs the same scenario against a server whose data is
// in an S3 bucket (versitygw, a real S3 server, on loopback), then real
// Lance reads the table the server wrote from the bucket. Everything
// answers as on local disk but rename, which object storage refuses: the
// scenario's "extras" step ends at its renameTable call (every call before
// it succeeded, or the step would have failed with another error), so its
// table "empty" is still listed at the end.
func TestServerClientS3(t *testing.T) {
	ref := lancereftest.ForTest(t)
	gw := s3test.ForTest(t, "lancer-server")
	uri := gw.URI("db")
	bucket, err := blob.OpenWithOptions(context.Background(), uri, gw.Options())
	if err != nil {
		t.Fatal(err)
	}
	runClientScenario(t, ref, server.Options{Data: uri, StorageOptions: gw.Options()}, clientTarget{
		location:       uri,
		renameRefused:  true,
		remainingAtEnd: `["empty","items"]`,
		gone: func(table string) error {
			for info, err := range bucket.List(context.Background(), table+".lance/") {
				if err != nil {
					return err
				}
				return fmt.Errorf("key %s left in the bucket", info.Key)
			}
			return nil
		},
		lanceIDs: func() ([]float64, error) {
			replies := s3Lance(t, s3Request{URI: gw.URI("db/items.lance"), StorageOptions: gw.Options(), Op: "rows"})
			return rowIDs(replies[0].Rows)
		},
	})
}

// clientTarget is what differs between the data locations the client
// scenario runs against.
type clientTarget struct {
	// location is the data folder or URI, which no error may show.
	location string
	// renameRefused: the server refuses renames (object storage).
	renameRefused bool
	// remainingAtEnd is the table list after the last drop; default
	// ["items"].
	remainingAtEnd string
	// gone checks that a dropped table left nothing behind.
	gone func(table string) error
	// lanceIDs reads table items with real Lance and returns its ids.
	lanceIDs func() ([]float64, error)
}

// rowIDs returns the id column of rows.
func rowIDs(rows []json.RawMessage) ([]float64, error) {
	var ids []float64
	for _, row := range rows {
		var r struct {
			ID float64 `json:"id"`
		}
		if err := json.Unmarshal(row, &r); err != nil {
			return nil, err
		}
		ids = append(ids, r.ID)
	}
	return ids, nil
}

// runClientScenario serves opts (with a key and a log added) and runs
// lancedb-client.mjs against it, checking every step.
func runClientScenario(t *testing.T, ref lancereftest.Ref, opts server.Options, target clientTarget) {
	const key = "sk-lancer-test"
	var logs bytes.Buffer
	opts.APIKey, opts.Addr = key, "127.0.0.1:0"
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	h, err := server.New(&opts)
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

	cmd := ref.Command("lancedb-client.mjs")
	// More than one compute thread lets the client split a large add() into
	// a multipart write (docs/spec/lancedb-remote-protocol.md §7.10); on a small machine it would not.
	cmd.Env = append(cmd.Env, "LANCER_URL=http://"+ln.Addr().String(), "LANCER_API_KEY="+key, "LANCE_CPU_THREADS=4")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("lancedb-client.mjs: %v\n%s\nserver log:\n%s", err, stderr.String(), logs.String())
	}
	var res struct {
		Steps map[string]json.RawMessage `json:"steps"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("lancedb-client.mjs printed %.500q: %v", out, err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	}()

	// want compares a step's JSON result with the expected JSON text.
	want := func(step, expected string) {
		t.Helper()
		got, ok := res.Steps[step]
		if !ok {
			t.Errorf("%s: no result", step)
			return
		}
		var g, e any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if err := json.Unmarshal([]byte(expected), &e); err != nil {
			t.Fatalf("%s: bad expectation: %v", step, err)
		}
		gb, _ := json.Marshal(g)
		eb, _ := json.Marshal(e)
		if !bytes.Equal(gb, eb) {
			t.Errorf("%s:\n got  %s\n want %s", step, gb, eb)
		}
	}
	// wantError checks that a step failed with a message holding every
	// fragment.
	wantError := func(step string, fragments ...string) {
		t.Helper()
		var r struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal(res.Steps[step], &r); err != nil || r.Error == "" {
			t.Errorf("%s: want an error, got %s", step, res.Steps[step])
			return
		}
		for _, f := range fragments {
			if !strings.Contains(r.Error, f) {
				t.Errorf("%s: error %q does not mention %q", step, r.Error, f)
			}
		}
		if strings.Contains(r.Error, target.location) {
			t.Errorf("%s: error %q shows the server's data location", step, r.Error)
		}
	}

	want("createTable", `{"name":"items"}`)
	wantError("createTableAgain", "Table 'items' already exists")
	want("createExistOk", `{"rows":10}`)
	want("createSecond", `"ok"`)
	want("tableNames", `["items","other"]`)
	want("tableNamesPaged", `["items"]`)
	want("schema", `["id:Float64","text:Utf8","price:Float64","vector:FixedSizeList[8]<Float32>"]`)
	want("add", `12`)
	want("countRowsFilter", `5`)
	want("query", `[{"id":3,"text":"row 3"},{"id":4,"text":"row 4"},{"id":5,"text":"row 5"}]`)
	want("queryOffset", `[{"id":10},{"id":11}]`)
	want("vectorSearch", `[{"id":4,"text":"row 4","_distance":0},{"id":3,"text":"row 3","_distance":7.999999523162842},{"id":5,"text":"row 5","_distance":8}]`)
	want("searchFiltered", `[{"id":5,"_distance":8},{"id":6,"_distance":32}]`)
	want("searchPostfilter", `[{"id":1,"_distance":8}]`)
	want("batchSearch", `[{"query_index":0,"id":1,"_distance":0},{"query_index":1,"id":8,"_distance":0}]`)
	want("update", `[{"id":2,"text":"two","price":3},{"id":3,"text":"row 3","price":45}]`)
	want("delete", `10`)
	want("mergeInsert", `{"inserted":1,"updated":1,"rows":[{"id":1,"text":"one"},{"id":20,"text":"row 20"}],"count":11}`)
	want("createIndex", `"ok"`)
	want("listIndices", `[{"name":"vector_idx","type":"IvfPq","columns":["vector"]}]`)
	want("indexStats", `{"indexed":11,"unindexed":0,"type":"IVF_PQ","distance":"l2"}`)
	want("indexedSearch", `[{"id":5,"_distance":0},{"id":4,"_distance":8},{"id":6,"_distance":8}]`)
	// The plans are lancer's own text: check what each must say.
	var plans map[string]string
	if err := json.Unmarshal(res.Steps["plans"], &plans); err != nil {
		t.Errorf("plans: %s", res.Steps["plans"])
	}
	for step, fragments := range map[string][]string{
		"explain": {`VectorSearch table "items" version 7: column vector, 1 query vector(s) of 8 dimensions, k=3`,
			"index: vector_idx (IVF_PQ), 1 segment(s), nprobes=4", "indexed: 5 of 5 fragments (11 rows)",
			"refine_factor=5: the 15 best candidates", "filter: id > 2 (prefilter", "fragment 0: 10 rows, 4 deleted"},
		"postfilter": {"index: none (bypass_vector_index)", "filter: id > 2 (postfilter"},
		"scan":       {`Scan table "items" version 7: 5 fragments, 11 live rows`, "columns: id, text", "filter: id >= 3 (pushed down", "limit: 2"},
		"analyze":    {"Executed in", "rows returned: 2", "rows scanned: 6 (whole fragments", "fragments read: 1 of 5"},
		"analyzeSearch": {"index: vector_idx (IVF_PQ)", "nprobes=20", "rows returned: 3",
			"rows scanned: 0 scored exactly (flat), and 11 indexed rows searched through the index"},
	} {
		for _, f := range fragments {
			if !strings.Contains(plans[step], f) {
				t.Errorf("plans.%s does not mention %q:\n%s", step, f, plans[step])
			}
		}
	}
	// The table has no FTS index (TestServerParityFTS searches one).
	wantError("fullTextSearch", "400", "needs an FTS (INVERTED) index on at least one column")
	var scalars struct {
		Server, Embedded json.RawMessage
	}
	if err := json.Unmarshal(res.Steps["scalarIndices"], &scalars); err != nil || scalars.Server == nil {
		t.Errorf("scalarIndices: %s (%v)", res.Steps["scalarIndices"], err)
	} else {
		// The server answers the client's scalar index calls as embedded
		// LanceDB does, on the same rows.
		res.Steps["scalarIndicesServer"] = scalars.Server
		want("scalarIndicesServer", string(scalars.Embedded))
		t.Logf("scalar indices through the client: %s", scalars.Server)
	}
	want("dropIndex", `0`)
	want("versions", `{"version":8,"listed":[1,2,3,4,5,6,7,8],"hasTimestamps":true}`)
	want("tags", `{"list":{"v3":4},"v3":4}`)
	want("checkout", `{"count":10,"rows":[{"id":2,"text":"row 2"}],"writeRefused":true,"afterRestore":10,"version":9}`)
	wantError("missingVersion", "was not found", "no version 999")
	wantError("missingTable", "Table 'nope' was not found")
	wantError("badFilter", "400", "no column no_such_column")
	wantError("badSyntax", "400", "unexpected '>' at column 5")
	wantError("badKey", "401")
	if target.renameRefused {
		wantError("extras", "400", "renaming a table is not supported when the data is on object storage")
	} else {
		want("extras", `{"emptyCount":0,"emptySchema":["id:Int64:false","label:Utf8:true","vector:FixedSizeList[8]<Float32>:true"],`+
			`"withRowId":[{"id":0,"_rowid":0},{"id":1,"_rowid":1}],"alias":[{"ident":0},{"ident":1}],"takeOffsets":[{"id":4},{"id":1}],`+
			`"takeRowIds":[{"id":1},{"id":4}],"takeRowIdsWithId":[{"id":2,"_rowid":2},{"id":5,"_rowid":5}],`+
			`"cosine":[{"id":3,"near0":true}],"exact":[{"id":2,"_distance":0}],"mergeDelete":{"updated":2,"deleted":2,"ids":[0,1,2,4]},`+
			`"overwrite":1,"checkoutTag":4,"dropMissingIndex":"Index 'nope_idx' was not found",`+
			`"stats":{"rows":1,"indices":0,"fragments":1,"bytes":true},"renamed":["items","other","renamed"],"renamedCount":1}`)
	}
	want("bulk", `{"n":4000,"top":[3,10,17]}`)
	// The 1.2M-row add went through one multipart write (create, parts,
	// one complete) and landed once, in one new version.
	want("multipart", `{"versionStep":1,"count":1200001,"max":1,"versions":2}`)
	log := logs.String()
	creates := strings.Count(log, "path=/v1/table/big/multipart_write/create ")
	completes := strings.Count(log, "path=/v1/table/big/multipart_write/complete ")
	parts := strings.Count(log, "path=/v1/table/big/insert/ status=200")
	if creates != 1 || completes != 1 || parts < 1 {
		t.Errorf("multipart add: %d creates, %d parts, %d completes; want 1, at least 1, 1", creates, parts, completes)
	}
	want("branches", `{"again":"exists","list":["dev"],"devCount":6,"mainCount":6,`+
		`"diff":{"newOnBranch":1,"newOnBase":0,"baseMoved":false,"errors":0},"dry":"ready","afterDry":6,`+
		`"pick":"cherryPicked","afterPick":6,"has100":1,"has0":0,"listAfter":[]}`)
	want("columns", `{"added":1,"renamed":2,"cast":"refused","sameNullable":2,"dropped":3,`+
		`"schema":["id:Float64","label:Utf8","price:Float64","vector:FixedSizeList[8]<Float32>","double_price:Float64"],`+
		`"rows":[{"id":2,"label":"c2","double_price":8},{"id":3,"label":"c3","double_price":12}],`+
		`"search":[{"label":"c3","double_price":12,"_distance":0}],"oldName":"gone"}`)
	// Blob v2 and binary values through fetchBlobs and fetchBlobFiles
	// (phalanx-version 0.5.0): in the order asked, nulls and empty values
	// told apart, sizes probed, a 64 KiB range and the whole 3 MiB value.
	want("blobs", `{"columns":["video"],`+
		`"fetch":[{"len":3145728,"same":true},{"len":10,"same":true},null,{"len":0,"same":true},{"len":10,"same":true}],`+
		`"thumbs":["t0",null,"","t3"],"sizes":[10,3145728,0,null],"range":{"len":65536,"same":true},`+
		`"whole":{"len":3145728,"same":true},"again":0,"small":"hello blob","empty":0,"notBlob":"refused","missingRow":"refused"}`)
	if probes := strings.Count(log, "path=/v1/table/media/blob/video/"); probes < 7 {
		t.Errorf("the blob files read through blob/.../bytes %d times, want at least 7 (4 probes, a range, 2 reads)", probes)
	}
	remaining := target.remainingAtEnd
	if remaining == "" {
		remaining = `["items"]`
	}
	want("dropTable", remaining)
	for _, table := range []string{"other", "bulk", "big", "br", "cols", "media"} {
		if err := target.gone(table); err != nil {
			t.Errorf("dropped table %s: %v", table, err)
		}
	}

	// Real Lance reads what the server wrote: after the restore, version 1's
	// ten rows.
	ids, err := target.lanceIDs()
	if err != nil {
		t.Fatalf("real Lance reading the table: %v", err)
	}
	if got, _ := json.Marshal(ids); string(got) != `[0,1,2,3,4,5,6,7,8,9]` {
		t.Errorf("real Lance reads ids %s, want 0..9", got)
	}
}
