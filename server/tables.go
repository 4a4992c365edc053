package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// decodeJSON decodes a JSON request body into v. An empty body leaves v
// as it is (the client sends some calls without a body). The body is
// bounded by Options.MaxJSONBodyBytes (a 413, refused before reading
// when the Content-Length says so), counted jsonDecodeFactor times in
// the bytes in flight (a 503 when they are full), and decoded as it is
// read, without a copy of it first; what follows the JSON value is not
// looked at.
func decodeJSON(r *http.Request, v any) error {
	limit := int64(DefaultMaxJSONBodyBytes)
	if br, ok := r.Body.(*bodyReader); ok && br.jsonLimit > 0 {
		limit = br.jsonLimit
	}
	if r.ContentLength > limit {
		return tooLargeError(limit)
	}
	// What decoding costs counts in the bytes in flight before it is
	// spent: up front when the size is known, else (a chunked body) as
	// each piece is read, before the decoder sees it.
	var body io.Reader = r.Body
	if r.ContentLength >= 0 {
		if !charge(r, (jsonDecodeFactor-1)*r.ContentLength) {
			return bodyLimit(r)
		}
	} else {
		body = chargingReader{r: r.Body, req: r}
	}
	lr := &io.LimitedReader{R: body, N: limit + 1}
	dec := json.NewDecoder(lr)
	dec.UseNumber()
	err := dec.Decode(v)
	switch {
	case lr.N <= 0:
		return tooLargeError(limit)
	case bodyLimit(r) != nil:
		return bodyLimit(r)
	case err == io.EOF:
		return nil // an empty body, or only spaces
	case err != nil:
		return invalidf("malformed JSON request body: %v", err)
	}
	return nil
}

// chargingReader charges what decoding will cost of each piece of a JSON
// body of unknown size to the bytes in flight as it is read.
type chargingReader struct {
	r   io.Reader
	req *http.Request
}

func (c chargingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 && !charge(c.req, (jsonDecodeFactor-1)*int64(n)) {
		return 0, errBusy
	}
	return n, err
}

// marshal encodes v as one line of JSON, without escaping <, > and &
// (messages quote filters such as "id > 1").
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeJSON answers v as JSON with status 200.
func writeJSON(w http.ResponseWriter, v any) error {
	b, err := marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("content-type", "application/json")
	_, err = w.Write(b)
	return err
}

// write runs a write to table name under the table's lock and answers its
// result as JSON. A retry of a write already answered (same x-request-id)
// gets the first answer again without running (see dedupCache).
func (s *Server) write(w http.ResponseWriter, r *http.Request, name string, op func(ctx context.Context) (any, error)) error {
	return s.writeOnce(w, r, name, false, false, op)
}

// writeData is write for insert and merge_insert, whose retries the
// client sends with a new request id: their commits that the client may
// not have seen are remembered by body (see unackedCache), and an
// identical body within the window is answered from there.
func (s *Server) writeData(w http.ResponseWriter, r *http.Request, name string, op func(ctx context.Context) (any, error)) error {
	return s.writeOnce(w, r, name, s.unacked.enabled(), false, op)
}

// writeAppend is writeData for an append, which runs beside other appends
// to the table (holding its lock shared) so that their commits can be
// grouped. Without the unacknowledged-commit cache, it runs alone as
// writeData does.
func (s *Server) writeAppend(w http.ResponseWriter, r *http.Request, name string, op func(ctx context.Context) (any, error)) error {
	byBody := s.unacked.enabled()
	return s.writeOnce(w, r, name, byBody, byBody, op)
}

