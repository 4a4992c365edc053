package dataset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// Where commits put their files.
const versionHintKey = manifest.VersionsDir + "latest_version_hint.json"

// commitOptions configures one commit.
type commitOptions struct {
	// pastCorrupt, for a restore, is the version restored: it stands in
	// for a latest version whose manifest is damaged (Restore).
	pastCorrupt *Dataset
	// readVersion is the version the operation was computed from; 0 when
	// it creates the dataset.
	readVersion uint64
	// opts are the caller's options, resolved (see CommitOptions.resolve):
	// their budget bounds the retries of lost races.
	opts *CommitOptions
	// naming is the manifest naming of a dataset this commit creates.
	naming manifest.ManifestNaming
	// createOnly makes a creation fail with lancer.ErrAlreadyExists when a
	// dataset appeared meanwhile, instead of being rebased over it.
	createOnly bool
	// read, if set, is the opened readVersion: when it is still the latest,
	// the commit builds on it instead of reading its manifest again (a
	// version's manifest never changes once created), which saves a GET
	// per commit on object stores.
	read *Dataset
	// keepData leaves op's own files (data, deletion and index files) in
	// place when the commit definitely failed, for a caller that may
	// commit them again (a group commit that drops a conflicting member
	// and retries the others); the transaction files of its attempts are
	// still removed.
	keepData bool
	// definite, if set, is told on return whether the commit certainly
	// created no manifest (always false after a success).
	definite *bool
}

// commit commits op read at d's version, with opts (nil: the defaults).
func (d *Dataset) commit(ctx context.Context, op *operation, opts *CommitOptions) (*Dataset, error) {
	return commit(ctx, d.store, d.opts, d.bases, op, commitOptions{readVersion: d.manifest.Version, opts: opts, read: d})
}

