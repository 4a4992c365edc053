package dataset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format/schema"
)

// MergeStrategy says how ThreeWayMerge resolves rows changed on both sides.
type MergeStrategy string

const (
	// MergeFail stops the merge at the first conflict and reports them all
	// (the default).
	MergeFail MergeStrategy = "fail"
	// MergeOurs keeps the target's version of a conflicting row.
	MergeOurs MergeStrategy = "ours"
	// MergeTheirs takes the source's version of a conflicting row.
	MergeTheirs MergeStrategy = "theirs"
)

// ParseMergeStrategy parses "fail", "ours" or "theirs" ("" is fail).
func ParseMergeStrategy(s string) (MergeStrategy, error) {
	switch MergeStrategy(strings.ToLower(s)) {
	case "", MergeFail:
		return MergeFail, nil
	case MergeOurs:
		return MergeOurs, nil
	case MergeTheirs:
		return MergeTheirs, nil
	}
	return "", fmt.Errorf("dataset: merge strategy %q: want fail, ours or theirs: %w", s, lancer.ErrInvalidArgument)
}

// ThreeWayOptions configures ThreeWayMerge. A nil pointer means defaults.
type ThreeWayOptions struct {
	// CommitOptions configure the commit on ours: retries of lost races,
	// the allocator of what is read, and the transaction properties
	// recorded (branch.Merge records the merge's parents there).
	CommitOptions
	// Strategy resolves conflicting rows. Default MergeFail.
	Strategy MergeStrategy
	// TheirsName names the base path recorded for the source's root when
	// the result references files there (Lance names a branch's base path
	// after the branch). Default "".
	TheirsName string
	// DryRun computes the merge and its report without writing anything.
	DryRun bool
	// On names the key columns rows are matched by across the three
	// versions (top-level, non-blob columns of all three; their values
	// must be unique in each). Default: the target schema's unenforced
	// primary key (PrimaryKey), else none. Without stable row ids a key is
	// what makes a merge exact: a row a side rewrote is matched by its
	// key, not guessed from the transactions. With stable row ids rows are
	// matched by row id and the key only matches rows both sides inserted.
	On []string
	// Ours and Theirs name columns whose conflicting cells are resolved
	// by column: a cell both sides changed to different values keeps the
	// target's value in a column of Ours and takes the source's in a
	// column of Theirs. A row updated on both sides whose conflicting
	// cells all lie in such columns is merged cell by cell (its other
	// cells as without conflicts) and its conflict gets Resolution
	// ResolvedByColumns. Every other conflict (a cell in no such column,
	// an update against a delete, a key inserted twice, rows that cannot
	// be merged cell by cell such as those of tables with blob columns)
	// goes to Strategy, which picks a whole row. This is Dolt's order:
	// the per-column rules first, then the per-row strategy. The columns
	// must be top-level columns of the target, none in both lists.
	Ours, Theirs []string
	// TraceMerge opens the state an earlier merge (or cherry-pick)
	// committed on a side's line took its rows from, given that commit's
	// transaction properties; nil and no error when they name none.
	// Without stable row ids and a key, the merge follows a row such a
	// commit brought over to the base row it is a copy of there
	// (branch.Merge sets it). Rows a merge it cannot trace brought over
	// may be copies of any base row that side no longer holds: such rows
	// changed on the other side stop the merge with ConflictUnmatched.
	TraceMerge func(ctx context.Context, properties map[string]string) (*Dataset, error)
}

// Resolutions of RowConflict and CellConflict.
const (
	// ResolvedByColumns marks a row conflict resolved cell by cell by
	// ThreeWayOptions.Ours and Theirs.
	ResolvedByColumns = "columns"
)

// Conflict kinds of RowConflict.
const (
	ConflictBothUpdated    = "updated on both sides"
	ConflictUpdatedDeleted = "updated by the source, deleted by the target"
	ConflictDeletedUpdated = "deleted by the source, updated by the target"
	// ConflictRewrittenChanged is no longer reported: compactions are
	// traced through their Rewrite groups (merge3_identity.go).
	//
	// Deprecated: kept for callers that compare kinds.
	ConflictRewrittenChanged = "fragment compacted on one side and changed on the other"
	// ConflictBothInserted is a key both sides inserted with different
	// values (merges by key only).
	ConflictBothInserted = "inserted on both sides with different values"
	// ConflictUnmatched is a row both sides removed where at least one
	// may have written an updated copy that cannot be matched to it
	// (no stable row ids, no key, and transactions that do not say). No
	// strategy resolves it: a key does.
	ConflictUnmatched = "rewritten on one side and changed on the other, and the copies cannot be matched without stable row ids or a key"
)

// RowConflict is one row changed incompatibly on both sides.
type RowConflict struct {
	// RowID is the row's stable row id; without stable row ids it is the
	// row's address in the base (fragment id << 32 | offset).
	RowID uint64 `json:"row_id"`
	// Kind is one of the Conflict* constants.
	Kind string `json:"kind"`
	// Columns are the columns both sides changed to different values (for
	// ConflictBothUpdated; empty when the cells could not be compared).
	Columns []string `json:"columns,omitempty"`
	// Key is the row's key ("id=7") when the merge matched rows by key.
	Key string `json:"key,omitempty"`
	// Cells are, for ConflictBothUpdated, the cells both sides changed to
	// different values, with the three values.
	Cells []CellConflict `json:"cells,omitempty"`
	// Resolution says how the conflict was resolved: "ours" or "theirs"
	// (the strategy took that side's whole row), ResolvedByColumns, or ""
	// when it was not (the merge failed).
	Resolution string `json:"resolution,omitempty"`

	ident uint64 // the row's identity in the merge
}

// MergeReport says what ThreeWayMerge did (or would do, with DryRun).
type MergeReport struct {
	// RowsAdded, RowsDeleted and RowsUpdated count the source's changes
	// applied to the target; a row a compaction only moved is not one
	// (with or without a key or stable row ids).
	RowsAdded, RowsDeleted, RowsUpdated uint64
	// ColumnsAdded, ColumnsDropped name the source's schema changes
	// applied.
	ColumnsAdded, ColumnsDropped []string
	// Conflicts lists every conflicting row (also those a strategy
	// resolved).
	Conflicts []RowConflict
	// DeletionFilesWritten counts the deletion files the merge wrote. The
	// source's data files are referenced in place; data is written only
	// for rows merged cell by cell.
	DeletionFilesWritten int
	// CellsMerged counts the rows updated on both sides in different
	// columns whose changes were merged (counted in RowsUpdated too).
	CellsMerged uint64
	// CellsResolved counts the conflicting rows merged cell by cell with
	// the column rules (ThreeWayOptions.Ours, Theirs; counted in
	// RowsUpdated and Conflicts too).
	CellsResolved uint64
	// CellsTaken counts the cells of the rows merged cell by cell
	// (CellsMerged and CellsResolved) that took the source's value; the
	// others kept the target's.
	CellsTaken uint64
}

