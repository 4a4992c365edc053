package dataset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// manifestEntry is one committed manifest found by listing.
type manifestEntry struct {
	version uint64
	key     string
	size    int64
}

// scanVersions lists _versions/ of store in lexical order and calls visit
// with each committed (not detached) manifest, stopping when visit returns
// false. It fails on a directory that mixes V1 and V2 names, as far as the
// listing got.
func scanVersions(ctx context.Context, store blob.Store, visit func(manifestEntry, manifest.ManifestNaming) bool) error {
	var (
		scheme manifest.ManifestNaming
		seen   bool
	)
	for info, err := range store.List(ctx, manifest.VersionsDir) {
		if err != nil {
			return fmt.Errorf("dataset: list %s: %w", manifest.Location(store, manifest.VersionsDir), err)
		}
		name := manifest.ParseName(strings.TrimPrefix(info.Key, manifest.VersionsDir))
		if !name.OK {
			continue
		}
		if seen && name.Naming != scheme {
			return fmt.Errorf("dataset: %s mixes %s and %s manifest names (%s): %w",
				manifest.Location(store, manifest.VersionsDir), scheme, name.Naming, info.Key, lancer.ErrCorrupt)
		}
		scheme, seen = name.Naming, true
		if name.Detached {
			continue
		}
		if !visit(manifestEntry{version: name.Version, key: info.Key, size: info.Size}, scheme) {
			return nil
		}
	}
	return nil
}

// listManifests returns every committed manifest of store, ascending by
// version.
func listManifests(ctx context.Context, store blob.Store) ([]manifestEntry, error) {
	var entries []manifestEntry
	err := scanVersions(ctx, store, func(e manifestEntry, _ manifest.ManifestNaming) bool {
		entries = append(entries, e)
		return true
	})
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("dataset: no manifest in %s: %w", manifest.Location(store, manifest.VersionsDir), lancer.ErrNotFound)
	}
	slices.SortFunc(entries, func(a, b manifestEntry) int {
		switch {
		case a.version < b.version:
			return -1
		case a.version > b.version:
			return 1
		}
		return 0
	})
	return entries, nil
}

// latestManifest finds the newest committed manifest. With V2 names the
// first one in lexical order is the newest, so the listing stops there; with
// V1 names every entry is looked at. The version hint file is not consulted:
// it may be stale, and the listing is the truth.
func latestManifest(ctx context.Context, store blob.Store) (manifestEntry, error) {
	var (
		latest manifestEntry
		found  bool
	)
	err := scanVersions(ctx, store, func(e manifestEntry, s manifest.ManifestNaming) bool {
		if !found || e.version > latest.version {
			latest, found = e, true
		}
		return s != manifest.ManifestNamingV2
	})
	if err != nil {
		return manifestEntry{}, err
	}
	if !found {
		return manifestEntry{}, fmt.Errorf("dataset: no manifest in %s: %w", manifest.Location(store, manifest.VersionsDir), lancer.ErrNotFound)
	}
	return latest, nil
}

// findManifest locates version v's manifest: the V2 name first, then V1.
func findManifest(ctx context.Context, store blob.Store, v uint64) (manifestEntry, error) {
	if v == 0 || v&manifest.DetachedVersionBit != 0 {
		return manifestEntry{}, fmt.Errorf("dataset: version %d is not a committed version number: %w", v, lancer.ErrInvalidArgument)
	}
	for _, s := range []manifest.ManifestNaming{manifest.ManifestNamingV2, manifest.ManifestNamingV1} {
		key := manifest.Key(s, v)
		info, err := store.Stat(ctx, key)
		if err == nil {
			return manifestEntry{version: v, key: key, size: info.Size}, nil
		}
		if !isNotFound(err) {
			return manifestEntry{}, fmt.Errorf("dataset: version %d: %w", v, err)
		}
	}
	return manifestEntry{}, fmt.Errorf("dataset: version %d of %s: %w", v, store.URI(), ErrNoSuchVersion)
}

