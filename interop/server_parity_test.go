package interop_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/internal/lancereftest"
	"github.com/lancerdb/lancer/server"
)

// paritySide is what one side (embedded LanceDB or lancer serve) saw in a
// step of lancedb-parity.mjs.
type paritySide struct {
	Local  json.RawMessage `json:"local"`
	Remote json.RawMessage `json:"remote"`
	// Calls are the client methods the remote side called in the step.
	Calls []string `json:"calls"`
}

// parity is the result of one group of lancedb-parity.mjs, with the
// checks a test makes of its steps.
type parity struct {
	t     *testing.T
	steps map[string]paritySide
	seen  map[string]bool
}

// runParity serves a fresh data folder and runs group of
// lancedb-parity.mjs: each step on embedded LanceDB, then on the server.
// Every step must then be checked (same, bothFail, differs,
// notSupported).
func runParity(t *testing.T, group string) *parity {
	t.Helper()
	steps, _ := runParityScript(t, group)
	p := &parity{t: t, steps: steps, seen: map[string]bool{}}
	t.Cleanup(p.checkAllSeen)
	return p
}

// runParityScript runs group of lancedb-parity.mjs against a fresh
// server and returns its steps and the client calls its remote side
// made, which it also records for TestServerParityCoverage.
func runParityScript(t *testing.T, group string) (map[string]paritySide, []string) {
	t.Helper()
	ref := lancereftest.ForTest(t)
	const key = "sk-lancer-parity"
	dataDir, localDir := t.TempDir(), t.TempDir()
	var logs bytes.Buffer
	// No background maintenance: it would index rows the test adds after
	// an index, which fastSearch must leave out.
	opts := server.Options{DataDir: dataDir, APIKey: key, Addr: "127.0.0.1:0",
		Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
		Maintenance: server.MaintenanceOptions{Disabled: true}}
	h, err := server.New(&opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })

	cmd := ref.Command("lancedb-parity.mjs", group)
	cmd.Env = append(cmd.Env, "LANCER_URL=http://"+ln.Addr().String(), "LANCER_API_KEY="+key,
		"LANCER_DATA="+dataDir, "LOCAL_DIR="+localDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("lancedb-parity.mjs %s: %v\n%s\nserver log:\n%s", group, err, stderr.String(), logs.String())
	}
	var res struct {
		Steps map[string]paritySide `json:"steps"`
		Calls []string              `json:"calls"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("lancedb-parity.mjs printed %.500q: %v", out, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})
	parityMu.Lock()
	parityCalls[group] = res.Calls
	paritySteps[group] = res.Steps
	parityMu.Unlock()
	return res.Steps, res.Calls
}

// side returns a step's sides, failing when the script has no such step.
func (p *parity) side(step string) (paritySide, bool) {
	p.t.Helper()
	p.seen[step] = true
	s, ok := p.steps[step]
	if !ok {
		p.t.Errorf("%s: no such step", step)
	}
	return s, ok
}

// canonical re-encodes JSON so that equal values compare equal as bytes.
func canonical(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "invalid JSON: " + string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// errorOf returns the error a side reported, or "".
func errorOf(raw json.RawMessage) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return ""
	}
	return e.Error
}

// same checks that both sides answered step alike and without an error,
// and, when want is not empty, that the answer is want.
func (p *parity) same(step, want string) {
	p.t.Helper()
	s, ok := p.side(step)
	if !ok {
		return
	}
	l, r := canonical(s.Local), canonical(s.Remote)
	if e := errorOf(s.Local); e != "" {
		p.t.Errorf("%s: embedded LanceDB failed: %s (lancer: %s)", step, e, r)
		return
	}
	if l != r {
		if errorOf(s.Remote) != "" {
			tally("fails", "")
		}
		p.t.Errorf("%s:\n embedded LanceDB %s\n lancer serve     %s", step, l, r)
		return
	}
	tally("same", "")
	if want != "" && l != canonical(json.RawMessage(want)) {
		p.t.Errorf("%s: both sides answered %s, want %s", step, l, want)
	}
}

// bothFail checks that both sides failed step, lancer with an error
// holding every fragment.
func (p *parity) bothFail(step string, fragments ...string) {
	p.t.Helper()
	s, ok := p.side(step)
	if !ok {
		return
	}
	le, re := errorOf(s.Local), errorOf(s.Remote)
	if le == "" || re == "" {
		p.t.Errorf("%s: want both sides to fail:\n embedded LanceDB %s\n lancer serve     %s", step, s.Local, s.Remote)
		return
	}
	for _, f := range fragments {
		if !strings.Contains(re, f) {
			p.t.Errorf("%s: lancer's error %q does not mention %q (embedded LanceDB: %q)", step, re, f, le)
		}
	}
	if lk, rk := errorKind(le), errorKind(re); lk == rk {
		tally("both-error same kind", "")
	} else {
		tally("both-error other kind", "")
		p.t.Logf("%s: both fail, embedded LanceDB as %s (%.120q), lancer as %s (%.120q)", step, lk, le, rk, re)
	}
}

var lancerCode = regexp.MustCompile(`"code":"(\w+)"`)

// errorKind sorts an error message of either side into the categories
// the client maps (LanceDB's Error variants and the HTTP statuses the
// remote client turns into them).
func errorKind(msg string) string {
	// lancer's errors carry their category as the code of the JSON body.
	if m := lancerCode.FindStringSubmatch(msg); m != nil {
		switch m[1] {
		case "InvalidInput":
			return "invalid-input"
		case "NotFound", "TableNotFound", "NamespaceNotFound":
			return "not-found"
		case "AlreadyExists", "TableAlreadyExists", "NamespaceAlreadyExists", "Conflict":
			return "already-exists"
		case "NotSupported":
			return "not-supported"
		case "Timeout":
			return "timeout"
		}
		return m[1]
	}
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "invalid input"):
		return "invalid-input"
	case strings.Contains(m, "already exists") || strings.Contains(m, "409"):
		return "already-exists"
	case strings.Contains(m, "not found") || strings.Contains(m, "404") || strings.Contains(m, "does not exist") || strings.Contains(m, "no version") || strings.Contains(m, "not exist"):
		return "not-found"
	case strings.Contains(m, "not supported") || strings.Contains(m, "unsupported") || strings.Contains(m, "501"):
		return "not-supported"
	case strings.Contains(m, "timed out") || strings.Contains(m, "timeout"):
		return "timeout"
	default:
		return "invalid-input"
	}
}

// differs records a step where the sides answer differently on purpose,
// with the reason, and checks that each side still answers as recorded:
// local and remote are the expected JSON, or {"error":true} for any
// error.
func (p *parity) differs(step, reason, local, remote string) {
	p.t.Helper()
	tally("differs", step+": "+reason)
	p.expect(step, reason, local, remote)
}

// notSupported records a step the client itself serves differently on a
// remote connection than on an embedded one (it refuses the call, or has
// it on one side only), with the reason, and checks each side as differs
// does.
func (p *parity) notSupported(step, reason, local, remote string) {
	p.t.Helper()
	tally("not-supported", "")
	p.expect(step, reason, local, remote)
}

func (p *parity) expect(step, reason, local, remote string) {
	p.t.Helper()
	s, ok := p.side(step)
	if !ok {
		return
	}
	check := func(side string, got json.RawMessage, want string) {
		if want == `{"error":true}` {
			if errorOf(got) == "" {
				p.t.Errorf("%s (%s): %s answered %s, want an error", step, reason, side, got)
			}
			return
		}
		if canonical(got) != canonical(json.RawMessage(want)) {
			p.t.Errorf("%s (%s): %s answered %s, want %s", step, reason, side, got, want)
		}
	}
	check("embedded LanceDB", s.Local, local)
	check("lancer serve", s.Remote, remote)
}

// checkAllSeen fails for a step of the script no check looked at: each
// step is compared, or it is not a step.
func (p *parity) checkAllSeen() {
	for step := range p.steps {
		if !p.seen[step] {
			p.t.Errorf("step %s of the script is not checked", step)
		}
	}
}

// TestServerParityArrays: list literals, the array functions and struct
// values in filters and in update's SET answer through lancer serve as
// embedded LanceDB answers them.
func TestServerParityArrays(t *testing.T) {
	p := runParity(t, "arrays")
	p.same("create", `["id:Float64","tags:List<Utf8>","nums:List<Float64>","price:Float64"]`)
	p.same("hasAny", `4`)
	p.same("hasAnyRows", `[{"id":1},{"id":2},{"id":4},{"id":5}]`)
	p.same("hasAll", `[{"id":1},{"id":4}]`)
	p.same("contains", `[{"id":0},{"id":3}]`)
	p.same("has", `[{"id":2},{"id":3}]`)
	p.same("length", `[{"id":1},{"id":3},{"id":5}]`)
	p.same("makeArray", `[{"id":1},{"id":2},{"id":3},{"id":5}]`)
	p.same("listEquals", `[{"id":0}]`)
	p.same("setValues", `[{"id":1,"tags":["z"]}]`)
	p.same("setSql", `[{"tags":["a","b"],"nums":[1,2,3]}]`)
	p.same("afterSet", `[{"id":1},{"id":3}]`)
	// X'..', the binary literal the client writes for a Buffer.
	p.same("binCreate", `["id:Float64","data:Binary"]`)
	p.same("binFilter", `[{"id":1}]`)
	p.same("setBinary", `[{"id":0,"data":"hi"}]`)
	p.same("structCreate", `["id:Float64","meta:Struct<{a:Float64, b:Utf8}>"]`)
	p.same("structField", `[{"id":2},{"id":3}]`)
	p.same("setNamedStruct", `[{"id":0,"meta":{"a":10,"b":"ten"}}]`)
	// struct() names its fields c0, c1: neither casts it to {a, b}.
	p.bothFail("setStruct", "400", "cannot cast struct<c0: int64 nullable, c1: utf8 nullable> to struct<a: float64 nullable, b: utf8 nullable>")

	// Where lancer answers and Lance 12 fails, on purpose: lancer's list
	// literals are DataFusion's make_array, whose items meet in their
	// common type, while Lance 12's planner builds [...] itself and
	// refuses what DataFusion takes.
	p.differs("setNumbers", "Lance 12 refuses [7, 8.5, 9] (\"Array expressions must have a consistent datatype\"); DataFusion's make_array, and lancer, make it a list of doubles",
		`{"error":true}`, `[{"id":2,"nums":[7,8.5,9]}]`)
	p.differs("setEmpty", "Lance 12 fails on [] (\"concat requires input of at least one array\"); lancer sets the empty list",
		`{"error":true}`, `[{"tags":[]}]`)
	p.differs("setNullItem", "Lance 12 fails on ['n', NULL] (it concatenates Utf8 with Null); lancer sets the list with its null item",
		`{"error":true}`, `[{"tags":["n",null]}]`)
}

// TestServerParitySelect: SQL projections in select ({alias: 'price *
// 2'}, a Map), _distance placed by the select, expressions on searches
// and takes, outputSchema.
func TestServerParitySelect(t *testing.T) {
	p := runParity(t, "select")
	p.same("create", `"ok"`)
	p.same("alias", `{"schema":["double:Float64","id:Float64"],"rows":[{"double":0,"id":0},{"double":3,"id":1},{"double":6,"id":2}]}`)
	p.same("renameOnly", `{"schema":["ident:Float64","label:Utf8"],"rows":[{"ident":0,"label":"row 0"},{"ident":1,"label":"row 1"}]}`)
	p.same("searchDistance", `{"schema":["id:Float64","_distance:Float32"],"rows":[{"id":3,"_distance":0},{"id":4,"_distance":8},{"id":2,"_distance":8}]}`)
	p.same("searchDistanceFirst", `{"schema":["_distance:Float32","id:Float64"],"rows":[{"_distance":0,"id":3},{"_distance":8,"id":4}]}`)
	p.same("withRowId", `{"schema":["p:Float64","_rowid:Uint64"],"rows":[{"p":1,"_rowid":0},{"p":2.5,"_rowid":1}]}`)
	// A list names columns, never expressions, in both.
	p.bothFail("listExpr", "400", `no column \"price * 2\"`)
	p.bothFail("badExpr", "400", "nope")

	// The client sends a select of expressions as a JSON object whose
	// keys serde_json has sorted (no preserve_order feature), so the
	// server never sees the order the caller gave; embedded LanceDB keeps
	// it. The values are the same.
	sorted := "the client sorts the keys of the select it sends"
	p.differs("map", sorted,
		`{"schema":["combined:Float64","loud:Utf8","id:Float64"],"rows":[{"combined":17.5,"loud":"ROW 7","id":7},{"combined":20,"loud":"ROW 8","id":8},{"combined":22.5,"loud":"ROW 9","id":9}]}`,
		`{"schema":["combined:Float64","id:Float64","loud:Utf8"],"rows":[{"combined":17.5,"id":7,"loud":"ROW 7"},{"combined":20,"id":8,"loud":"ROW 8"},{"combined":22.5,"id":9,"loud":"ROW 9"}]}`)
	p.differs("castAndCall", sorted,
		`{"schema":["s:Utf8","len:Int32","big:Bool"],"rows":[{"s":"0.0","len":5,"big":false},{"s":"1.0","len":5,"big":false}]}`,
		`{"schema":["big:Bool","len:Int32","s:Utf8"],"rows":[{"big":false,"len":5,"s":"0.0"},{"big":false,"len":5,"s":"1.0"}]}`)
	p.differs("searchExpr", sorted,
		`{"schema":["p2:Float64","id:Float64","_distance:Float32"],"rows":[{"p2":9,"id":3,"_distance":0},{"p2":12,"id":4,"_distance":8}]}`,
		`{"schema":["id:Float64","p2:Float64","_distance:Float32"],"rows":[{"id":3,"p2":9,"_distance":0},{"id":4,"p2":12,"_distance":8}]}`)
	p.differs("searchDistanceExpr", sorted,
		`{"schema":["id:Float64","d:Float32","_distance:Float32"],"rows":[{"id":3,"d":0,"_distance":0},{"id":4,"d":16,"_distance":8}]}`,
		`{"schema":["d:Float32","id:Float64","_distance:Float32"],"rows":[{"d":0,"id":3,"_distance":0},{"d":16,"id":4,"_distance":8}]}`)
	p.differs("outputSchema", sorted, `["p:Float64","id:Float64"]`, `["id:Float64","p:Float64"]`)
	// takeOffsets: embedded LanceDB returns the rows in the order of
	// their offsets, lancer in the order asked (as before this select
	// work; TestServerClient checks that order).
	order := "embedded LanceDB sorts takeOffsets' rows by offset, lancer keeps the order asked"
	p.differs("takePlain", order, `{"schema":["id:Float64"],"rows":[{"id":1},{"id":4}]}`,
		`{"schema":["id:Float64"],"rows":[{"id":4},{"id":1}]}`)
	p.differs("take", order+"; "+sorted, `{"schema":["p:Float64","id:Float64"],"rows":[{"p":15,"id":1},{"p":60,"id":4}]}`,
		`{"schema":["id:Float64","p:Float64"],"rows":[{"id":4,"p":60},{"id":1,"p":15}]}`)
}