// Unresolved returns the conflicts nothing resolved.
func (r *MergeReport) Unresolved() []RowConflict {
	var out []RowConflict
	for _, c := range r.Conflicts {
		if c.Resolution == "" {
			out = append(out, c)
		}
	}
	return out
}

// MergeConflictError is returned when rows conflict under MergeFail, or
// when the schemas or compactions cannot be combined. It wraps
// lancer.ErrConflict.
type MergeConflictError struct {
	Report *MergeReport
	Reason string
}

func (e *MergeConflictError) Error() string {
	if e.Reason != "" {
		return "dataset: merge: " + e.Reason
	}
	open := e.Report.Unresolved()
	if len(open) == 0 {
		open = e.Report.Conflicts
	}
	n := len(open)
	if n == 0 {
		return "dataset: merge: conflicts"
	}
	first := open[0]
	key := ""
	if first.Key != "" {
		key = " (" + first.Key + ")"
	}
	return fmt.Sprintf("dataset: merge: %d conflicting rows (row %d%s %s%s)", n, first.RowID, key, first.Kind, columnList(first.Columns))
}

func columnList(cols []string) string {
	if len(cols) == 0 {
		return ""
	}
	return ": " + strings.Join(cols, ", ")
}

func (e *MergeConflictError) Unwrap() error { return lancer.ErrConflict }

// ThreeWayMerge applies to ours (the target, a latest version) the changes
// theirs (the source) made since base, their common ancestor, and commits
// the result on ours's dataset, as git merges commits. All three are
// versions of one family of datasets (a dataset and its shallow clones), so
// fragments are the same files in each.
//
// Rows: deletions on both sides are unioned, rows the source added are
// added, and a row the source updated replaces the target's copy. A row
// updated on both sides, or updated on one side and deleted on the other,
// is a conflict, resolved by opts.Strategy. Rows are matched by stable row
// id; else by key (opts.On, or the schema's primary key), where a key both
// sides inserted with different values is a conflict too and a key live
// twice in a version an error; else, without stable row ids, a row a side
// updated (which deleted it and wrote a copy) is matched to its copy
// through the side's Update transactions since the base (see
// merge3_identity.go). A row rewritten on one side and changed on the other
// that nothing matches is ConflictUnmatched, which no strategy resolves (a
// key does): the merge never keeps two copies of a row silently. A row a
// compaction moved is the same row (with stable row ids by its id, with a
// key by its key, else through the compaction's Rewrite groups) and not
// a changed one (with stable row ids its last-updated version says so,
// without them the side's transactions, and with a key the values of the
// moved rows they do not account for; keyedMoves); without a key a
// compaction whose groups do not say where its rows went makes them
// uncertain as above. Schemas: columns added, dropped or renamed on one
// side apply; a column changed on both sides differently is a conflict.
//
// Nothing of the source is copied: the result's new fragments reference the
// source's data and deletion files where they are, through a base path to
// the source's root; only deletion files whose content changes are written.
// The commit is a Merge transaction (the whole fragment list and schema)
// recording opts.Properties; a concurrent commit on the target that the
// commit cannot be rebased over makes it fail with a retryable
// *ConflictError (whatever that commit did: the merge computed again from
// the target's new state takes it in), and the caller merges again, as
// branch.Merge does in RetryCommit.
func ThreeWayMerge(ctx context.Context, base, ours, theirs *Dataset, opts *ThreeWayOptions) (*Dataset, *MergeReport, error) {
	var o ThreeWayOptions
	if opts != nil {
		o = *opts
	}
	if o.Strategy == "" {
		o.Strategy = MergeFail
	}
	if err := ours.checkWritable(); err != nil {
		return nil, nil, err
	}
	if err := checkColumnRules(ours, o.Ours, o.Theirs); err != nil {
		return nil, nil, err
	}
	ours = ours.using(&o.CommitOptions)
	m := &merger{base: base, ours: ours, theirs: theirs, o: o, report: &MergeReport{}}
	stable := [3]bool{base.manifest.StableRowIDs(), ours.manifest.StableRowIDs(), theirs.manifest.StableRowIDs()}
	if stable[0] != stable[1] || stable[1] != stable[2] {
		return nil, nil, &MergeConflictError{Report: m.report, Reason: "one side has stable row ids and another does not"}
	}
	m.stable = stable[0]
	fields, err := m.mergeSchema()
	if err != nil {
		return nil, nil, err
	}
	if err := m.load(ctx); err != nil {
		return nil, nil, err
	}
	if err := m.identify(ctx); err != nil {
		return nil, nil, err
	}
	if err := m.classify(ctx); err != nil {
		return nil, nil, err
	}
	if n := m.unmatched(); n > 0 {
		// No strategy can pick a side for these: which rows are the
		// copies is not known.
		first := m.report.Conflicts[slices.IndexFunc(m.report.Conflicts, func(c RowConflict) bool { return c.Kind == ConflictUnmatched })]
		return nil, m.report, &MergeConflictError{Report: m.report, Reason: fmt.Sprintf(
			"%d rows (first: row %d of base version %d) were rewritten (updated, or deleted and written again) on one side "+
				"and changed on the other, and without stable row ids or a key their copies cannot be matched; "+
				"name the key columns (lancer merge --on COL[,COL], MergeOptions.On) to merge them by key, "+
				"or give the table a primary key", n, first.RowID, m.base.Version())}
	}
	if len(m.report.Conflicts) > 0 {
		if err := m.dropNoOpChanges(ctx); err != nil {
			return nil, nil, err
		}
		if err := m.mergeCells(ctx); err != nil {
			return nil, nil, err
		}
		if o.Strategy != MergeFail {
			for i := range m.report.Conflicts {
				c := &m.report.Conflicts[i]
				if c.Resolution != "" {
					continue
				}
				c.Resolution = string(o.Strategy)
				for j := range c.Cells {
					c.Cells[j].Resolution = string(o.Strategy)
				}
			}
		}
		if len(m.report.Unresolved()) > 0 {
			return nil, m.report, &MergeConflictError{Report: m.report}
		}
	}
	frags, err := m.assemble(ctx)
	if err != nil {
		m.removeWritten(ctx)
		return nil, nil, err
	}
	if o.DryRun {
		m.removeWritten(ctx)
		return ours, m.report, nil
	}
	props := maps.Clone(o.Properties)
	// A caller's PropCellOrigins would tell a later merge's replay that
	// rows this merge wrote are copies of rows they are not: the merge's
	// own record, or none, is the only one its commit may carry.
	delete(props, PropCellOrigins)
	if c := m.cellOrigins(); c != "" {
		if props == nil {
			props = map[string]string{}
		}
		props[PropCellOrigins] = c
	}
	op := &operation{
		kind:         opMerge,
		fields:       fields,
		merge:        &mergeOp{fragments: frags, written: m.written},
		addBasePaths: m.newBases,
		properties:   props,
		minNextRowID: m.nextRowID,
	}
	out, err := ours.commit(ctx, op, &o.CommitOptions)
	var ce *ConflictError
	if errors.As(err, &ce) && !ce.Retryable && !errors.As(err, new(*retriesExhausted)) && ce == err {
		// Rebasing a whole fragment list fails over an overwrite or a
		// column change too, but merging again takes those in.
		retryable := *ce
		retryable.Retryable = true
		err = &retryable
	}
	if err != nil {
		return nil, nil, err
	}
	return out, m.report, nil
}

