package dataset

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// CloneOptions configures Clone.
type CloneOptions struct {
	// SourcePath is the absolute location of the source's root recorded in
	// the clone's new base path (and as the Clone transaction's ref_path),
	// e.g. "/data/t.lance" or "s3://bucket/t.lance". Default: the source
	// store's location (a local store's directory, as Lance records it).
	SourcePath string
	// BaseName names the new base path ("" for none); Lance records the
	// source branch or tag there (the transaction's ref_name).
	BaseName string
	// Branch is recorded as the clone manifest's branch ("" for none) and
	// the transaction's branch_name.
	Branch string
	// NextRowID, when not 0, is the clone's next stable row id, so that
	// rows it adds get ids its source never hands out (see
	// branch.CreateBranch). Default 0: the source's, as Lance's clones.
	NextRowID uint64
}

// Clone makes dst a shallow clone of src, as Lance's shallow_clone and
// create_branch do: dst gets one manifest, of src's version number, whose
// fragments, schema, indices and config are src's, committed by a Clone
// transaction. No data is copied: a new base path (IsDatasetRoot, the next
// free id) records opts.SourcePath, and every data file, deletion file and
// index of src that lived under src's own root points at it; files src
// already reached through base paths keep theirs. Later commits to dst
// write their files under dst.
//
// dst must hold no dataset: Clone fails with an error wrapping
// lancer.ErrAlreadyExists when a manifest exists there, also when another
// clone creates the same version concurrently (exactly one of them wins).
//
// The returned Dataset reads the new base path from src's store and the
// other base paths as src does.
//
// One deliberate difference from Lance 12: Lance points every index segment
// at the new base path, even one src reaches through an older base path;
// Clone, like for data files, keeps the base path such a segment already
// has.
func Clone(ctx context.Context, src *Dataset, dst blob.Store, opts *CloneOptions) (*Dataset, error) {
	var o CloneOptions
	if opts != nil {
		o = *opts
	}
	if o.SourcePath == "" {
		o.SourcePath = manifest.RootPath(src.store)
	}
	switch _, err := latestManifest(ctx, dst); {
	case err == nil:
		return nil, fmt.Errorf("dataset: clone into %s: a dataset exists there: %w", dst.URI(), lancer.ErrAlreadyExists)
	case !isNotFound(err):
		return nil, fmt.Errorf("dataset: clone into %s: %w", dst.URI(), err)
	}
	if err := checkWritableManifest(src.manifest, manifest.Location(src.store, src.manifestKey)); err != nil {
		return nil, err
	}

	version := src.manifest.Version
	u := newUUID()
	uuid := manifest.FormatUUID(u[:])
	clone := &manifest.Clone{IsShallow: true, RefVersion: version, RefPath: o.SourcePath}
	if o.BaseName != "" {
		clone.RefName = &o.BaseName
	}
	if o.Branch != "" {
		clone.BranchName = &o.Branch
	}
	txnBytes, err := manifest.EncodeTransaction(&manifest.Transaction{ReadVersion: version, UUID: uuid, Operation: clone})
	if err != nil {
		return nil, err
	}
	txnName := fmt.Sprintf("%d-%s.txn", version, uuid)
	txnKey := manifest.TransactionsDir + txnName

	m, baseID, err := cloneManifest(src.manifest, o, txnName, time.Now())
	if err != nil {
		return nil, err
	}
	file, err := manifest.EncodeFile(m, txnBytes)
	if err != nil {
		return nil, err
	}
	if err := dst.Write(ctx, txnKey, txnBytes); err != nil {
		return nil, fmt.Errorf("dataset: write transaction %s: %w", manifest.Location(dst, txnKey), err)
	}
	key := manifest.Key(manifest.ManifestNamingV2, version)
	if err := dst.CreateIfAbsent(ctx, key, file); err != nil {
		_ = dst.Delete(context.WithoutCancel(ctx), txnKey)
		if errors.Is(err, lancer.ErrConflict) {
			return nil, fmt.Errorf("dataset: clone into %s: version %d was created concurrently: %w", dst.URI(), version, lancer.ErrAlreadyExists)
		}
		return nil, fmt.Errorf("dataset: clone into %s: %w", dst.URI(), err)
	}
	writeVersionHint(ctx, dst, version)

	srcStore, resolve := src.store, src.opts.ResolveBase
	do := src.opts
	do.ResolveBase = func(ctx context.Context, bp manifest.BasePath) (blob.Store, error) {
		if bp.ID == baseID && bp.Path == o.SourcePath {
			return srcStore, nil
		}
		return resolve(ctx, bp)
	}
	bases := &baseStores{resolve: do.ResolveBase, stores: map[string]blob.Store{}}
	return committedDataset(dst, do, bases, key, m)
}

// cloneManifest builds the manifest of a shallow clone of src (Lance's
// Manifest::shallow_clone plus what its commit sets): src's manifest with
// its own files pointing at a new base path, the branch set, a fresh
// timestamp and transaction file, the feature flags recomputed. It returns
// the manifest (with its index segments) and the new base path's id.
func cloneManifest(src *manifest.Manifest, o CloneOptions, txnFile string, now time.Time) (*manifest.Manifest, uint32, error) {
	m := src.Clone()
	var baseID uint32
	for i, bp := range m.BasePaths {
		if i == 0 || bp.ID >= baseID {
			baseID = bp.ID + 1
		}
	}
	m.BasePaths = append(m.BasePaths, manifest.BasePath{ID: baseID, Name: o.BaseName, IsDatasetRoot: true, Path: o.SourcePath})
	for _, f := range m.Fragments {
		for i := range f.Files {
			if f.Files[i].BaseID == nil {
				id := baseID
				f.Files[i].BaseID = &id
			}
		}
		for i := range f.Overlays {
			if f.Overlays[i].File.BaseID == nil {
				id := baseID
				f.Overlays[i].File.BaseID = &id
			}
		}
		if f.DeletionFile != nil && f.DeletionFile.BaseID == nil {
			id := baseID
			f.DeletionFile.BaseID = &id
		}
		if f.RowIDs != nil && f.RowIDs.External != nil {
			// Row ids stored in a file of src's root cannot be reached
			// through a base path.
			return nil, 0, fmt.Errorf("dataset: clone: fragment %d keeps its row ids in an external file: %w", f.ID, lancer.ErrUnsupported)
		}
	}
	indices := m.IndexSegments()
	for _, ix := range indices {
		if ix.BaseID == nil {
			id := baseID
			ix.BaseID = &id
		}
	}
	m.SetIndexSegments(indices)
	m.SetBranch(o.Branch)
	if o.NextRowID != 0 {
		if o.NextRowID < m.NextRowID {
			return nil, 0, fmt.Errorf("dataset: clone: next row id %d is below the source's %d: %w", o.NextRowID, m.NextRowID, lancer.ErrInvalidArgument)
		}
		m.NextRowID = o.NextRowID
	}
	m.Tag = ""
	m.TransactionFile = txnFile
	m.Timestamp = now
	for _, f := range m.Fragments {
		if f.ID <= manifest.MaxRowsPerFragment-1 {
			id := uint32(f.ID)
			m.MaxFragmentID = maxOptional(m.MaxFragmentID, &id)
		}
	}
	if err := applyFeatureFlags(m, src, src.StableRowIDs()); err != nil {
		return nil, 0, fmt.Errorf("dataset: clone of version %d: %w", src.Version, err)
	}
	return m, baseID, nil
}

// ManifestKey returns the key of the version's manifest file, relative to
// Store().
func (d *Dataset) ManifestKey() string { return d.manifestKey }