// commit publishes op as the next version of the dataset rooted at store,
// following Lance's protocol:
//
//  1. find the latest version L and, if it is newer than the read version,
//     load the transaction of every version committed since and rebase op
//     over them (or fail with a *ConflictError);
//  2. write the transaction to _transactions/{read_version}-{uuid}.txn;
//  3. build manifest L+1 from manifest L and op, with the transaction
//     inline, and create it only if absent (the one atomic step);
//  4. on losing that race, back off for a random time and go to 1, as
//     long as co.opts allow another retry (see RetryCommit).
//
// A conflict found while rebasing is returned at once, never retried here:
// rebasing the same operation again gives the same answer. The verbs that
// recompute their operation on a retryable conflict do so around commit
// (reexecute), drawing on the same retries.
//
// After a success it writes _versions/latest_version_hint.json (a hint only)
// and returns the new version. Files written for op (data, deletion and
// transaction files) are removed when the commit definitely failed; after
// an error of unknown outcome they are left, unreferenced or referenced.
// op.properties, when nil, are co.opts.Properties.
func commit(ctx context.Context, store blob.Store, o OpenOptions, bases *baseStores, op *operation, co commitOptions) (ds *Dataset, err error) {
	u := newUUID()
	uuid := manifest.FormatUUID(u[:])
	written := op.writtenFiles()
	keep := 0 // written[:keep] stay on a definite failure
	if co.keepData {
		keep = len(written)
	}
	definite := false // whether err means the manifest was certainly not created
	defer func() {
		if co.definite != nil {
			*co.definite = err != nil && definite
		}
		if err != nil && definite {
			for _, key := range written[keep:] {
				removeDataFile(ctx, store, key) // with its blob sidecars
			}
		}
	}()
	if op.properties == nil && co.opts != nil && len(co.opts.Properties) > 0 {
		op.properties = maps.Clone(co.opts.Properties)
	}

	txns := map[uint64]*manifest.Transaction{}
	// fail ends the commit with e, which certainly created no manifest,
	// without a retry.
	fail := func(e error) error {
		definite = true
		return permanent(e)
	}
	err = retry(ctx, co.opts, func(ctx context.Context, _ *CommitOptions) error {
		// Each attempt says afresh whether its failure is definite; a
		// backoff cancelled after a lost race keeps that race's answer.
		definite = false
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		if g := co.group(); g != nil {
			if g.store.URI() != store.URI() {
				return fail(fmt.Errorf("dataset: commit to %s in turn with the group committer of %s: %w", store.URI(), g.store.URI(), lancer.ErrInvalidArgument))
			}
			// What the attempt rebases over is read first, outside the
			// turn: under it only the versions committed meanwhile are.
			preloadTransactions(ctx, store, co.readVersion, txns)
			if err := g.takeTurn(ctx); err != nil {
				return fail(fmt.Errorf("dataset: waiting for a commit in turn: %w", err))
			}
			defer g.releaseTurn()
		}
		latest, scheme, err := latestForCommit(ctx, store, o, bases, co)
		if err != nil {
			return fail(err)
		}
		cur, readVersion := op, co.readVersion
		target := uint64(1)
		var prev *manifest.Manifest
		if latest != nil {
			prev = latest.manifest
			target = prev.Version + 1
			if target&manifest.DetachedVersionBit != 0 {
				return fail(fmt.Errorf("dataset: version %d would be a detached version number: %w", target, lancer.ErrUnsupported))
			}
			if err := checkWritableManifest(prev, manifest.Location(store, latest.manifestKey)); err != nil {
				return fail(err)
			}
			if op.kind != opRestore && op.kind != opOverwrite {
				// Only a restore or an overwrite replaces the fragments
				// of a version nothing may build on.
				if err := checkBuildable(prev, manifest.Location(store, latest.manifestKey)); err != nil {
					return fail(err)
				}
			}
			if prev.Version > co.readVersion {
				others, err := loadTransactions(ctx, store, co.readVersion+1, prev.Version, txns)
				if err != nil {
					return fail(err)
				}
				if cur, err = rebase(ctx, op, others, latest, &written); err != nil {
					return fail(err)
				}
				if cur.kind == opDelete || cur.kind == opUpdate {
					// Lance records a rebased delete or update as read at
					// the version it was rebased on.
					readVersion = prev.Version
				}
			}
		}

		txnBytes, err := manifest.EncodeTransaction(cur.transaction(readVersion, uuid))
		if err != nil {
			return fail(err)
		}
		txnName := fmt.Sprintf("%d-%s.txn", readVersion, uuid)
		txnKey := manifest.TransactionsDir + txnName
		written = append(written, txnKey)
		// Unsynced: CreateIfAbsentAfter syncs it with the data files,
		// before the manifest that names it exists (C6).
		if err := blob.WriteUnsynced(ctx, store, txnKey, txnBytes); err != nil {
			return fail(fmt.Errorf("dataset: write transaction %s: %w", manifest.Location(store, txnKey), err))
		}

		m, err := buildManifest(prev, cur, target, txnName, time.Now())
		if err != nil {
			return fail(err)
		}
		if err := checkBuildable(m, fmt.Sprintf("version %d as built", target)); err != nil {
			return fail(err)
		}
		file, err := manifest.EncodeFile(m, txnBytes)
		if err != nil {
			return fail(err)
		}
		key := manifest.Key(scheme, target)
		err = blob.CreateIfAbsentAfter(ctx, store, key, file, cur.syncedAtCommit(txnKey))
		if err == nil {
			removeSuperseded(ctx, store, written, cur, txnKey)
			written = nil
			writeVersionHint(ctx, store, target)
			if m.DataFormat.IsLegacy() && m.Branch == "" {
				writeLegacyLatest(ctx, store, file)
			}
			if ds, err = committedDataset(store, o, bases, key, m); err != nil {
				return permanent(err)
			}
			return nil
		}
		if !errors.Is(err, lancer.ErrConflict) {
			return permanent(fmt.Errorf("dataset: commit version %d: %w", target, err))
		}
		if co.readVersion == 0 && co.createOnly {
			return fail(fmt.Errorf("dataset: create %s: a dataset was created concurrently: %w", store.URI(), lancer.ErrAlreadyExists))
		}
		// Lost the race, so nothing was created: the retry rebases over
		// the winner.
		definite = true
		return &ConflictError{
			Operation:   op.kind.String(),
			ReadVersion: co.readVersion,
			Version:     target,
			Reason:      fmt.Sprintf("version %d was taken by a concurrent commit", target),
			Retryable:   true,
		}
	})
	if err != nil {
		return nil, err
	}
	return ds, nil
}

// group returns the group committer a commit takes turns with
// (CommitOptions.Group), nil for none.
func (co commitOptions) group() *GroupCommitter {
	if co.opts == nil {
		return nil
	}
	return co.opts.Group
}

