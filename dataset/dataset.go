package dataset

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/cache"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// OpenOptions configures Open. A nil *OpenOptions means all defaults.
type OpenOptions struct {
	// Version is the version to open. Default 0: the latest.
	Version uint64
	// Allocator allocates the Arrow arrays scans and takes return. Default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
	// ResolveBase returns the store holding the files of a BasePath recorded
	// in the manifest (the store is the base's root: its data/ and
	// _deletions/ when IsDatasetRoot, else the data files themselves). It is
	// called at most once per base and Dataset lineage, the first time a file
	// there is read. Default: blob.OpenWithOptions(ctx, bp.Path,
	// StorageOptions), since Lance records absolute URIs or local paths. A
	// caller whose dataset moved supplies one that maps the recorded path to
	// where the files are now.
	ResolveBase func(ctx context.Context, bp manifest.BasePath) (blob.Store, error)
	// StorageOptions configure the stores the default ResolveBase opens
	// (Lance's storage_options: aws_endpoint, google_service_account,
	// azure_storage_account_name, ...; see blob.OpenWithOptions). Default
	// none: the environment alone.
	StorageOptions map[string]string
	// Cache keeps what reading the dataset loads (data file readers,
	// deletion vectors, vector index parts, per-fragment search state)
	// within one byte budget. Give several Opens one Cache to share the
	// budget and what is in it, as a server serving many tables does.
	// Default: a cache of DefaultCacheBytes made by this Open, shared by
	// the versions and write results derived from the Dataset.
	Cache *cache.Cache
}

// withDefaults returns a copy of opts with defaults filled in.
func (o *OpenOptions) withDefaults() OpenOptions {
	var out OpenOptions
	if o != nil {
		out = *o
	}
	if out.Allocator == nil {
		out.Allocator = memory.DefaultAllocator
	}
	if out.Cache == nil {
		out.Cache = newDefaultCache()
	}
	if out.ResolveBase == nil {
		storageOptions := out.StorageOptions
		out.ResolveBase = func(ctx context.Context, bp manifest.BasePath) (blob.Store, error) {
			return blob.OpenWithOptions(ctx, bp.Path, storageOptions)
		}
	}
	return out
}

// Dataset is one version of the Lance dataset rooted at a store. It is
// immutable and safe for concurrent use; Checkout gives another version.
type Dataset struct {
	store    blob.Store
	opts     OpenOptions
	manifest *manifest.Manifest
	// manifestKey is the key of the manifest file, for error messages.
	manifestKey string
	// partial marks a view holding only some of the version's fragments
	// (withFragments), which a commit must not build on.
	partial bool
	bases   *baseStores
	// keys names this version's fragments and index segments in the
	// cache, built once by the first search (searchKeys).
	keysOnce sync.Once
	keys     *versionKeys
}

// baseStores resolves BasePaths to stores once; versions of one Dataset
// lineage (Checkout) share it.
type baseStores struct {
	resolve func(ctx context.Context, bp manifest.BasePath) (blob.Store, error)
	mu      sync.Mutex
	stores  map[string]blob.Store // by manifest.BasePath.Path
}

// Open opens the dataset rooted at store, at opts.Version (default the
// latest). It reads one manifest and no data. Errors wrap lancer.ErrNotFound
// (no such version, no dataset), lancer.ErrCorrupt (a malformed manifest,
// named in the message) or lancer.ErrUnsupported (a feature flag or file
// version lancer does not read).
func Open(ctx context.Context, store blob.Store, opts *OpenOptions) (*Dataset, error) {
	o := opts.withDefaults()
	bases := &baseStores{resolve: o.ResolveBase, stores: map[string]blob.Store{}}
	return open(ctx, store, o, bases, o.Version)
}

func open(ctx context.Context, store blob.Store, o OpenOptions, bases *baseStores, version uint64) (*Dataset, error) {
	var (
		e   manifestEntry
		err error
	)
	if version == 0 {
		e, err = latestManifest(ctx, store)
	} else {
		e, err = findManifest(ctx, store, version)
	}
	if err != nil {
		return nil, err
	}
	return openEntry(ctx, store, o, bases, e)
}

