package dataset

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
)

// CheckOptions configures Check. A nil *CheckOptions means all defaults:
// the latest version, metadata and file footers only.
type CheckOptions struct {
	// Version is the version to check. Default 0: the latest. Ignored
	// with AllVersions.
	Version uint64
	// AllVersions checks every committed version instead of one.
	AllVersions bool
	// Deep also reads every row of every fragment (all columns, every
	// page), so that a data file whose pages do not decode is found too.
	// Without it Check reads manifests, data file footers and metadata,
	// deletion files and row id sequences, never a data page.
	Deep bool
	// ResolveBase and StorageOptions reach the files recorded under base
	// paths, as OpenOptions' fields of the same names (same defaults).
	ResolveBase    func(ctx context.Context, bp manifest.BasePath) (blob.Store, error)
	StorageOptions map[string]string
}

// Violation is one broken invariant of the dataset contract (doc.go, D1
// and on; package branch adds B1 and on).
type Violation struct {
	// Invariant is the number of the broken invariant, e.g. "D4".
	Invariant string `json:"invariant"`
	// Version is the version whose manifest is at fault; 0 when the fault
	// is not one version's (a naming clash in _versions/, a ref).
	Version uint64 `json:"version,omitempty"`
	// Fragment is the fragment at fault, if one is.
	Fragment *uint64 `json:"fragment,omitempty"`
	// Field is the field id at fault, if one is.
	Field *int32 `json:"field,omitempty"`
	// File is the location (store URI and key) of the file at fault, if
	// one is.
	File string `json:"file,omitempty"`
	// Message says what is wrong.
	Message string `json:"message"`
}

// String formats the violation on one line: "D4 version 3 fragment 1: ...".
func (v Violation) String() string {
	var b strings.Builder
	b.WriteString(v.Invariant)
	if v.Version != 0 {
		fmt.Fprintf(&b, " version %d", v.Version)
	}
	if v.Fragment != nil {
		fmt.Fprintf(&b, " fragment %d", *v.Fragment)
	}
	if v.Field != nil {
		fmt.Fprintf(&b, " field %d", *v.Field)
	}
	b.WriteString(": ")
	b.WriteString(v.Message)
	if v.File != "" && !strings.Contains(v.Message, v.File) {
		b.WriteString(" (" + v.File + ")")
	}
	return b.String()
}

// CheckReport is what Check found.
type CheckReport struct {
	// Root is the URI of the dataset root checked.
	Root string `json:"root"`
	// Versions are the versions checked, ascending.
	Versions []uint64 `json:"versions"`
	// Violations are the broken invariants, in the order found; none for a
	// valid dataset.
	Violations []Violation `json:"violations"`
}

// OK reports whether the check found no violation.
func (r *CheckReport) OK() bool { return len(r.Violations) == 0 }

// Check verifies the invariants D1-D12 of the package doc on one version of
// the dataset rooted at store (opts.Version, default the latest) or on every
// version (opts.AllVersions), and reports each violation with its
// invariant's number and the file, fragment or field at fault. It reads
// what a scan's planning reads (manifests, data file footers and metadata,
// deletion files, row id sequences, index directory listings), one file at
// a time, each through the bounded decoders readers use; opts.Deep adds a
// full scan. The error is for failures to reach the data (I/O, a
// canceled ctx, a store without any manifest: lancer.ErrNotFound), never
// for what the data says: malformed or missing files are violations.
func Check(ctx context.Context, store blob.Store, opts *CheckOptions) (*CheckReport, error) {
	var o CheckOptions
	if opts != nil {
		o = *opts
	}
	open := (&OpenOptions{ResolveBase: o.ResolveBase, StorageOptions: o.StorageOptions}).withDefaults()
	c := &checker{
		store:  store,
		open:   open,
		bases:  &baseStores{resolve: open.ResolveBase, stores: map[string]blob.Store{}},
		deep:   o.Deep,
		report: &CheckReport{Root: store.URI()},
	}
	entries, err := c.listVersions(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case o.AllVersions:
	case o.Version != 0:
		i := slices.IndexFunc(entries, func(e manifestEntry) bool { return e.version == o.Version })
		if i < 0 {
			return nil, fmt.Errorf("dataset: check version %d of %s: %w", o.Version, store.URI(), lancer.ErrNotFound)
		}
		entries = entries[i : i+1]
	default:
		entries = entries[len(entries)-1:]
	}
	for _, e := range entries {
		c.report.Versions = append(c.report.Versions, e.version)
		if err := c.checkVersion(ctx, e); err != nil {
			return nil, err
		}
	}
	return c.report, nil
}

