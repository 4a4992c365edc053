package dataset

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// Defaults of CleanupOptions, Lance's.
const (
	// DefaultCleanupOlderThan is the age past which versions are removed.
	DefaultCleanupOlderThan = 7 * 24 * time.Hour
	// unverifiedFileAge is the age past which a file no version references
	// is taken for the garbage of a failed commit rather than the work of a
	// commit in flight (Lance's UNVERIFIED_THRESHOLD_DAYS: a week).
	unverifiedFileAge = 7 * 24 * time.Hour
	// MinTempFileAge is the least age at which Cleanup takes a temporary
	// file (blob.ListTemp: a LocalStore writer's .lancer-tmp-*) for the
	// leftover of a killed writer; older than OlderThan is also required.
	// What keeps a live writer's file is its lock, not its age: a writer
	// fed slowly may leave it unwritten for hours, and ListTemp yields no
	// file a live writer holds. The age is the guard where the lock is
	// not: a file just created and not yet locked, and every file where
	// flock is missing (Windows) or not enforced (some network
	// filesystems), where a write stalled this long mid-object would fail.
	// A writer killed leaves its file to no one else.
	MinTempFileAge = time.Hour
)

// The entries of a root where package branch keeps its refs: each
// branch's dataset root under tree/<name>/, branch and tag files under
// _refs/. Cleanup looks for them only to refuse a root whose refs it
// cannot see.
const (
	branchTreeDir = "tree/"
	refsDir       = "_refs/"
)

// holdsRef reports whether key, relative to a dataset root, is a file of a
// branch or tag of that root (a branch's dataset root, a branch or tag file).
func holdsRef(key string) bool {
	return strings.HasPrefix(key, branchTreeDir) || strings.HasPrefix(key, refsDir)
}

// CleanupOptions configures Cleanup. A nil *CleanupOptions means all
// defaults.
type CleanupOptions struct {
	// OlderThan: versions committed before now-OlderThan are removed,
	// except the latest and those in KeepVersions. Default
	// DefaultCleanupOlderThan (Lance's 7 days); negative means every
	// version but the latest (and the kept ones).
	OlderThan time.Duration
	// KeepVersions are versions never removed, whatever their age (the
	// caller's tagged versions).
	KeepVersions []uint64
	// KeepFiles reports files (keys relative to the dataset root, e.g.
	// "data/x.lance") that must stay although no version of this dataset
	// references them: files other datasets use through base paths.
	KeepFiles func(key string) bool
	// RefFiles reports the files of this root (keys as for KeepFiles)
	// that the retained versions of its branches reference (a branch's
	// manifests name its parent's files through a base path), or, on a
	// branch's root, of its parent and sibling branches. Cleanup keeps
	// them like KeepFiles. Cleanup cannot see branches or tags, so on a
	// root that holds any (a tree/ or _refs/ entry) it refuses to run
	// unless RefFiles is set: only package branch, whose Cleanup computes
	// it and passes the tagged versions in KeepVersions, sets it.
	// Default nil.
	RefFiles func(key string) bool
	// DeleteUnverified also removes unreferenced files younger than a
	// week (Lance's delete_unverified). Default false: a recent
	// file no version references may belong to a commit in flight; set it
	// only when no one else writes to the dataset.
	DeleteUnverified bool
	// Now returns the current time. Default time.Now.
	Now func() time.Time
	// DryRun removes nothing: the stats say what would go.
	DryRun bool
}

// CleanupStats counts what Cleanup removed (or, with DryRun, would
// remove): versions (their manifests), other files, and the bytes of both.
type CleanupStats struct {
	VersionsRemoved, FilesRemoved int
	// TempFilesRemoved is how many of FilesRemoved were temporary files
	// killed writers left (see MinTempFileAge).
	TempFilesRemoved int
	BytesRemoved     int64
}

// cleanupRefs are the files a set of manifests references.
type cleanupRefs struct {
	files   map[string]bool // data, deletion and transaction files, by key
	indices map[string]bool // index segment uuids
}

func newCleanupRefs() cleanupRefs {
	return cleanupRefs{files: map[string]bool{}, indices: map[string]bool{}}
}

func (r cleanupRefs) add(m *manifest.Manifest) {
	for _, f := range m.Fragments {
		for _, df := range f.Files {
			// Files under a base path belong to another dataset, which
			// cleans them.
			if df.BaseID == nil {
				r.files[dataDir+df.Path] = true
			}
		}
		for i := range f.Overlays {
			// An overlay's data file holds the cells' current values.
			if df := &f.Overlays[i].File; df.BaseID == nil {
				r.files[dataDir+df.Path] = true
			}
		}
		if f.DeletionFile != nil && f.DeletionFile.BaseID == nil {
			r.files[f.DeletionFile.Key(f.ID)] = true
		}
	}
	if m.TransactionFile != "" {
		r.files[manifest.TransactionsDir+m.TransactionFile] = true
	}
	for _, ix := range m.Indices {
		if ix.BaseID == nil {
			r.indices[ix.UUID] = true
		}
	}
}