// writeOnce runs op as the write of table name. shared (only with byBody)
// holds the table's lock shared, and identical writes one at a time.
func (s *Server) writeOnce(w http.ResponseWriter, r *http.Request, name string, byBody, shared bool, op func(ctx context.Context) (any, error)) error {
	var buffered []byte // the body's hash, once it is read whole
	if byBody {
		// Read the rows before waiting for the table: the body's read
		// deadline (Options.BodyReadTimeout) must not run out while the
		// request waits behind another write (a create_index holds the
		// lock for minutes), and a client sending slowly must not hold
		// the table's lock while it does. The rows are held in memory
		// anyway.
		sum, err := bufferBody(r)
		if err != nil {
			return err
		}
		buffered = sum
	}
	t := s.table(name)
	if shared {
		t.mu.RLock()
		defer t.mu.RUnlock()
		// A retry of this write can only be told from it by its body:
		// let it wait for this one, as it would behind the exclusive
		// lock, and then find it remembered.
		defer t.same.lock(writeKey(name, r, buffered))()
	} else {
		t.mu.Lock()
		defer t.mu.Unlock()
	}
	id := r.Header.Get("x-request-id")
	// The write's keys, set once its body's hash is known.
	var dkey, ukey string
	keys := func(sum []byte) {
		wk := writeKey(name, r, sum)
		dkey, ukey = dedupKey(wk, id), unackedKey(wk, r)
	}
	if (id != "" && t.dedup.seen(id)) || (byBody && s.unacked.has(name)) {
		// This write may be a retry: read the body first to look it up.
		sum := buffered
		if sum == nil {
			var err error
			if sum, err = bufferBody(r); err != nil {
				return err
			}
		}
		keys(sum)
		if resp, ok := t.dedup.get(dkey); ok && id != "" {
			return writeResponse(w, resp)
		}
		if resp, ok := s.unacked.get(ukey); ok && byBody {
			s.log.Info("write answered as an unacknowledged earlier commit", "path", r.URL.Path,
				"request_id", id)
			return writeResponse(w, resp)
		}
	}
	v, err := op(r.Context())
	if err != nil {
		return err
	}
	s.metrics.commit(commitOp(r.Pattern))
	b, err := marshal(v)
	if err != nil {
		return err
	}
	resp := dedupResponse{status: http.StatusOK, body: b}
	if dkey == "" && (id != "" || byBody) {
		// Hash what op left unread (nothing, for a well-formed body) so
		// that the keys cover the whole body.
		keys(bodySum(r))
	}
	if id != "" {
		t.dedup.put(id, dkey, resp)
	}
	// From here on the write is committed: whatever keeps the client from
	// seeing this answer makes it an unacknowledged commit.
	// Several failures may follow one another (a context ended, then the
	// write failed): the commit is remembered, and logged, once.
	unackedDone := false
	unacked := func() {
		if !byBody || unackedDone {
			return
		}
		unackedDone = true
		s.unacked.put(name, ukey, resp)
		s.log.Warn("commit not acknowledged; an identical retry from the same client will not apply it again", "path", r.URL.Path,
			"request_id", id, "window", s.unacked.window)
	}
	if s.afterCommit != nil {
		if err := s.afterCommit(r); err != nil {
			unacked()
			return err
		}
	}
	if r.Context().Err() != nil {
		// The client gave up (or its timeout passed): it may never read
		// the answer written below.
		unacked()
	}
	if err := writeResponse(w, resp); err != nil {
		unacked()
		return err
	}
	// Push the answer out now: a connection that broke shows here, while
	// the handler can still remember the commit.
	if err := http.NewResponseController(w).Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		unacked()
		return err
	}
	return nil
}

// writeResponse writes a JSON response of a write.
func writeResponse(w http.ResponseWriter, resp dedupResponse) error {
	w.Header().Set("content-type", "application/json")
	w.WriteHeader(resp.status)
	_, err := w.Write(resp.body)
	return err
}

// Unwrap lets http.ResponseController reach the connection's writer
// (writeOnce flushes a write's answer through it).
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// branchOf returns the branch a write names: the client puts it in the
// JSON body of some calls (delete, update, create_index, ...) and in the
// ?branch= query of others (insert, merge_insert, drop_index, ...).
func branchOf(r *http.Request, inBody string) string {
	if inBody != "" {
		return inBody
	}
	return r.URL.Query().Get("branch")
}