// checker carries one Check's state.
type checker struct {
	store  blob.Store
	open   OpenOptions
	bases  *baseStores
	deep   bool
	report *CheckReport
}

// site is where a finding is reported from: the version and, when set,
// the fragment.
type site struct {
	c        *checker
	version  uint64
	fragment *uint64
}

func (v site) add(invariant, file string, field *int32, format string, args ...any) {
	v.c.report.Violations = append(v.c.report.Violations, Violation{
		Invariant: invariant, Version: v.version, Fragment: v.fragment, Field: field, File: file,
		Message: fmt.Sprintf(format, args...),
	})
}

func (v site) inFragment(id uint64) site {
	v.fragment = &id
	return v
}

// isFinding reports whether err is about the data (a malformed, missing or
// unsupported file) rather than a failure to read it.
func isFinding(err error) bool {
	return errors.Is(err, lancer.ErrCorrupt) || errors.Is(err, lancer.ErrNotFound) || errors.Is(err, lancer.ErrUnsupported)
}

// listVersions lists the committed manifests, ascending, reporting D2 for a
// directory that mixes naming schemes or names one version twice, and
// going on where scanVersions stops.
func (c *checker) listVersions(ctx context.Context) ([]manifestEntry, error) {
	var (
		entries []manifestEntry
		first   = map[manifest.ManifestNaming]string{}
	)
	for info, err := range c.store.List(ctx, manifest.VersionsDir) {
		if err != nil {
			return nil, fmt.Errorf("dataset: list %s: %w", manifest.Location(c.store, manifest.VersionsDir), err)
		}
		name := manifest.ParseName(strings.TrimPrefix(info.Key, manifest.VersionsDir))
		if !name.OK {
			continue
		}
		if _, ok := first[name.Naming]; !ok {
			first[name.Naming] = info.Key
		}
		if !name.Detached {
			entries = append(entries, manifestEntry{version: name.Version, key: info.Key, size: info.Size})
		}
	}
	if len(first) > 1 {
		site{c: c}.add("D2", manifest.Location(c.store, manifest.VersionsDir), nil,
			"_versions/ mixes V1 and V2 manifest names (%s and %s)", first[manifest.ManifestNamingV1], first[manifest.ManifestNamingV2])
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("dataset: no manifest in %s: %w", manifest.Location(c.store, manifest.VersionsDir), lancer.ErrNotFound)
	}
	slices.SortFunc(entries, func(a, b manifestEntry) int {
		return cmp.Or(cmp.Compare(a.version, b.version), strings.Compare(a.key, b.key))
	})
	for i := 1; i < len(entries); i++ {
		if entries[i].version == entries[i-1].version {
			site{c: c, version: entries[i].version}.add("D2", manifest.Location(c.store, entries[i].key), nil,
				"version %d has two manifests, %s and %s", entries[i].version, entries[i-1].key, entries[i].key)
		}
	}
	return slices.CompactFunc(entries, func(a, b manifestEntry) bool { return a.version == b.version }), nil
}

// checkVersion checks one version's manifest and everything it references.
func (c *checker) checkVersion(ctx context.Context, e manifestEntry) error {
	at := site{c: c, version: e.version}
	where := manifest.Location(c.store, e.key)
	content, err := manifest.ReadFile(ctx, c.store, e.key, e.size, false)
	if err != nil {
		if !isFinding(err) {
			return err
		}
		at.add("D1", where, nil, "the manifest does not decode: %v", err)
		return nil
	}
	m := content.Manifest
	if m.Version != e.version {
		at.add("D2", where, nil, "the manifest named for version %d records version %d", e.version, m.Version)
	}
	d := &Dataset{store: c.store, opts: c.open, manifest: m, manifestKey: e.key, bases: c.bases}
	c.checkFlags(at, where, m)
	// Open reads a manifest that lists a fragment id twice, as Lance does,
	// but nothing can be committed on it (checkBuildable).
	for _, id := range m.DuplicateFragmentIDs() {
		at.add("D1", where, nil, "fragment id %d is listed twice: readers scan each entry (their row addresses collide) and commits on this version are refused; restore an earlier version", id)
	}
	if m.TransactionFile != "" {
		if err := c.checkExists(ctx, at, c.store, manifest.TransactionsDir+m.TransactionFile, 0, "transaction file"); err != nil {
			return err
		}
	}
	ids := newRowIDCheck()
	for _, f := range m.Fragments {
		if err := c.checkFragment(ctx, at.inFragment(f.ID), d, f, ids); err != nil {
			return err
		}
	}
	c.checkFragReuse(at, where, m)
	return c.checkIndices(ctx, at, d)
}