// ErrNoSuchVersion: the dataset has no manifest of the version asked for
// (never committed, or removed by a cleanup). A dataset with no versions at
// all is a plain lancer.ErrNotFound.
var ErrNoSuchVersion = fmt.Errorf("no such version: %w", lancer.ErrNotFound)

func isNotFound(err error) bool { return errors.Is(err, lancer.ErrNotFound) }

// ListVersions returns the committed versions of the dataset rooted at store,
// ascending. Detached versions are not part of the history and are left out.
// It lists _versions/ but reads no manifest. A store without manifests is an
// error wrapping lancer.ErrNotFound; a _versions/ directory mixing V1 and V2
// manifest names one wrapping lancer.ErrCorrupt.
func ListVersions(ctx context.Context, store blob.Store) ([]uint64, error) {
	entries, err := listManifests(ctx, store)
	if err != nil {
		return nil, err
	}
	versions := make([]uint64, len(entries))
	for i, e := range entries {
		versions[i] = e.version
	}
	return versions, nil
}

// LatestVersion returns the newest committed version of the dataset rooted
// at store, or an error wrapping lancer.ErrNotFound if it has none. It lists
// _versions/ but does not read the manifest.
func LatestVersion(ctx context.Context, store blob.Store) (uint64, error) {
	e, err := latestManifest(ctx, store)
	if err != nil {
		return 0, err
	}
	return e.version, nil
}

// LatestVersionSince is LatestVersion for a caller that knows a version
// that was the newest a moment ago (known, 0 if none): on stores other
// than object stores it avoids listing _versions/, which on a local disk
// reads every entry of a directory that grows by one per commit. It checks
// that known's manifest is still there and looks for the manifests after
// it one by one: commits create the newest version plus one, atomically,
// so new versions follow known without a gap, until a cleanup removes old
// ones. A cleanup may keep known (tagged, or a branch's fork point) and
// remove the versions after it but the newest, so where the probes stop,
// the version hint file, which every commit on a file system rewrites, is
// read: a newer version it names (whose manifest exists) continues the
// search. When known's manifest is gone (cleaned up, or the dataset
// dropped and written again), the hint names a version that does not
// exist, or more than a few versions were committed since, it lists as
// LatestVersion does.
//
// A writer that writes no hint (Lance on object stores; hand-made copies)
// followed by a cleanup that keeps known but removes the version after it
// can make the answer stale; callers that keep calling it should list now
// and then (the server does every second). On object stores it is
// LatestVersion: one listing request costs less than the probes.
func LatestVersionSince(ctx context.Context, store blob.Store, known uint64) (uint64, error) {
	if known == 0 || known&manifest.DetachedVersionBit != 0 || blob.IsObjectStore(store) {
		return LatestVersion(ctx, store)
	}
	exists := func(s manifest.ManifestNaming, v uint64) (bool, error) {
		_, err := store.Stat(ctx, manifest.Key(s, v))
		switch {
		case err == nil:
			return true, nil
		case isNotFound(err):
			return false, nil
		}
		return false, fmt.Errorf("dataset: version %d: %w", v, err)
	}
	e, err := findManifest(ctx, store, known)
	switch {
	case isNotFound(err):
		return LatestVersion(ctx, store)
	case err != nil:
		return 0, err
	}
	scheme := manifest.ManifestNamingV1
	if e.key == manifest.Key(manifest.ManifestNamingV2, known) {
		scheme = manifest.ManifestNamingV2
	}
	// probe returns the last version of the run from v on, or 0 when the
	// run is longer than a few versions.
	const maxProbes = 8
	probe := func(v uint64) (uint64, error) {
		for end := v + maxProbes; v < end; v++ {
			ok, err := exists(scheme, v+1)
			if err != nil || !ok {
				return v, err
			}
		}
		return 0, nil
	}
	v, err := probe(known)
	if err != nil || v == 0 {
		if err != nil {
			return 0, err
		}
		return LatestVersion(ctx, store)
	}
	if hint, ok := readVersionHint(ctx, store); ok && hint > v {
		ok, err := exists(scheme, hint)
		switch {
		case err != nil:
			return 0, err
		case !ok:
			return LatestVersion(ctx, store)
		}
		if v, err = probe(hint); err != nil {
			return 0, err
		}
		if v == 0 {
			return LatestVersion(ctx, store)
		}
	}
	return v, nil
}

