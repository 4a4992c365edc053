package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// MaxTableNameLength bounds table names (in bytes).
const MaxTableNameLength = 128

// tableSuffix ends the directory of every table in the data folder.
const tableSuffix = ".lance"

// CheckTableName reports whether name is a table name the server accepts:
// 1 to MaxTableNameLength characters from [A-Za-z0-9_.-] (LanceDB's own
// rule), not starting with a dot, so that no name is "..", reaches outside
// the data folder or names a hidden file. Errors wrap
// lancer.ErrInvalidArgument and read as LanceDB's own (Invalid table name
// ("a/b"): Table names can only contain ...).
func CheckTableName(name string) error {
	invalid := func(reason string) error {
		return fmt.Errorf("Invalid table name (%q): %s: %w", name, reason, lancer.ErrInvalidArgument)
	}
	switch {
	case name == "":
		return invalid("Table names cannot be empty strings")
	case len(name) > MaxTableNameLength:
		return invalid(fmt.Sprintf("Table names can have at most %d characters", MaxTableNameLength))
	case name[0] == '.':
		return invalid("Table names cannot start with a period")
	}
	for _, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
		if !ok {
			return invalid("Table names can only contain alphanumeric characters, underscores, hyphens, and periods")
		}
	}
	return nil
}

// CheckNamespaceName reports whether name may name a namespace: the rule
// of table names (CheckTableName), which keeps the delimiter, slashes and
// ".." out of every part of an id and so every folder inside the data
// folder. Errors wrap lancer.ErrInvalidArgument.
func CheckNamespaceName(name string) error {
	if err := CheckTableName(name); err != nil {
		return fmt.Errorf("Invalid namespace name (%q): %s: %w", name,
			strings.TrimPrefix(strings.TrimSuffix(err.Error(), ": "+lancer.ErrInvalidArgument.Error()),
				fmt.Sprintf("Invalid table name (%q): ", name)), lancer.ErrInvalidArgument)
	}
	return nil
}

// MaxNamespaceDepth bounds the levels of a namespace id.
const MaxNamespaceDepth = 8

// splitID splits the string id of an object (the namespace spec's string
// style identifier) at the request's ?delimiter= ("$" by default). The
// root namespace is the delimiter alone, or "" (no parts).
func splitID(r *http.Request, id string) ([]string, error) {
	delim := r.URL.Query().Get("delimiter")
	if delim == "" {
		delim = idDelimiter
	}
	if len(delim) > 8 {
		return nil, invalidf("delimiter %q is longer than 8 bytes", delim)
	}
	if id == "" || id == delim {
		return nil, nil
	}
	parts := strings.Split(id, delim)
	if len(parts) > MaxNamespaceDepth+1 {
		return nil, invalidf("id %q has %d levels, more than the %d the server allows", id, len(parts), MaxNamespaceDepth+1)
	}
	return parts, nil
}

// tableName returns the validated {id} of a table path as the server's key
// of the table: its name in the root namespace, or the names of its
// namespaces and its own joined by "$" (ns$table), whatever delimiter the
// request used.
func tableName(r *http.Request) (string, error) {
	parts, err := splitID(r, r.PathValue("id"))
	if err != nil {
		return "", err
	}
	if len(parts) == 0 {
		return "", invalidf("%v", CheckTableName(""))
	}
	for _, ns := range parts[:len(parts)-1] {
		if err := CheckNamespaceName(ns); err != nil {
			return "", invalidf("%v", err)
		}
	}
	if err := CheckTableName(parts[len(parts)-1]); err != nil {
		return "", invalidf("%v", err)
	}
	return strings.Join(parts, idDelimiter), nil
}

// splitTableKey returns the namespace ("" for the root) and the name of a
// table key (see tableName).
func splitTableKey(key string) (ns, name string) {
	i := strings.LastIndex(key, idDelimiter)
	if i < 0 {
		return "", key
	}
	return key[:i], key[i+1:]
}

// tablePrefix is the key prefix of a root-namespace table's dataset in the
// root store.
func tablePrefix(name string) string { return name + tableSuffix }

// local reports whether the tables are on local disk, where drop and
// rename work on the table's directory.
func (s *Server) local() bool { return s.dir != "" }

// tableLocation returns the folder of a table, relative to the data
// folder: <name>.lance for the root namespace, what __manifest records
// for a child namespace's (a 404 TableNotFound when it records none).
func (s *Server) tableLocation(ctx context.Context, key string) (string, error) {
	if !strings.Contains(key, idDelimiter) {
		return tablePrefix(key), nil
	}
	e, ok, err := s.catalog.lookup(ctx, key)
	if err != nil {
		return "", err
	}
	if !ok || e.kind != objectTable || !safeLocation(e.location) {
		return "", tableNotFound(key)
	}
	return e.location, nil
}