// checkFragReuse checks D11: the fragment reuse index agrees with the
// version's fragments and feature flags.
func (c *checker) checkFragReuse(at site, where string, m *manifest.Manifest) {
	present, tagged := m.FragReuseEntry()
	if !present {
		return
	}
	dir := indicesDir
	for _, ix := range m.Indices {
		if ix.Name == manifest.FragReuseIndexName {
			dir = indicesDir + ix.UUID + "/"
		}
	}
	both := m.ReaderFeatureFlags & m.WriterFeatureFlags
	if tagged && both&manifest.FlagFragmentReuseIndex == 0 {
		at.add("D11", where, nil, "the fragment reuse index is tagged (index_version 1) but the reader (%s) and writer (%s) feature flags do not both hold %s",
			m.ReaderFeatureFlags, m.WriterFeatureFlags, manifest.FlagFragmentReuseIndex)
	}
	fri := m.FragReuse()
	if fri == nil {
		return
	}
	frags := map[uint64]*manifest.Fragment{}
	highest := uint64(0)
	for _, f := range m.Fragments {
		frags[f.ID] = f
		highest = max(highest, f.ID)
	}
	if m.MaxFragmentID != nil {
		highest = max(highest, uint64(*m.MaxFragmentID))
	}
	for i, t := range fri.Transitions {
		for _, s := range t.Sources {
			if _, ok := frags[s.ID]; ok {
				at.inFragment(s.ID).add("D11", dir, nil, "rewrite %d of the fragment reuse index consumed fragment %d, which is still in the version", i, s.ID)
			}
		}
		for _, ds := range [][]manifest.FragDigest{t.Sources, t.Destinations} {
			for _, g := range ds {
				if g.ID > highest {
					at.inFragment(g.ID).add("D11", dir, nil, "rewrite %d of the fragment reuse index names fragment %d, an id the dataset never handed out (highest %d)", i, g.ID, highest)
				}
			}
		}
		for _, g := range t.Destinations {
			if f, ok := frags[g.ID]; ok && f.PhysicalRows != g.PhysicalRows {
				at.inFragment(g.ID).add("D11", dir, nil, "rewrite %d of the fragment reuse index produced fragment %d with %d rows, the version's fragment %d has %d",
					i, g.ID, g.PhysicalRows, g.ID, f.PhysicalRows)
			}
		}
	}
}

// checkFlags checks D10: the reader feature flags announce what the
// manifest uses, so that a reader that lacks a feature refuses the version
// instead of misreading it.
func (c *checker) checkFlags(at site, where string, m *manifest.Manifest) {
	need := func(flag manifest.FeatureFlags, what string) {
		if m.ReaderFeatureFlags&flag == 0 {
			at.add("D10", where, nil, "%s but the reader feature flags (%s) lack %s", what, m.ReaderFeatureFlags, flag)
		}
	}
	if i := slices.IndexFunc(m.Fragments, func(f *manifest.Fragment) bool { return f.DeletionFile != nil }); i >= 0 {
		need(manifest.FlagDeletionFiles, fmt.Sprintf("fragment %d has a deletion file", m.Fragments[i].ID))
	}
	if len(m.BasePaths) > 0 {
		need(manifest.FlagBasePaths, "the manifest lists base paths")
	}
	if i := slices.IndexFunc(m.Fragments, func(f *manifest.Fragment) bool { return len(f.Overlays) > 0 }); i >= 0 {
		need(manifest.FlagDataOverlays, fmt.Sprintf("fragment %d has data overlay files", m.Fragments[i].ID))
	}
}

// checkExists checks D4 for one referenced file: it exists and, when size
// is not 0, has that size. It returns an error only for I/O failures.
func (c *checker) checkExists(ctx context.Context, at site, store blob.Store, key string, size uint64, what string) error {
	_, _, err := c.stat(ctx, at, store, key, size, what)
	return err
}

// stat is checkExists that also returns the file's size and whether it
// exists.
func (c *checker) stat(ctx context.Context, at site, store blob.Store, key string, size uint64, what string) (int64, bool, error) {
	where := manifest.Location(store, key)
	info, err := store.Stat(ctx, key)
	switch {
	case isNotFound(err):
		at.add("D4", where, nil, "%s %s does not exist", what, where)
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("dataset: check %s: %w", where, err)
	}
	if size != 0 && uint64(info.Size) != size {
		at.add("D4", where, nil, "%s %s has %d bytes, the manifest records %d", what, where, info.Size, size)
	}
	return info.Size, true, nil
}