// checkColumnRules checks the columns of ThreeWayOptions.Ours and Theirs.
func checkColumnRules(ours *Dataset, o, t []string) error {
	side := map[string]string{}
	for i, cols := range [][]string{o, t} {
		name := []string{"ours", "theirs"}[i]
		for _, c := range cols {
			f := ours.manifest.Schema.Field(c)
			if f == nil || f.ParentID >= 0 {
				return fmt.Errorf("dataset: merge: %s column %q is not a column of version %d: %w", name, c, ours.Version(), lancer.ErrNotFound)
			}
			if prev, ok := side[c]; ok && prev != name {
				return fmt.Errorf("dataset: merge: column %q is both an ours and a theirs column: %w", c, lancer.ErrInvalidArgument)
			}
			side[c] = name
		}
	}
	return nil
}

// branchRowIDSpan is the size of the row id ranges lancer's branches
// allocate from (branch.rowIDSpan).
const branchRowIDSpan = 1 << 40

// merger holds one three-way merge in progress.
type merger struct {
	base, ours, theirs *Dataset
	o                  ThreeWayOptions
	stable             bool
	report             *MergeReport

	// sides[0..2] are base, ours, theirs.
	sides [3]*mergeSide
	// keys interns fragment keys (the canonical location of a fragment's
	// first data file) so that a fragment is the same in every side.
	keys map[string]uint32

	// live rows of each side: identity → location.
	live [3]map[uint64]rowAt
	// classification of the source's (1) and the target's (0) changes.
	deletedBy, updatedBy, relocatedBy [2]map[uint64]bool
	addedByTheirs                     []uint64
	// choose maps each identity of the result to the side and location
	// its row comes from.
	choose map[uint64]choice
	// moved[side] holds the base rows (0 ours, 1 theirs) the side's
	// compactions moved and nothing changed (without stable row ids;
	// identify, keyedMoves with a key).
	moved [2]map[uint64]bool
	// keyCopy[side] maps the base rows a key matched to a copy on the side
	// (1 ours, 2 theirs) to the copy's identity there (identifyByKey).
	keyCopy [3]map[uint64]uint64
	// key is the key rows are matched by (nil: none); baseKey the key
	// value of each base row.
	key     []string
	baseKey map[uint64]string
	// uncertain[side] holds base rows the side (0 ours, 1 theirs) removed
	// that may have an updated copy no source of identity finds.
	uncertain [2]map[uint64]bool
	// rekeyed[side] holds the base rows whose copy on the side a key
	// matched under another stable row id.
	rekeyed [3]map[uint64]bool
	// insertedBoth maps rows the source inserted to the target's row with
	// the same key.
	insertedBoth map[uint64]insertPair
	// cells are the rows merged cell by cell.
	cells []cellMerged

	written  []string
	newBases []manifest.BasePath
	// renumber maps the stable row ids the source added after the base
	// to the ids they get in the result; nextRowID is the result's next.
	renumber  map[uint64]uint64
	nextRowID uint64
	// toOurs maps base ids to the target's where an earlier merge
	// renumbered rows (alignRenumbered).
	toOurs map[uint64]uint64
	// idFloor is above the ids alignRenumbered made up.
	idFloor uint64
	// traced caches lineageOf by state.
	traced map[string]*lineageResult
	// baseLine caches baseMoves (nil: nothing learned).
	baseLine     *baseLine
	baseLineDone bool
	// replayed counts the versions this merge has replayed, on every
	// line and merge depth (maxMergeReplay).
	replayed int
}

type rowAt struct {
	key     uint32 // interned fragment key
	offset  uint32
	updated uint64 // last-updated version (stable row ids)
}

type choice struct {
	side int // 1 ours, 2 theirs
	at   rowAt
}

// mergeSide is one of the three versions with its fragments by key.
type mergeSide struct {
	d     *Dataset
	frags map[uint32]*sideFrag
	order []uint32 // keys in manifest order
}

type sideFrag struct {
	frag     *manifest.Fragment
	physical uint64
	deleted  *roaring.Bitmap
	ids      []uint64 // identity of each physical row
	updated  []uint64 // last-updated versions (stable), nil otherwise
	files    map[string]bool
}

func (m *merger) intern(key string) uint32 {
	if id, ok := m.keys[key]; ok {
		return id
	}
	id := uint32(len(m.keys))
	m.keys[key] = id
	return id
}

// rootURI returns the canonical location of the root a base id names.
func (d *Dataset) rootURI(ctx context.Context, baseID *uint32) (string, bool, error) {
	if baseID == nil {
		return strings.TrimSuffix(d.store.URI(), "/"), true, nil
	}
	s, bp, err := d.baseStore(ctx, *baseID)
	if err != nil {
		return "", false, err
	}
	return strings.TrimSuffix(s.URI(), "/"), bp.IsDatasetRoot, nil
}

