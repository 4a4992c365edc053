package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// The Lance Namespace spec's error codes (lance-namespace
// docs/src/namespace/operations/errors.md) that the server answers.
const (
	specUnsupported          = 0
	specNamespaceNotFound    = 1
	specNamespaceExists      = 2
	specNamespaceNotEmpty    = 3
	specTableNotFound        = 4
	specTableAlreadyExists   = 5
	specInvalidInput         = 13
	specConcurrentModificati = 14
)

// nsError is an error of a namespace endpoint: an HTTP status, the spec's
// integer code in the body.
func nsError(status, spec int, format string, args ...any) error {
	code := map[int]string{
		specUnsupported: codeUnsupported, specNamespaceNotFound: codeNotFound,
		specNamespaceExists: codeAlreadyExists, specNamespaceNotEmpty: codeConflict,
		specTableNotFound: codeTableNotFound, specTableAlreadyExists: codeAlreadyExists,
		specInvalidInput: codeInvalidInput, specConcurrentModificati: codeConflict,
	}[spec]
	return &apiError{status: status, code: code, msg: fmt.Sprintf(format, args...), specCode: &spec}
}

func namespaceNotFound(id string) error {
	return nsError(http.StatusNotFound, specNamespaceNotFound, "Namespace not found: %q", id)
}

// namespaceID returns the validated {id} of a namespace path, its names
// joined by "$" ("" for the root).
func namespaceID(r *http.Request) (string, error) {
	parts, err := splitID(r, r.PathValue("id"))
	if err != nil {
		return "", err
	}
	if len(parts) > MaxNamespaceDepth {
		return "", invalidf("namespace %q has %d levels, more than the %d the server allows", r.PathValue("id"), len(parts), MaxNamespaceDepth)
	}
	for _, p := range parts {
		if err := CheckNamespaceName(p); err != nil {
			return "", nsError(http.StatusBadRequest, specInvalidInput, "%v", err)
		}
	}
	return strings.Join(parts, idDelimiter), nil
}

// parentOf returns the namespace holding id ("" for the root).
func parentOf(id string) string {
	ns, _ := splitTableKey(id)
	return ns
}

// namespaceExistsIn reports whether ns is the root or a namespace entry.
func namespaceExistsIn(entries map[string]catalogEntry, ns string) bool {
	return ns == "" || entries[ns].kind == objectNamespace
}

// modeOf normalizes a mode the client sends as a Rust enum's name
// ("ExistOk") or as the spec's ("exist_ok").
func modeOf(mode string) string {
	// The client formats its enum with Rust's Debug of a string:
	// quotes and all ("\"ExistOk\"").
	mode = strings.Trim(strings.TrimSpace(mode), `"`)
	return strings.ToLower(strings.ReplaceAll(mode, "_", ""))
}

// namespaceRoutes registers the Lance Namespace spec's namespace endpoints
// and the table endpoints the LanceDB protocol does not already have.
func (s *Server) namespaceRoutes() {
	s.handle("POST /v1/namespace/{id}/create", route{body: bodyJSON}, s.createNamespace)
	s.handle("GET /v1/namespace/{id}/list", route{}, s.listNamespaces)
	s.handle("POST /v1/namespace/{id}/describe", route{body: bodyJSON}, s.describeNamespace)
	s.handle("POST /v1/namespace/{id}/drop", route{body: bodyJSON}, s.dropNamespace)
	s.handle("POST /v1/namespace/{id}/exists", route{body: bodyJSON}, s.namespaceExists)
}