// checkFragment checks D3 and D5-D8 for one fragment.
func (c *checker) checkFragment(ctx context.Context, at site, d *Dataset, f *manifest.Fragment, ids *rowIDCheck) error {
	m := d.manifest
	if m.MaxFragmentID != nil && f.ID > uint64(*m.MaxFragmentID) {
		at.add("D3", "", nil, "fragment id %d exceeds max_fragment_id %d", f.ID, *m.MaxFragmentID)
	}
	if len(f.Files) == 0 {
		at.add("D5", "", nil, "the fragment has no data file")
	}
	physical := f.PhysicalRows
	owner := map[int32]string{} // field id → the data file holding it
	for i := range f.Files {
		df := &f.Files[i]
		where, rows, ok, err := c.checkDataFile(ctx, at, d, df)
		if err != nil {
			return err
		}
		if ok {
			if physical == 0 || (i == 0 && m.WriterVersion.Library == "") {
				// A very old manifest: the first file says (Lance trusts
				// it over a recorded count without a writer version).
				physical = rows
			}
			if rows != physical {
				at.add("D5", where, nil, "data file %s holds %d rows, the fragment records %d", where, rows, physical)
			}
		}
		for _, id := range df.Fields {
			if id == manifest.Tombstone {
				continue
			}
			field := id
			if id < 0 {
				at.add("D6", where, &field, "data file %s lists field id %d (only -2, a manifest.Tombstone, may be negative)", where, id)
			}
			if prev, dup := owner[id]; dup {
				at.add("D6", where, &field, "field %d is stored by both %s and %s", id, prev, where)
			}
			owner[id] = where
		}
	}
	if err := c.checkOverlays(ctx, at, d, f, physical); err != nil {
		return err
	}
	dv, err := c.checkDeletions(ctx, at, d, f, physical)
	if err != nil {
		return err
	}
	if m.StableRowIDs() {
		if err := c.checkRowIDs(ctx, at, d, f, physical, dv, ids); err != nil {
			return err
		}
	}
	if c.deep {
		return c.scanFragment(ctx, at, d, f)
	}
	return nil
}

// checkOverlays checks D12 for the fragment's data overlay files: each
// exists with its recorded size (D4) and decodes as a data file of its
// recorded version, its coverage decodes within the fragment, and it holds
// one value per covered offset: a dense overlay's file as many rows as its
// bitmap has offsets, a sparse one's as many as its largest bitmap.
func (c *checker) checkOverlays(ctx context.Context, at site, d *Dataset, f *manifest.Fragment, physical uint64) error {
	for i := range f.Overlays {
		o := &f.Overlays[i]
		where, rows, ok, err := c.checkDataFile(ctx, at, d, &o.File)
		if err != nil {
			return err
		}
		cov, err := o.DecodeCoverage(physical)
		if err != nil {
			at.add("D12", where, nil, "%v", err)
			continue
		}
		if !ok {
			continue
		}
		var most uint64
		for _, bm := range cov.Offsets {
			most = max(most, bm.GetCardinality())
		}
		switch {
		case cov.Dense && rows != most:
			at.add("D12", where, nil, "overlay %s holds %d rows for %d covered offsets", where, rows, most)
		case !cov.Dense && rows != most:
			at.add("D12", where, nil, "sparse overlay %s holds %d rows, its largest coverage %d offsets", where, rows, most)
		}
	}
	return nil
}