// fileKey is the canonical location of a data file.
func (d *Dataset) fileKey(ctx context.Context, df *manifest.DataFile) (string, error) {
	root, isRoot, err := d.rootURI(ctx, df.BaseID)
	if err != nil {
		return "", err
	}
	if isRoot {
		return root + "/data/" + df.Path, nil
	}
	return root + "/" + df.Path, nil
}

func (m *merger) load(ctx context.Context) error {
	m.keys = map[string]uint32{}
	m.uncertain = [2]map[uint64]bool{{}, {}}
	m.moved = [2]map[uint64]bool{{}, {}}
	m.rekeyed = [3]map[uint64]bool{{}, {}, {}}
	for i, d := range []*Dataset{m.base, m.ours, m.theirs} {
		s := &mergeSide{d: d, frags: map[uint32]*sideFrag{}}
		live := map[uint64]rowAt{}
		for _, f := range d.manifest.Fragments {
			if len(f.Files) == 0 {
				return fmt.Errorf("dataset: merge: fragment %d of version %d has no data file: %w", f.ID, d.Version(), lancer.ErrUnsupported)
			}
			if len(f.Overlays) > 0 {
				// The merger tells changed cells by changed data files;
				// an overlay changes cells under the same files.
				return fmt.Errorf("dataset: merge: fragment %d of version %d has data overlay files (feature flag 64, data_overlays), which diffs and merges do not read: %w",
					f.ID, d.Version(), lancer.ErrUnsupported)
			}
			k, err := d.fileKey(ctx, &f.Files[0])
			if err != nil {
				return err
			}
			key := m.intern(k)
			sf := &sideFrag{frag: f, files: map[string]bool{}}
			for i := range f.Files {
				fk, err := d.fileKey(ctx, &f.Files[i])
				if err != nil {
					return err
				}
				sf.files[fk] = true
			}
			if sf.physical, err = d.physicalRows(ctx, f); err != nil {
				return err
			}
			if sf.physical >= 1<<32 {
				return fmt.Errorf("dataset: merge: fragment %d has %d rows: %w", f.ID, sf.physical, lancer.ErrCorrupt)
			}
			dv, err := d.deletionVector(ctx, f)
			if err != nil {
				return err
			}
			sf.deleted = dv.bitmap()
			sf.ids = make([]uint64, sf.physical)
			if m.stable {
				seq, err := d.rowIDs(ctx, f, sf.physical)
				if err != nil {
					return err
				}
				for j := range sf.ids {
					sf.ids[j] = seq.At(uint64(j))
				}
				if sf.updated, err = d.versionSequence(ctx, f.ID, f.LastUpdatedAtVersions, sf.physical, nil); err != nil {
					return err
				}
			} else {
				for j := range sf.ids {
					sf.ids[j] = uint64(key)<<32 | uint64(j)
				}
			}
			for j := uint64(0); j < sf.physical; j++ {
				if sf.deleted.Contains(uint32(j)) {
					continue
				}
				at := rowAt{key: key, offset: uint32(j)}
				if sf.updated != nil {
					at.updated = sf.updated[j]
				}
				if _, dup := live[sf.ids[j]]; dup {
					return fmt.Errorf("dataset: merge: row id %d is live twice in version %d: %w", sf.ids[j], d.Version(), lancer.ErrCorrupt)
				}
				live[sf.ids[j]] = at
			}
			if _, dup := s.frags[key]; dup {
				return fmt.Errorf("dataset: merge: two fragments of version %d share data file %s: %w", d.Version(), k, lancer.ErrCorrupt)
			}
			s.frags[key] = sf
			s.order = append(s.order, key)
		}
		m.sides[i], m.live[i] = s, live
	}
	return m.alignRenumbered()
}

// alignRenumbered maps the stable row ids of each side into the base's
// where an earlier merge renumbered rows (see renumber): the merge gave the
// source's new rows other ids in the target, so a fragment the target took
// from the source holds other ids there than on the source's line, and a
// later merge whose base is on the other line would see its rows as
// deleted and added. A fragment the base shares with a side under other
// ids says, offset by offset, which base id each of the side's ids is;
// every id of the side (its updated copies elsewhere included) is mapped
// so. The target's mapping is kept reversed in toOurs, to write the rows
// the result takes from the source under the ids the target's line knows;
// a row of the target's own holding the base's id of a renumbered row
// takes an id no side uses. A mapping that is not one to one, or that
// makes two live rows of the source one, is refused (ErrUnsupported).
func (m *merger) alignRenumbered() error {
	if !m.stable {
		return nil
	}
	for side := 1; side <= 2; side++ {
		tr := map[uint64]uint64{}
		for key, bf := range m.sides[0].frags {
			f, ok := m.sides[side].frags[key]
			if !ok || sameLiveIDs(f, bf) {
				continue
			}
			if len(f.ids) != len(bf.ids) {
				return fmt.Errorf("dataset: merge: fragment %d has %d rows in version %d, %d in the base version %d: %w",
					f.frag.ID, len(f.ids), m.sides[side].d.Version(), len(bf.ids), m.base.Version(), lancer.ErrCorrupt)
			}
			for j, id := range f.ids {
				if bf.deleted.Contains(uint32(j)) {
					// A row deleted in the base tells nothing (its slot
					// may hold an id of another copy).
					continue
				}
				if prev, ok := tr[id]; ok && prev != bf.ids[j] {
					return fmt.Errorf("dataset: merge: fragment %d holds other row ids in version %d than in the base version %d "+
						"that no renumbering explains: %w", f.frag.ID, m.sides[side].d.Version(), m.base.Version(), lancer.ErrUnsupported)
				}
				if id != bf.ids[j] {
					tr[id] = bf.ids[j]
				}
			}
		}
		if len(tr) == 0 {
			continue
		}
		if side == 1 {
			// The target may have given the base's id of a renumbered row
			// to a row of its own (why the earlier merge renumbered): that
			// row takes an id no side uses for the merge, mapped back when
			// written (toOurs).
			targets := map[uint64]bool{}
			for _, to := range tr {
				targets[to] = true
			}
			used := map[uint64]bool{}
			for _, sd := range m.sides {
				for _, sf := range sd.frags {
					for _, id := range sf.ids {
						used[id] = true
					}
				}
			}
			next := max(m.base.manifest.NextRowID, m.ours.manifest.NextRowID, m.theirs.manifest.NextRowID)
			for id := range m.live[side] {
				if _, mapped := tr[id]; mapped || !targets[id] {
					continue
				}
				for used[next] {
					next++
				}
				tr[id], used[next] = next, true
			}
			m.idFloor = next + 1
		}
		for _, sf := range m.sides[side].frags {
			for j, id := range sf.ids {
				if to, ok := tr[id]; ok {
					sf.ids[j] = to
				}
			}
		}
		live := make(map[uint64]rowAt, len(m.live[side]))
		for id, at := range m.live[side] {
			if to, ok := tr[id]; ok {
				id = to
			}
			if _, dup := live[id]; dup {
				return fmt.Errorf("dataset: merge: row id %d of version %d is the base's id of another of its rows after an earlier merge's renumbering: %w",
					id, m.sides[side].d.Version(), lancer.ErrUnsupported)
			}
			live[id] = at
		}
		m.live[side] = live
		if side == 1 {
			m.toOurs = make(map[uint64]uint64, len(tr))
			for from, to := range tr {
				m.toOurs[to] = from
			}
		}
	}
	return nil
}

