package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/rowjson"
)

// The handlers of the browser's JSON API (see ui.go).

// Limits on what one request may ask for, so that a browser tab (or a
// hand-written URL) cannot make the server read a whole large table.
const (
	uiDefaultLimit = 50
	uiMaxLimit     = 500
	uiDefaultK     = 12
	uiMaxK         = 200
	uiDiffDefault  = 20
	uiDiffMax      = 200
	uiMaxTables    = 1000
)

// uiState is one resolved state of a table: the ref asked for, read as
// line@version.
type uiState struct {
	table   string
	root    blob.Store // the table's root (main's) store
	ds      *dataset.Dataset
	line    string // "main" or a branch name
	version uint64
}

// ref names the state exactly, as the API's responses and URLs do.
func (st *uiState) ref() string { return fmt.Sprintf("%s@%d", st.line, st.version) }

// uiResolve opens table name at ref (see branch.ResolveRef; "" is main).
// A bad name or ref syntax is a 400; a missing table, tag, branch or
// version a 404 naming it.
func (s *Server) uiResolve(ctx context.Context, name, ref string) (*uiState, error) {
	if err := CheckTableName(name); err != nil {
		return nil, invalidf("%v", err)
	}
	if ref == "" || ref == branch.Main {
		latest, err := s.open(ctx, name, 0, "")
		if err != nil {
			return nil, err
		}
		return &uiState{table: name, root: latest.Store(), ds: latest, line: branch.Main, version: latest.Version()}, nil
	}
	// Other refs open only the state they name; what they do not find may
	// be the table itself, which is then the error.
	root, err := s.tableStore(ctx, name)
	if err != nil {
		return nil, err
	}
	tableMissing := func() error {
		_, err := s.open(ctx, name, 0, "")
		return err
	}
	st := &uiState{table: name, root: root}
	rf, err := branch.ResolveRef(ctx, st.root, ref)
	if err != nil {
		if errors.Is(err, lancer.ErrNotFound) {
			if terr := tableMissing(); terr != nil {
				return nil, terr
			}
			return nil, &apiError{status: http.StatusNotFound, code: codeNotFound,
				msg: fmt.Sprintf("table %q has no tag or branch %q", name, ref), err: err}
		}
		return nil, invalidf("ref %q: %v", ref, err)
	}
	resolved, err := branch.Resolve(ctx, st.root, rf)
	if errors.Is(err, branch.ErrNoSuchTag) || errors.Is(err, branch.ErrNoSuchBranch) {
		if terr := tableMissing(); terr != nil {
			return nil, terr
		}
		switch {
		case errors.Is(err, branch.ErrNoSuchTag):
			return nil, &apiError{status: http.StatusNotFound, code: codeNotFound,
				msg: fmt.Sprintf("table %q has no tag %q", name, rf.Tag), err: err}
		case rf.Branch != "":
			return nil, branchNotFound(rf.Branch, err)
		}
		// A tag naming a branch that is gone: the error names the branch.
		return nil, &apiError{status: http.StatusNotFound, code: codeNotFound, msg: err.Error(), err: err}
	}
	if err != nil {
		return nil, err
	}
	rf = resolved
	ds, err := s.open(ctx, name, rf.Version, rf.Branch)
	if err != nil {
		return nil, err
	}
	st.ds, st.version, st.line = ds, ds.Version(), branch.Main
	if rf.Branch != "" {
		st.line = rf.Branch
	}
	return st, nil
}

// uiRequestState resolves the request's table and ?ref.
func (s *Server) uiRequestState(r *http.Request) (*uiState, error) {
	return s.uiResolve(r.Context(), r.PathValue("id"), r.URL.Query().Get("ref"))
}

// queryInt parses an optional non-negative integer parameter, capped.
func queryInt(r *http.Request, name string, def, maxValue int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, invalidf("%s must be a non-negative integer, got %q", name, v)
	}
	return min(n, maxValue), nil
}

