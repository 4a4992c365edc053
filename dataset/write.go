package dataset

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/cache"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// WriteMode says what Write does with a dataset that may already exist.
type WriteMode int

const (
	// WriteCreate creates a new dataset and fails with an error wrapping
	// lancer.ErrAlreadyExists if the store already holds one.
	WriteCreate WriteMode = iota
	// WriteAppend adds the rows to the latest version as new fragments
	// (creating the dataset if there is none). The data's columns must be
	// columns of the dataset, with the same types; missing nullable
	// columns read as nulls.
	WriteAppend
	// WriteOverwrite replaces the rows (and possibly the schema) of the
	// dataset with the data in a new version; older versions stay
	// readable. It creates the dataset if there is none.
	WriteOverwrite
)

// String names the mode: "create", "append" or "overwrite".
func (m WriteMode) String() string {
	switch m {
	case WriteCreate:
		return "create"
	case WriteAppend:
		return "append"
	case WriteOverwrite:
		return "overwrite"
	}
	return "WriteMode(" + strconv.Itoa(int(m)) + ")"
}

// DefaultMaxRowsPerFile is Lance's default cap on the rows of one data file
// (and so of one fragment): WriteOptions.MaxRowsPerFile,
// AppendOptions.MaxRowsPerFile.
const DefaultMaxRowsPerFile = 1 << 20

// WriteOptions configures Write. A nil *WriteOptions means all defaults.
type WriteOptions struct {
	// CommitOptions configure the commit (retries, allocator, transaction
	// properties). Allocator defaults to memory.DefaultAllocator here.
	CommitOptions
	// Mode is what Write does when a dataset exists. Default WriteCreate.
	Mode WriteMode
	// FileVersion is the data file version of a new dataset, or of an
	// overwrite: 2.0, 2.1 or 2.2. Default: 2.2 (Lance 12's) for a new
	// dataset, the dataset's own for an overwrite. WriteAppend always
	// writes the dataset's version.
	FileVersion format.Version
	// MaxRowsPerFile caps the rows of one data file; a larger write makes
	// several fragments. Default DefaultMaxRowsPerFile (Lance's).
	MaxRowsPerFile int
	// EnableStableRowIDs gives every row a stable row id (Lance feature flag
	// 2; every fragment records its ids). It applies when a dataset is
	// created or overwritten; a dataset keeps stable row ids once it has
	// them. Default false.
	EnableStableRowIDs bool
	// ManifestNaming is the manifest naming scheme of a new dataset.
	// Default ManifestNamingV2 (LanceDB's). An existing dataset keeps its
	// own.
	ManifestNaming manifest.ManifestNaming
	// Cache is the cache of the Dataset Write returns (see
	// OpenOptions.Cache). Default: a new one of DefaultCacheBytes.
	Cache *cache.Cache
}

// AppendOptions configures Dataset.Append. A nil *AppendOptions means all
// defaults. What Write's options choose for a new dataset (file version,
// stable row ids, manifest naming, cache) are the dataset's own here.
type AppendOptions struct {
	// CommitOptions configure the commit (retries, allocator, transaction
	// properties).
	CommitOptions
	// MaxRowsPerFile caps the rows of one data file; a larger append makes
	// several fragments. Default DefaultMaxRowsPerFile (Lance's).
	MaxRowsPerFile int
}

// withDefaults returns a copy of o with defaults filled in.
func (o *WriteOptions) withDefaults() WriteOptions {
	var out WriteOptions
	if o != nil {
		out = *o
	}
	if out.MaxRowsPerFile <= 0 {
		out.MaxRowsPerFile = DefaultMaxRowsPerFile
	}
	if out.Allocator == nil {
		out.Allocator = memory.DefaultAllocator
	}
	return out
}

// checkMaxRowsPerFile rejects a cap no fragment can hold.
func checkMaxRowsPerFile(n int) error {
	if n > manifest.MaxRowsPerFragment {
		return fmt.Errorf("dataset: MaxRowsPerFile %d exceeds the 2^32 rows a fragment can address: %w",
			n, lancer.ErrInvalidArgument)
	}
	return nil
}

// validate rejects options no write can honour.
func (o *WriteOptions) validate() error {
	switch o.Mode {
	case WriteCreate, WriteAppend, WriteOverwrite:
	default:
		return fmt.Errorf("dataset: write mode %s: %w", o.Mode, lancer.ErrInvalidArgument)
	}
	switch o.ManifestNaming {
	case manifest.ManifestNamingV1, manifest.ManifestNamingV2:
	default:
		return fmt.Errorf("dataset: %s: %w", o.ManifestNaming, lancer.ErrInvalidArgument)
	}
	if o.FileVersion != (format.Version{}) {
		if err := checkWritableVersion(o.FileVersion); err != nil {
			return err
		}
	}
	return checkMaxRowsPerFile(o.MaxRowsPerFile)
}