// safeLocation reports whether a location recorded in __manifest stays
// inside the data folder: relative, clean, without "..".
func safeLocation(loc string) bool {
	if loc == "" || strings.HasPrefix(loc, "/") || strings.Contains(loc, "\\") || strings.Contains(loc, "://") {
		return false
	}
	for _, part := range strings.Split(loc, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}

// tableStore returns the store rooted at a table's dataset, which may not
// exist yet. It is a view of the root store, so that branches (tree/...)
// and every other key of the table resolve inside the same location.
func (s *Server) tableStore(ctx context.Context, key string) (blob.Store, error) {
	loc, err := s.tableLocation(ctx, key)
	if err != nil {
		return nil, err
	}
	return blob.Sub(s.root, loc), nil
}

// tableFolders returns the names of the <name>.lance folders (or key
// prefixes) of the root, sorted, whether or not they hold a committed
// version: one directory read on local disk, one delimiter listing on
// object storage, never a walk of the tables' files.
func (s *Server) tableFolders(ctx context.Context) ([]string, error) {
	var names []string
	for dir, err := range blob.ListDirs(ctx, s.root, "") {
		if err != nil {
			return nil, err
		}
		if name, ok := strings.CutSuffix(dir, tableSuffix); ok && CheckTableName(name) == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// openOptions are the options tables are opened with.
func (s *Server) openOptions() *dataset.OpenOptions {
	return &dataset.OpenOptions{StorageOptions: s.storageOptions, Cache: s.readCache}
}

// tableExists reports whether a table has a committed version.
func (s *Server) tableExists(ctx context.Context, name string) (bool, error) {
	store, err := s.tableStore(ctx, name)
	if isTableNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_, err = dataset.LatestVersion(ctx, store)
	if errors.Is(err, lancer.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// isTableNotFound reports whether err is the 404 of a missing table.
func isTableNotFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.code == codeTableNotFound
}

// open opens a table at a version of a branch (0: the latest; "": main).
// A missing table is a 404 the client reports as TableNotFound; a missing
// version of an existing table a plain 404. The latest version is looked
// up afresh on every call; the version found is taken from the server's
// cache of opened versions when it is there (see datasetCache).
func (s *Server) open(ctx context.Context, name string, version uint64, branchName string) (*dataset.Dataset, error) {
	if branchName == branch.Main {
		branchName = ""
	}
	if !s.cache.enabled() {
		return s.openUncached(ctx, name, version, branchName)
	}
	if version == 0 {
		store, err := s.tableStore(ctx, name)
		if err != nil {
			return nil, err
		}
		line := branch.Store(store, branchName)
		// On an error (no such table or branch) the uncached path below
		// finds the same and reports it.
		if latest, err := s.cache.latestVersion(ctx, name, branchName, line); err == nil {
			version = latest
		}
	}
	if version != 0 {
		if ds := s.cache.get(ctx, name, branchName, version); ds != nil {
			return ds, nil
		}
	}
	ds, err := s.openUncached(ctx, name, version, branchName)
	if err != nil {
		return nil, err
	}
	s.remember(ctx, name, branchName, ds)
	return ds, nil
}

// remember caches a version of a table's line that the server opened or
// committed.
func (s *Server) remember(ctx context.Context, name, branchName string, ds *dataset.Dataset) {
	if branchName == branch.Main {
		branchName = ""
	}
	s.cache.put(ctx, name, branchName, ds)
}

// openUncached is open without the cache. Whether the table exists is
// looked up only when opening fails, which saves a listing per open on
// object storage.
func (s *Server) openUncached(ctx context.Context, name string, version uint64, branchName string) (*dataset.Dataset, error) {
	store, err := s.tableStore(ctx, name)
	if err != nil {
		return nil, err
	}
	ds, err := branch.Open(ctx, store, branch.Ref{Branch: branchName, Version: version}, s.openOptions())
	if err == nil {
		return ds, nil
	}
	if !errors.Is(err, lancer.ErrNotFound) {
		return nil, err
	}
	ok, xerr := s.tableExists(ctx, name)
	if xerr != nil {
		return nil, xerr
	}
	if !ok {
		return nil, tableNotFound(name)
	}
	return nil, &apiError{status: http.StatusNotFound, code: codeNotFound,
		msg: fmt.Sprintf("table %q has no version %d: %v", name, version, err), err: err}
}

// dedupCache remembers the responses of a table's recent writes by
// request: the x-request-id together with the endpoint, the query string
// and the SHA-256 of the body (writeKey). A write the client retries with
// the same x-request-id after its first attempt committed (the response
// was lost) is the same request and is answered with the first response
// instead of being applied twice; a request that reuses an id for another
// endpoint or another body is another write, and runs. It holds the last
// dedupEntries writes of the table, in memory only: a restart forgets
// them, and so does a retry after that many other writes. The client
// retries delete, update, create_index, tag and column calls with the
// same request id; it resends insert and merge_insert with a new id per
// attempt, which unackedCache matches by body and client instead.
type dedupCache struct {
	mu    sync.Mutex
	order []string // keys, oldest first
	resp  map[string]dedupResponse
	ids   map[string]int // request id → entries with it
	idOf  map[string]string
}

// dedupEntries is how many writes per table the dedup cache remembers.
const dedupEntries = 256

type dedupResponse struct {
	status int
	body   []byte
}

// dedupKey is the key of a write in the dedup cache: the write (writeKey)
// and its request id.
func dedupKey(write, id string) string { return write + "\x00" + id }

// seen reports whether any remembered write has request id id, so that a
// write with a new id (every first attempt) need not have its body
// hashed before it runs.
func (c *dedupCache) seen(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids[id] > 0
}

func (c *dedupCache) get(key string) (dedupResponse, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.resp[key]
	return r, ok
}

func (c *dedupCache) put(id, key string, r dedupResponse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resp == nil {
		c.resp, c.ids, c.idOf = map[string]dedupResponse{}, map[string]int{}, map[string]string{}
	}
	if _, ok := c.resp[key]; ok {
		return
	}
	if len(c.order) >= dedupEntries {
		old := c.order[0]
		c.order = c.order[1:]
		delete(c.resp, old)
		oid := c.idOf[old]
		delete(c.idOf, old)
		if c.ids[oid]--; c.ids[oid] <= 0 {
			delete(c.ids, oid)
		}
	}
	c.order = append(c.order, key)
	c.resp[key] = r
	c.idOf[key] = id
	c.ids[id]++
}