// queryRowID parses the required ?row= (a _rowid).
func queryRowID(r *http.Request) (uint64, error) {
	v := r.URL.Query().Get("row")
	if v == "" {
		return 0, invalidf("row (a _rowid) is required")
	}
	id, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, invalidf("row must be a _rowid (a non-negative integer), got %q", v)
	}
	return id, nil
}

// uiColumnOf returns the top-level column a request names, or a 400.
func uiColumnOf(cols []uiColumn, name string) (uiColumn, error) {
	for _, c := range cols {
		if c.Name == name {
			return c, nil
		}
	}
	return uiColumn{}, invalidf("no column %q", name)
}

type uiTable struct {
	Name    string `json:"name"`
	Version uint64 `json:"version,omitempty"`
	Rows    uint64 `json:"rows"`
	Columns int    `json:"columns"`
	Error   string `json:"error,omitempty"`
}

// uiTables answers the table list, each with its latest version, row
// count and number of columns. A table that cannot be read is listed
// with an error rather than failing the list.
func (s *Server) uiTables(w http.ResponseWriter, r *http.Request) error {
	folders, err := s.tableFolders(r.Context())
	if err != nil {
		return err
	}
	// As listTables: a folder without a committed version (being created
	// or dropped, or left by an interrupted drop) is not a table.
	names, err := s.committedTables(r.Context(), folders, uiMaxTables)
	if err != nil {
		return err
	}
	out := []uiTable{}
	for _, name := range names {
		if len(out) == uiMaxTables {
			break
		}
		t := uiTable{Name: name}
		ds, err := s.open(r.Context(), name, 0, "")
		if err == nil {
			t.Version, t.Columns = ds.Version(), len(ds.Schema().Fields)
			t.Rows, err = ds.CountRows(r.Context())
		}
		if err != nil {
			if r.Context().Err() != nil {
				return r.Context().Err()
			}
			// A folder named like a table but holding none, or a damaged
			// one: the other tables are still worth browsing.
			s.log.Warn("ui: table unreadable", "table", name, "err", err)
			t.Error = "cannot be read (see the server log)"
		}
		out = append(out, t)
	}
	return writeJSON(w, map[string]any{"tables": out})
}

type uiVersion struct {
	Version   uint64    `json:"version"`
	Timestamp time.Time `json:"timestamp"`
	Operation string    `json:"operation"`
	Rows      *uint64   `json:"rows,omitempty"`
}

type uiTag struct {
	Name    string `json:"name"`
	Branch  string `json:"branch"`
	Version uint64 `json:"version"`
}

type uiBranch struct {
	Name          string    `json:"name"`
	ParentBranch  string    `json:"parentBranch"`
	ParentVersion uint64    `json:"parentVersion"`
	CreatedAt     time.Time `json:"createdAt"`
}

type uiIndex struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
	Type    string   `json:"type,omitempty"`
}

// uiSummary answers a table's summary at ?ref.
func (s *Server) uiSummary(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	st, err := s.uiRequestState(r)
	if err != nil {
		return err
	}
	cols, err := s.uiColumnsOf(ctx, st.ds)
	if err != nil {
		return err
	}
	rows, err := st.ds.CountRows(ctx)
	if err != nil {
		return err
	}
	infos, err := st.ds.Versions(ctx)
	if err != nil {
		return err
	}
	versions := make([]uiVersion, 0, len(infos))
	for _, v := range infos {
		uv := uiVersion{Version: v.Version, Timestamp: v.Timestamp.UTC(), Operation: v.Operation}
		if n, err := strconv.ParseUint(v.Metadata["total_rows"], 10, 64); err == nil {
			uv.Rows = &n
		}
		versions = append(versions, uv)
	}
	tagList, err := branch.ListTags(ctx, st.root)
	if err != nil {
		return err
	}
	tags := make([]uiTag, 0, len(tagList))
	for _, t := range tagList {
		tags = append(tags, uiTag{Name: t.Name, Branch: lineOf(t.Branch), Version: t.Version})
	}
	branchList, err := branch.ListBranches(ctx, st.root)
	if err != nil {
		return err
	}
	branches := make([]uiBranch, 0, len(branchList))
	for _, b := range branchList {
		branches = append(branches, uiBranch{Name: b.Name, ParentBranch: lineOf(b.ParentBranch),
			ParentVersion: b.ParentVersion, CreatedAt: b.CreatedAt.UTC()})
	}
	indices := []uiIndex{}
	for _, ix := range st.ds.Indices() {
		if i := slices.IndexFunc(indices, func(u uiIndex) bool { return u.Name == ix.Name }); i >= 0 {
			continue // one entry per index, not per segment
		}
		indices = append(indices, uiIndex{Name: ix.Name, Columns: ix.Fields, Type: ix.Type})
	}
	return writeJSON(w, map[string]any{
		"table":    st.table,
		"ref":      st.ref(),
		"line":     st.line,
		"version":  st.version,
		"rows":     rows,
		"columns":  cols,
		"versions": versions,
		"tags":     tags,
		"branches": branches,
		"indices":  indices,
	})
}