// TestServerParityOrderBy: orderBy on scans (one and two columns, nulls
// first and last, with a filter, offset and limit) and on a search, whose
// k nearest rows are sorted.
func TestServerParityOrderBy(t *testing.T) {
	p := runParity(t, "order")
	p.same("create", `"ok"`)
	p.same("desc", `[{"id":9},{"id":8},{"id":7}]`)
	p.same("two", `[{"id":9,"cat":"a"},{"id":6,"cat":"a"},{"id":3,"cat":"a"},{"id":0,"cat":"a"},{"id":7,"cat":"b"},{"id":4,"cat":"b"},{"id":1,"cat":"b"},{"id":8,"cat":"c"},{"id":5,"cat":"c"},{"id":2,"cat":"c"}]`)
	p.same("nullsLast", `[{"id":3,"score":1},{"id":6,"score":2},{"id":9,"score":3},{"id":2,"score":4},{"id":5,"score":5},{"id":1,"score":7},{"id":7,"score":9},{"id":0,"score":null},{"id":4,"score":null},{"id":8,"score":null}]`)
	p.same("nullsFirst", `[{"id":0,"score":null},{"id":4,"score":null},{"id":8,"score":null},{"id":7,"score":9},{"id":1,"score":7},{"id":5,"score":5},{"id":2,"score":4},{"id":9,"score":3},{"id":6,"score":2},{"id":3,"score":1}]`)
	p.same("filterOffset", `[{"id":9},{"id":6},{"id":3}]`)
	p.same("search", `[{"id":3,"_distance":32},{"id":4,"_distance":8},{"id":5,"_distance":0},{"id":6,"_distance":8}]`)
	p.bothFail("missing", "400", "order_by: no column nope")
	p.differs("notSelected", "Lance 12 fails to plan a sort by a column the select leaves out (\"TakeExec requires the input plan to have a column named '_rowaddr'\"); lancer reads it and leaves it out",
		`{"error":true}`, `[{"id":7},{"id":1},{"id":5}]`)
}