// checkDataFile checks D4 and D5 for one data file: it exists with its
// recorded size, its footer and metadata decode, its version is the one
// recorded, and its column indices name columns it has. It returns the
// file's location, its row count and whether the file could be read.
func (c *checker) checkDataFile(ctx context.Context, at site, d *Dataset, df *manifest.DataFile) (string, uint64, bool, error) {
	store, key, err := d.dataFileLocation(ctx, df)
	if err != nil {
		if !isFinding(err) {
			return "", 0, false, err
		}
		at.add("D4", df.Path, nil, "data file %s: %v", df.Path, err)
		return df.Path, 0, false, nil
	}
	where := manifest.Location(store, key)
	size, ok, err := c.stat(ctx, at, store, key, df.SizeBytes, "data file")
	if err != nil || !ok {
		return where, 0, false, err
	}
	r, err := format.Open(ctx, store, key, &format.OpenOptions{Size: size, Allocator: d.opts.Allocator})
	if err != nil {
		if !isFinding(err) {
			return "", 0, false, err
		}
		at.add("D5", where, nil, "data file %s does not decode: %v", where, err)
		return where, 0, false, nil
	}
	if want, err := df.Version(); err != nil {
		at.add("D5", where, nil, "%v", err)
	} else if r.Version() != want {
		at.add("D5", where, nil, "data file %s is a %s file, the manifest records %s", where, r.Version(), want)
	}
	for i, col := range df.ColumnIndices {
		if col >= 0 && int(col) >= r.NumColumns() {
			field := df.Fields[i]
			at.add("D5", where, &field, "field %d maps to column %d of data file %s, which has %d columns",
				field, col, where, r.NumColumns())
		}
	}
	return where, r.NumRows(), true, nil
}

// checkDeletions checks D4 and D7 for the fragment's deletion file, and
// returns the deleted offsets (nil when there are none or they cannot be
// read).
func (c *checker) checkDeletions(ctx context.Context, at site, d *Dataset, f *manifest.Fragment, physical uint64) (*deletionVector, error) {
	if f.DeletionFile == nil {
		return nil, nil
	}
	store, err := d.rootStore(ctx, f.DeletionFile.BaseID, "deletion file")
	if err != nil {
		if !isFinding(err) {
			return nil, err
		}
		at.add("D4", "", nil, "deletion file: %v", err)
		return nil, nil
	}
	key := f.DeletionFile.Key(f.ID)
	where := manifest.Location(store, key)
	size, ok, err := c.stat(ctx, at, store, key, 0, "deletion file")
	if err != nil || !ok {
		return nil, err
	}
	if size > manifest.MaxDeletionFileSize {
		at.add("D7", where, nil, "deletion file %s has %d bytes, more than the %d a deletion file can need", where, size, manifest.MaxDeletionFileSize)
		return nil, nil
	}
	data, err := store.ReadAll(ctx, key)
	if err != nil {
		if !isFinding(err) {
			return nil, fmt.Errorf("dataset: check %s: %w", where, err)
		}
		at.add("D4", where, nil, "deletion file %s: %v", where, err)
		return nil, nil
	}
	// Decode against the largest fragment a row address allows, so that an
	// offset past physical is reported as such rather than as a decode
	// failure.
	dv, err := decodeDeletionFile(f.DeletionFile.Kind, data, 0)
	if err != nil {
		if !isFinding(err) {
			return nil, err
		}
		at.add("D7", where, nil, "deletion file %s does not decode: %v", where, err)
		return nil, nil
	}
	n := dv.count()
	if physical != 0 && n > 0 && uint64(dv.bm.Maximum()) >= physical {
		at.add("D7", where, nil, "deletion file %s deletes row %d of a fragment of %d rows", where, dv.bm.Maximum(), physical)
	}
	if rec := f.DeletionFile.NumDeletedRows; rec != 0 && rec != n {
		at.add("D7", where, nil, "deletion file %s holds %d rows, the manifest records %d", where, n, rec)
	}
	if physical != 0 && n >= physical {
		at.add("D7", where, nil, "deletion file %s deletes all %d rows (the fragment should have been dropped)", where, physical)
	}
	return dv, nil
}

// rowIDCheck collects the live stable row ids of one version for D8.
type rowIDCheck struct {
	live *roaring64.Bitmap
}

func newRowIDCheck() *rowIDCheck { return &rowIDCheck{live: roaring64.New()} }

// checkRowIDs checks D4 and D8 for the fragment's row id sequence: it
// decodes with one id per physical row, and no live id is live elsewhere
// in the version.
func (c *checker) checkRowIDs(ctx context.Context, at site, d *Dataset, f *manifest.Fragment, physical uint64, dv *deletionVector, ids *rowIDCheck) error {
	if physical == 0 {
		return nil // no data file said how many rows; D5 has reported it
	}
	var rowIDFile string
	if f.RowIDs != nil && f.RowIDs.External != nil {
		rowIDFile = f.RowIDs.External.Path
		// The range is read by rowIDs; here only its file's existence.
		if _, ok, err := c.stat(ctx, at, d.store, rowIDFile, 0, "row id file"); err != nil || !ok {
			return err
		}
	}
	seq, err := d.rowIDs(ctx, f, physical)
	if err != nil {
		if !isFinding(err) {
			return err
		}
		at.add("D8", rowIDFile, nil, "%v", err)
		return nil
	}
	frag := roaring64.New()
	var dups, firstDup uint64
	for off := range seq.Len() {
		if dv.contains(off) {
			continue
		}
		id := seq.At(off)
		if !frag.CheckedAdd(id) || ids.live.Contains(id) {
			if dups == 0 {
				firstDup = id
			}
			dups++
		}
	}
	if dups > 0 {
		at.add("D8", "", nil, "%d live row ids are live twice in the version (first: %d)", dups, firstDup)
	}
	ids.live.Or(frag)
	return nil
}