func lineOf(b string) string {
	if b == "" {
		return branch.Main
	}
	return b
}

// uiRows answers a page of rows at ?ref: ?offset and ?limit count the rows
// ?filter keeps; "total" is how many it keeps in all.
func (s *Server) uiRows(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	st, err := s.uiRequestState(r)
	if err != nil {
		return err
	}
	offset, err := queryInt(r, "offset", 0, int(^uint(0)>>1))
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", uiDefaultLimit, uiMaxLimit)
	if err != nil {
		return err
	}
	if limit == 0 {
		limit = uiDefaultLimit
	}
	filter := strings.TrimSpace(r.URL.Query().Get("filter"))
	cols, err := s.uiColumnsOf(ctx, st.ds)
	if err != nil {
		return err
	}
	total, err := st.ds.Count(ctx, filter)
	if err != nil {
		return uiQueryError(err, filter)
	}
	// One row more than the page tells whether another page follows.
	sc, err := st.ds.Scan(&dataset.ScanOptions{Filter: filter, Offset: int64(offset), Limit: int64(limit) + 1, WithRowID: true})
	if err != nil {
		return uiQueryError(err, filter)
	}
	enc := s.uiEncoder(st, cols, false)
	rows := []uiRow{}
	for rec, err := range sc.Batches(ctx) {
		if err != nil {
			return uiQueryError(err, filter)
		}
		got, err := enc.rows(rec)
		if err != nil {
			return err
		}
		rows = append(rows, got...)
	}
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	return writeJSON(w, map[string]any{
		"ref": st.ref(), "version": st.version, "columns": cols, "rows": rows,
		"total": total, "offset": offset, "limit": limit, "more": more, "filter": filter,
	})
}

// uiQueryError makes an error of a filtered read the request's fault
// where it is (a column the filter names that does not exist is the
// filter's mistake, not a missing resource).
func uiQueryError(err error, filter string) error {
	if filter != "" && (errors.Is(err, lancer.ErrNotFound) || errors.Is(err, lancer.ErrInvalidArgument) || errors.Is(err, lancer.ErrUnsupported)) {
		return &apiError{status: http.StatusBadRequest, code: codeInvalidInput, msg: fmt.Sprintf("filter %q: %v", filter, err), err: err}
	}
	return inTable(err)
}

// uiRowNotFound maps a take of a row id that is not there to a 404.
func uiRowNotFound(st *uiState, id uint64, err error) error {
	if errors.Is(err, lancer.ErrNotFound) {
		return &apiError{status: http.StatusNotFound, code: codeNotFound,
			msg: fmt.Sprintf("%s %s has no row %d", st.table, st.ref(), id), err: err}
	}
	return err
}

// uiRow answers one row, every value in full.
func (s *Server) uiRow(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	st, err := s.uiRequestState(r)
	if err != nil {
		return err
	}
	id, err := queryRowID(r)
	if err != nil {
		return err
	}
	cols, err := s.uiColumnsOf(ctx, st.ds)
	if err != nil {
		return err
	}
	rec, err := st.ds.TakeRowIDs(ctx, []uint64{id}, &dataset.TakeOptions{WithRowID: true})
	if err != nil {
		return uiRowNotFound(st, id, err)
	}
	defer rec.Release()
	rows, err := s.uiEncoder(st, cols, true).rows(rec)
	if err != nil {
		return err
	}
	if len(rows) != 1 {
		return uiRowNotFound(st, id, lancer.ErrNotFound)
	}
	return writeJSON(w, map[string]any{"ref": st.ref(), "version": st.version, "columns": cols, "row": rows[0]})
}