// preloadTransactions reads into cache the transactions of the versions
// committed after readVersion, so that the attempt that follows, which
// reads them again from the cache, need not. Errors are left to that
// attempt, which meets them again and reports them.
func preloadTransactions(ctx context.Context, store blob.Store, readVersion uint64, cache map[uint64]*manifest.Transaction) {
	e, err := latestManifest(ctx, store)
	if err != nil || readVersion == 0 || e.version <= readVersion {
		return
	}
	_, _ = loadTransactions(ctx, store, readVersion+1, e.version, cache)
}

// latestForCommit opens the latest version, or returns nil when the store
// holds no dataset (which only a creation accepts), and the naming scheme
// the next manifest must use.
func latestForCommit(ctx context.Context, store blob.Store, o OpenOptions, bases *baseStores, co commitOptions) (*Dataset, manifest.ManifestNaming, error) {
	e, err := latestManifest(ctx, store)
	switch {
	case isNotFound(err):
		if co.readVersion != 0 {
			return nil, 0, fmt.Errorf("dataset: commit: the dataset at %s has no versions any more: %w", store.URI(), err)
		}
		return nil, co.naming, nil
	case err != nil:
		return nil, 0, err
	}
	if co.readVersion == 0 && co.createOnly {
		return nil, 0, fmt.Errorf("dataset: create %s: a dataset exists there: %w", store.URI(), lancer.ErrAlreadyExists)
	}
	if co.readVersion > e.version {
		return nil, 0, fmt.Errorf("dataset: commit: read version %d is newer than the latest, %d: %w", co.readVersion, e.version, lancer.ErrCorrupt)
	}
	scheme := manifest.ParseName(e.key[len(manifest.VersionsDir):]).Naming
	// Reuse the read dataset only if it is the whole version: a view from
	// withFragments has the same key and version but fewer fragments.
	if r := co.read; r != nil && r.manifest.Version == e.version && r.manifestKey == e.key && !r.partial {
		return r, scheme, nil
	}
	d, err := openEntry(ctx, store, o, bases, e)
	if err != nil && co.pastCorrupt != nil && errors.Is(err, lancer.ErrCorrupt) {
		// A restore past a damaged latest manifest: the restored version
		// stands in for it, with its number.
		m := co.pastCorrupt.manifest.Clone()
		m.Version = e.version
		return &Dataset{store: store, opts: o, manifest: m, manifestKey: e.key, bases: bases}, scheme, nil
	}
	if err != nil {
		return nil, 0, err
	}
	return d, scheme, nil
}

// committed is a version committed after the read version, with its
// transaction.
type committed struct {
	version uint64
	txn     *manifest.Transaction
}

// loadTransactions returns the transactions of versions [from, to], from
// the cache or their manifests (the inline copy first, else the .txn file).
// A version without one cannot be checked for conflicts, so it fails the
// commit, as in Lance.
func loadTransactions(ctx context.Context, store blob.Store, from, to uint64, cache map[uint64]*manifest.Transaction) ([]committed, error) {
	out := make([]committed, 0, to-from+1)
	for v := from; v <= to; v++ {
		txn, ok := cache[v]
		if !ok {
			e, err := findManifest(ctx, store, v)
			if err != nil {
				return nil, err
			}
			c, err := manifest.ReadFile(ctx, store, e.key, e.size, true)
			if err != nil {
				return nil, err
			}
			if c.Manifest.Version != v {
				return nil, fmt.Errorf("dataset: manifest %s records version %d: %w", manifest.Location(store, e.key), c.Manifest.Version, lancer.ErrCorrupt)
			}
			if c.Transaction == nil {
				return nil, &ConflictError{Version: v, Reason: fmt.Sprintf("version %d records no transaction, so a commit cannot be checked against it", v)}
			}
			txn = c.Transaction
			cache[v] = txn
		}
		out = append(out, committed{version: v, txn: txn})
	}
	return out, nil
}

// committedDataset returns the Dataset of a manifest this process just
// committed, without reading it back.
func committedDataset(store blob.Store, o OpenOptions, bases *baseStores, key string, m *manifest.Manifest) (*Dataset, error) {
	if err := m.Validate(manifest.Location(store, key)); err != nil {
		return nil, err
	}
	o.Version = m.Version
	return &Dataset{store: store, opts: o, manifest: m, manifestKey: key, bases: bases}, nil
}

