package table

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/cache"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/format/schema"
)

// Ref selects a state of a table: a branch ("" or "main" for the main
// line) at its latest version or at Version, or a tag. branch.ParseRef
// reads lancer's text form (main, exp, exp@3, tag:v1).
type Ref = branch.Ref

// Options configures Open and Create. A nil *Options means the defaults.
type Options struct {
	// StorageOptions configure the store of the URI, and of the base paths
	// a manifest records (Lance's storage_options: aws_endpoint,
	// aws_region, aws_access_key_id, google_service_account,
	// azure_storage_account_name, ...; see blob.OpenWithOptions). Default
	// none: the environment alone.
	StorageOptions map[string]string
	// Ref is the state Open opens. Default: the latest version of main.
	// Create ignores it: a new table has only main.
	Ref Ref
	// Allocator allocates the Arrow arrays scans, takes and searches
	// return. Default memory.DefaultAllocator.
	Allocator memory.Allocator
	// Cache keeps what reads load (dataset.OpenOptions.Cache); give
	// several handles one to share its budget. Default: one of
	// dataset.DefaultCacheBytes per Open or Create, shared by the handle
	// and its checkouts.
	Cache *cache.Cache
}

// openOptions is the dataset.OpenOptions every version the handle opens
// uses. It is the one place table options reach package dataset: the
// cache is made here when the caller gives none, so that the handle and
// its checkouts share it.
func (o *Options) openOptions() dataset.OpenOptions {
	var oo dataset.OpenOptions
	if o != nil {
		oo = dataset.OpenOptions{StorageOptions: o.StorageOptions, Allocator: o.Allocator, Cache: o.Cache}
	}
	if oo.Cache == nil {
		oo.Cache, _ = cache.New(dataset.DefaultCacheBytes) // fails only for a negative size
	}
	return oo
}

// Table is a handle on one state of a table (see the package doc for its
// invariants). The zero value is not usable; get one from Open or Create.
type Table struct {
	root  *rootStore
	owner bool // Close closes root
	opts  dataset.OpenOptions

	closed atomic.Bool
	mu     sync.RWMutex
	line   string // the branch the handle is on; "" for main
	ds     *dataset.Dataset

	groupOnce sync.Once
	group     *dataset.GroupCommitter // the handle's appends (invariant 2)
}

// rootStore is the table's main root, shared by a handle and every handle
// derived from it.
type rootStore struct {
	store  blob.Store
	closed atomic.Bool
}

// Open opens the table at uri (a local path, file://, mem://, s3://, gs://
// or az:// URI) at opts.Ref. The handle owns the store it opens: Close it.
// Errors wrap lancer.ErrNotFound (no table; branch.ErrNoSuchBranch,
// branch.ErrNoSuchTag, dataset.ErrNoSuchVersion for the ref),
// lancer.ErrInvalidArgument (a bad URI or storage option) and the errors
// of dataset.Open.
func Open(ctx context.Context, uri string, opts *Options) (*Table, error) {
	var ref Ref
	if opts != nil {
		ref = opts.Ref
	}
	return openOwned(ctx, "open", uri, opts, ref, func(blob.Store) error { return nil })
}

// Create writes data as a new table at uri (dataset.Write with write; its
// Mode defaults to dataset.WriteCreate, so an existing table is an error
// wrapping lancer.ErrAlreadyExists) and returns a handle on main at the
// version committed. The handle owns its store: Close it.
func Create(ctx context.Context, uri string, data array.RecordReader, opts *Options, write *dataset.WriteOptions) (*Table, error) {
	return openOwned(ctx, "create", uri, opts, Ref{}, func(store blob.Store) error {
		_, err := dataset.Write(ctx, store, data, write)
		return err
	})
}

// openOwned opens the store of uri, runs before on it, and returns a
// handle at ref that owns the store. On failure the store is closed.
func openOwned(ctx context.Context, verb, uri string, opts *Options, ref Ref, before func(blob.Store) error) (*Table, error) {
	oo := opts.openOptions()
	store, err := blob.OpenWithOptions(ctx, uri, oo.StorageOptions)
	if err != nil {
		return nil, fmt.Errorf("table: %s %s: %w", verb, uri, err)
	}
	t, err := func() (*Table, error) {
		if err := before(store); err != nil {
			return nil, err
		}
		return newTable(ctx, &rootStore{store: store}, oo, ref)
	}()
	if err != nil {
		return nil, errors.Join(err, closeStore(store))
	}
	t.owner = true
	return t, nil
}

// newTable opens ref on root.
func newTable(ctx context.Context, root *rootStore, opts dataset.OpenOptions, ref Ref) (*Table, error) {
	resolved, err := branch.Resolve(ctx, root.store, ref)
	if err != nil {
		return nil, err
	}
	ds, err := branch.Open(ctx, root.store, resolved, &opts)
	if err != nil {
		return nil, err
	}
	return &Table{root: root, opts: opts, line: resolved.Branch, ds: ds}, nil
}

// closeStore closes store if it holds resources (a cloud store).
func closeStore(store blob.Store) error {
	if c, ok := store.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Close ends the handle's use. On the handle from Open or Create it closes
// the store (a cloud store's connections), which ends every handle derived
// from it too. Closing twice is not an error; a Dataset or Scanner taken
// from the handle must not be used after the store is closed. Ref,
// Version, Schema and Indices, which read nothing, still answer.
//
// A store dataset opens for a base path outside the table's own family
// (the source of a shallow clone of another table) is not the handle's
// and is not closed.
func (t *Table) Close() error {
	if t.closed.Swap(true) || !t.owner {
		return nil
	}
	t.root.closed.Store(true)
	return closeStore(t.root.store)
}

var errClosed = fmt.Errorf("table: use after Close: %w", lancer.ErrClosed)

// current returns the version the handle is at, or errClosed.
func (t *Table) current() (*dataset.Dataset, error) {
	if t.closed.Load() || t.root.closed.Load() {
		return nil, errClosed
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.ds, nil
}

// committer returns the group committer of the handle's appends, made
// for ds's store (the handle's line) on first use.
func (t *Table) committer(ds *dataset.Dataset) *dataset.GroupCommitter {
	t.groupOnce.Do(func() { t.group = dataset.NewGroupCommitter(ds.Store(), nil) })
	return t.group
}

// advance moves the handle to ds, a version its line committed, unless a
// concurrent write already moved it further (invariant 2).
func (t *Table) advance(ds *dataset.Dataset) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ds.Version() > t.ds.Version() {
		t.ds = ds
	}
}

// Dataset returns the version the handle is at, for what the handle does
// not wrap. It stays valid while the handle's store is open. It is nil
// after Close.
func (t *Table) Dataset() *dataset.Dataset {
	ds, _ := t.current()
	return ds
}

// Ref returns the state the handle is at: its line ("" for main) and
// version.
func (t *Table) Ref() Ref {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return Ref{Branch: t.line, Version: t.ds.Version()}
}

// Version returns the version the handle is at.
func (t *Table) Version() uint64 { return t.Ref().Version }

// Schema returns the schema of the version the handle is at.
func (t *Table) Schema() *schema.Schema {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.ds.Schema()
}

// Checkout returns a handle at ref (a version of a branch or of main, or a
// tag; Version 0 is the line's latest, looked up now), sharing t's store.
// Checkout(ctx, t.Ref()) with Version 0 is how a handle sees other
// writers' commits.
func (t *Table) Checkout(ctx context.Context, ref Ref) (*Table, error) {
	if _, err := t.current(); err != nil {
		return nil, err
	}
	return newTable(ctx, t.root, t.opts, ref)
}