// createNamespace answers create {"mode"?: create|exist_ok|overwrite,
// "properties"?}: a namespace under an existing parent.
func (s *Server) createNamespace(w http.ResponseWriter, r *http.Request) error {
	id, err := namespaceID(r)
	if err != nil {
		return err
	}
	var body struct {
		Mode       string            `json:"mode"`
		Properties map[string]string `json:"properties"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	mode := modeOf(body.Mode)
	switch mode {
	case "", "create", "existok", "overwrite":
	default:
		return nsError(http.StatusBadRequest, specInvalidInput, "create namespace: unknown mode %q (want create, exist_ok or overwrite)", body.Mode)
	}
	if id == "" {
		return nsError(http.StatusBadRequest, specNamespaceExists, "the root namespace always exists")
	}
	if len(body.Properties) > maxNamespaceProperties {
		return nsError(http.StatusBadRequest, specInvalidInput, "create namespace: %d properties, more than %d", len(body.Properties), maxNamespaceProperties)
	}
	c := s.catalog
	c.mu.Lock()
	defer c.mu.Unlock()
	entries, err := c.snapshot(r.Context())
	if err != nil {
		return err
	}
	if !namespaceExistsIn(entries, parentOf(id)) {
		return namespaceNotFound(parentOf(id))
	}
	if e, ok := entries[id]; ok {
		switch {
		case e.kind != objectNamespace:
			return nsError(http.StatusConflict, specTableAlreadyExists, "%q is a table, not a namespace", id)
		case mode == "existok":
			return writeJSON(w, propertiesBody(namespaceProperties(e)))
		case mode != "overwrite":
			return nsError(http.StatusConflict, specNamespaceExists, "Namespace already exists: %q", id)
		}
		if err := c.remove(r.Context(), id); err != nil {
			return err
		}
	}
	e := catalogEntry{kind: objectNamespace}
	if len(body.Properties) > 0 {
		b, err := json.Marshal(body.Properties)
		if err != nil {
			return err
		}
		e.metadata = string(b)
	}
	if err := c.insert(r.Context(), id, e); err != nil {
		return err
	}
	return writeJSON(w, propertiesBody(namespaceProperties(e)))
}

// maxNamespaceProperties bounds the properties of a namespace.
const maxNamespaceProperties = 1024

// listNamespaces answers list?limit=N&page_token=T: the names of the
// parent's child namespaces after T, sorted, at most N, with the last as
// the next page token when more follow.
func (s *Server) listNamespaces(w http.ResponseWriter, r *http.Request) error {
	id, err := namespaceID(r)
	if err != nil {
		return err
	}
	names, token, err := s.pageChildren(r, id, objectNamespace)
	if err != nil {
		return err
	}
	return writeJSON(w, struct {
		Namespaces []string `json:"namespaces"`
		PageToken  string   `json:"page_token,omitempty"`
	}{names, token})
}

// pageChildren answers one page (?limit=, ?page_token=) of the names of
// namespace id's children of type kind (namespaces or tables), from one
// snapshot of the catalog; a missing namespace is NamespaceNotFound.
func (s *Server) pageChildren(r *http.Request, id, kind string) (names []string, token string, err error) {
	entries, err := s.catalogSnapshot(r.Context())
	if err != nil {
		return nil, "", err
	}
	if !namespaceExistsIn(entries, id) {
		return nil, "", namespaceNotFound(id)
	}
	return page(r, children(entries, id, kind))
}

// catalogSnapshot returns the catalog's latest entries.
func (s *Server) catalogSnapshot(ctx context.Context) (map[string]catalogEntry, error) {
	c := s.catalog
	c.mu.Lock()
	defer c.mu.Unlock()
	entries, err := c.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return maps.Clone(entries), nil
}

// page applies ?limit= and ?page_token= to sorted names.
func page(r *http.Request, names []string) ([]string, string, error) {
	q := r.URL.Query()
	limit, err := listLimit(q.Get("limit"))
	if err != nil {
		return nil, "", err
	}
	if after := q.Get("page_token"); after != "" {
		names = slices.DeleteFunc(names, func(n string) bool { return n <= after })
	}
	token := ""
	if limit > 0 && len(names) > limit {
		names = names[:limit]
		token = names[limit-1]
	}
	if names == nil {
		names = []string{}
	}
	return names, token, nil
}

// describeNamespace answers describe with the namespace's properties.
func (s *Server) describeNamespace(w http.ResponseWriter, r *http.Request) error {
	id, err := namespaceID(r)
	if err != nil {
		return err
	}
	if err := decodeJSON(r, &struct{}{}); err != nil {
		return err
	}
	entries, err := s.catalogSnapshot(r.Context())
	if err != nil {
		return err
	}
	if !namespaceExistsIn(entries, id) {
		return namespaceNotFound(id)
	}
	return writeJSON(w, propertiesBody(namespaceProperties(entries[id])))
}

// propertiesBody is a response holding a namespace's properties, without
// the field when there are none, as Lance's directory namespace answers.
func propertiesBody(props map[string]string) map[string]any {
	if len(props) == 0 {
		return map[string]any{}
	}
	return map[string]any{"properties": props}
}

// namespaceExists answers exists: 200 with no body, or a 404.
func (s *Server) namespaceExists(w http.ResponseWriter, r *http.Request) error {
	id, err := namespaceID(r)
	if err != nil {
		return err
	}
	if err := decodeJSON(r, &struct{}{}); err != nil {
		return err
	}
	entries, err := s.catalogSnapshot(r.Context())
	if err != nil {
		return err
	}
	if !namespaceExistsIn(entries, id) {
		return namespaceNotFound(id)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// dropNamespace answers drop {"mode"?: fail|skip, "behavior"?:
// restrict|cascade}. restrict (the default) refuses a namespace holding
// namespaces or tables (409, NamespaceNotEmpty); cascade drops them, the
// tables' files too. skip answers a missing namespace with success.
func (s *Server) dropNamespace(w http.ResponseWriter, r *http.Request) error {
	id, err := namespaceID(r)
	if err != nil {
		return err
	}
	var body struct {
		Mode     string `json:"mode"`
		Behavior string `json:"behavior"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	mode, behavior := modeOf(body.Mode), modeOf(body.Behavior)
	if mode != "" && mode != "fail" && mode != "skip" {
		return nsError(http.StatusBadRequest, specInvalidInput, "drop namespace: unknown mode %q (want fail or skip)", body.Mode)
	}
	if behavior != "" && behavior != "restrict" && behavior != "cascade" {
		return nsError(http.StatusBadRequest, specInvalidInput, "drop namespace: unknown behavior %q (want restrict or cascade)", body.Behavior)
	}
	if id == "" {
		return nsError(http.StatusBadRequest, specInvalidInput, "the root namespace cannot be dropped")
	}
	ctx := r.Context()
	c := s.catalog
	c.mu.Lock()
	defer c.mu.Unlock()
	entries, err := c.snapshot(ctx)
	if err != nil {
		return err
	}
	if entries[id].kind != objectNamespace {
		if mode == "skip" {
			return writeJSON(w, map[string]any{})
		}
		return namespaceNotFound(id)
	}
	under := descendants(entries, id)
	if len(under) > 0 && behavior != "cascade" {
		return nsError(http.StatusConflict, specNamespaceNotEmpty,
			"Namespace not empty: %q holds %d namespaces or tables (drop them first, or use behavior cascade)", id, len(under))
	}
	var locations []string
	for _, child := range under {
		if e := entries[child]; e.kind == objectTable && safeLocation(e.location) {
			locations = append(locations, e.location)
			s.cache.dropTable(child)
		}
	}
	props := namespaceProperties(entries[id])
	if err := c.remove(ctx, append(under, id)...); err != nil {
		return err
	}
	for _, loc := range locations {
		if err := s.removeFolder(ctx, loc); err != nil {
			return err
		}
	}
	return writeJSON(w, propertiesBody(props))
}

// removeFolder deletes a table's folder (relative to the data folder).
func (s *Server) removeFolder(ctx context.Context, loc string) error {
	if s.local() {
		return os.RemoveAll(filepath.Join(s.dir, filepath.FromSlash(loc)))
	}
	_, err := s.dropKeys(ctx, loc+"/")
	return err
}

// listNamespaceTables answers a child namespace's table/list: the tables
// __manifest records in it (declared ones too), paged as listNamespaces.
func (s *Server) listNamespaceTables(w http.ResponseWriter, r *http.Request, id string) error {
	names, token, err := s.pageChildren(r, id, objectTable)
	if err != nil {
		return err
	}
	return writeJSON(w, struct {
		Tables    []string `json:"tables"`
		PageToken string   `json:"page_token,omitempty"`
	}{names, token})
}

// newTableStore returns the store a new table key is written to, and for
// a table of a child namespace a func recording it in __manifest once its
// first version is written (nil when there is nothing to record: a root
// table, or one __manifest already has, declared or being overwritten).
// The parent namespace must exist.
func (s *Server) newTableStore(ctx context.Context, key string) (blob.Store, func(context.Context) error, error) {
	ns, _ := splitTableKey(key)
	if ns == "" {
		store, err := s.tableStore(ctx, key)
		return store, nil, err
	}
	c := s.catalog
	c.mu.Lock()
	defer c.mu.Unlock()
	entries, err := c.snapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	if !namespaceExistsIn(entries, ns) {
		return nil, nil, namespaceNotFound(ns)
	}
	if e, ok := entries[key]; ok {
		if e.kind != objectTable || !safeLocation(e.location) {
			return nil, nil, nsError(http.StatusConflict, specNamespaceExists, "%q is a namespace, not a table", key)
		}
		return blob.Sub(s.root, e.location), nil, nil
	}
	loc := newTableLocation(key)
	record := func(ctx context.Context) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		entries, err := c.snapshot(ctx)
		if err != nil {
			return err
		}
		if _, ok := entries[key]; ok {
			return nsError(http.StatusConflict, specConcurrentModificati, "table %q was created by another writer meanwhile", key)
		}
		return c.insert(ctx, key, catalogEntry{kind: objectTable, location: loc})
	}
	return blob.Sub(s.root, loc), record, nil
}