// TestServerParityDictionary: a table Lance wrote with a dictionary
// column, in two fragments whose dictionaries differ, reads whole through
// lancer serve (an Arrow stream, which replaces dictionaries, where the
// file it answered before could hold only one: a 500) as embedded LanceDB
// reads it.
func TestServerParityDictionary(t *testing.T) {
	p := runParity(t, "dict")
	p.same("create", `["id:Int32","cat:Dictionary<Int32, Utf8>"]`)
	p.same("full", `{"schema":["id:Int32","cat:Dictionary<Int32, Utf8>"],"rows":[{"id":0,"cat":"a"},{"id":1,"cat":"b"},{"id":2,"cat":"a"},{"id":3,"cat":"c"},{"id":4,"cat":"d"},{"id":5,"cat":"c"}]}`)
	p.same("filtered", `{"schema":["cat:Dictionary<Int32, Utf8>"],"rows":[{"cat":"a"},{"cat":"a"},{"cat":"c"},{"cat":"c"}]}`)
	p.same("count", `5`)
}

// TestServerParityMisc: a table name with a slash gets LanceDB's
// invalid-name error; merge-insert results count what embedded LanceDB
// counts (numRows included); fastSearch leaves out the rows added after
// the index, as Lance does.
func TestServerParityMisc(t *testing.T) {
	p := runParity(t, "misc")
	const invalid = `Invalid table name (\"a/b\"): Table names can only contain alphanumeric characters, underscores, hyphens, and periods`
	p.bothFail("slashCreate", invalid)
	p.bothFail("slashOpen", "400", invalid)
	p.same("create", `"ok"`)
	p.same("mergeUpsert", `{"inserted":1,"updated":2,"deleted":0,"rows":3}`)
	p.same("mergeInsertOnly", `{"inserted":1,"updated":0,"deleted":0,"rows":1}`)
	p.same("mergeConditional", `{"inserted":0,"updated":1,"deleted":0,"rows":1}`)
	p.same("mergeDelete", `{"inserted":0,"updated":2,"deleted":6,"rows":2}`)
	p.same("mergeNothing", `{"inserted":0,"updated":0,"deleted":0,"rows":0}`)
	p.same("afterMerge", `[{"id":0,"v":"zero"},{"id":1,"v":"uno"}]`)
	p.same("indexCreate", `5`)
	// The five new rows (ids 1000-1004) are nearest, but not indexed.
	p.same("fastSearch", `[100,101,99]`)
	p.same("fullSearch", `[1000,1001,1002]`)
	p.same("fastFiltered", `[100,101]`)
}