// uiCell answers the bytes of one binary, blob or string value. The
// content type is sniffed (http.DetectContentType), but only types a
// browser shows inertly are served as such: anything else (HTML, XML,
// scripts...) goes out as an octet-stream attachment, so that a value
// stored in a table cannot run script in the page's origin.
func (s *Server) uiCell(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	st, err := s.uiRequestState(r)
	if err != nil {
		return err
	}
	column := r.URL.Query().Get("column")
	if column == "" {
		return invalidf("column is required")
	}
	id, err := queryRowID(r)
	if err != nil {
		return err
	}
	f := st.ds.Schema().Field(column)
	if f == nil {
		return invalidf("%s has no column %q", st.table, column)
	}
	var (
		head []byte
		rest *dataset.Blob // what follows head, for a blob column
		size int64
	)
	if f.Blob != schema.NotBlob {
		br, err := st.ds.OpenBlob(ctx, column, id)
		if err != nil {
			return uiRowNotFound(st, id, err)
		}
		size = br.Size()
		head = make([]byte, min(size, 512))
		if _, err := br.ReadAt(ctx, head, 0); err != nil {
			return err
		}
		rest = br
	} else {
		switch f.Type.ID() {
		case arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW, arrow.FIXED_SIZE_BINARY,
			arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		default:
			return invalidf("column %q is %s: only binary, blob and string values can be fetched", column, f.Type)
		}
		rec, err := st.ds.TakeRowIDs(ctx, []uint64{id}, &dataset.TakeOptions{Columns: []string{column}})
		if err != nil {
			return uiRowNotFound(st, id, err)
		}
		defer rec.Release()
		b, ok := bytesAt(rec.Column(0), 0)
		if !ok {
			return &apiError{status: http.StatusNotFound, code: codeNotFound,
				msg: fmt.Sprintf("%s %s row %d: %q is null", st.table, st.ref(), id, column)}
		}
		head, size = b, int64(len(b))
	}
	ctype := inertContentType(http.DetectContentType(head))
	h := w.Header()
	h.Set("content-type", ctype)
	h.Set("content-length", strconv.FormatInt(size, 10))
	h.Set("x-content-type-options", "nosniff")
	h.Set("content-security-policy", "default-src 'none'; sandbox")
	if ctype == "application/octet-stream" {
		h.Set("content-disposition", fmt.Sprintf("attachment; filename=%q", fmt.Sprintf("%s-%s-%d.bin", st.table, column, id)))
	}
	if strings.Contains(r.URL.Query().Get("ref"), "@") {
		// line@version names a value that never changes.
		h.Set("cache-control", "private, max-age=86400, immutable")
	} else {
		h.Set("cache-control", "no-cache")
	}
	if _, err := w.Write(head); err != nil {
		return nil // the client went away; nothing more to answer
	}
	if rest != nil {
		_, _ = rest.WriteRange(ctx, w, int64(len(head)), size-int64(len(head)))
	}
	return nil
}

// inertContentType returns t if browsers display it without running
// anything (raster images, audio, video, plain text), else
// application/octet-stream.
func inertContentType(t string) string {
	base, _, _ := strings.Cut(t, ";")
	switch {
	case strings.HasPrefix(base, "image/") && !strings.Contains(base, "svg"),
		strings.HasPrefix(base, "audio/"), strings.HasPrefix(base, "video/"),
		base == "text/plain":
		return t
	}
	return "application/octet-stream"
}