// openEntry opens the version whose manifest e names.
func openEntry(ctx context.Context, store blob.Store, o OpenOptions, bases *baseStores, e manifestEntry) (*Dataset, error) {
	c, err := manifest.ReadFile(ctx, store, e.key, e.size, false)
	if err != nil {
		return nil, err
	}
	if c.Manifest.Version != e.version {
		return nil, fmt.Errorf("dataset: manifest %s records version %d: %w",
			manifest.Location(store, e.key), c.Manifest.Version, lancer.ErrCorrupt)
	}
	o.Version = e.version
	d := &Dataset{store: store, opts: o, manifest: c.Manifest, manifestKey: e.key, bases: bases}
	if err := d.migratePhysicalRows(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// migratePhysicalRows replaces the recorded physical rows of each fragment
// by its first data file's row count when the manifest predates writer
// versions, as Lance does on load: writers of that time could record a
// count that disagrees with the file (82 for a file of 92 rows), and Lance
// trusts the file. Manifests with a writer version are left alone.
func (d *Dataset) migratePhysicalRows(ctx context.Context) error {
	if d.manifest.WriterVersion.Library != "" {
		return nil
	}
	var fixed *manifest.Manifest
	for i, f := range d.manifest.Fragments {
		if len(f.Files) == 0 {
			continue
		}
		r, err := d.openDataFile(ctx, &f.Files[0])
		if err != nil {
			return err
		}
		n := r.NumRows()
		if n == f.PhysicalRows {
			continue
		}
		if n > manifest.MaxRowsPerFragment {
			return fmt.Errorf("dataset: fragment %d: data file %s holds %d rows, more than a fragment can address: %w",
				f.ID, f.Files[0].Path, n, lancer.ErrCorrupt)
		}
		if fixed == nil {
			fixed = d.manifest.Clone()
		}
		fixed.Fragments[i].PhysicalRows = n
	}
	if fixed != nil {
		d.manifest = fixed
	}
	return nil
}

// Checkout opens another version of the same dataset (0 = the latest), with
// the same options.
func (d *Dataset) Checkout(ctx context.Context, version uint64) (*Dataset, error) {
	return open(ctx, d.store, d.opts, d.bases, version)
}

// Version returns the version number.
func (d *Dataset) Version() uint64 { return d.manifest.Version }

// Timestamp returns the commit time of the version.
func (d *Dataset) Timestamp() time.Time { return d.manifest.Timestamp }

// Schema returns the dataset schema. Callers must not modify it.
func (d *Dataset) Schema() *schema.Schema { return d.manifest.Schema }

// Store returns the store the dataset is rooted at.
func (d *Dataset) Store() blob.Store { return d.store }

// Manifest returns the version's manifest. Callers must not modify it.
func (d *Dataset) Manifest() *manifest.Manifest { return d.manifest }

// Indices lists the index segments of the version: read-only metadata, no
// index file is opened.
func (d *Dataset) Indices() []manifest.IndexInfo { return d.manifest.Indices }

// CountRows returns the number of live rows from metadata: each fragment's
// physical rows less its deleted rows. It reads a deletion file only when
// the manifest does not record its count, and a data file only when a
// (very old) manifest does not record a fragment's size.
func (d *Dataset) CountRows(ctx context.Context) (uint64, error) {
	var total uint64
	for _, f := range d.manifest.Fragments {
		n, err := d.liveRows(ctx, f)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// physicalRows returns the fragment's row count including deleted rows,
// asking the first data file when the manifest does not record it.
func (d *Dataset) physicalRows(ctx context.Context, f *manifest.Fragment) (uint64, error) {
	if f.PhysicalRows != 0 || len(f.Files) == 0 {
		return f.PhysicalRows, nil
	}
	r, err := d.openDataFile(ctx, &f.Files[0])
	if err != nil {
		return 0, err
	}
	if r.NumRows() > manifest.MaxRowsPerFragment {
		return 0, fmt.Errorf("dataset: fragment %d: data file %s holds %d rows, more than a fragment can address: %w",
			f.ID, f.Files[0].Path, r.NumRows(), lancer.ErrCorrupt)
	}
	return r.NumRows(), nil
}

// liveRows returns the fragment's row count without deleted rows.
func (d *Dataset) liveRows(ctx context.Context, f *manifest.Fragment) (uint64, error) {
	physical, err := d.physicalRows(ctx, f)
	if err != nil {
		return 0, err
	}
	deleted, known := f.NumDeletedRows()
	if !known {
		dv, err := d.deletionVector(ctx, f)
		if err != nil {
			return 0, err
		}
		deleted = dv.count()
	}
	if deleted > physical {
		return 0, fmt.Errorf("dataset: fragment %d has %d deleted rows of %d: %w", f.ID, deleted, physical, lancer.ErrCorrupt)
	}
	return physical - deleted, nil
}

// deletionVector returns the fragment's deleted rows, from the cache or
// read; nil when it has none.
func (d *Dataset) deletionVector(ctx context.Context, f *manifest.Fragment) (*deletionVector, error) {
	if f.DeletionFile == nil {
		return nil, nil
	}
	store, err := d.rootStore(ctx, f.DeletionFile.BaseID, "deletion file")
	if err != nil {
		return nil, fmt.Errorf("dataset: fragment %d: %w", f.ID, err)
	}
	key := f.DeletionFile.Key(f.ID)
	return cached(ctx, d.opts.Cache, cacheDeletions, manifest.Location(store, key), func(ctx context.Context) (*deletionVector, int64, error) {
		frag := *f
		var err error
		if frag.PhysicalRows, err = d.physicalRows(ctx, f); err != nil {
			return nil, 0, err
		}
		dv, err := readDeletionFile(ctx, store, key, &frag)
		if err != nil {
			return nil, 0, err
		}
		return dv, dv.memBytes(), nil
	})
}

// basePath returns the BasePath with the given id.
func (d *Dataset) basePath(id uint32) (manifest.BasePath, bool) {
	for _, bp := range d.manifest.BasePaths {
		if bp.ID == id {
			return bp, true
		}
	}
	return manifest.BasePath{}, false
}

// baseStore returns the store of base path id and the BasePath.
func (d *Dataset) baseStore(ctx context.Context, id uint32) (blob.Store, manifest.BasePath, error) {
	bp, ok := d.basePath(id)
	if !ok {
		// manifestFromProto checked every reference; this is a bug.
		return nil, bp, fmt.Errorf("base path %d is not in the manifest: %w", id, lancer.ErrCorrupt)
	}
	d.bases.mu.Lock()
	defer d.bases.mu.Unlock()
	if s, ok := d.bases.stores[bp.Path]; ok {
		return s, bp, nil
	}
	s, err := d.bases.resolve(ctx, bp)
	if err != nil {
		return nil, bp, fmt.Errorf("base path %d (%s): %w", bp.ID, bp.Path, err)
	}
	d.bases.stores[bp.Path] = s
	return s, bp, nil
}

// rootStore returns the dataset root holding files recorded with baseID:
// this dataset's store for nil, else the base's, which must be a dataset
// root. what names the referring file in errors.
func (d *Dataset) rootStore(ctx context.Context, baseID *uint32, what string) (blob.Store, error) {
	if baseID == nil {
		return d.store, nil
	}
	s, bp, err := d.baseStore(ctx, *baseID)
	if err != nil {
		return nil, err
	}
	if !bp.IsDatasetRoot {
		return nil, fmt.Errorf("%s lives under base path %d (%s), which is not a dataset root: %w",
			what, bp.ID, bp.Path, lancer.ErrCorrupt)
	}
	return s, nil
}

// dataFileLocation returns the store and key of a data file.
func (d *Dataset) dataFileLocation(ctx context.Context, df *manifest.DataFile) (blob.Store, string, error) {
	if df.BaseID == nil {
		return d.store, "data/" + df.Path, nil
	}
	s, bp, err := d.baseStore(ctx, *df.BaseID)
	if err != nil {
		return nil, "", fmt.Errorf("dataset: data file %s: %w", df.Path, err)
	}
	if bp.IsDatasetRoot {
		return s, "data/" + df.Path, nil
	}
	return s, df.Path, nil
}

// openDataFile opens a data file with the dataset's allocator. Readers
// are immutable once open, so they are kept in the cache and shared:
// takes and searches then read only the rows' pages, not the file's
// footer and metadata again.
func (d *Dataset) openDataFile(ctx context.Context, df *manifest.DataFile) (*format.Reader, error) {
	store, key, err := d.dataFileLocation(ctx, df)
	if err != nil {
		return nil, err
	}
	name := manifest.Location(store, key) + "|" + allocatorKey(d.opts.Allocator)
	return cached(ctx, d.opts.Cache, cacheReaders, name, func(ctx context.Context) (*format.Reader, int64, error) {
		r, err := format.Open(ctx, store, key, &format.OpenOptions{Size: int64(df.SizeBytes), Allocator: d.opts.Allocator})
		if err != nil {
			return nil, 0, fmt.Errorf("dataset: version %d: %w", d.manifest.Version, err)
		}
		return r, readerBytes(r), nil
	})
}

// rowIDs decodes the fragment's stable row ids.
func (d *Dataset) rowIDs(ctx context.Context, f *manifest.Fragment, physical uint64) (*manifest.RowIDSequence, error) {
	if f.RowIDs == nil {
		return nil, fmt.Errorf("dataset: fragment %d has no row ids: %w", f.ID, lancer.ErrCorrupt)
	}
	data := f.RowIDs.Inline
	if ext := f.RowIDs.External; ext != nil {
		// A sequence of n ids takes at most about 8n bytes (plain u64
		// values) plus per-segment framing.
		if limit := 16*physical + 64<<10; ext.Size > limit || ext.Offset > math.MaxInt64-limit {
			return nil, fmt.Errorf("dataset: fragment %d: row ids at %s [%d, +%d) for %d rows: %w",
				f.ID, ext.Path, ext.Offset, ext.Size, physical, lancer.ErrCorrupt)
		}
		var err error
		data, err = d.store.ReadRange(ctx, ext.Path, int64(ext.Offset), int64(ext.Size))
		if err != nil {
			return nil, fmt.Errorf("dataset: fragment %d row ids: %w", f.ID, err)
		}
	}
	seq, err := manifest.DecodeRowIDSequence(data, physical)
	if err != nil {
		return nil, fmt.Errorf("dataset: fragment %d: %w", f.ID, err)
	}
	return seq, nil
}