// TestServerParityTables: cloneTable (at the latest version, a version and
// a tag; the clone evolves apart), alterColumns casts, nullability and a
// no-op, updateFieldMetadata, prewarmIndex, prewarmData and listJobs.
func TestServerParityTables(t *testing.T) {
	p := runParity(t, "tables")
	p.same("create", `2`)
	p.same("clone", `{"rows":7,"version":2}`)
	p.same("cloneVersion", `6`)
	p.same("cloneTag", `6`)
	p.same("cloneWrites", `{"clone":8,"source":7}`)
	p.same("cloneByName", `7`)
	p.bothFail("cloneExisting", "already exists")
	p.bothFail("cloneMissingVersion", "no version 99")
	p.bothFail("cloneMissingTag", `tag \"nope\"`)
	p.bothFail("cloneDeep", "deep clones are not supported")
	p.bothFail("cloneOutside", "not a table of this server")
	p.bothFail("cloneBadName", `Invalid table name (\"a/b\")`)
	p.same("castFloat", `["id:Float64","n:Int64","price:Float32","note:Utf8","vector:FixedSizeList[8]<Float32>"]`)
	p.same("castVector", `["id:Float64","n:Int64","price:Float32","note:Utf8","vector:FixedSizeList[8]<Float16>"]`)
	p.same("castInt", `{"schema":["id:Float64","n:Int32","price:Float32","note:Utf8","vector:FixedSizeList[8]<Float16>"],"rows":[{"n":0,"price":0},{"n":1,"price":1.5},{"n":2,"price":3}]}`)
	p.same("castRenamed", `["id:Float64","key:Int64","price:Float32","note:Utf8","vector:FixedSizeList[8]<Float16>"]`)
	p.bothFail("castFloatToInt", "400", `cannot cast column \"id\" from float64 to int64`)
	p.bothFail("castRefused", "400", `cannot cast column \"price\" from float32 to utf8`)
	p.bothFail("castMissing", "400", `no column \"nope\"`)
	p.same("nullableNoNulls", `false`)
	p.bothFail("nullableWithNulls", "400", "cannot be made non-nullable")
	p.same("noOpVersion", `1`)
	p.same("fieldMetadata", `{"lancedb:description":"a note"}`)
	p.same("fieldMetadataReplace", `{"y":"2"}`)
	p.bothFail("fieldMetadataMissing", "400", `no column \"nope\"`)
	p.same("afterChanges", `[{"key":0,"price":0,"note":"n0"},{"key":1,"price":1.5,"note":null}]`)
	p.same("indexForPrewarm", `["price_idx"]`)
	p.same("prewarmIndex", `null`)
	p.bothFail("prewarmMissingIndex", "Index 'nope_idx' was not found")
	// prewarmData and listJobs are remote-only calls in the client: the
	// embedded database refuses them itself.
	remoteOnly := "the client serves this call on remote tables only; embedded LanceDB refuses it"
	p.notSupported("prewarmData", remoteOnly, `{"error":true}`, `null`)
	p.notSupported("prewarmAll", remoteOnly, `{"error":true}`, `null`)
	p.bothFail("prewarmMissingColumn", "400", `no column \"nope\"`)
	p.notSupported("listJobs", remoteOnly+"; lancer runs no submitted jobs, so its list is empty", `{"error":true}`, `[]`)
}