// checkWritableVersion accepts the data file versions lancer writes.
func checkWritableVersion(v format.Version) error {
	switch {
	case v == format.Version2_0, v == format.Version2_1, v == format.Version2_2, v.IsLegacy():
		return nil
	}
	return fmt.Errorf("dataset: writing data file version %s: %w", v, lancer.ErrUnsupported)
}

// writeVersion returns the version of the data files a write adds to d:
// its storage version, and for a legacy dataset the v1 layout with the
// footer version of its newest data file (releases before Lance 0.9 wrote
// 0.1, later ones 0.2), so that a write never gives the releases that use
// a dataset a file newer than they wrote themselves. A legacy dataset
// without files gets Lance 12's 0.2.
func (d *Dataset) writeVersion(ctx context.Context) (format.Version, error) {
	v := d.manifest.DataFormat
	if !v.IsLegacy() {
		return v, nil
	}
	for i := len(d.manifest.Fragments) - 1; i >= 0; i-- {
		f := d.manifest.Fragments[i]
		if len(f.Files) == 0 {
			continue
		}
		if fv, err := f.Files[0].Version(); err == nil && !fv.IsLegacy() {
			// The manifest says legacy, the files are 2.x (see
			// repairDataFormat): write what the files are.
			return fv, nil
		}
		r, err := d.openDataFile(ctx, &f.Files[0])
		if err != nil {
			return format.Version{}, fmt.Errorf("dataset: the footer version of fragment %d's data file: %w", f.ID, err)
		}
		if _, minor := r.FooterVersion(); minor == 1 || minor == 2 {
			return format.Version{Major: 0, Minor: minor}, nil
		}
		break
	}
	return format.Version{Major: 0, Minor: 2}, nil
}

// openOptions are the options of a Dataset a write returns.
func (o *WriteOptions) openOptions() OpenOptions {
	return (&OpenOptions{Allocator: o.Allocator, Cache: o.Cache}).withDefaults()
}

// Write writes the rows of data to the dataset rooted at store and returns
// the version it committed: a new dataset (WriteCreate, or any mode when
// the store holds none), new fragments on the latest version (WriteAppend)
// or a replacement of all rows and the schema (WriteOverwrite). Data files
// are written first, invisible, and then published by the atomic creation
// of the next manifest (see Commit in the package documentation).
//
// Errors wrap lancer.ErrAlreadyExists (WriteCreate on an existing dataset),
// lancer.ErrInvalidArgument (data that does not fit the dataset's schema),
// lancer.ErrUnsupported (a type or file version lancer cannot write) or
// lancer.ErrConflict (a *ConflictError: a concurrent commit that this one
// cannot be rebased over).
func Write(ctx context.Context, store blob.Store, data array.RecordReader, opts *WriteOptions) (*Dataset, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	oo := o.openOptions()
	bases := &baseStores{resolve: oo.ResolveBase, stores: map[string]blob.Store{}}
	e, err := latestManifest(ctx, store)
	switch {
	case isNotFound(err):
		return create(ctx, store, oo, bases, data, o)
	case err != nil:
		return nil, err
	case o.Mode == WriteCreate:
		return nil, fmt.Errorf("dataset: create %s: a dataset exists there: %w", store.URI(), lancer.ErrAlreadyExists)
	}
	d, err := openEntry(ctx, store, oo, bases, e)
	if err != nil {
		return nil, err
	}
	if o.Mode == WriteAppend {
		return d.append(ctx, data, o.MaxRowsPerFile, &o.CommitOptions)
	}
	return d.overwrite(ctx, data, o)
}

// Append adds the rows of data to the dataset as new fragments and returns
// the new version. The read version is d's: if later versions exist, the
// append is rebased over them (it conflicts only with an overwrite or a
// restore). The data's columns must be columns of the dataset with the same
// types, in any order; nullable columns may be missing and read as nulls.
// The new files are written in the dataset's data file version (a legacy
// dataset gets legacy files, whose dictionary columns key into the
// dataset's dictionary: a value it lacks is an error wrapping
// lancer.ErrUnsupported), with stable row ids if the dataset has them;
// the returned Dataset shares d's cache.
func (d *Dataset) Append(ctx context.Context, data array.RecordReader, opts *AppendOptions) (*Dataset, error) {
	var o AppendOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxRowsPerFile <= 0 {
		o.MaxRowsPerFile = DefaultMaxRowsPerFile
	}
	if err := checkMaxRowsPerFile(o.MaxRowsPerFile); err != nil {
		return nil, err
	}
	return d.using(&o.CommitOptions).append(ctx, data, o.MaxRowsPerFile, &o.CommitOptions)
}