// readVersionHint reads _versions/latest_version_hint.json; ok is false
// when there is none or it is not {"version": N}.
func readVersionHint(ctx context.Context, store blob.Store) (uint64, bool) {
	info, err := store.Stat(ctx, versionHintKey)
	if err != nil || info.Size > 256 {
		return 0, false
	}
	b, err := store.ReadRange(ctx, versionHintKey, 0, info.Size)
	if err != nil {
		return 0, false
	}
	var h struct {
		Version *uint64 `json:"version"`
	}
	if json.Unmarshal(b, &h) != nil || h.Version == nil {
		return 0, false
	}
	return *h.Version, true
}

// VersionInfo describes one version of a dataset.
type VersionInfo struct {
	// Version is the version number.
	Version uint64
	// Timestamp is the commit time (the Unix epoch if the manifest records
	// none, as Lance reports it).
	Timestamp time.Time
	// Metadata holds the totals LanceDB's listVersions reports, under its
	// keys: total_rows, total_fragments, total_data_files, total_files_size,
	// total_deletion_files, total_deletion_file_rows, total_data_file_rows
	// (see Summary).
	Metadata map[string]string
	// Operation names the transaction that made the version, as Lance names
	// it: "Overwrite" (also dataset creation), "Append", "Delete",
	// "Update", "Merge" (add columns), "Project" (drop or rename columns),
	// "CreateIndex", "ReserveFragments", "Rewrite" (compaction), "Restore",
	// "Clone" (branch creation), ... It is "" when the version records no
	// transaction or its transaction file was cleaned up.
	Operation string
	// Properties are the transaction's properties (lancer records a merge's
	// source and base there); nil when there are none.
	Properties map[string]string
	// Err, when not nil, says why the version's manifest could not be read
	// (it wraps lancer.ErrCorrupt); the fields above but Version are then
	// zero.
	Err error
}

// Versions returns every committed version under this dataset's root,
// ascending, reading each version's manifest and transaction (History).
// For a branch root that is the branch's own versions.
func (d *Dataset) Versions(ctx context.Context) ([]VersionInfo, error) {
	return History(ctx, d.store)
}

// History returns every committed version of the dataset rooted at store,
// ascending, reading each version's manifest and transaction. It needs no
// version to open: a version whose manifest is damaged is listed with Err
// (wrapping lancer.ErrCorrupt) and its other fields zero, so one damaged
// manifest does not hide the history a user rolls back with (Restore of an
// older version). Failures to reach the store still fail the call.
func History(ctx context.Context, store blob.Store) ([]VersionInfo, error) {
	entries, err := listManifests(ctx, store)
	if err != nil {
		return nil, err
	}
	out := make([]VersionInfo, 0, len(entries))
	for _, e := range entries {
		c, err := manifest.ReadFile(ctx, store, e.key, e.size, true)
		if err == nil && c.Manifest.Version != e.version {
			err = fmt.Errorf("dataset: manifest %s records version %d: %w",
				manifest.Location(store, e.key), c.Manifest.Version, lancer.ErrCorrupt)
		}
		switch {
		case errors.Is(err, lancer.ErrCorrupt):
			out = append(out, VersionInfo{Version: e.version, Err: err})
			continue
		case err != nil:
			return nil, err
		}
		var props map[string]string
		if c.Transaction != nil {
			props = c.Transaction.Properties
		}
		out = append(out, VersionInfo{
			Version:    e.version,
			Timestamp:  c.Manifest.Timestamp,
			Metadata:   c.Manifest.Summary().Map(),
			Operation:  manifest.OperationName(c.Transaction),
			Properties: props,
		})
	}
	return out, nil
}