// versionBody is the {"version": N|null, "branch"?: ...} of reads.
type versionBody struct {
	Version *uint64 `json:"version"`
	Branch  string  `json:"branch"`
}

// openRead opens the table a read names at the version and branch its
// {"version", "branch"} body gives.
func (s *Server) openRead(r *http.Request) (*dataset.Dataset, error) {
	name, err := tableName(r)
	if err != nil {
		return nil, err
	}
	var body versionBody
	if err := decodeJSON(r, &body); err != nil {
		return nil, err
	}
	return s.open(r.Context(), name, body.version(), body.Branch)
}

func (v versionBody) version() uint64 {
	if v.Version == nil {
		return 0
	}
	return *v.Version
}

// listTables answers GET /v1/table/?limit=N&page_token=T (and the root
// namespace's GET /v1/namespace/$/table/list): the names after
// T, sorted, at most N of them, with the last name as the next page token
// when more follow.
func (s *Server) listTables(w http.ResponseWriter, r *http.Request) error {
	if r.PathValue("id") != "" {
		ns, err := namespaceID(r)
		if err != nil {
			return err
		}
		if ns != "" {
			return s.listNamespaceTables(w, r, ns)
		}
	}
	q := r.URL.Query()
	limit, err := listLimit(q.Get("limit"))
	if err != nil {
		return err
	}
	after := q.Get("page_token")
	candidates, err := s.tableFolders(r.Context())
	if err != nil {
		return err
	}
	candidates = slices.DeleteFunc(candidates, func(n string) bool { return n <= after })
	names, err := s.committedTables(r.Context(), candidates, limit)
	if err != nil {
		return err
	}
	resp := struct {
		Tables    []string `json:"tables"`
		PageToken string   `json:"page_token,omitempty"`
	}{Tables: []string{}}
	if limit > 0 && len(names) > limit {
		names = names[:limit]
		resp.PageToken = names[limit-1]
	}
	resp.Tables = append(resp.Tables, names...)
	return writeJSON(w, resp)
}

// existsConcurrency bounds the tables whose versions committedTables looks
// up at once (each a listing of _versions/, a request on object storage).
const existsConcurrency = 8

// committedTables returns the names (sorted) that hold a committed
// version, in order, stopping once it has limit+1 of them (limit 0: no
// bound), so that a page costs about its own size in lookups. A folder
// without one (being created or dropped by another server, or the
// leftover of an interrupted drop) is not a table.
func (s *Server) committedTables(ctx context.Context, names []string, limit int) ([]string, error) {
	var out []string
	for len(names) > 0 && (limit == 0 || len(out) <= limit) {
		n := min(len(names), existsConcurrency)
		// At most the limit+1 names the page needs, counted without
		// limit+1, which wraps at MaxInt (len(out) <= limit here).
		if rest := limit - len(out); limit > 0 && rest < n {
			n = rest + 1
		}
		batch := names[:n]
		names = names[len(batch):]
		ok := make([]bool, len(batch))
		errs := make([]error, len(batch))
		var wg sync.WaitGroup
		for i, name := range batch {
			wg.Go(func() { ok[i], errs[i] = s.tableExists(ctx, name) })
		}
		wg.Wait()
		for i, name := range batch {
			if errs[i] != nil {
				return nil, errs[i]
			}
			if ok[i] {
				out = append(out, name)
			}
		}
	}
	return out, nil
}