// reservedColumns are names a dataset column cannot have: Lance's virtual
// columns.
var reservedColumns = map[string]bool{RowIDColumn: true, RowAddressColumn: true, "_rowoffset": true,
	RowLastUpdatedAtVersionColumn: true, RowCreatedAtVersionColumn: true}

// create writes a new dataset (version 1).
func create(ctx context.Context, store blob.Store, oo OpenOptions, bases *baseStores, data array.RecordReader, o WriteOptions) (*Dataset, error) {
	version := o.FileVersion
	if version == (format.Version{}) {
		version = format.Version2_2
	}
	schema, err := newSchema(data.Schema())
	if err != nil {
		return nil, err
	}
	frags, err := writeFragments(ctx, store, schema, nil, data, version, o.MaxRowsPerFile, o.Allocator, true)
	if err != nil {
		return nil, err
	}
	op := newOverwrite(schema, frags, version, o.EnableStableRowIDs)
	return commit(ctx, store, oo, bases, op, commitOptions{
		readVersion: 0,
		opts:        &o.CommitOptions,
		naming:      o.ManifestNaming,
		createOnly:  o.Mode != WriteOverwrite,
	})
}

// newSchema builds the schema of a new dataset (or an overwrite) from the
// data's Arrow schema, field ids from 0 as Lance numbers them.
func newSchema(as *arrow.Schema) (*schema.Schema, error) {
	if as.NumFields() == 0 {
		return nil, fmt.Errorf("dataset: a dataset needs at least one column: %w", lancer.ErrInvalidArgument)
	}
	seen := map[string]bool{}
	for _, f := range as.Fields() {
		if reservedColumns[f.Name] {
			return nil, fmt.Errorf("dataset: column name %q is reserved: %w", f.Name, lancer.ErrInvalidArgument)
		}
		if seen[f.Name] {
			return nil, fmt.Errorf("dataset: column %q appears twice: %w", f.Name, lancer.ErrInvalidArgument)
		}
		seen[f.Name] = true
	}
	s, err := schema.FromArrow(as, 0)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	return s, nil
}

// overwrite replaces the dataset's rows and schema in a new version.
func (d *Dataset) overwrite(ctx context.Context, data array.RecordReader, o WriteOptions) (*Dataset, error) {
	version := o.FileVersion
	if version == (format.Version{}) {
		var err error
		if version, err = d.writeVersion(ctx); err != nil {
			return nil, err
		}
		if checkWritableVersion(version) != nil {
			version = format.Version2_2
		}
	}
	schema, err := newSchema(data.Schema())
	if err != nil {
		return nil, err
	}
	if err := d.checkWritable(); err != nil {
		return nil, err
	}
	frags, err := writeFragments(ctx, d.store, schema, nil, data, version, o.MaxRowsPerFile, o.Allocator, true)
	if err != nil {
		return nil, err
	}
	op := newOverwrite(schema, frags, version, o.EnableStableRowIDs || d.manifest.StableRowIDs())
	return d.commit(ctx, op, &o.CommitOptions)
}

// append writes data as new fragments of d's schema, at most maxRows rows
// a file, and commits them.
func (d *Dataset) append(ctx context.Context, data array.RecordReader, maxRows int, opts *CommitOptions) (*Dataset, error) {
	if err := d.checkWritable(); err != nil {
		return nil, err
	}
	if err := checkWritableVersion(d.manifest.DataFormat); err != nil {
		return nil, fmt.Errorf("dataset: append to a dataset of data format %s: %w", d.manifest.DataFormat, lancer.ErrUnsupported)
	}
	version, err := d.writeVersion(ctx)
	if err != nil {
		return nil, err
	}
	schema, err := appendSchema(d.manifest.Schema, data.Schema())
	if err != nil {
		return nil, err
	}
	frags, err := writeFragments(ctx, d.store, schema, d.manifest.Dictionaries(), data, version, maxRows, d.opts.Allocator, true)
	if err != nil {
		return nil, err
	}
	return d.commit(ctx, &operation{kind: opAppend, fragments: frags}, opts)
}