// forgetTable removes a table's entry from __manifest, if it has one.
func (s *Server) forgetTable(ctx context.Context, key string) error {
	c := s.catalog
	c.mu.Lock()
	defer c.mu.Unlock()
	entries, err := c.snapshot(ctx)
	if err != nil {
		return err
	}
	if _, ok := entries[key]; !ok {
		return nil
	}
	return c.remove(ctx, key)
}

// tableURI is the location of a table folder as engines open it: a local
// path, or the object store URI.
func (s *Server) tableURI(loc string) string {
	if s.local() {
		return filepath.Join(s.dir, filepath.FromSlash(loc))
	}
	return strings.TrimSuffix(s.root.URI(), "/") + "/" + loc
}

// publicStorageOptions are the storage options describe and declare hand
// out with a location: the server's own, without any that look like a
// secret (keys, tokens, passwords), which a client of the catalog must
// bring itself.
func (s *Server) publicStorageOptions() map[string]string {
	out := map[string]string{}
	for k, v := range s.storageOptions {
		lk := strings.ToLower(k)
		if strings.Contains(lk, "key") || strings.Contains(lk, "secret") || strings.Contains(lk, "token") ||
			strings.Contains(lk, "password") || strings.Contains(lk, "credential") || strings.Contains(lk, "sas") {
			continue
		}
		out[k] = v
	}
	return out
}

