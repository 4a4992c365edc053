package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// The namespace catalog follows the Lance Directory Catalog, V2 in
// compatibility mode (lance-namespace docs/src/catalog/dir/index.md):
//
//   - child namespaces, and tables in them, are rows of the __manifest
//     Lance table in the data folder: object_id (names joined by "$"),
//     object_type ("namespace" or "table"), location (a table's folder,
//     relative to the data folder), metadata (a namespace's properties as
//     JSON) and base_objects (reserved);
//   - a table of a child namespace lives in <8 hex digits>_<object_id>/,
//     the hash chosen at random when the table is created or declared;
//   - a table of the root namespace is the V1 <name>.lance/ folder, as
//     every table of the root was before namespaces; lancer never looks
//     such a table up in __manifest (a root table that Lance's directory
//     namespace registered there also has its <name>.lance folder).
//
// So Lance's own directory namespace (lancedb.connectNamespace("dir"))
// opened on the data folder sees the namespaces and tables lancer serve
// made, and the other way round.

const (
	manifestTable   = "__manifest"
	objectNamespace = "namespace"
	objectTable     = "table"
	// idDelimiter joins the names of an object id in __manifest and in the
	// server's own keys (a table's lock, its cache entries), whatever
	// delimiter a request used.
	idDelimiter = "$"
	// reservedMarker is the file in a declared table's folder that says
	// the name is taken before the table has data.
	reservedMarker = ".lance-reserved"
)

// catalogEntry is one row of __manifest.
type catalogEntry struct {
	kind     string // objectNamespace or objectTable
	location string // tables: the folder, relative to the data folder
	metadata string // namespaces: JSON properties, or ""
}

// catalog reads and writes __manifest. Its writes are serialized within
// the server (mu); another server writing the same folder at the same time
// is ordered by Lance's commit, except that two creations of the same name
// at once may both land (Lance's own directory namespace guards that with
// a merge insert on object_id; lancer reads the first row of an id).
type catalog struct {
	root blob.Store
	opts func() *dataset.OpenOptions

	mu      sync.Mutex
	version uint64 // of entries; 0: not read
	entries map[string]catalogEntry
}

func (c *catalog) store() blob.Store { return blob.Sub(c.root, manifestTable) }

// snapshot returns the entries of the latest version of __manifest (none
// when it does not exist yet). Callers hold c.mu.
func (c *catalog) snapshot(ctx context.Context) (map[string]catalogEntry, error) {
	latest, err := dataset.LatestVersionSince(ctx, c.store(), c.version)
	if errors.Is(err, lancer.ErrNotFound) {
		c.version, c.entries = 0, map[string]catalogEntry{}
		return c.entries, nil
	}
	if err != nil {
		return nil, fmt.Errorf("namespace catalog %s: %w", manifestTable, err)
	}
	if latest == c.version && c.entries != nil {
		return c.entries, nil
	}
	ds, err := dataset.Open(ctx, c.store(), c.opts())
	if err != nil {
		return nil, fmt.Errorf("namespace catalog %s: %w", manifestTable, err)
	}
	entries, err := readCatalog(ctx, ds)
	if err != nil {
		return nil, err
	}
	c.version, c.entries = ds.Version(), entries
	return entries, nil
}

// readCatalog reads every row of __manifest. Columns it does not know
// (Lance lets extensions add some) are not read.
func readCatalog(ctx context.Context, ds *dataset.Dataset) (map[string]catalogEntry, error) {
	sc, err := ds.Scan(&dataset.ScanOptions{Columns: []string{"object_id", "object_type", "location", "metadata"}})
	if err != nil {
		return nil, fmt.Errorf("namespace catalog %s: %w", manifestTable, err)
	}
	entries := map[string]catalogEntry{}
	for rec, err := range sc.Batches(ctx) {
		if err != nil {
			return nil, fmt.Errorf("namespace catalog %s: %w", manifestTable, err)
		}
		cols := make([]*array.String, 4)
		for i := range cols {
			col, ok := rec.Column(i).(*array.String)
			if !ok {
				return nil, fmt.Errorf("namespace catalog %s: column %s is %s, not a string: %w",
					manifestTable, rec.ColumnName(i), rec.Column(i).DataType(), lancer.ErrCorrupt)
			}
			cols[i] = col
		}
		for row := 0; row < int(rec.NumRows()); row++ {
			id := cols[0].Value(row)
			if _, dup := entries[id]; dup || cols[0].IsNull(row) {
				continue
			}
			e := catalogEntry{kind: cols[1].Value(row)}
			if cols[2].IsValid(row) {
				e.location = cols[2].Value(row)
			}
			if cols[3].IsValid(row) {
				e.metadata = cols[3].Value(row)
			}
			entries[id] = e
		}
	}
	return entries, nil
}