// createTable answers create/?mode=create|overwrite|exist_ok with an Arrow
// stream body: a new table, a replaced one, or (exist_ok) the existing one
// unchanged. mode=create on an existing table is a 400 saying "already
// exists", which the client reports as TableAlreadyExists.
func (s *Server) createTable(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	mode := r.URL.Query().Get("mode")
	switch mode {
	case "", "create", "overwrite", "exist_ok":
	default:
		return invalidf("unknown create mode %q (want create, overwrite or exist_ok)", mode)
	}
	return s.write(w, r, name, func(ctx context.Context) (any, error) {
		exists, err := s.tableExists(ctx, name)
		if err != nil {
			return nil, err
		}
		if exists && mode == "exist_ok" {
			ds, err := s.open(ctx, name, 0, "")
			if err != nil {
				return nil, err
			}
			return map[string]uint64{"version": ds.Manifest().Version}, nil
		}
		if exists && mode != "overwrite" {
			return nil, &apiError{status: http.StatusBadRequest, code: codeAlreadyExists,
				msg: fmt.Sprintf("table %q already exists", name)}
		}
		data, err := readStream(r)
		if err != nil {
			return nil, err
		}
		defer data.Release()
		store, record, err := s.newTableStore(ctx, name)
		if err != nil {
			return nil, err
		}
		wm := dataset.WriteCreate
		if mode == "overwrite" {
			wm = dataset.WriteOverwrite
		}
		ds, err := dataset.Write(ctx, store, data, &dataset.WriteOptions{Mode: wm, Cache: s.readCache})
		if err != nil {
			if errors.Is(err, lancer.ErrAlreadyExists) {
				return nil, &apiError{status: http.StatusBadRequest, code: codeAlreadyExists,
					msg: fmt.Sprintf("table %q already exists", name), err: err}
			}
			return nil, err
		}
		if record != nil {
			if err := record(ctx); err != nil {
				return nil, err
			}
		}
		// A declared table is declared no more.
		_ = store.Delete(ctx, reservedMarker)
		s.remember(ctx, name, "", ds)
		return map[string]uint64{"version": ds.Manifest().Version}, nil
	})
}

// describeTable answers describe/ with the version, Lance's JSON schema
// and a few statistics. A missing version is a 404 (checkout(n) relies
// on it).
func (s *Server) describeTable(w http.ResponseWriter, r *http.Request) error {
	ds, err := s.openRead(r)
	if err != nil {
		return err
	}
	schema, err := schemaJSON(ds.Schema().LogicalArrow())
	if err != nil {
		return err
	}
	m := ds.Manifest()
	var deleted uint64
	for _, f := range m.Fragments {
		n, _ := f.NumDeletedRows()
		deleted += n
	}
	key, _ := tableName(r) // checked by openRead
	ns, name := splitTableKey(key)
	loc, err := s.tableLocation(r.Context(), key)
	if err != nil {
		return err
	}
	namespace := []string{}
	if ns != "" {
		namespace = strings.Split(ns, idDelimiter)
	}
	// The namespace spec's DescribeTableResponse is LanceDB's answer with
	// where the table is: engines reading it through a REST namespace
	// open the location themselves.
	return writeJSON(w, map[string]any{
		"table":           name,
		"namespace":       namespace,
		"version":         m.Version,
		"schema":          schema,
		"stats":           map[string]uint64{"num_deleted_rows": deleted, "num_fragments": uint64(len(m.Fragments))},
		"location":        s.tableURI(loc),
		"table_uri":       s.tableURI(loc),
		"storage_options": s.publicStorageOptions(),
	})
}

// dropTable answers drop/: the table's directory is removed, or on
// object storage every key under its prefix (see dropKeys).
func (s *Server) dropTable(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	return s.write(w, r, name, func(ctx context.Context) (any, error) {
		loc, err := s.tableLocation(ctx, name)
		if err != nil {
			return nil, err
		}
		// A table of a child namespace stops existing when __manifest
		// forgets it, before its files go. A root table is its folder
		// alone: its drop costs no look at __manifest.
		if strings.Contains(name, idDelimiter) {
			if err := s.forgetTable(ctx, name); err != nil {
				return nil, err
			}
		}
		s.cache.dropTable(name)
		if s.local() {
			dir := filepath.Join(s.dir, filepath.FromSlash(loc))
			if _, err := os.Stat(dir); err != nil {
				return nil, tableNotFound(name)
			}
			if err := os.RemoveAll(dir); err != nil {
				return nil, err
			}
			return struct{}{}, nil
		}
		n, err := s.dropKeys(ctx, loc+"/")
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, tableNotFound(name)
		}
		return struct{}{}, nil
	})
}