// TestServerParityNamespaces: the namespace calls of the client, on
// embedded LanceDB (Lance's directory namespace in the folder) and on
// lancer serve (the REST catalog over the same layout). Where Lance 12's
// directory namespace leaves out what the namespace spec says, lancer
// follows the spec, and says so here.
func TestServerParityNamespaces(t *testing.T) {
	p := runParity(t, "namespaces")
	p.same("create", `{"properties":{"owner":"me"}}`)
	p.bothFail("createAgain", "409", "Namespace already exists")
	p.same("createChild", `{}`)
	p.bothFail("createOrphan", "404", "Namespace not found")
	p.same("createSecond", `{}`)
	p.same("list", `{"namespaces":["ns1","ns2"]}`)
	p.same("listPaged", `{"first":["ns1"],"next":["ns2"]}`)
	p.same("listChild", `{"namespaces":["child"]}`)
	p.same("describe", `{"properties":{"owner":"me"}}`)
	p.bothFail("describeMissing", "404", "Namespace not found")
	p.same("createTable", `3`)
	p.bothFail("createTableTwice", "already exists")
	p.same("tableNames", `["t1"]`)
	p.same("listTables", `["t1"]`)
	p.same("rootTables", `[]`)
	p.same("open", `[2,3,10]`)
	p.bothFail("openMissing", "Table 'zz' was not found")
	p.bothFail("dropNonEmpty", "409", "Namespace not empty")
	p.bothFail("dropMissing", "404", "Namespace not found")
	p.same("dropEmpty", `{}`)
	p.same("dropTable", `[]`)
	p.bothFail("renameInNs", "not supported")

	spec := "the namespace spec (lance-namespace operations) says so; Lance 12's directory namespace does not do it"
	p.differs("createExistOk", "mode exist_ok answers the existing namespace: "+spec, `{"error":true}`, `{"properties":{"owner":"me"}}`)
	p.differs("dropMissingSkip", "mode skip drops a missing namespace without an error: "+spec, `{"error":true}`, `{}`)
	p.differs("cascade", "behavior cascade drops what the namespace holds: "+spec, `{"error":true}`, `["ns1"]`)
	p.differs("listMissing", "listing a missing namespace is NamespaceNotFound (404): "+spec, `{"namespaces":[]}`, `{"error":true}`)
	p.differs("createTableMissingNs", "a table in a missing namespace is NamespaceNotFound (404): "+spec+"; Lance 12 creates the table without its namespace",
		`{"inner":{}}`, `{"error":true}`)
	p.differs("badName", "lancer holds namespace names to the rule of table names, so that no name is a path; Lance 12 takes a/b as a name",
		`{}`, `{"error":true}`)
}

// TestServerParitySurface: the rest of the public methods of the pinned
// client's Connection and Table, with valid and invalid arguments. The
// calls the client itself serves differently for remote tables (it refuses
// some, others exist only there) are differences of the client, named so.
func TestServerParitySurface(t *testing.T) {
	p := runParity(t, "surface")
	p.same("create", `true`)
	p.same("display", `"table"`)
	p.same("createEmpty", `{"rows":0,"schema":["a:Int32"]}`)
	p.bothFail("createEmptyAgain", "already exists")
	p.bothFail("createEmptyBadName", `Invalid table name (\"bad name\")`)
	p.bothFail("openMissing", "Table 'missing' was not found")
	p.same("toArrow", `5`)
	p.same("schema", `["id:Float64","text:Utf8","vector:FixedSizeList[8]<Float32>"]`)
	p.same("version", `1`)
	p.same("listVersions", `[1]`)
	p.bothFail("checkoutMissing", "99")
	p.same("checkoutLatest", `1`)
	p.bothFail("restoreLatest", "400")
	p.same("stats", `{"rows":5,"indices":0}`)
	p.same("currentBranch", `null`)
	p.same("branchesList", `[]`)
	p.same("blobColumns", `[]`)
	p.same("createIndexAsync", `"object"`)
	p.same("waitForIndex", `null`)
	p.bothFail("waitForMissingIndex", "timed out waiting for indices")
	p.same("indexStatsMissing", `null`)
	p.bothFail("dropIndexMissing", "Index 'nope_idx' was not found")
	p.bothFail("tokenize", "does not have a full text search index")
	p.bothFail("refreshColumnAsync", "400", "Column 'text' is not a computed column")
	p.same("initialStorageOptions", `null`)
	p.same("latestStorageOptions", `null`)
	p.same("lsmSpec", `null`)
	p.same("lsmUnsetSpec", `null`)
	p.same("lsmClose", `null`)
	p.bothFail("lsmFlush", "400", "no LSM write path")
	p.bothFail("lsmCompact", "400", "no LSM write path")
	p.bothFail("lsmCheckpoint", "400", "no LSM write path")
	p.same("dropTableAsync", `"object"`)
	p.bothFail("dropTableMissing", "404", `table \"missing\" not found`)
	p.same("close", `{"open":true,"display":"string"}`)

	client := "the client itself serves this call differently on remote tables"
	p.differs("lsmSetSpec", "lancer serve has no LSM write path (Lance's MemWAL) and refuses to start one; embedded Lance starts it",
		`null`, `{"error":true}`)
	p.differs("lsmStats", "on a table without an LSM write path the remote protocol answers null, embedded Lance an error", `{"error":true}`, `null`)
	p.notSupported("optimize", client+": it refuses optimize on remote tables (the server keeps them optimized)", `"object"`, `{"error":true}`)
	p.notSupported("setPrimaryKey", client+": it refuses setUnenforcedPrimaryKey on remote tables", `{"error":true}`, `{"error":true}`)
	p.notSupported("setPrimaryKeyMissing", client+": it refuses setUnenforcedPrimaryKey on remote tables", `{"error":true}`, `{"error":true}`)
	p.notSupported("refreshColumn", client+": it refuses refreshColumn on remote tables (refreshColumnAsync instead)", `{"error":true}`, `{"error":true}`)
	p.notSupported("refreshMaterializedView", client+": materialized views are local only", `{"error":true}`, `{"error":true}`)
	p.notSupported("listMaterializedViews", client+": materialized views are local only", `[]`, `{"error":true}`)
	p.notSupported("createMaterializedView", client+": materialized views are local only", `{"error":true}`, `{"error":true}`)
	p.notSupported("openMaterializedView", client+": materialized views are local only", `{"error":true}`, `{"error":true}`)
	p.notSupported("dropAllTables", client+": it refuses dropAllTables on remote databases", `[]`, `{"error":true}`)
	p.notSupported("renameMissing", client+": embedded LanceDB (OSS) has no renameTable; lancer answers TableNotFound", `{"error":true}`, `{"error":true}`)
	p.notSupported("openJob", client+": jobs are remote only; lancer runs no submitted jobs, so none is found", `{"error":true}`, `{"error":true}`)
	p.notSupported("cancelJob", client+": jobs are remote only; lancer has no job to cancel", `{"error":true}`, `false`)
}