// manifestSchema is Lance's schema of __manifest.
var manifestSchema = arrow.NewSchema([]arrow.Field{
	{Name: "object_id", Type: arrow.BinaryTypes.String},
	{Name: "object_type", Type: arrow.BinaryTypes.String},
	{Name: "location", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "metadata", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "base_objects", Type: arrow.ListOfField(arrow.Field{Name: "object_id", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
}, nil)

// insert adds an entry (the caller has checked that id is free). Callers
// hold c.mu.
func (c *catalog) insert(ctx context.Context, id string, e catalogEntry) error {
	b := array.NewRecordBuilder(memory.DefaultAllocator, manifestSchema)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append(id)
	b.Field(1).(*array.StringBuilder).Append(e.kind)
	for i, v := range []string{e.location, e.metadata} {
		sb := b.Field(2 + i).(*array.StringBuilder)
		if v == "" {
			sb.AppendNull()
		} else {
			sb.Append(v)
		}
	}
	b.Field(4).AppendNull()
	rec := b.NewRecordBatch()
	defer rec.Release()
	write := func(mode dataset.WriteMode) (*dataset.Dataset, error) {
		rr, err := array.NewRecordReader(manifestSchema, []arrow.RecordBatch{rec})
		if err != nil {
			return nil, err
		}
		defer rr.Release()
		return dataset.Write(ctx, c.store(), rr, &dataset.WriteOptions{Mode: mode})
	}
	mode := dataset.WriteAppend
	if c.version == 0 {
		mode = dataset.WriteCreate
	}
	ds, err := write(mode)
	if errors.Is(err, lancer.ErrAlreadyExists) && mode == dataset.WriteCreate {
		// Another writer created __manifest meanwhile.
		ds, err = write(dataset.WriteAppend)
	}
	if err != nil {
		return fmt.Errorf("namespace catalog %s: add %q: %w", manifestTable, id, err)
	}
	c.remember(ds, id, &e)
	return nil
}

// remove deletes the entries of ids. Callers hold c.mu.
func (c *catalog) remove(ctx context.Context, ids ...string) error {
	if len(ids) == 0 || c.version == 0 {
		return nil
	}
	ds, err := dataset.Open(ctx, c.store(), c.opts())
	if err != nil {
		return fmt.Errorf("namespace catalog %s: %w", manifestTable, err)
	}
	quoted := make([]string, len(ids))
	for i, id := range ids {
		quoted[i] = "'" + strings.ReplaceAll(id, "'", "''") + "'"
	}
	out, err := ds.Delete(ctx, "object_id IN ("+strings.Join(quoted, ", ")+")", nil)
	if err != nil {
		return fmt.Errorf("namespace catalog %s: remove %q: %w", manifestTable, ids, err)
	}
	for _, id := range ids {
		c.remember(out, id, nil)
	}
	return nil
}

// remember applies this server's own commit to the cached entries when
// it directly follows them; otherwise the next snapshot reads them again.
func (c *catalog) remember(ds *dataset.Dataset, id string, e *catalogEntry) {
	if ds.Version() != c.version+1 || c.entries == nil {
		c.version, c.entries = 0, nil
		return
	}
	c.version = ds.Version()
	if e == nil {
		delete(c.entries, id)
	} else {
		c.entries[id] = *e
	}
}

// lookup returns the entry of id in the latest __manifest.
func (c *catalog) lookup(ctx context.Context, id string) (catalogEntry, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	entries, err := c.snapshot(ctx)
	if err != nil {
		return catalogEntry{}, false, err
	}
	e, ok := entries[id]
	return e, ok, nil
}

// children returns the names of the entries of kind (any kind for "")
// whose parent is the namespace parent ("" for the root), sorted.
func children(entries map[string]catalogEntry, parent, kind string) []string {
	var names []string
	prefix := ""
	if parent != "" {
		prefix = parent + idDelimiter
	}
	for id, e := range entries {
		rest, ok := strings.CutPrefix(id, prefix)
		if !ok || rest == "" || strings.Contains(rest, idDelimiter) || (kind != "" && e.kind != kind) {
			continue
		}
		names = append(names, rest)
	}
	slices.Sort(names)
	return names
}

// descendants returns the ids under the namespace ns, deepest first.
func descendants(entries map[string]catalogEntry, ns string) []string {
	var ids []string
	for id := range entries {
		if strings.HasPrefix(id, ns+idDelimiter) {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return strings.Count(b, idDelimiter) - strings.Count(a, idDelimiter) })
	return ids
}

// newTableLocation returns a fresh folder for the table id of a child
// namespace: <8 random hex digits>_<id>, Lance's naming.
func newTableLocation(id string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]) + "_" + id
}

// namespaceProperties decodes a namespace's metadata column.
func namespaceProperties(e catalogEntry) map[string]string {
	props := map[string]string{}
	if e.metadata != "" {
		_ = json.Unmarshal([]byte(e.metadata), &props) // not JSON: no properties
	}
	return props
}