// writeVersionHint records the latest version in
// _versions/latest_version_hint.json, as Lance does after each commit on a
// file system (on object stores Lance writes none: listing is cheap there
// and the hint would cost a PUT per commit). Readers never trust it, so a
// failure is ignored, and a crash may lose it.
func writeVersionHint(ctx context.Context, store blob.Store, version uint64) {
	if blob.IsObjectStore(store) {
		return
	}
	hint := []byte(`{"version":` + strconv.FormatUint(version, 10) + `}`)
	// A hint need not survive a crash (a stale or missing one costs a
	// listing), so on local disk it is written without the fsyncs that
	// would hold up the commit's answer.
	_ = blob.WriteUnsynced(ctx, store, versionHintKey, hint)
}

// legacyLatestKey is where Lance releases before 0.9 (vectordb 0.1) kept a
// copy of the latest manifest, which they open instead of listing
// _versions/.
const legacyLatestKey = "_latest.manifest"

// writeLegacyLatest refreshes the copy of the latest manifest of a dataset
// whose root holds one (only the releases that read it wrote it), so that
// those releases see the version just committed rather than their own last
// one. Like the version hint it follows the commit: the version is durable
// without it, and a failure leaves old readers at an older version, never
// at a wrong one; so it is ignored.
func writeLegacyLatest(ctx context.Context, store blob.Store, file []byte) {
	if _, err := store.Stat(ctx, legacyLatestKey); err != nil {
		return
	}
	_ = store.Write(ctx, legacyLatestKey, file)
}

// syncedAtCommit lists what commit must make durable before the manifest
// naming it may exist (C6): op's new data files (its fragments', its
// merge's and its data replacements'), which writeFragments may have
// published unsynced, its index files and the transaction file
// txnKey. Index files are written synced, but only the folder holding
// each is: _indices/ itself, which holds the segment's new folder, is
// synced when the files are named here (a local store syncs their
// folders up to the root). Deletion files are written synced, with
// their folder, as are data files of other bases (their stores sync
// each write); syncing a file already synced costs little.
func (op *operation) syncedAtCommit(txnKey string) []string {
	var out []string
	for _, f := range op.fragments {
		for _, df := range f.Files {
			if df.BaseID == nil {
				out = append(out, dataDir+df.Path)
			}
		}
	}
	out = append(out, op.indexFiles...)
	for _, g := range op.replacements {
		if g.NewFile != nil && g.NewFile.BaseID == nil {
			out = append(out, dataDir+g.NewFile.Path)
		}
	}
	if op.merge != nil {
		out = append(out, op.merge.written...)
	}
	return append(out, txnKey)
}

// writtenFiles lists the files written for op before its commit: its data
// files and deletion files, keys relative to the dataset root.
func (op *operation) writtenFiles() []string {
	var out []string
	for _, f := range op.fragments {
		for _, df := range f.Files {
			if df.BaseID == nil {
				out = append(out, dataDir+df.Path)
			}
		}
	}
	if op.del != nil {
		out = append(out, op.del.written...)
	}
	out = append(out, op.indexFiles...)
	for _, g := range op.replacements {
		if g.NewFile != nil && g.NewFile.BaseID == nil {
			out = append(out, dataDir+g.NewFile.Path)
		}
	}
	if op.merge != nil {
		// Only the new files: the fragments' other files are the
		// dataset's.
		out = append(out, op.merge.written...)
	}
	return out
}

// removeSuperseded deletes, after a successful commit, the files earlier
// attempts wrote that the committed version does not reference: the
// transaction files of attempts read at other versions and deletion files
// replaced while rebasing. Failures are ignored: the files are garbage
// either way.
func removeSuperseded(ctx context.Context, store blob.Store, written []string, op *operation, txnKey string) {
	keep := map[string]bool{txnKey: true}
	keepDeletions := func(frags []*manifest.Fragment) {
		for _, u := range frags {
			if u.DeletionFile == nil || u.DeletionFile.BaseID != nil {
				continue
			}
			keep[u.DeletionFile.Key(u.ID)] = true
		}
	}
	if op.del != nil {
		keepDeletions(op.del.updated)
	}
	if op.merge != nil {
		keepDeletions(op.merge.fragments)
	}
	for _, key := range written {
		if !keep[key] && (strings.HasPrefix(key, manifest.TransactionsDir) || strings.HasPrefix(key, "_deletions/")) {
			_ = store.Delete(context.WithoutCancel(ctx), key)
		}
	}
}