// TestServerParityFTS: full-text search through lancer serve over FTS
// indices real Lance wrote into the served folder answers the official
// client's calls as embedded LanceDB does: search(text, 'fts'), string
// queries over one, some or all indexed columns, the structured queries
// (match with operator, boost and fuzziness, phrase with slop, boolean,
// boost, multi-match with boosts), where(), select(), withRowId() and
// limit(); hybrid search (two queries, fused by the client's reranker,
// RRF by default); a query on a column without an FTS index is refused.
func TestServerParityFTS(t *testing.T) {
	p := runParity(t, "fts")
	p.same("create", `"ok"`)
	for _, step := range []string{"searchFts", "searchLimit", "stringAllColumns", "stringColumns", "match", "fuzzy", "phrase", "boolean",
		"boost", "multiMatch", "where", "whereLimit", "allColumns", "withRowId", "selectScore", "offset", "vectorRowId", "hybrid", "hybridDefault"} {
		p.same(step, "")
	}
	// Without a limit, LanceDB's default 10 of the 30 matches.
	p.same("noLimit", `[0,2,4,6,8,10,12,14,16,18]`)
	p.same("nearestToText", "")
	p.same("nearestToTextAll", "")
	p.bothFail("nearestToTextNoIndex", "400", `no FTS index on column \"id\"`)
	p.bothFail("noIndex", "400", "id")
	p.bothFail("phraseNoColumn", "400")
	p.differs("empty", "embedded LanceDB answers an empty match with no rows; lancer refuses empty query text (a 400) as bad input",
		`[]`, `{"error":true}`)
}

// TestServerParityMethods: the public methods no other group calls, with
// valid and invalid arguments: delete, addColumns, dropColumns,
// takeRowIds, the query builders (filter, useLsm, explainPlan,
// analyzePlan) and the vector ones (column, distanceType, postfilter,
// bypassVectorIndex, ef, nprobes bounds, distanceRange, addQueryVector),
// merge-insert options, tags, branches, the Job handle, and blobs
// (fetchBlobs, fetchBlobFiles' BlobFile handles).
func TestServerParityMethods(t *testing.T) {
	p := runParity(t, "methods")
	p.same("create", `"mt"`)
	p.same("delete", `7`)
	p.same("addColumns", `[{"id":0,"twice":0},{"id":1,"twice":2}]`)
	p.same("dropColumns", `["id:Float64","v:Utf8","vector:FixedSizeList[8]<Float32>"]`)
	p.same("takeRowIds", `{"schema":["id:Float64","v:Utf8"],"rows":[{"id":0,"v":"v0"},{"id":2,"v":"v2"}]}`)
	p.same("takeRowIdsBig", `{"schema":["id:Float64","_rowid:Uint64"],"rows":[{"id":0,"_rowid":0},{"id":3,"_rowid":3}]}`)
	p.same("takeUseLsm", `{"schema":["id:Float64"],"rows":[{"id":1}]}`)
	p.same("filter", `[{"id":5},{"id":6}]`)
	p.same("queryUseLsm", `[{"id":1}]`)
	// Plans are each engine's own text.
	p.same("explainPlan", `"string"`)
	p.same("analyzePlan", `"string"`)
	p.same("column", `[2,1]`)
	p.same("distanceType", `[{"id":2,"_distance":0},{"id":3,"_distance":0.00041765}]`)
	p.same("postfilter", `[]`)
	p.same("bypassVectorIndex", `[5,4]`)
	p.same("ef", `[5,4]`)
	p.same("nprobesRange", `[5,4]`)
	p.same("distanceRange", `[{"id":4,"_distance":8},{"id":2,"_distance":8}]`)
	p.same("distanceRangeEmpty", `[]`)
	p.same("addQueryVector", `[{"query_index":0,"id":1,"_distance":0},{"query_index":1,"id":5,"_distance":0}]`)
	p.same("mergeOptions", `{"inserted":1,"updated":1,"deleted":0,"rows":2}`)
	p.same("tags", `{"b":3,"list":["b"]}`)
	p.same("branchCreate", `{"dev":9,"main":8,"branch":"dev"}`)
	p.same("branchCheckout", `{"rows":9,"branch":"dev"}`)
	p.same("branchList", `["dev"]`)
	p.same("branchDelete", `[]`)
	p.same("job", `{"status":"string","id":"object","state":"string","jobType":null,"creationMs":"object","spec":"object","result":"object","failure":null,"string":"string","indices":["id_idx"]}`)
	p.same("jobCancel", `null`)
	p.same("blobCreate", `["data"]`)
	p.same("fetchBlobs", `["xy","hello blob",null]`)
	// An embedding function the client computes: its config round-trips
	// in the schema metadata, added rows and string queries are embedded.
	p.same("embCreate", `["text:Utf8","vector:FixedSizeList[2]<Float32>"]`)
	p.same("embMetadata", `[{"sourceColumn":"text","vectorColumn":"vector","name":"parity-toy","model":{}}]`)
	p.same("embAdd", `[{"text":"a","vector":[1,97]},{"text":"bbb","vector":[3,98]},{"text":"cc","vector":[2,99]},{"text":"dddd","vector":[4,100]}]`)
	p.same("embSearch", `[{"text":"cc","_distance":0}]`)
	p.same("embSearchVector", `[{"text":"dddd","_distance":0}]`)
	p.bothFail("badReadRange", "invalid blob range: start (8) > end (2)")
	p.bothFail("badReadRangePastEnd", "exceeds blob size 10")
	p.bothFail("badDropTableAsync", "404", "not found")
	p.bothFail("badListTables", "404", "Namespace not found")
	p.bothFail("badTableNames", "404", "Namespace not found")
	// The client sends limit -1 as 4294967295: a page of at most 10,000
	// names, here all of them, as Lance lists them all.
	p.same("badListTablesLimit", `{"tables":["bl","mt"]}`)
	p.same("badTableNamesLimit", `["bl","mt"]`)
	p.bothFail("badAddColumn", "Found field not in schema: nope")
	// Both take the string as a float: NaN.
	p.same("badAddType", `{"version":9}`)
	p.bothFail("badCountRows", "400", "no column nope")
	p.bothFail("badCreateIndex", "Field path `nope` not found")
	p.bothFail("badCreateIndexType", "400", `column \"v\" is utf8, not a vector`)
	// No index is named "": none, as for any missing index.
	p.same("badIndexStats", `null`)
	p.differs("badSearchFts", "a full-text search of a column without an FTS index: Lance searches it flat, lancer needs the index (flat search is the issue \"Scalar indices and full-text search\")",
		`1`, `{"error":true}`)
	// The query type is ignored for a vector.
	p.same("badSearchType", `[1]`)
	// Offsets past the end take nothing.
	p.same("badTakeOffsets", `[]`)
	p.bothFail("badTakeOffsetsNegative", "Failed to convert offset to u64")
	p.same("badTakeRowIds", `[]`)
	p.bothFail("badMergeWhere", "400", "no column nope")
	p.bothFail("badMergeDeleteWhere", "400", "unexpected end of input")
	p.bothFail("badMergeUseIndex", "400", `key column \"nope\"`)
	p.bothFail("badMergeSingleShard", "400", `key column \"nope\"`)
	const noLSM = "use_lsm(true) was set but the table has no MemWAL write spec"
	p.bothFail("badMergeLsm", "400", noLSM)
	p.bothFail("badQueryLsm", "400", noLSM)
	p.bothFail("badTakeLsm", "400", noLSM)
	// The remote client itself fails on a string query vector (a panic
	// it reports as "called Option::unwrap() on a None value").
	p.bothFail("badNearestTo")
	p.bothFail("badNearestToDim", "400", "query vector at index 0 has dimension 3, expected 8")
	p.bothFail("badAnalyzePlan", "400", "no column nope")
	p.same("badOffset", `[]`)
	p.bothFail("badTagUpdate", "no such tag")
	p.same("badDistanceRange", `[]`)
	p.same("badNprobesZero", `[3,4]`)
	// The client does not check the reranker of a vector-only query.
	p.same("badRerank", `[3,4]`)
	// The client sends -1 as 4294967295: Lance probes min(nprobes,
	// partitions) and walks at most a whole partition, so lancer clamps
	// both to their bounds (limits.go), which mean the same.
	p.same("badEf", `[3,4]`)
	p.same("badNprobes", `[3,4]`)
	p.differs("badRefineFactor", "the client sends -1 as 4294967295, which Lance takes as re-ranking every row the probed partitions hold; "+
		"lancer bounds (k + offset) × refine_factor at 100,000 candidates (limits.go) and refuses more, since clamping would re-rank fewer rows than Lance on a table whose probed partitions hold more",
		`[3,4]`, `{"error":true}`)
	p.same("fetchBlobFiles", `{"nulls":[false,true,false],"size":10,"whole":"hello blob","range":"blob","second":"xy"}`)

	p.bothFail("deleteBad", "400", "no column nope")
	p.bothFail("addColumnsBad", "400", "no column nope")
	// Lance refuses a second v for its type, lancer for its name.
	p.bothFail("addColumnsExisting", "400", `column \"v\" exists already`)
	p.bothFail("dropColumnsMissing", "400", `no column \"nope\"`)
	p.bothFail("filterBad", "400", "unexpected end of input")
	p.bothFail("explainPlanBad", "400", "no column nope")
	p.bothFail("columnMissing", "400", `no column \"nope\"`)
	p.bothFail("distanceTypeBad", "Invalid distance type 'nope'")
	p.bothFail("maximumNprobesBelowMinimum", "maximum_nprobes must be greater than or equal to minimum_nprobes")
	// Refused before any result is sent, not a cut stream.
	p.bothFail("addQueryVectorBadDim", "400", "query vector at index 1 has dimension 2, expected 8")
	p.bothFail("mergeMissingKey", "400", `key column \"nope\"`)
	p.bothFail("tagMissing", "no such tag")
	p.bothFail("tagAgain", "already exists")
	p.bothFail("tagMissingVersion", "no such version")
	p.bothFail("tagDeleteMissing", "no such tag")
	p.bothFail("branchCheckoutMissing", "branch 'nope' does not exist")
	p.bothFail("branchCreateAgain", "already exists")
	p.bothFail("branchDeleteMissing", "branch 'nope' does not exist")
	// The client checks the column against the schema itself.
	p.bothFail("jobBadColumn", "Field path `nope` not found")
	// Neither has a server-side job whose events it could list.
	p.bothFail("jobEvents", "not supported")
	p.bothFail("fetchBlobsNotBlob", "400", "blob and binary columns only")
	p.bothFail("fetchBlobsMissingRow", "400", "no live row 1000")
	// A blob's bytes are a resource (blob/{col}/{row}/bytes): a missing
	// column is a 404 there, an invalid input in Lance.
	p.bothFail("fetchBlobFilesMissingColumn", "404", `no column \"nope\"`)

	enterprise := "the client serves branch diffs and cherry-picks on remote tables only (embedded LanceDB: \"only supported on Enterprise tables\")"
	p.notSupported("branchDiff", enterprise, `{"error":true}`, `"object"`)
	p.notSupported("branchCherryPickDry", enterprise, `{"error":true}`, `"ready"`)
	manifest := "the client refuses manifest-path calls on remote tables (\"This cannot be run on a remote table\"): the server owns the layout"
	p.notSupported("usesV2ManifestPaths", manifest, `true`, `{"error":true}`)
	p.notSupported("migrateManifestPathsV2", manifest, `null`, `{"error":true}`)
}