// checkIndices checks D4 and D9 for the version's index segments: unique
// uuids, a fragment bitmap naming only fragment ids the dataset has handed
// out (bitmaps are immutable, so a deleted fragment may stay named), a
// build version not after the version, and an index directory with files.
func (c *checker) checkIndices(ctx context.Context, at site, d *Dataset) error {
	m := d.manifest
	seen := map[string]bool{}
	highest := uint64(0)
	for _, f := range m.Fragments {
		highest = max(highest, f.ID)
	}
	if m.MaxFragmentID != nil {
		highest = max(highest, uint64(*m.MaxFragmentID))
	}
	for i, ix := range m.Indices {
		dir := indicesDir + ix.UUID + "/"
		if seen[ix.UUID] {
			at.add("D9", dir, nil, "index segment %s (%q) appears twice", ix.UUID, ix.Name)
		}
		seen[ix.UUID] = true
		if ix.DatasetVersion > m.Version {
			at.add("D9", dir, nil, "index %q segment %s was built from version %d, after this one", ix.Name, ix.UUID, ix.DatasetVersion)
		}
		if segs := m.IndexSegments(); i < len(segs) {
			if bm := segs[i].FragmentBitmap; len(bm) > 0 {
				covered, err := manifest.DecodeRoaring(bm)
				switch {
				case err != nil:
					at.add("D9", dir, nil, "index %q segment %s: fragment bitmap: %v", ix.Name, ix.UUID, err)
				case !covered.IsEmpty() && uint64(covered.Maximum()) > highest:
					at.add("D9", dir, nil, "index %q segment %s covers fragment %d, an id the dataset never handed out (highest %d)",
						ix.Name, ix.UUID, covered.Maximum(), highest)
				}
			}
		}
		if systemIndex(ix.Type) {
			continue // its state lives in the details, not in files
		}
		store, err := d.rootStore(ctx, ix.BaseID, "index "+ix.Name)
		if err != nil {
			if !isFinding(err) {
				return err
			}
			at.add("D4", dir, nil, "index %q: %v", ix.Name, err)
			continue
		}
		empty := true
		for _, err := range store.List(ctx, dir) {
			if err != nil {
				return fmt.Errorf("dataset: check %s: %w", manifest.Location(store, dir), err)
			}
			empty = false
			break
		}
		if empty {
			at.add("D4", manifest.Location(store, dir), nil, "index %q segment %s has no files in %s", ix.Name, ix.UUID, manifest.Location(store, dir))
		}
	}
	return nil
}

// systemIndex reports whether an index type keeps its state in the
// manifest rather than in an index directory.
func systemIndex(typ string) bool { return typ == "FragmentReuse" || typ == "MemWal" }

// scanFragment reads every row of the fragment (Deep): the live rows must
// decode and number physical rows less deleted rows.
func (c *checker) scanFragment(ctx context.Context, at site, d *Dataset, f *manifest.Fragment) error {
	m := *d.manifest
	m.Fragments = []*manifest.Fragment{f}
	one := &Dataset{store: d.store, opts: d.opts, manifest: &m, manifestKey: d.manifestKey, bases: d.bases}
	want, err := one.CountRows(ctx)
	if err != nil {
		if !isFinding(err) {
			return err
		}
		return nil // the metadata checks reported it
	}
	s, err := one.Scan(&ScanOptions{WithRowID: true})
	if err != nil {
		if !isFinding(err) {
			return err
		}
		at.add("D5", "", nil, "scanning the fragment: %v", err)
		return nil
	}
	var got uint64
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			if !isFinding(err) {
				return err
			}
			at.add("D5", "", nil, "scanning the fragment: %v", err)
			return nil
		}
		got += uint64(rec.NumRows())
	}
	if got != want {
		at.add("D5", "", nil, "a scan of the fragment yields %d rows, its metadata says %d", got, want)
	}
	return nil
}