// appendSchema returns the part of the dataset schema the data holds: its
// top-level fields named by the data's columns, in dataset order, with the
// dataset's field ids. Every data column must be a dataset column of the
// same type, and every dataset column the data lacks must be nullable.
func appendSchema(ds *schema.Schema, as *arrow.Schema) (*schema.Schema, error) {
	byName := map[string]arrow.Field{}
	for _, f := range as.Fields() {
		if _, dup := byName[f.Name]; dup {
			return nil, fmt.Errorf("dataset: append: column %q appears twice: %w", f.Name, lancer.ErrInvalidArgument)
		}
		if ds.Field(f.Name) == nil {
			return nil, fmt.Errorf("dataset: append: the dataset has no column %q: %w", f.Name, lancer.ErrInvalidArgument)
		}
		byName[f.Name] = f
	}
	out := &schema.Schema{Metadata: ds.Metadata}
	for _, f := range ds.Fields {
		af, ok := byName[f.Name]
		if !ok {
			if !f.Nullable {
				return nil, fmt.Errorf("dataset: append: the data lacks non-nullable column %q: %w", f.Name, lancer.ErrInvalidArgument)
			}
			continue
		}
		if !arrow.TypeEqual(af.Type, f.Type) {
			return nil, fmt.Errorf("dataset: append: column %q is %s, the dataset's is %s: %w",
				f.Name, af.Type, f.Type, lancer.ErrInvalidArgument)
		}
		out.Fields = append(out.Fields, f)
	}
	return out, nil
}

// checkWritable refuses to commit on top of a version lancer cannot write
// correctly.
func (d *Dataset) checkWritable() error {
	return checkWritableManifest(d.manifest, manifest.Location(d.store, d.manifestKey))
}

func checkWritableManifest(m *manifest.Manifest, where string) error {
	if unknown := m.WriterFeatureFlags &^ manifest.WritableFlags; unknown != 0 {
		return fmt.Errorf("dataset: manifest %s: writer feature flags %s: lancer cannot write %s: %w",
			where, m.WriterFeatureFlags, unknown, lancer.ErrUnsupported)
	}
	return nil
}

// checkBuildable refuses a version that no commit may build on or
// publish, as Lance's commit refuses it (check_storage_version in
// rust/lance/src/io/commit.rs): one that records storage version 0.1 over
// data files of more than one version, which Lance 0.16 wrote, or that
// lists a fragment id twice (the same Lance 0.16 version does; Lance reads
// it entry by entry but a deletion or a rewrite of that fragment could not
// say which entry it means). Lance's answer, and lancer's, is to restore
// an earlier version.
func checkBuildable(m *manifest.Manifest, where string) error {
	if dups := m.DuplicateFragmentIDs(); len(dups) > 0 {
		return fmt.Errorf("dataset: manifest %s lists fragment id %d twice (as Lance 0.16 wrote some versions); Lance refuses to commit on it too: restore an earlier version: %w",
			where, dups[0], lancer.ErrCorrupt)
	}
	if !m.DataFormat.IsLegacy() {
		return nil
	}
	var (
		first format.Version
		seen  bool
	)
	for _, f := range m.Fragments {
		for i := range f.Files {
			v, err := f.Files[i].Version()
			if err != nil {
				return fmt.Errorf("dataset: manifest %s: fragment %d data file %s: %w", where, f.ID, f.Files[i].Path, err)
			}
			if !seen {
				first, seen = v, true
			}
			if v != first {
				return fmt.Errorf("dataset: manifest %s records storage version %s over data files of versions %s and %s (as Lance 0.16 wrote some versions); Lance refuses to commit on it too: restore an earlier version: %w",
					where, m.DataFormat, first, v, lancer.ErrCorrupt)
			}
		}
	}
	return nil
}