// TestServerParityPermutation: lancedb.permutationBuilder on a table of
// lancer serve (the client reads the source through the server and builds
// the permutation itself: splits, shuffles, filters, persisted into the
// remote database) answers as on embedded LanceDB; and a MaterializedView
// handle on a view embedded Lance wrote in the served folder reads its
// name, rows and definition (schema metadata) through lancer serve.
func TestServerParityPermutation(t *testing.T) {
	p := runParity(t, "perm")
	p.same("create", `"ok"`)
	// Seeded shuffles and splits: the same rows in the same order.
	for _, step := range []string{"execute", "splitRandom", "splitRandomCounts", "splitHash", "splitSequential", "shuffle", "shuffleClump"} {
		p.same(step, "")
	}
	p.same("filter", `{"schema":["row_id:Uint64","split_id:Uint64"],"rows":[{"row_id":1,"split_id":0},{"row_id":5,"split_id":0},{"row_id":9,"split_id":0},{"row_id":13,"split_id":0},{"row_id":17,"split_id":0}]}`)
	p.same("persist", `{"name":"perm","rows":{"schema":["row_id:Uint64","split_id:Uint64"],"rows":[{"row_id":0,"split_id":0},{"row_id":1,"split_id":0},{"row_id":2,"split_id":0},{"row_id":3,"split_id":0},{"row_id":4,"split_id":0},{"row_id":5,"split_id":0}]},"listed":true}`)
	// The client reads row_id and the calculated split_id with a select
	// whose keys it sorts (as in TestServerParitySelect): the columns
	// come in another order, the rows are the same.
	p.differs("splitCalculated", "the client sorts the keys of the select it sends, so split_id follows row_id",
		`{"schema":["split_id:Float64","row_id:Uint64"],"rows":`+calculatedSplits+`}`,
		`{"schema":["row_id:Uint64","split_id:Float64"],"rows":`+calculatedSplits+`}`)
	p.bothFail("badFilter", "400", "no column nope")
	p.bothFail("badSplitHash", "400", `no column \"nope\"`)
	p.bothFail("badSplitCalculated", "400", `no column \"nope\"`)
	// Checked by the client before any request.
	p.bothFail("badSplitRandom", "Split percentages must sum to 1.0 or less")
	p.bothFail("badSplitSequential", "Split counts specified 60 rows but only 20 are available")
	p.bothFail("badShuffle", "attempt to divide by zero")
	p.bothFail("badPersist", "already exists")

	p.same("mvCreate", `"mv"`)
	p.same("mvName", `"mv"`)
	p.same("mvTable", `[{"id":0,"twice":0},{"id":2,"twice":4},{"id":4,"twice":8},{"id":6,"twice":12}]`)
	p.same("mvDefinition", `{"sourceTable":"mvsrc","projections":[["id","`+"`id`"+`"],["twice","id * 2"]],"filter":"grp = 0","limit":null,"inputs":["grp","id"],"sourceNamespace":[]}`)
	p.bothFail("mvDefinitionNotView", "Table 'src' is not a materialized view")
	p.bothFail("mvRefreshBadVersion", "sourceVersion must be a non-negative integer")
	p.notSupported("mvRefresh", "the client itself serves this call differently on remote tables: materialized views are local only (\"supported only on local databases\")",
		`"object"`, `{"error":true}`)
}