// bytesAt returns the bytes of a binary or string value, false for null.
func bytesAt(arr arrow.Array, i int) ([]byte, bool) {
	if arr.IsNull(i) {
		return nil, false
	}
	switch a := arr.(type) {
	case *array.Binary:
		return a.Value(i), true
	case *array.LargeBinary:
		return a.Value(i), true
	case *array.BinaryView:
		return a.Value(i), true
	case *array.FixedSizeBinary:
		return a.Value(i), true
	case *array.String:
		return []byte(a.Value(i)), true
	case *array.LargeString:
		return []byte(a.Value(i)), true
	case *array.StringView:
		return []byte(a.Value(i)), true
	}
	return nil, false
}

// uiSearch answers the ?k rows nearest to row ?row's own vector in
// ?column (default: the first vector column), among the rows ?filter
// keeps. The row itself comes first, at distance 0.
func (s *Server) uiSearch(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	st, err := s.uiRequestState(r)
	if err != nil {
		return err
	}
	id, err := queryRowID(r)
	if err != nil {
		return err
	}
	k, err := queryInt(r, "k", uiDefaultK, uiMaxK)
	if err != nil {
		return err
	}
	if k == 0 {
		k = uiDefaultK
	}
	filter := strings.TrimSpace(r.URL.Query().Get("filter"))
	cols, err := s.uiColumnsOf(ctx, st.ds)
	if err != nil {
		return err
	}
	column := r.URL.Query().Get("column")
	if column == "" {
		for _, c := range cols {
			if c.Kind == kindVector {
				column = c.Name
				break
			}
		}
		if column == "" {
			return invalidf("%s has no vector column to search", st.table)
		}
	}
	c, err := uiColumnOf(cols, column)
	if err != nil {
		return err
	}
	if c.Kind != kindVector {
		return invalidf("column %q is %s, not a vector (fixed-size list of floats)", column, c.Type)
	}
	rec, err := st.ds.TakeRowIDs(ctx, []uint64{id}, &dataset.TakeOptions{Columns: []string{column}})
	if err != nil {
		return uiRowNotFound(st, id, err)
	}
	query, ok := floatsAt(rec.Column(0), 0)
	rec.Release()
	if !ok {
		return invalidf("row %d has no %q vector to search with", id, column)
	}
	// Refining re-ranks the index's candidates by their exact vectors, so
	// the distances shown are exact (the example itself at 0), not those
	// of quantized vectors.
	res, err := st.ds.Search(ctx, column, query, &dataset.SearchOptions{K: k, Filter: filter, WithRowID: true, RefineFactor: 4})
	if err != nil {
		return uiQueryError(err, filter)
	}
	defer res.Release()
	rows, err := s.uiEncoder(st, cols, false).rows(res)
	if err != nil {
		return err
	}
	return writeJSON(w, map[string]any{
		"ref": st.ref(), "version": st.version, "column": column, "row": strconv.FormatUint(id, 10),
		"k": k, "filter": filter, "columns": cols, "rows": rows,
	})
}

// floatsAt returns the vector at row i of a fixed-size list of floats as
// float32s (what Search takes), false for a null vector.
func floatsAt(arr arrow.Array, i int) ([]float32, bool) {
	l, ok := arr.(*array.FixedSizeList)
	if !ok || l.IsNull(i) {
		return nil, false
	}
	start, end := l.ValueOffsets(i)
	out := make([]float32, 0, end-start)
	switch v := l.ListValues().(type) {
	case *array.Float32:
		out = append(out, v.Float32Values()[start:end]...)
	case *array.Float64:
		for _, x := range v.Float64Values()[start:end] {
			out = append(out, float32(x))
		}
	case *array.Float16:
		for j := start; j < end; j++ {
			out = append(out, v.Value(int(j)).Float32())
		}
	default:
		return nil, false
	}
	return out, true
}

type uiRefJSON struct {
	Line    string `json:"line"`
	Version uint64 `json:"version"`
}

type uiCommit struct {
	Line      string      `json:"line"`
	Version   uint64      `json:"version"`
	Timestamp time.Time   `json:"timestamp"`
	Operation string      `json:"operation"`
	Parents   []uiRefJSON `json:"parents"`
	Tags      []string    `json:"tags"`
	// Merge is the source a merge commit brought in (also its last parent).
	Merge *uiRefJSON `json:"merge,omitempty"`
}

