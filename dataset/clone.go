package dataset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/internal/pb/tablepb"
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
		o.SourcePath = StoreLocation(src.store)
	}
	switch _, err := latestManifest(ctx, dst); {
	case err == nil:
		return nil, fmt.Errorf("dataset: clone into %s: a dataset exists there: %w", dst.URI(), lancer.ErrAlreadyExists)
	case !isNotFound(err):
		return nil, fmt.Errorf("dataset: clone into %s: %w", dst.URI(), err)
	}
	if err := checkWritableManifest(src.manifest, location(src.store, src.manifestKey)); err != nil {
		return nil, err
	}

	version := src.manifest.Version
	u := newUUID()
	uuid := formatUUID(u[:])
	clone := &tablepb.Transaction_Clone{IsShallow: true, RefVersion: version, RefPath: o.SourcePath}
	if o.BaseName != "" {
		clone.RefName = proto.String(o.BaseName)
	}
	if o.Branch != "" {
		clone.BranchName = proto.String(o.Branch)
	}
	txn := &tablepb.Transaction{
		ReadVersion: version,
		Uuid:        uuid,
		Operation:   &tablepb.Transaction_Clone_{Clone: clone},
	}
	txnBytes, err := proto.MarshalOptions{Deterministic: true}.Marshal(txn)
	if err != nil {
		return nil, fmt.Errorf("dataset: encode transaction: %w", err)
	}
	txnName := fmt.Sprintf("%d-%s.txn", version, uuid)
	txnKey := transactionsDir + txnName

	m, indices, baseID, err := cloneManifest(src.manifest, o, txnName, time.Now())
	if err != nil {
		return nil, err
	}
	file, err := marshalManifestFile(m, indices, txnBytes)
	if err != nil {
		return nil, err
	}
	if err := dst.Write(ctx, txnKey, txnBytes); err != nil {
		return nil, fmt.Errorf("dataset: write transaction %s: %w", location(dst, txnKey), err)
	}
	key := manifestKey(schemeV2, version)
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
	do.ResolveBase = func(ctx context.Context, bp BasePath) (blob.Store, error) {
		if bp.ID == baseID && bp.Path == o.SourcePath {
			return srcStore, nil
		}
		return resolve(ctx, bp)
	}
	bases := &baseStores{resolve: do.ResolveBase, stores: map[string]blob.Store{}}
	return committedDataset(dst, do, bases, key, m, indices)
}

// cloneManifest builds the manifest of a shallow clone of src (Lance's
// Manifest::shallow_clone plus what its commit sets): src's manifest with
// its own files pointing at a new base path, the branch set, a fresh
// timestamp and transaction file, the feature flags recomputed. It returns
// the manifest, the index segments and the new base path's id.
func cloneManifest(src *Manifest, o CloneOptions, txnFile string, now time.Time) (*tablepb.Manifest, []*tablepb.IndexMetadata, uint32, error) {
	m := proto.Clone(src.raw).(*tablepb.Manifest)
	var baseID uint32
	for i, bp := range m.BasePaths {
		if i == 0 || bp.Id >= baseID {
			baseID = bp.Id + 1
		}
	}
	bp := &tablepb.BasePath{Id: baseID, IsDatasetRoot: true, Path: o.SourcePath}
	if o.BaseName != "" {
		bp.Name = proto.String(o.BaseName)
	}
	m.BasePaths = append(m.BasePaths, bp)
	for _, f := range m.Fragments {
		for _, df := range f.Files {
			if df.BaseId == nil {
				df.BaseId = proto.Uint32(baseID)
			}
		}
		if f.DeletionFile != nil && f.DeletionFile.BaseId == nil {
			f.DeletionFile.BaseId = proto.Uint32(baseID)
		}
		if ext, ok := f.RowIdSequence.(*tablepb.DataFragment_ExternalRowIds); ok && ext.ExternalRowIds != nil {
			// Row ids stored in a file of src's root cannot be reached
			// through a base path.
			return nil, nil, 0, fmt.Errorf("dataset: clone: fragment %d keeps its row ids in an external file: %w", f.Id, lancer.ErrUnsupported)
		}
	}
	indices := cloneIndices(src.rawIndices)
	for _, ix := range indices {
		if ix.BaseId == nil {
			ix.BaseId = proto.Uint32(baseID)
		}
	}
	m.Branch = nil
	if o.Branch != "" {
		m.Branch = proto.String(o.Branch)
	}
	if o.NextRowID != 0 {
		if o.NextRowID < m.NextRowId {
			return nil, nil, 0, fmt.Errorf("dataset: clone: next row id %d is below the source's %d: %w", o.NextRowID, m.NextRowId, lancer.ErrInvalidArgument)
		}
		m.NextRowId = o.NextRowID
	}
	m.Tag = ""
	m.IndexSection = nil
	m.TransactionSection = nil
	m.TransactionFile = txnFile
	m.Timestamp = timestamppb.New(now)
	for _, f := range m.Fragments {
		if f.Id <= maxRowsPerFragment-1 {
			id := uint32(f.Id)
			m.MaxFragmentId = maxOptional(m.MaxFragmentId, &id)
		}
	}
	if err := applyFeatureFlags(m, src.StableRowIDs()); err != nil {
		return nil, nil, 0, fmt.Errorf("dataset: clone of version %d: %w", src.Version, err)
	}
	return m, indices, baseID, nil
}

// ManifestFileSize returns the size in bytes of the version's manifest
// file, which Lance records in tags and branch refs.
func (d *Dataset) ManifestFileSize(ctx context.Context) (int64, error) {
	info, err := d.store.Stat(ctx, d.manifestKey)
	if err != nil {
		return 0, fmt.Errorf("dataset: manifest %s: %w", location(d.store, d.manifestKey), err)
	}
	return info.Size, nil
}

// StoreLocation returns the location of a store's root as Lance records it
// in base paths: a local directory as its absolute path, anything else as
// its URI.
func StoreLocation(s blob.Store) string {
	uri := s.URI()
	if rest, ok := strings.CutPrefix(uri, "file://"); ok {
		return rest
	}
	return uri
}

// ManifestKey returns the key of the version's manifest file, relative to
// Store().
func (d *Dataset) ManifestKey() string { return d.manifestKey }