// writeFragments writes the rows of data as data files of schema (whose
// top-level fields are named by data's columns), at most maxRowsPerFile
// rows each, and returns one fragment per file, ids unassigned (0) as a
// transaction records them. On error the files already written are
// removed.
//
// With unsynced the data files are published without waiting for the
// disk (blob.Unsynced; their blob sidecars are synced as usual): only for
// a caller that commits the fragments as its operation's fragments at
// once, since commit syncs those files before it creates the manifest
// (syncedAtCommit) and nothing else may refer to them before.
func writeFragments(ctx context.Context, store blob.Store, schema *schema.Schema, dicts map[int32]*schema.DictionaryValues, data array.RecordReader,
	version format.Version, maxRowsPerFile int, mem memory.Allocator, unsynced bool) (frags []*manifest.Fragment, err error) {
	// cols[i] is the data column holding schema.Fields[i].
	cols := make([]int, len(schema.Fields))
	for i, f := range schema.Fields {
		idx := data.Schema().FieldIndices(f.Name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("dataset: write: column %q: %w", f.Name, lancer.ErrInvalidArgument)
		}
		cols[i] = idx[0]
	}
	var (
		w       *format.Writer
		written []string
	)
	defer func() {
		if err == nil {
			return
		}
		if w != nil {
			w.Abort(ctx)
		}
		for _, key := range written {
			removeDataFile(ctx, store, key) // with its blob sidecars
		}
		frags = nil
	}()
	finish := func() error {
		wf, err := w.Finish(ctx)
		w = nil
		if err != nil {
			return err
		}
		written = append(written, wf.Key)
		frags = append(frags, &manifest.Fragment{
			Files:        []manifest.DataFile{dataFileOf(wf)},
			PhysicalRows: wf.Rows,
		})
		return nil
	}
	maxRows := int64(maxRowsPerFile)
	var inFile int64
	arrowSchema := schema.LogicalArrow()
	for data.Next() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rec := data.RecordBatch()
		arrs := make([]arrow.Array, len(cols))
		for i, c := range cols {
			arrs[i] = rec.Column(c)
			f := schema.Fields[i]
			if !arrow.TypeEqual(arrs[i].DataType(), f.Type) {
				return nil, fmt.Errorf("dataset: write: column %q is %s, the schema says %s: %w",
					f.Name, arrs[i].DataType(), f.Type, lancer.ErrInvalidArgument)
			}
			if !f.Nullable && arrs[i].NullN() > 0 {
				return nil, fmt.Errorf("dataset: write: non-nullable column %q holds %d nulls: %w",
					f.Name, arrs[i].NullN(), lancer.ErrInvalidArgument)
			}
		}
		batch := array.NewRecordBatch(arrowSchema, arrs, rec.NumRows())
		err := func() error {
			defer batch.Release()
			for start := int64(0); start < batch.NumRows(); {
				if w == nil {
					key := dataDir + newDataFileName()
					fileStore := store
					if unsynced {
						fileStore = blob.Unsynced(store, key)
					}
					nw, err := format.NewWriter(ctx, fileStore, key, schema, &format.WriterOptions{Version: version, Allocator: mem, LegacyDictionaries: dicts})
					if err != nil {
						return fmt.Errorf("dataset: write: %w", err)
					}
					w, inFile = nw, 0
				}
				n := min(batch.NumRows()-start, maxRows-inFile)
				part := batch
				if start != 0 || n != batch.NumRows() {
					part = batch.NewSlice(start, start+n)
				}
				err := w.Write(ctx, part)
				if part != batch {
					part.Release()
				}
				if err != nil {
					return err
				}
				start += n
				inFile += n
				if inFile == maxRows {
					if err := finish(); err != nil {
						return err
					}
				}
			}
			return nil
		}()
		if err != nil {
			return nil, err
		}
	}
	if err := data.Err(); err != nil {
		return nil, fmt.Errorf("dataset: write: reading the data: %w", err)
	}
	if w != nil && inFile > 0 {
		if err := finish(); err != nil {
			return nil, err
		}
	} else if w != nil {
		w.Abort(ctx)
		w = nil
	}
	return frags, nil
}

// dataDir is where a dataset keeps its data files.
const dataDir = "data/"

// dataFileOf describes a data file just written, for a fragment.
func dataFileOf(wf *format.WrittenFile) manifest.DataFile {
	return manifest.DataFile{
		Path:          strings.TrimPrefix(wf.Key, dataDir),
		Fields:        wf.Fields,
		ColumnIndices: wf.ColumnIndices,
		MajorVersion:  uint32(wf.Version.Major),
		MinorVersion:  uint32(wf.Version.Minor),
		SizeBytes:     wf.Size,
	}
}

// newDataFileName returns a fresh data file name as Lance makes them from a
// random UUID: its first 3 bytes as 24 binary digits, the other 13 as 26
// hex digits, and ".lance".
func newDataFileName() string {
	u := newUUID()
	var b strings.Builder
	for _, c := range u[:3] {
		fmt.Fprintf(&b, "%08b", c)
	}
	b.WriteString(hex.EncodeToString(u[3:]))
	b.WriteString(".lance")
	return b.String()
}

// newUUID returns a random (version 4) UUID.
func newUUID() [16]byte {
	var u [16]byte
	if _, err := rand.Read(u[:]); err != nil {
		panic(fmt.Sprintf("dataset: crypto/rand: %v", err)) // never fails on supported platforms
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// randomUint64 returns a random number (deletion file ids).
func randomUint64() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("dataset: crypto/rand: %v", err))
	}
	return binary.LittleEndian.Uint64(b[:])
}