// uiGraph answers the table's version graph: its lines (main first, then
// branches by name) and every commit, newest first (branch.Log).
func (s *Server) uiGraph(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	st, err := s.uiResolve(ctx, r.PathValue("id"), "")
	if err != nil {
		return err
	}
	log, err := branch.Log(ctx, st.root)
	if err != nil {
		return err
	}
	tagList, err := branch.ListTags(ctx, st.root)
	if err != nil {
		return err
	}
	tags := map[uiRefJSON][]string{}
	for _, t := range tagList {
		k := uiRefJSON{lineOf(t.Branch), t.Version}
		tags[k] = append(tags[k], t.Name)
	}
	branchList, err := branch.ListBranches(ctx, st.root)
	if err != nil {
		return err
	}
	lines := []uiBranch{{Name: branch.Main}}
	for _, b := range branchList {
		lines = append(lines, uiBranch{Name: b.Name, ParentBranch: lineOf(b.ParentBranch),
			ParentVersion: b.ParentVersion, CreatedAt: b.CreatedAt.UTC()})
	}
	commits := make([]uiCommit, 0, len(log))
	for _, c := range log {
		uc := uiCommit{Line: c.Line, Version: c.Version, Timestamp: c.Timestamp.UTC(), Operation: c.Operation,
			Parents: []uiRefJSON{}, Tags: tags[uiRefJSON{c.Line, c.Version}]}
		if uc.Tags == nil {
			uc.Tags = []string{}
		}
		for _, p := range c.Parents {
			uc.Parents = append(uc.Parents, uiRefJSON{lineOf(p.Branch), p.Version})
		}
		if src := c.Properties[branch.PropMergeSource]; src != "" {
			if v, err := strconv.ParseUint(c.Properties[branch.PropMergeSourceVersion], 10, 64); err == nil {
				uc.Merge = &uiRefJSON{src, v}
			}
		}
		commits = append(commits, uc)
	}
	return writeJSON(w, map[string]any{"table": st.table, "lines": lines, "commits": commits})
}