// calculatedSplits are the rows of splitCalculated ("grp % 2" of the
// twenty rows, grp = id % 4).
var calculatedSplits = func() string {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < 20; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"row_id":` + strconv.Itoa(i) + `,"split_id":` + strconv.Itoa(i%4%2) + `}`)
	}
	b.WriteByte(']')
	return b.String()
}()

// TestServerParityCoverage: every public method of the pinned client's
// classes that talk to a server is called on lancer serve by some step of
// lancedb-parity.mjs (the script records the calls of its remote side),
// or is listed in parityNotRemote with the reason no server sees it; and
// each that takes arguments is also called with invalid ones (in a step
// where a side fails, or one named bad..., ...Missing...). It runs the
// groups no earlier test of this process ran, and logs the classification
// of all steps checked: same, differs (with their reasons), fails (must
// be 0: a fail is an error of the group's test), both-error of the same
// kind or not, not-supported-by-the-client.
func TestServerParityCoverage(t *testing.T) {
	ref := lancereftest.ForTest(t)
	methods, parent, takesArgs := clientSurface(t, filepath.Join(ref.Dir, "node_modules", "@lancedb", "lancedb", "dist"))
	called := map[string]bool{}
	// failing holds the calls made in a step of invalid input: one where
	// a side failed, or one named for it (bad..., ...Missing...), whose
	// invalid arguments both sides may answer without an error (none,
	// an empty list).
	failing := map[string]bool{}
	for _, g := range parityGroups {
		parityMu.Lock()
		calls, ok := parityCalls[g]
		steps := paritySteps[g]
		parityMu.Unlock()
		if !ok {
			steps, calls = runParityScript(t, g)
		}
		for name, st := range steps {
			invalid := strings.HasPrefix(name, "bad") || strings.Contains(name, "Bad") || strings.Contains(name, "Missing")
			if invalid || errorOf(st.Local) != "" || errorOf(st.Remote) != "" {
				for _, c := range st.Calls {
					failing[c] = true
				}
			}
		}
		for _, c := range calls {
			called[c] = true
		}
	}
	for excluded := range parityNotRemote {
		cls, m, _ := strings.Cut(excluded, ".")
		if !contains(methods[cls], m) {
			t.Errorf("parityNotRemote names %s, which the client does not declare", excluded)
		}
	}
	var missing, noBadCase []string
	total := 0
	for cls, ms := range methods {
		for _, m := range ms {
			total++
			if _, ok := parityNotRemote[cls+"."+m]; ok {
				continue
			}
			found := calledIn(called, cls, m, parent)
			if !found {
				missing = append(missing, cls+"."+m)
			}
			if takesArgs[cls+"."+m] && !calledIn(failing, cls, m, parent) {
				noBadCase = append(noBadCase, cls+"."+m)
			}
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("%s: no step of lancedb-parity.mjs calls it on lancer serve", m)
	}
	t.Logf("client surface: %d public members of %d classes; %d excluded with a reason; %d not called", total, len(methods), len(parityNotRemote), len(missing))
	sort.Strings(noBadCase)
	for _, m := range noBadCase {
		t.Errorf("%s takes arguments, but no step of lancedb-parity.mjs calls it with invalid ones", m)
	}
	parityMu.Lock()
	defer parityMu.Unlock()
	t.Logf("parity steps: same %d, differs %d, fails %d, both-error same kind %d, both-error other kind %d, not-supported-by-the-client %d",
		parityTally["same"], parityTally["differs"], parityTally["fails"], parityTally["both-error same kind"], parityTally["both-error other kind"], parityTally["not-supported"])
	for _, d := range parityDiffs {
		t.Logf("differs: %s", d)
	}
}

// calledIn reports whether calls holds method m of class cls or of a
// subclass of it.
func calledIn(calls map[string]bool, cls, m string, parent map[string]string) bool {
	for c := range calls {
		d, cm, _ := strings.Cut(c, ".")
		if cm == m && descends(d, cls, parent) {
			return true
		}
	}
	return false
}