// tableExistsEndpoint answers the spec's table exists: 200 with no body
// when the table has a version or is declared, else a 404.
func (s *Server) tableExistsEndpoint(w http.ResponseWriter, r *http.Request) error {
	key, err := tableName(r)
	if err != nil {
		return err
	}
	ok, _, err := s.tableOrDeclared(r.Context(), key)
	if err != nil {
		return err
	}
	if !ok {
		return s.missingTable(r.Context(), key)
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// missingTable is the error for a table key that does not exist: its
// namespace's when that is missing, else the table's.
func (s *Server) missingTable(ctx context.Context, key string) error {
	if ns, _ := splitTableKey(key); ns != "" {
		entries, err := s.catalogSnapshot(ctx)
		if err != nil {
			return err
		}
		if !namespaceExistsIn(entries, ns) {
			return namespaceNotFound(ns)
		}
	}
	return nsError(http.StatusNotFound, specTableNotFound, "Table not found: %q", key)
}

// tableOrDeclared reports whether key is a table (a committed version) or
// a declared one (its folder holds only the reserved marker), and which.
func (s *Server) tableOrDeclared(ctx context.Context, key string) (exists, declaredOnly bool, err error) {
	ok, err := s.tableExists(ctx, key)
	if err != nil || ok {
		return ok, false, err
	}
	store, err := s.tableStore(ctx, key)
	if isTableNotFound(err) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	if _, err := store.Stat(ctx, reservedMarker); err == nil {
		return true, true, nil
	} else if !errors.Is(err, lancer.ErrNotFound) {
		return false, false, err
	}
	return false, false, nil
}

// declareTable answers declare {"location"?}: the name is reserved, its
// folder chosen and marked (.lance-reserved), before any data is written;
// a later create writes the table there. A location, when given, must be
// the one the server would choose (the server decides where tables live).
func (s *Server) declareTable(w http.ResponseWriter, r *http.Request) error {
	key, err := tableName(r)
	if err != nil {
		return err
	}
	var body struct {
		Location string `json:"location"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	return s.write(w, r, key, func(ctx context.Context) (any, error) {
		ok, _, err := s.tableOrDeclared(ctx, key)
		if err != nil {
			return nil, err
		}
		if ok {
			return nil, nsError(http.StatusConflict, specTableAlreadyExists, "Table already exists: %q", key)
		}
		store, record, err := s.newTableStore(ctx, key)
		if err != nil {
			return nil, err
		}
		loc := strings.TrimPrefix(store.URI(), strings.TrimSuffix(s.root.URI(), "/")+"/")
		if body.Location != "" && body.Location != loc && body.Location != s.tableURI(loc) {
			return nil, nsError(http.StatusBadRequest, specInvalidInput,
				"declare table %q: location %q is not where the server keeps it (leave it out)", key, body.Location)
		}
		if err := store.Write(ctx, reservedMarker, nil); err != nil {
			return nil, err
		}
		if record != nil {
			if err := record(ctx); err != nil {
				return nil, err
			}
		}
		return map[string]any{"location": s.tableURI(loc), "storage_options": s.publicStorageOptions()}, nil
	})
}

// registerTable answers register {"location", "mode"?}: an existing Lance
// dataset inside the data folder (a path relative to it) becomes the table
// key of a child namespace. Locations outside the data folder are refused.
func (s *Server) registerTable(w http.ResponseWriter, r *http.Request) error {
	key, err := tableName(r)
	if err != nil {
		return err
	}
	var body struct {
		Location string `json:"location"`
		Mode     string `json:"mode"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	ns, _ := splitTableKey(key)
	if ns == "" {
		return nsError(http.StatusNotAcceptable, specUnsupported,
			"register table %q: the root namespace's tables are its <name>.lance folders; register tables in a child namespace", key)
	}
	loc := strings.TrimPrefix(body.Location, s.tableURI("")+"/")
	loc = strings.TrimSuffix(strings.TrimPrefix(loc, "./"), "/")
	if !safeLocation(loc) || loc == manifestTable {
		return nsError(http.StatusBadRequest, specInvalidInput,
			"register table %q: location %q must be a folder inside the data folder, relative to it", key, body.Location)
	}
	switch modeOf(body.Mode) {
	case "", "create":
	default:
		return nsError(http.StatusBadRequest, specInvalidInput, "register table: unsupported mode %q (want create)", body.Mode)
	}
	return s.write(w, r, key, func(ctx context.Context) (any, error) {
		if _, err := dataset.LatestVersion(ctx, blob.Sub(s.root, loc)); err != nil {
			if errors.Is(err, lancer.ErrNotFound) {
				return nil, nsError(http.StatusBadRequest, specInvalidInput, "register table %q: no Lance dataset at %q", key, loc)
			}
			return nil, err
		}
		c := s.catalog
		c.mu.Lock()
		defer c.mu.Unlock()
		entries, err := c.snapshot(ctx)
		if err != nil {
			return nil, err
		}
		if !namespaceExistsIn(entries, ns) {
			return nil, namespaceNotFound(ns)
		}
		if _, ok := entries[key]; ok {
			return nil, nsError(http.StatusConflict, specTableAlreadyExists, "Table already exists: %q", key)
		}
		if err := c.insert(ctx, key, catalogEntry{kind: objectTable, location: loc}); err != nil {
			return nil, err
		}
		s.cache.dropTable(key)
		return map[string]any{"location": s.tableURI(loc)}, nil
	})
}

// deregisterTable answers deregister: a child namespace's table leaves
// __manifest, its data stays where it is.
func (s *Server) deregisterTable(w http.ResponseWriter, r *http.Request) error {
	key, err := tableName(r)
	if err != nil {
		return err
	}
	ns, name := splitTableKey(key)
	if ns == "" {
		return nsError(http.StatusNotAcceptable, specUnsupported,
			"deregister table %q: tables of the root namespace are their folders and cannot be deregistered; drop it, or keep tables to deregister in a child namespace", key)
	}
	// The spec's body holds only the id the path has: still, a body
	// that is not JSON is refused as such, before any lookup.
	if err := decodeJSON(r, &struct{}{}); err != nil {
		return err
	}
	return s.write(w, r, key, func(ctx context.Context) (any, error) {
		c := s.catalog
		c.mu.Lock()
		defer c.mu.Unlock()
		entries, err := c.snapshot(ctx)
		if err != nil {
			return nil, err
		}
		if !namespaceExistsIn(entries, ns) {
			return nil, namespaceNotFound(ns)
		}
		e, ok := entries[key]
		if !ok || e.kind != objectTable {
			return nil, nsError(http.StatusNotFound, specTableNotFound, "Table not found: %q", key)
		}
		if err := c.remove(ctx, key); err != nil {
			return nil, err
		}
		s.cache.dropTable(key)
		return map[string]any{"id": append(strings.Split(ns, idDelimiter), name), "location": s.tableURI(e.location)}, nil
	})
}