// dropKeys deletes every key under prefix in the root store and returns
// how many there were. The manifests of the main line (_versions/) go
// first, so that the table stops existing for every reader and lister
// (which look for a committed version) before its files disappear; a drop
// cut short leaves files no version refers to, which list as no table and
// which a later drop removes.
func (s *Server) dropKeys(ctx context.Context, prefix string) (int, error) {
	var first, rest []string
	for info, err := range s.root.List(ctx, prefix) {
		if err != nil {
			return 0, err
		}
		if strings.HasPrefix(info.Key, prefix+"_versions/") {
			first = append(first, info.Key)
		} else {
			rest = append(rest, info.Key)
		}
	}
	for _, keys := range [][]string{first, rest} {
		// One request per 1000 keys on S3 (DeleteObjects).
		if err := blob.DeleteKeys(ctx, s.root, keys); err != nil {
			return 0, err
		}
	}
	return len(first) + len(rest), nil
}

// renameTable answers rename/ {"new_table_name": ...} by renaming the
// table's directory. Namespaces other than the root are refused, and so
// is a rename on object storage, which has no rename: it would be a copy
// of every file followed by a delete, neither atomic nor cheap (LanceDB's
// own server refuses it too).
func (s *Server) renameTable(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	var body struct {
		NewName      string   `json:"new_table_name"`
		NewNamespace []string `json:"new_namespace"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if len(body.NewNamespace) > 0 || strings.Contains(name, idDelimiter) {
		return unsupportedf("renaming a table into or inside a child namespace is not supported: only tables of the root namespace can be renamed")
	}
	if err := CheckTableName(body.NewName); err != nil {
		return invalidf("%v", err)
	}
	if !s.local() {
		return unsupportedf("renaming a table is not supported when the data is on object storage: " +
			"object stores have no atomic rename; copy the table to the new name and drop the old one instead")
	}
	// Lock both names, in order, so that two opposite renames cannot
	// deadlock. (The client never retries a rename: no dedup.)
	first, second := name, body.NewName
	if second < first {
		first, second = second, first
	}
	s.table(first).mu.Lock()
	defer s.table(first).mu.Unlock()
	if second != first {
		s.table(second).mu.Lock()
		defer s.table(second).mu.Unlock()
	}
	oldDir, newDir := filepath.Join(s.dir, tablePrefix(name)), filepath.Join(s.dir, tablePrefix(body.NewName))
	if _, err := os.Stat(oldDir); err != nil {
		return tableNotFound(name)
	}
	if _, err := os.Stat(newDir); err == nil {
		return &apiError{status: http.StatusBadRequest, code: codeAlreadyExists,
			msg: fmt.Sprintf("table %q already exists", body.NewName)}
	}
	s.cache.dropTable(name)
	s.cache.dropTable(body.NewName)
	if err := os.Rename(oldDir, newDir); err != nil {
		return err
	}
	return writeJSON(w, struct{}{})
}

// countRows answers count_rows/ {"predicate"?, "version"} with a bare JSON
// integer.
func (s *Server) countRows(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	var body struct {
		versionBody
		Predicate string `json:"predicate"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	ds, err := s.open(r.Context(), name, body.version(), body.Branch)
	if err != nil {
		return err
	}
	n, err := ds.Count(r.Context(), body.Predicate)
	if err != nil {
		return inTable(err)
	}
	w.Header().Set("x-lancedb-version", strconv.FormatUint(ds.Manifest().Version, 10))
	return writeJSON(w, n)
}

// insert answers insert/?mode=append|overwrite with an Arrow stream body,
// or stages a part of a multipart write (?upload_id=&upload_part_id=).
func (s *Server) insert(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if q.Get("upload_id") != "" {
		return s.stagePart(w, r, name)
	}
	mode := q.Get("mode")
	if mode != "" && mode != "append" && mode != "overwrite" {
		return invalidf("unknown insert mode %q (want append or overwrite)", mode)
	}
	branchName := q.Get("branch")
	write := s.writeData
	if mode != "overwrite" {
		write = s.writeAppend
	}
	return write(w, r, name, func(ctx context.Context) (any, error) {
		ds, err := s.open(ctx, name, 0, branchName)
		if err != nil {
			return nil, err
		}
		data, err := readStream(r)
		if err != nil {
			return nil, err
		}
		defer data.Release()
		if mode == "overwrite" {
			ds, err = dataset.Write(ctx, ds.Store(), data, &dataset.WriteOptions{Mode: dataset.WriteOverwrite, Cache: s.readCache})
		} else {
			// Concurrent appends to the table share commits.
			ds, err = s.committer(s.table(name), branchName, ds).Append(ctx, ds, data, nil)
		}
		if err != nil {
			return nil, inTable(err)
		}
		s.remember(ctx, name, branchName, ds)
		return map[string]uint64{"version": ds.Manifest().Version}, nil
	})
}

// deleteRows answers delete/ {"predicate": ...}.
func (s *Server) deleteRows(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	var body struct {
		Predicate string `json:"predicate"`
		Branch    string `json:"branch"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if strings.TrimSpace(body.Predicate) == "" {
		return invalidf("delete needs a predicate")
	}
	branchName := branchOf(r, body.Branch)
	return s.write(w, r, name, func(ctx context.Context) (any, error) {
		ds, err := s.open(ctx, name, 0, branchName)
		if err != nil {
			return nil, err
		}
		before, err := ds.CountRows(ctx)
		if err != nil {
			return nil, err
		}
		out, err := ds.Delete(ctx, body.Predicate, nil)
		if err != nil {
			return nil, inTable(err)
		}
		s.remember(ctx, name, branchName, out)
		after, err := out.CountRows(ctx)
		if err != nil {
			return nil, err
		}
		deleted := uint64(0)
		if before > after {
			deleted = before - after
		}
		return map[string]uint64{"num_deleted_rows": deleted, "version": out.Manifest().Version}, nil
	})
}

// update answers update/ {"predicate": ...|null, "updates": [[col, sql], ...]}.
func (s *Server) update(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	var body struct {
		Predicate *string     `json:"predicate"`
		Updates   [][2]string `json:"updates"`
		Branch    string      `json:"branch"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if len(body.Updates) == 0 {
		return invalidf("update needs at least one column to set")
	}
	set := make(map[string]string, len(body.Updates))
	for _, u := range body.Updates {
		if _, dup := set[u[0]]; dup {
			return invalidf("column %q is set twice", u[0])
		}
		set[u[0]] = u[1]
	}
	pred := ""
	if body.Predicate != nil {
		pred = *body.Predicate
	}
	branchName := branchOf(r, body.Branch)
	return s.write(w, r, name, func(ctx context.Context) (any, error) {
		ds, err := s.open(ctx, name, 0, branchName)
		if err != nil {
			return nil, err
		}
		out, stats, err := ds.Update(ctx, set, pred, nil)
		if err != nil {
			return nil, inTable(err)
		}
		s.remember(ctx, name, branchName, out)
		return map[string]uint64{"rows_updated": stats.RowsUpdated, "version": out.Manifest().Version}, nil
	})
}

// mergeInsert answers merge_insert/?on=...&when_... with the source rows
// as an Arrow stream body.
func (s *Server) mergeInsert(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	flag := func(key string) (bool, error) {
		v := q.Get(key)
		if v == "" {
			return false, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, invalidf("%s must be true or false, got %q", key, v)
		}
		return b, nil
	}
	opts := &dataset.MergeInsertOptions{
		WhenMatchedCondition:            q.Get("when_matched_update_all_filt"),
		WhenNotMatchedBySourceCondition: q.Get("when_not_matched_by_source_delete_filt"),
	}
	for _, on := range q["on"] {
		for c := range strings.SplitSeq(on, ",") {
			if c = strings.TrimSpace(c); c != "" {
				opts.On = append(opts.On, c)
			}
		}
	}
	if len(opts.On) == 0 {
		return invalidf("merge_insert needs the key column in ?on=")
	}
	if opts.WhenMatchedUpdateAll, err = flag("when_matched_update_all"); err != nil {
		return err
	}
	if opts.WhenNotMatchedInsertAll, err = flag("when_not_matched_insert_all"); err != nil {
		return err
	}
	if opts.WhenNotMatchedBySourceDelete, err = flag("when_not_matched_by_source_delete"); err != nil {
		return err
	}
	if opts.WhenNotMatchedBySourceCondition != "" {
		// The client names the target's columns target.col; lancer's
		// condition names them plainly.
		opts.WhenNotMatchedBySourceCondition = strings.ReplaceAll(opts.WhenNotMatchedBySourceCondition, "target.", "")
	}
	if !opts.WhenMatchedUpdateAll && !opts.WhenNotMatchedInsertAll && !opts.WhenNotMatchedBySourceDelete {
		return invalidf("merge_insert needs at least one of when_matched_update_all, when_not_matched_insert_all, when_not_matched_by_source_delete")
	}
	if b, _ := flag("use_lsm"); b {
		return errNoLSM
	}
	branchName := q.Get("branch")
	return s.writeData(w, r, name, func(ctx context.Context) (any, error) {
		ds, err := s.open(ctx, name, 0, branchName)
		if err != nil {
			return nil, err
		}
		data, err := readStream(r)
		if err != nil {
			return nil, err
		}
		defer data.Release()
		out, stats, err := ds.MergeInsert(ctx, data, opts)
		if err != nil {
			return nil, inTable(err)
		}
		s.remember(ctx, name, branchName, out)
		return map[string]uint64{
			"version":           out.Manifest().Version,
			"num_inserted_rows": stats.RowsInserted,
			"num_updated_rows":  stats.RowsUpdated,
			"num_deleted_rows":  stats.RowsDeleted,
			// The rows written, as LanceDB counts them.
			"num_rows":     stats.RowsInserted + stats.RowsUpdated,
			"num_attempts": 1,
		}, nil
	})
}

// smallFragmentRows is the row count under which stats/ counts a fragment
// as small, as LanceDB does.
const smallFragmentRows = 100_000

// tableStats answers stats/ with LanceDB's TableStatistics: sizes, rows,
// indices and the distribution of fragment lengths (live rows).
func (s *Server) tableStats(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	ds, err := s.open(r.Context(), name, 0, r.URL.Query().Get("branch"))
	if err != nil {
		return err
	}
	m := ds.Manifest()
	var (
		bytes, rows uint64
		lengths     []uint64
		small       int
	)
	for _, f := range m.Fragments {
		for _, df := range f.Files {
			bytes += df.SizeBytes
		}
		n := f.PhysicalRows
		if d, _ := f.NumDeletedRows(); d <= n {
			n -= d
		}
		rows += n
		lengths = append(lengths, n)
		if n < smallFragmentRows {
			small++
		}
	}
	slices.Sort(lengths)
	pct := func(p int) uint64 {
		if len(lengths) == 0 {
			return 0
		}
		return lengths[min(len(lengths)-1, (len(lengths)-1)*p/100)]
	}
	mean := uint64(0)
	if len(lengths) > 0 {
		mean = rows / uint64(len(lengths))
	}
	names := map[string]bool{}
	for _, ix := range ds.Indices() {
		names[ix.Name] = true
	}
	return writeJSON(w, map[string]any{
		"total_bytes": bytes,
		"num_rows":    rows,
		"num_indices": len(names),
		"fragment_stats": map[string]any{
			"num_fragments":       len(lengths),
			"num_small_fragments": small,
			"lengths": map[string]uint64{
				"min": pct(0), "max": pct(100), "mean": mean,
				"p25": pct(25), "p50": pct(50), "p75": pct(75), "p99": pct(99),
			},
		},
	})
}