// uiDiff answers the changes from ?from to ?to (refs of one table;
// default main for from): the counts, and the first ?limit rows of each
// kind of change, updates with their values before.
func (s *Server) uiDiff(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	q := r.URL.Query()
	if q.Get("to") == "" {
		return invalidf("to (a ref) is required")
	}
	from, err := s.uiResolve(ctx, r.PathValue("id"), q.Get("from"))
	if err != nil {
		return err
	}
	to, err := s.uiResolve(ctx, r.PathValue("id"), q.Get("to"))
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", uiDiffDefault, uiDiffMax)
	if err != nil {
		return err
	}
	// First only the row ids (no columns: nothing but ids is read), then
	// the few rows shown.
	d, err := dataset.Diff(ctx, from.ds, to.ds, &dataset.DiffOptions{Columns: []string{}})
	if err != nil {
		return err
	}
	sum := d.Summary()
	ids := map[string][]uint64{}
	for rec, err := range d.Batches(ctx) {
		if err != nil {
			return err
		}
		change, ok1 := rec.Column(0).(*array.String)
		rowid, ok2 := rec.Column(1).(*array.Uint64)
		if !ok1 || !ok2 {
			return fmt.Errorf("ui: diff batch of unexpected schema %s", rec.Schema())
		}
		for i := range int(rec.NumRows()) {
			c := change.Value(i)
			if len(ids[c]) < limit {
				ids[c] = append(ids[c], rowid.Value(i))
			}
		}
	}
	fromCols, err := s.uiColumnsOf(ctx, from.ds)
	if err != nil {
		return err
	}
	toCols, err := s.uiColumnsOf(ctx, to.ds)
	if err != nil {
		return err
	}
	take := func(st *uiState, cols []uiColumn, ids []uint64) ([]uiRow, arrow.RecordBatch, error) {
		if len(ids) == 0 {
			return []uiRow{}, nil, nil
		}
		rec, err := st.ds.TakeRowIDs(ctx, ids, &dataset.TakeOptions{WithRowID: true})
		if err != nil {
			return nil, nil, err
		}
		rows, err := s.uiEncoder(st, cols, false).rows(rec)
		if err != nil {
			rec.Release()
			return nil, nil, err
		}
		return rows, rec, nil
	}
	release := func(rec arrow.RecordBatch) {
		if rec != nil {
			rec.Release()
		}
	}
	deleted, rec, err := take(from, fromCols, ids[dataset.ChangeDelete])
	if err != nil {
		return err
	}
	release(rec)
	inserted, rec, err := take(to, toCols, ids[dataset.ChangeInsert])
	if err != nil {
		return err
	}
	release(rec)
	updated, after, err := take(to, toCols, ids[dataset.ChangeUpdate])
	if err != nil {
		return err
	}
	defer release(after)
	// An updated row keeps its stable row id, so from has it too: show the
	// row as it was, and which columns changed, compared on the values
	// themselves (the grid's abbreviations and URLs would hide or invent
	// differences).
	old, before, err := take(from, fromCols, ids[dataset.ChangeUpdate])
	if err != nil {
		return err
	}
	defer release(before)
	blobs := map[string]bool{}
	for _, c := range append(slices.Clone(fromCols), toCols...) {
		blobs[c.Name] = blobs[c.Name] || c.Blob
	}
	if before != nil && len(old) == len(updated) {
		for i := range updated {
			updated[i].Before = old[i].Values
			updated[i].Changed = changedColumns(before, after, i, blobs)
		}
	}
	cols := slices.Clone(toCols)
	for _, c := range fromCols {
		if !slices.ContainsFunc(cols, func(t uiColumn) bool { return t.Name == c.Name }) {
			cols = append(cols, c)
		}
	}
	return writeJSON(w, map[string]any{
		"from": from.ref(), "to": to.ref(), "columns": cols,
		"summary": map[string]any{
			"inserted": sum.Inserted, "deleted": sum.Deleted, "updated": sum.Updated,
			"columnsAdded": orEmpty(sum.ColumnsAdded), "columnsDropped": orEmpty(sum.ColumnsDropped),
		},
		"limit": limit, "inserted": inserted, "deleted": deleted, "updated": updated,
	})
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// changedColumns returns the columns whose values differ between row i of
// a and row i of b (the same row in two versions), by name; a column only
// one side has counts as changed. blobs names the blob columns.
func changedColumns(a, b arrow.RecordBatch, i int, blobs map[string]bool) []string {
	changed := []string{}
	index := func(rec arrow.RecordBatch) map[string]int {
		m := map[string]int{}
		for k, f := range rec.Schema().Fields() {
			if f.Name != "_rowid" {
				m[f.Name] = k
			}
		}
		return m
	}
	ai, bi := index(a), index(b)
	for k, f := range b.Schema().Fields() {
		if f.Name == "_rowid" {
			continue
		}
		j, ok := ai[f.Name]
		if !ok || !sameValue(a.Column(j), b.Column(k), i, blobs[f.Name]) {
			changed = append(changed, f.Name)
		}
	}
	for _, f := range a.Schema().Fields() {
		if _, ok := bi[f.Name]; !ok && f.Name != "_rowid" {
			changed = append(changed, f.Name)
		}
	}
	return changed
}

// sameValue reports whether row i of x and of y hold the same value.
// Blob values are compared by size: their descriptors say where the
// bytes are, which an update moves.
func sameValue(x, y arrow.Array, i int, isBlob bool) bool {
	if x.IsNull(i) || y.IsNull(i) {
		return x.IsNull(i) == y.IsNull(i)
	}
	if isBlob {
		dx, okx, errx := format.BlobDescriptorAt(x, i)
		dy, oky, erry := format.BlobDescriptorAt(y, i)
		return errx == nil && erry == nil && okx == oky && dx.Size == dy.Size
	}
	vx, errx := rowjson.AppendValue(nil, x, i)
	vy, erry := rowjson.AppendValue(nil, y, i)
	return errx == nil && erry == nil && bytes.Equal(vx, vy)
}