// Cleanup removes old versions of the dataset rooted at store and the files
// only they referenced, as Lance's cleanup_old_versions. It cleans one
// dataset root that no branch or tag reads: on a root holding refs (a
// tree/ or _refs/ entry) it removes nothing and returns an error wrapping
// lancer.ErrInvalidArgument unless opts.RefFiles says what the branches
// reference; branch.Cleanup (and the table handle's Cleanup) is the call
// that cleans such a root, keeping its tagged versions, and its branches.
// The rules:
//
//   - a version is removed if it was committed before now-OlderThan, unless
//     it is the latest or in KeepVersions;
//   - a data file (data/*.lance), deletion file (_deletions/*), transaction
//     file (_transactions/*.txn) or index directory (_indices/<uuid>/) is
//     removed if no retained version references it and neither KeepFiles
//     nor RefFiles keeps it, provided that a removed version referenced it, or it is
//     older than a week, or DeleteUnverified is set (the garbage
//     of failed and crashed commits); so are leftover temporary manifests;
//   - an unreferenced file written after the oldest retained version was
//     committed is never taken for garbage: it may belong to a commit in
//     flight. (Lance does not look at such files at all, so the files of
//     removed versions newer than a kept old version wait for the unverified
//     age; lancer removes them with their versions.)
//   - only keys manifest.OwnKey accepts are considered: the files of a dataset root
//     nested in this one's folders are never this one's;
//   - a temporary file a killed writer left (blob.ListTemp) in those
//     folders or in _refs/ is removed once older than both OlderThan and
//     MinTempFileAge; it counts in FilesRemoved and TempFilesRemoved. A
//     live writer's is locked and never listed, however old.
//
// Every manifest is read before anything is removed; if one cannot be read
// nothing is removed and the error (naming the file) is returned. Manifests
// of removed versions are deleted first, oldest first, then the files: a
// crash in between leaves only unreferenced files, which a later Cleanup
// removes once old enough. Files other than those listed (refs, branches
// under tree/, the version hint) are never touched, nor is a file that
// KeepFiles or RefFiles keeps. Cleanup must not run
// concurrently with itself; concurrent commits are safe, as in Lance, except
// a restore of a version being removed.
func Cleanup(ctx context.Context, store blob.Store, opts *CleanupOptions) (CleanupStats, error) {
	var o CleanupOptions
	if opts != nil {
		o = *opts
	}
	if o.OlderThan == 0 {
		o.OlderThan = DefaultCleanupOlderThan
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	now := o.Now()
	cutoff := now.Add(-max(o.OlderThan, 0))
	unverifiedCutoff := now.Add(-unverifiedFileAge)

	entries, err := listManifests(ctx, store)
	if err != nil {
		return CleanupStats{}, err
	}
	latest := entries[len(entries)-1].version
	var (
		referenced = newCleanupRefs() // by retained versions
		verified   = newCleanupRefs() // by removed versions
		removed    []manifestEntry
		oldestKept time.Time
	)
	for _, e := range entries {
		c, err := manifest.ReadFile(ctx, store, e.key, e.size, false)
		if err != nil {
			return CleanupStats{}, fmt.Errorf("dataset: cleanup: %w", err)
		}
		m := c.Manifest
		if (m.ReaderFeatureFlags|m.WriterFeatureFlags)&manifest.FlagManagedBlobs != 0 {
			// Managed blob objects outlive the data files that name them
			// and are live while any protected snapshot references them
			// (docs/spec/managed-blobs.md §3); lancer's cleanup ties a
			// sidecar to its data file and would delete live objects.
			// Any version, not only the latest: a retained old version
			// may be the last one referencing an object.
			return CleanupStats{}, fmt.Errorf("dataset: cleanup: manifest %s sets managed_blobs, whose objects lancer's cleanup cannot track: %w",
				manifest.Location(store, e.key), lancer.ErrUnsupported)
		}
		if e.version == latest {
			// Removing files is a write: a writer flag lancer does not
			// know may mean files it cannot see the references to (the
			// spec's rule: refuse any write). ReadFile refused the
			// reader flags already.
			if err := checkWritableManifest(m, manifest.Location(store, e.key)); err != nil {
				return CleanupStats{}, fmt.Errorf("dataset: cleanup: %w", err)
			}
		}
		keep := e.version == latest || slices.Contains(o.KeepVersions, e.version) || !m.Timestamp.Before(cutoff)
		if keep {
			referenced.add(m)
			if oldestKept.IsZero() || m.Timestamp.Before(oldestKept) {
				oldestKept = m.Timestamp
			}
		} else {
			verified.add(m)
			removed = append(removed, e)
		}
	}

	keep := func(key string) bool {
		return (o.KeepFiles != nil && o.KeepFiles(key)) || (o.RefFiles != nil && o.RefFiles(key))
	}
	// Decide on every other file before removing anything.
	type victim struct {
		key  string
		size int64
		temp bool // a killed writer's temporary file
	}
	var victims []victim
	for info, err := range store.List(ctx, "") {
		if err != nil {
			return CleanupStats{}, fmt.Errorf("dataset: cleanup: list %s: %w", store.URI(), err)
		}
		if o.RefFiles == nil && holdsRef(info.Key) {
			// A branch's manifests may name this root's files, which no
			// manifest read here references; a tag keeps a version that
			// no option here names.
			return CleanupStats{}, fmt.Errorf("dataset: cleanup: %s holds branches or tags (%s), which may read its files: "+
				"clean it with branch.Cleanup or the table handle's Cleanup: %w",
				store.URI(), info.Key, lancer.ErrInvalidArgument)
		}
		// A file no version references that was written after the oldest
		// retained version may belong to a commit in flight (Lance lists
		// only older files); a store that reports no time gives no age to
		// go by.
		unverified := info.ModTime.Before(oldestKept) &&
			(o.DeleteUnverified || (!info.ModTime.IsZero() && info.ModTime.Before(unverifiedCutoff)))
		if manifest.OwnKey(info.Key) && cleanupRemovable(info.Key, unverified, referenced, verified) && !keep(info.Key) {
			victims = append(victims, victim{info.Key, info.Size, false})
		}
	}
	// The temporary files of killed writers, which List does not show: in
	// the dataset's own folders or its refs, older than the versions being
	// removed and than MinTempFileAge.
	tempCutoff := now.Add(-max(o.OlderThan, MinTempFileAge))
	for info, err := range blob.ListTemp(ctx, store, "") {
		if err != nil {
			return CleanupStats{}, fmt.Errorf("dataset: cleanup: list temporary files of %s: %w", store.URI(), err)
		}
		own := manifest.OwnKey(info.Key) || strings.HasPrefix(info.Key, "_refs/")
		if own && !info.ModTime.IsZero() && info.ModTime.Before(tempCutoff) && !keep(info.Key) {
			victims = append(victims, victim{info.Key, info.Size, true})
		}
	}

	var stats CleanupStats
	for _, e := range removed {
		if o.DryRun {
			stats.VersionsRemoved++
			stats.BytesRemoved += e.size
			continue
		}
		if err := store.Delete(ctx, e.key); err != nil && !isNotFound(err) {
			return stats, fmt.Errorf("dataset: cleanup: remove version %d (%s): %w", e.version, manifest.Location(store, e.key), err)
		}
		stats.VersionsRemoved++
		stats.BytesRemoved += e.size
	}
	for _, v := range victims {
		if !o.DryRun {
			if err := store.Delete(ctx, v.key); err != nil && !isNotFound(err) {
				return stats, fmt.Errorf("dataset: cleanup: remove %s: %w", manifest.Location(store, v.key), err)
			}
		}
		stats.FilesRemoved++
		stats.BytesRemoved += v.size
		if v.temp {
			stats.TempFilesRemoved++
		}
	}
	return stats, nil
}

// cleanupRemovable reports whether Cleanup may remove the file at key,
// following Lance's path_if_not_referenced: never a file a retained version
// references; a file a removed version references; an unreferenced one
// only when unverified (old enough, or the caller says no commit is in
// flight). Only the kinds of file a commit writes are considered.
func cleanupRemovable(key string, unverified bool, referenced, verified cleanupRefs) bool {
	dir, rest, _ := strings.Cut(key, "/")
	switch dir {
	case "_versions":
		// A temporary manifest left by an interrupted commit.
		return strings.HasPrefix(rest, ".tmp") && unverified
	case "_indices":
		uuid, _, ok := strings.Cut(rest, "/")
		switch {
		case !ok || referenced.indices[uuid]:
			return false
		case verified.indices[uuid]:
			return true
		}
		return unverified
	case "data":
		switch {
		case path.Ext(key) == ".lance":
		case path.Ext(key) == ".blob" && strings.Count(rest, "/") == 1:
			// A blob v2 sidecar, data/<file>/<id>.blob, lives and dies
			// with its data file data/<file>.lance.
			key = path.Dir(key) + ".lance"
		default:
			return false
		}
	case "_deletions":
		if ext := path.Ext(key); ext != ".arrow" && ext != ".bin" {
			return false
		}
	case "_transactions":
		if path.Ext(key) != ".txn" {
			return false
		}
	default:
		return false
	}
	switch {
	case referenced.files[key]:
		return false
	case verified.files[key]:
		return true
	}
	return unverified
}