// sameLiveIDs says whether a side's copy of a base fragment gives the rows
// live in the base the base's ids.
func sameLiveIDs(f, base *sideFrag) bool {
	if len(f.ids) != len(base.ids) {
		return false
	}
	for j, id := range base.ids {
		if f.ids[j] != id && !base.deleted.Contains(uint32(j)) {
			return false
		}
	}
	return true
}

// oursID is the id the target's line knows the row of base id id by (see
// alignRenumbered).
func (m *merger) oursID(id uint64) uint64 {
	if o, ok := m.toOurs[id]; ok {
		return o
	}
	return id
}

// checkRelocated moves to the updates the rows classify took for moved
// (stored elsewhere, last-updated version unchanged) whose values differ
// from the base's. A version number names a commit only within one line's
// history, and a row a merge brought from another line keeps that line's
// number, so a row this line updated later can carry the very number the
// base's copy has (seen in TestMergeIdentityModel, stable, seed 2 at 150
// steps: a column another line changed was lost). A compaction's move
// leaves the values as they were; the values decide.
//
// Only rows the other side touched too (deleted, updated or moved) are
// read: a row one side moved and the other left alone is taken from the
// moving side either way, so a compaction on one side costs no read of
// its rows (the report may then count such an update as a move).
func (m *merger) checkRelocated(ctx context.Context) error {
	cols := commonColumns(m.base, m.ours, m.theirs)
	for side := range 2 {
		other := 1 - side
		var ids []uint64
		for _, id := range sortedKeys(m.relocatedBy[side]) {
			if m.deletedBy[other][id] || m.updatedBy[other][id] || m.relocatedBy[other][id] {
				ids = append(ids, id)
			}
		}
		err := m.sameAsBase(ctx, side+1, ids, cols, func(id uint64, same bool) {
			if !same {
				delete(m.relocatedBy[side], id)
				m.updatedBy[side][id] = true
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// sameAsBase calls f with each of ids (rows the base and side, 1 or 2,
// both hold) and whether the side's row holds the base's values in cols,
// reading the rows a chunk at a time.
func (m *merger) sameAsBase(ctx context.Context, side int, ids []uint64, cols []string, f func(id uint64, same bool)) error {
	const chunk = 8192
	for lo := 0; lo < len(ids); lo += chunk {
		part := ids[lo:min(lo+chunk, len(ids))]
		was, err := m.rowStrings(ctx, 0, part, cols)
		if err != nil {
			return err
		}
		now, err := m.rowStrings(ctx, side, part, cols)
		if err != nil {
			return err
		}
		for i, id := range part {
			f(id, was[i] == now[i])
		}
	}
	return nil
}

// classify works out what each side changed since the base and the
// conflicts.
func (m *merger) classify(ctx context.Context) error {
	base := m.live[0]
	if m.stable {
		// Rows are matched by stable row id: a fragment both sides share
		// must give its rows the same ids on both, which an earlier merge
		// that renumbered the source's rows breaks.
		for side := 1; side <= 2; side++ {
			for key, bf := range m.sides[0].frags {
				if f, ok := m.sides[side].frags[key]; ok && !sameLiveIDs(f, bf) {
					return fmt.Errorf("dataset: merge: fragment %d holds other row ids in version %d than in the base version %d "+
						"(an earlier merge renumbered them): %w", f.frag.ID, m.sides[side].d.Version(), m.base.Version(), lancer.ErrUnsupported)
				}
			}
		}
	}
	for side := range 2 {
		live := m.live[side+1]
		del, upd, rel := map[uint64]bool{}, map[uint64]bool{}, map[uint64]bool{}
		for id, at := range base {
			now, ok := live[id]
			switch {
			case !ok:
				del[id] = true
			case now.key != at.key:
				switch {
				case m.stable && now.updated == at.updated && !m.rekeyed[side+1][id]:
					rel[id] = true // compaction moved it
				case !m.stable && m.moved[side][id]:
					rel[id] = true // the side's compactions moved it (traced)
				default:
					upd[id] = true
				}
			}
		}
		m.deletedBy[side], m.updatedBy[side], m.relocatedBy[side] = del, upd, rel
	}
	if m.stable {
		if err := m.checkRelocated(ctx); err != nil {
			return err
		}
	}
	for id := range m.live[2] {
		if _, ok := base[id]; ok {
			continue
		}
		if o, ok := m.live[1][id]; ok {
			if t := m.live[2][id]; o.key == t.key && o.offset == t.offset {
				continue // the target has it already
			}
		}
		m.addedByTheirs = append(m.addedByTheirs, id)
	}
	slices.Sort(m.addedByTheirs)
	if m.stable || len(m.key) == 0 {
		// A row both sides have under one stable row id the base lacks,
		// with the same values, is one row that reached both lines (a
		// lancer line hands out ids from a range of its own), moved on one
		// of them: not a row to add. Without stable row ids and a key the
		// same holds for a row of one identity (one physical row, or an
		// updated copy identify matched to it); with different values it
		// is a row both sides hold that one changed, which the base
		// cannot tell: a conflict.
		var both []uint64
		for _, id := range m.addedByTheirs {
			if _, ok := m.live[1][id]; ok {
				both = append(both, id)
			}
		}
		if len(both) > 0 && len(both) <= 100000 {
			cols := commonColumns(m.base, m.ours, m.theirs)
			o, err := m.rowStrings(ctx, 1, both, cols)
			if err != nil {
				return err
			}
			t, err := m.rowStrings(ctx, 2, both, cols)
			if err != nil {
				return err
			}
			same := map[uint64]bool{}
			for i, id := range both {
				same[id] = o[i] == t[i]
			}
			m.addedByTheirs = slices.DeleteFunc(m.addedByTheirs, func(id uint64) bool { return same[id] })
			if !m.stable {
				for _, id := range both {
					if same[id] {
						continue
					}
					if m.insertedBoth == nil {
						m.insertedBoth = map[uint64]insertPair{}
					}
					m.insertedBoth[id] = insertPair{ours: id}
				}
			}
		}
	}

	// A change both sides made identically (the same copy of the row, as
	// after an earlier merge of one into the other) is no conflict.
	same := func(id uint64) bool {
		o, ok1 := m.live[1][id]
		t, ok2 := m.live[2][id]
		return ok1 && ok2 && o.key == t.key && o.offset == t.offset
	}
	for id := range m.updatedBy[1] {
		if m.updatedBy[0][id] && same(id) {
			delete(m.updatedBy[1], id)
		}
	}
	var conflicts []RowConflict
	unmatched := map[uint64]bool{}
	for side := range 2 {
		other := 1 - side
		for id := range m.uncertain[side] {
			if m.deletedBy[other][id] || m.updatedBy[other][id] {
				unmatched[id] = true
			}
		}
	}
	for id := range unmatched {
		conflicts = append(conflicts, RowConflict{RowID: id, Kind: ConflictUnmatched})
	}
	for id := range m.updatedBy[1] {
		switch {
		case unmatched[id]:
		case m.updatedBy[0][id]:
			conflicts = append(conflicts, RowConflict{RowID: id, Kind: ConflictBothUpdated})
		case m.deletedBy[0][id]:
			conflicts = append(conflicts, RowConflict{RowID: id, Kind: ConflictUpdatedDeleted})
		}
	}
	for id := range m.deletedBy[1] {
		if m.updatedBy[0][id] && !unmatched[id] {
			conflicts = append(conflicts, RowConflict{RowID: id, Kind: ConflictDeletedUpdated})
		}
	}
	for i := range conflicts {
		conflicts[i].ident = conflicts[i].RowID
		conflicts[i].Key = m.baseKey[conflicts[i].RowID]
		if conflicts[i].Key != "" {
			conflicts[i].Key = keyText(m.key, conflicts[i].Key)
		}
	}
	slices.SortFunc(conflicts, func(a, b RowConflict) int {
		switch {
		case a.RowID < b.RowID:
			return -1
		case a.RowID > b.RowID:
			return 1
		}
		return 0
	})
	if !m.stable {
		// A base address of an identity is key<<32|offset; report the
		// base fragment id instead of the key.
		for i := range conflicts {
			conflicts[i].RowID = m.baseAddress(conflicts[i].RowID)
		}
	}
	m.report.Conflicts = conflicts

	// Choose where every row of the result comes from.
	theirsWins := m.o.Strategy == MergeTheirs
	m.choose = map[uint64]choice{}
	for id, at := range m.live[1] {
		switch {
		case m.deletedBy[1][id]:
			if m.updatedBy[0][id] && !theirsWins {
				m.choose[id] = choice{1, at}
			} else {
				m.report.RowsDeleted++
			}
			continue
		case m.updatedBy[1][id]:
			if m.updatedBy[0][id] && !theirsWins {
				m.choose[id] = choice{1, at}
				continue
			}
			m.choose[id] = choice{2, m.live[2][id]}
			m.report.RowsUpdated++
			continue
		case m.relocatedBy[1][id] && !m.updatedBy[0][id] && !m.relocatedBy[0][id]:
			m.choose[id] = choice{2, m.live[2][id]}
			continue
		}
		m.choose[id] = choice{1, at}
	}
	for id := range m.updatedBy[1] {
		if m.deletedBy[0][id] && theirsWins {
			m.choose[id] = choice{2, m.live[2][id]}
			m.report.RowsUpdated++
		}
	}
	// Rows the source added keep their identity unless it is a stable row
	// id the source handed out after the base: the target may have given
	// the same ids to its own new rows, so they get the target's next ones.
	if m.stable {
		m.nextRowID = m.ours.manifest.NextRowID
		// A branch lancer creates allocates row ids from a range of its
		// own, so the source's new ids are free in the target. Lance's
		// branches allocate from where the fork left off, as the target
		// does: then the source's new rows get new ids, after both
		// sides' next ids.
		taken := map[uint64]bool{}
		for _, f := range m.sides[1].frags {
			for _, id := range f.ids {
				taken[id] = true
			}
		}
		// Lines that allocate from ranges of their own (lancer's
		// branches; their next ids lie in different spans) never hand
		// out one id twice: a row both have under one id is one row that
		// reached both, changed on one or both sides, so a conflict, not
		// an id to renumber. So is a row both inserted under one key and
		// one id.
		disjoint := m.ours.manifest.NextRowID/branchRowIDSpan != m.theirs.manifest.NextRowID/branchRowIDSpan
		collide := false
		for _, id := range m.addedByTheirs {
			if p, ok := m.insertedBoth[id]; ok && p.ours == id {
				continue
			}
			if _, live := m.live[1][id]; live && disjoint {
				if m.insertedBoth == nil {
					m.insertedBoth = map[uint64]insertPair{}
				}
				if _, ok := m.insertedBoth[id]; !ok {
					m.insertedBoth[id] = insertPair{ours: id}
				}
				continue
			}
			// With lines of their own ranges an id only the target's
			// deleted rows hold is this very row, deleted there: it comes
			// back under its id, as an updated row keeps its id.
			collide = collide || (taken[id] && !disjoint)
		}
		if collide {
			m.renumber = map[uint64]uint64{}
			next := max(m.ours.manifest.NextRowID, m.theirs.manifest.NextRowID, m.idFloor)
			for _, id := range m.addedByTheirs {
				m.renumber[id] = next
				next++
			}
			m.nextRowID = next
		}
	}
	for _, id := range m.addedByTheirs {
		key := id
		if n, ok := m.renumber[id]; ok {
			key = n
		}
		if p, ok := m.insertedBoth[id]; ok {
			// Both sides inserted this key.
			if p.same {
				continue
			}
			m.report.Conflicts = append(m.report.Conflicts, RowConflict{RowID: m.address(1, p.ours), Kind: ConflictBothInserted, Key: p.key, ident: p.ours})
			if !theirsWins {
				continue
			}
			delete(m.choose, p.ours)
		} else if _, taken := m.choose[key]; taken {
			// The target has another row of this id that the base lacks:
			// both sides added it.
			m.report.Conflicts = append(m.report.Conflicts, RowConflict{RowID: key, Kind: ConflictBothUpdated})
			if !theirsWins {
				continue
			}
		}
		m.choose[key] = choice{2, m.live[2][id]}
		m.report.RowsAdded++
	}
	// A row the source has in a fragment the target also has is taken
	// through the target's fragment.
	for id, c := range m.choose {
		if _, inOurs := m.sides[1].frags[c.at.key]; c.side == 2 && inOurs {
			m.choose[id] = choice{1, c.at}
		}
	}
	return nil
}

// unmatched counts the ConflictUnmatched conflicts.
func (m *merger) unmatched() int {
	n := 0
	for _, c := range m.report.Conflicts {
		if c.Kind == ConflictUnmatched {
			n++
		}
	}
	return n
}

// address returns a row's id for a report: its stable row id, or its
// address (fragment id << 32 | offset) in the side's version.
func (m *merger) address(side int, id uint64) uint64 {
	if m.stable {
		return id
	}
	at := m.live[side][id]
	if f, ok := m.sides[side].frags[at.key]; ok {
		return f.frag.ID<<32 | uint64(at.offset)
	}
	return id
}

// baseAddress turns an identity (key<<32|offset) into the row's address in
// the base version.
func (m *merger) baseAddress(id uint64) uint64 {
	key := uint32(id >> 32)
	if f, ok := m.sides[0].frags[key]; ok {
		return f.frag.ID<<32 | id&0xFFFFFFFF
	}
	return id
}

// commonColumns are the top-level columns all three versions have.
func commonColumns(ds ...*Dataset) []string {
	var out []string
	for _, f := range ds[0].manifest.Schema.Fields {
		ok := true
		for _, d := range ds[1:] {
			ok = ok && d.manifest.Schema.Field(f.Name) != nil
		}
		if ok && f.Blob == 0 {
			out = append(out, f.Name)
		}
	}
	return out
}

func (m *merger) removeWritten(ctx context.Context) {
	for _, key := range m.written {
		_ = m.ours.store.Delete(context.WithoutCancel(ctx), key)
	}
	m.written = nil
}

// assemble builds the result's fragment list: the target's fragments with
// the rows no longer chosen deleted, and the source's fragments that hold
// chosen rows, renumbered and pointed at where their files are.
func (m *merger) assemble(ctx context.Context) ([]*manifest.Fragment, error) {
	// Chosen offsets per (side, key).
	picked := [3]map[uint32]*roaring.Bitmap{{}, {}, {}}
	for _, c := range m.choose {
		bm := picked[c.side][c.at.key]
		if bm == nil {
			bm = roaring.New()
			picked[c.side][c.at.key] = bm
		}
		bm.Add(c.at.offset)
	}
	ours, theirs := m.sides[1], m.sides[2]
	var out []*manifest.Fragment
	nextFrag := uint64(0)
	if hwm, ok := m.ours.manifest.FragmentHighWater(); ok {
		nextFrag = hwm + 1
	}
	for _, key := range ours.order {
		f := ours.frags[key]
		keep := picked[1][key]
		if keep == nil || keep.IsEmpty() {
			continue
		}
		raw := f.frag.Clone()
		// Columns the source added to this (base) fragment.
		if tf, ok := theirs.frags[key]; ok {
			if bf, ok := m.sides[0].frags[key]; ok {
				for i := range tf.frag.Files {
					df := &tf.frag.Files[i]
					k, err := m.theirs.fileKey(ctx, df)
					if err != nil {
						return nil, err
					}
					if !bf.files[k] && !f.files[k] {
						mapped, err := m.mapFile(ctx, df)
						if err != nil {
							return nil, err
						}
						raw.Files = append(raw.Files, mapped)
					}
				}
			}
		}
		del := allRows(f.physical)
		del.AndNot(keep)
		if !del.Equals(f.deleted) {
			if err := m.writeDeletions(ctx, raw, f.physical, del); err != nil {
				return nil, err
			}
		}
		out = append(out, raw)
	}
	for _, key := range theirs.order {
		if _, inOurs := ours.frags[key]; inOurs {
			continue
		}
		keep := picked[2][key]
		if keep == nil || keep.IsEmpty() {
			continue
		}
		f := theirs.frags[key]
		raw := f.frag.Clone()
		raw.ID = nextFrag
		nextFrag++
		raw.Files = nil
		for i := range f.frag.Files {
			mapped, err := m.mapFile(ctx, &f.frag.Files[i])
			if err != nil {
				return nil, err
			}
			raw.Files = append(raw.Files, mapped)
		}
		del := allRows(f.physical)
		del.AndNot(keep)
		// A deletion file's name holds its fragment's id: the source's
		// file can be referenced only while the id stays.
		switch {
		case del.Equals(f.deleted) && f.frag.DeletionFile != nil && raw.ID == f.frag.ID:
			mapped, err := m.mapDeletionFile(ctx, f.frag.DeletionFile)
			if err != nil {
				return nil, err
			}
			raw.DeletionFile = mapped
		case del.IsEmpty():
			raw.DeletionFile = nil
		default:
			raw.DeletionFile = nil
			if err := m.writeDeletions(ctx, raw, f.physical, del); err != nil {
				return nil, err
			}
		}
		if m.stable {
			ids := make([]uint64, len(f.ids))
			for j, id := range f.ids {
				if n, ok := m.renumber[id]; ok {
					id = n
				} else {
					id = m.oursID(id)
				}
				ids[j] = id
			}
			seq, err := manifest.EncodeRowIDs(manifest.RowIDArraySegments(ids)...)
			if err != nil {
				return nil, err
			}
			raw.RowIDs = manifest.InlineSequence(seq)
			if err := m.inlineVersions(ctx, raw, f); err != nil {
				return nil, err
			}
		}
		out = append(out, raw)
	}
	merged, err := m.writeCells(ctx, nextFrag)
	if err != nil {
		return nil, err
	}
	out = append(out, merged...)
	return out, nil
}

// inlineVersions makes a source fragment's version sequences inline (an
// external one lives in the source's root).
func (m *merger) inlineVersions(ctx context.Context, raw *manifest.Fragment, f *sideFrag) error {
	enc := func(vs []uint64) ([]byte, error) { return manifest.EncodeVersions(manifest.VersionRuns(vs)...) }
	if s := raw.LastUpdatedAtVersions; s != nil && s.External != nil {
		b, err := enc(f.updated)
		if err != nil {
			return err
		}
		raw.LastUpdatedAtVersions = manifest.InlineSequence(b)
	}
	if s := raw.CreatedAtVersions; s != nil && s.External != nil {
		created, err := m.theirs.versionSequence(ctx, f.frag.ID, f.frag.CreatedAtVersions, f.physical, nil)
		if err != nil {
			return err
		}
		b, err := enc(created)
		if err != nil {
			return err
		}
		raw.CreatedAtVersions = manifest.InlineSequence(b)
	}
	return nil
}

func allRows(n uint64) *roaring.Bitmap {
	bm := roaring.New()
	bm.AddRange(0, n)
	return bm
}

// writeDeletions gives raw (a fragment of the result) a new deletion file
// in the target's root holding del.
func (m *merger) writeDeletions(ctx context.Context, raw *manifest.Fragment, physical uint64, del *roaring.Bitmap) error {
	m.report.DeletionFilesWritten++
	if m.o.DryRun {
		raw.DeletionFile = &manifest.DeletionFile{NumDeletedRows: del.GetCardinality()}
		return nil
	}
	df, key, err := writeDeletionFile(ctx, m.ours.store, raw.ID, m.ours.manifest.Version, del)
	if key != "" {
		m.written = append(m.written, key)
	}
	if err != nil {
		return err
	}
	raw.DeletionFile = df
	raw.PhysicalRows = physical
	return nil
}

// basePathFor returns the id, in the result, of the base path for the
// source root with canonical location uri, adding one if needed; nil when
// uri is the target's own root.
func (m *merger) basePathFor(ctx context.Context, uri string, isRoot bool, srcBase *manifest.BasePath) (*uint32, error) {
	if isRoot && uri == strings.TrimSuffix(m.ours.store.URI(), "/") {
		return nil, nil
	}
	for _, bp := range m.ours.manifest.BasePaths {
		s, b, err := m.ours.baseStore(ctx, bp.ID)
		if err != nil {
			return nil, err
		}
		if strings.TrimSuffix(s.URI(), "/") == uri && b.IsDatasetRoot == isRoot {
			id := bp.ID
			return &id, nil
		}
	}
	for _, bp := range m.newBases {
		if bp.Path == localPath(uri) && bp.IsDatasetRoot == isRoot {
			id := bp.ID
			return &id, nil
		}
	}
	next := uint32(0)
	for _, bp := range m.ours.manifest.BasePaths {
		next = max(next, bp.ID+1)
	}
	for _, bp := range m.newBases {
		next = max(next, bp.ID+1)
	}
	nb := manifest.BasePath{ID: next, IsDatasetRoot: isRoot, Path: localPath(uri)}
	switch {
	case srcBase != nil && srcBase.Name != "":
		nb.Name = srcBase.Name
	case srcBase == nil && m.o.TheirsName != "":
		nb.Name = m.o.TheirsName
	}
	m.newBases = append(m.newBases, nb)
	return &next, nil
}

// localPath records a file:// location as a plain path, as Lance records
// base paths.
func localPath(uri string) string {
	if p, ok := strings.CutPrefix(uri, "file://"); ok {
		return p
	}
	return uri
}

// mapFile rewrites a data file of the source for the result.
func (m *merger) mapFile(ctx context.Context, df *manifest.DataFile) (manifest.DataFile, error) {
	out := *df
	id, err := m.mapBase(ctx, df.BaseID, "data file "+df.Path)
	out.BaseID = id
	return out, err
}

// mapDeletionFile points a source deletion file at where it is.
func (m *merger) mapDeletionFile(ctx context.Context, df *manifest.DeletionFile) (*manifest.DeletionFile, error) {
	out := df.Clone()
	id, err := m.mapBase(ctx, df.BaseID, "deletion file")
	out.BaseID = id
	return out, err
}

// mapBase returns the result's base id for a file of the source recorded
// with base id baseID (nil: the source's own root).
func (m *merger) mapBase(ctx context.Context, baseID *uint32, what string) (*uint32, error) {
	var src *manifest.BasePath
	if baseID != nil {
		bp, ok := m.theirs.basePath(*baseID)
		if !ok {
			return nil, fmt.Errorf("dataset: merge: %s names base path %d: %w", what, *baseID, lancer.ErrCorrupt)
		}
		src = &bp
	}
	uri, isRoot, err := m.theirs.rootURI(ctx, baseID)
	if err != nil {
		return nil, err
	}
	return m.basePathFor(ctx, uri, isRoot, src)
}

// mergeSchema merges the three schemas field by field (by field id).
func (m *merger) mergeSchema() ([]*schema.Field, error) {
	index := func(d *Dataset) map[int32]*schema.Field {
		out := map[int32]*schema.Field{}
		for _, f := range d.manifest.Fields() {
			out[f.ID] = f
		}
		return out
	}
	b, o, t := index(m.base), index(m.ours), index(m.theirs)
	same := (*schema.Field).EqualRecord
	var out []*schema.Field
	for _, f := range m.ours.manifest.Fields() {
		bf, tf := b[f.ID], t[f.ID]
		switch {
		case same(bf, tf): // the source did not touch it
			out = append(out, f.Clone())
		case bf == nil: // both added a field with this id
			if !same(f, tf) {
				return nil, &MergeConflictError{Report: m.report, Reason: fmt.Sprintf(
					"both sides added a column with field id %d (%q and %q); add columns on one side only", f.ID, f.Name, tf.Name)}
			}
			out = append(out, f.Clone())
		case same(bf, f): // only the source changed it
			if tf != nil {
				out = append(out, tf.Clone())
			} else {
				m.report.ColumnsDropped = append(m.report.ColumnsDropped, f.Name)
			}
		case !same(f, tf):
			return nil, &MergeConflictError{Report: m.report, Reason: fmt.Sprintf(
				"column %q (field id %d) was changed differently on both sides", bf.Name, f.ID)}
		default:
			out = append(out, f.Clone())
		}
	}
	for _, f := range m.theirs.manifest.Fields() {
		if _, inBase := b[f.ID]; inBase {
			continue
		}
		if _, inOurs := o[f.ID]; inOurs {
			continue
		}
		out = append(out, f.Clone())
		if f.ParentID < 0 {
			m.report.ColumnsAdded = append(m.report.ColumnsAdded, f.Name)
		}
	}
	return out, nil
}
