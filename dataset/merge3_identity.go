package dataset

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format/schema"
)

// Row identity for the three-way merge on datasets without stable row ids.
//
// There a row's identity is its address, and an update moves a row: it
// deletes the old copy and writes a new one. Left alone the merge sees a
// deletion plus an unrelated insertion, and a row updated on both sides
// comes out twice. Two sources say which new row is which old row, strongest
// first:
//
//   - a key (ThreeWayOptions.On, or the schema's unenforced primary key):
//     a new row of a side whose key a base row that side removed had is that
//     row's new copy (whether the side changed it or only moved it, the
//     transactions below say, else its values: keyedMoves);
//   - the transactions of each side since the base: an Update transaction
//     that removed N rows and wrote N rows wrote them in the order it read
//     them (lancer's and Lance's update scan the fragments in order), so the
//     k-th removed row's new copy is the k-th written row; a merge lancer
//     committed on the side's line brought over rows of its source, whose
//     origins are found by replaying the source's line the same way
//     (ThreeWayOptions.TraceMerge), and records which row each row it
//     merged cell by cell is a copy of (PropCellOrigins). A compaction
//     (Rewrite) moves rows without changing them: each group's new
//     fragments hold its old fragments' live rows in the order the group
//     lists them (rewriteMoves), so a moved row keeps its origin and one
//     only compactions moved is relocated, not updated. When the base is
//     on another line than the side's start, the base's own line is
//     replayed too (baseMoves): a base row compactions there moved from a
//     row the side's start holds is that row.
//
// What neither settles (a merge-insert's rewrite, a history the walk cannot
// follow, a merge whose source is gone, a rewrite whose groups do not
// account for its rows) is uncertain: a base row a side
// removed whose new copy, if any, cannot be found; after rows written that
// cannot be traced, every base row the side no longer holds. When the other side changed such a row too the merge
// stops with ConflictUnmatched, which no strategy resolves: naming a key
// does.

// PrimaryKeyMetadata is the Arrow field metadata key with which LanceDB
// marks a column as (part of) the table's unenforced primary key (value
// "true"); Lance also records it in the field's unenforced_primary_key.
const PrimaryKeyMetadata = "lance-schema:unenforced-primary-key"

// maxReplay bounds the versions of one side the merge replays to match
// updated rows; older changes count as uncertain.
const maxReplay = 512

// maxMergeReplay bounds the versions one merge replays in all, over both
// sides and every merge it traces (maxReplay bounds one replay only: a
// long-lived branch merged many times would otherwise replay thousands).
// A var so tests can lower it.
var maxMergeReplay = 4096

// PrimaryKey returns the names of the top-level columns of s marked as the
// unenforced primary key, in key order (their recorded positions, then field
// ids); nil when there is none.
func PrimaryKey(s *schema.Schema) []string {
	var pk []*schema.Field
	for _, f := range s.Fields {
		if f.UnenforcedPrimaryKey || strings.EqualFold(f.Metadata[PrimaryKeyMetadata], "true") {
			pk = append(pk, f)
		}
	}
	slices.SortStableFunc(pk, func(a, b *schema.Field) int {
		pa, pb := a.UnenforcedPrimaryKeyPosition, b.UnenforcedPrimaryKeyPosition
		if pa == 0 {
			pa = ^uint32(0)
		}
		if pb == 0 {
			pb = ^uint32(0)
		}
		if pa != pb {
			if pa < pb {
				return -1
			}
			return 1
		}
		return int(a.ID) - int(b.ID)
	})
	var out []string
	for _, f := range pk {
		out = append(out, f.Name)
	}
	return out
}

// mergeKey returns the key columns the merge matches rows by: opts.On, else
// the target's primary key. Each must be a top-level column of all three
// versions.
func (m *merger) mergeKey() ([]string, error) {
	key := m.o.On
	if len(key) == 0 {
		key = PrimaryKey(m.ours.manifest.Schema)
	}
	seen := map[string]bool{}
	for _, c := range key {
		if seen[c] {
			return nil, fmt.Errorf("dataset: merge: key column %q named twice: %w", c, lancer.ErrInvalidArgument)
		}
		seen[c] = true
		for _, d := range []*Dataset{m.base, m.ours, m.theirs} {
			f := d.manifest.Schema.Field(c)
			if f == nil || f.ParentID >= 0 {
				return nil, fmt.Errorf("dataset: merge: key column %q is not a column of version %d: %w", c, d.Version(), lancer.ErrNotFound)
			}
			if f.Blob != 0 {
				return nil, fmt.Errorf("dataset: merge: key column %q is a blob column: %w", c, lancer.ErrInvalidArgument)
			}
		}
	}
	return key, nil
}

// identify matches, on each side, the rows it rewrote with the base rows
// they are copies of (re-keying them in m.live under the base identity),
// and records the base rows whose copies cannot be found (m.uncertain). With
// a key it also finds the rows both sides inserted with one key.
func (m *merger) identify(ctx context.Context) error {
	key, err := m.mergeKey()
	if err != nil {
		return err
	}
	m.key = key
	if len(key) > 0 {
		if err := m.identifyByKey(ctx); err != nil {
			return err
		}
		if m.stable {
			return nil // last-updated versions tell moves (classify)
		}
		return m.keyedMoves(ctx)
	}
	if m.stable {
		return nil
	}
	var lines [3]*lineageResult
	for side := 1; side <= 2; side++ {
		if lines[side], err = m.lineage(ctx, side); err != nil {
			return err
		}
	}
	// A row the base lacks that both sides hold or held (it reached both
	// through merges of a line whose history is gone, as after a discard,
	// or of a criss-cross the base does not cover) is one row on both:
	// a side's updated copy of it is matched to it as a base row's is,
	// else the merge would keep the other side's copy beside it.
	var known [3]map[uint64]bool
	for side := 1; side <= 2; side++ {
		known[side] = make(map[uint64]bool, len(m.live[side]))
		for id := range m.live[side] {
			known[side][id] = true
		}
		for _, o := range lines[side].origin {
			known[side][o] = true
		}
	}
	for side := 1; side <= 2; side++ {
		m.remap(side, lines[side], known[3-side])
		uncertain := lines[side].uncertain
		for id := range uncertain {
			if _, inBase := m.live[0][id]; !inBase {
				continue
			}
			if _, live := m.live[side][id]; live {
				continue
			}
			m.uncertain[side-1][id] = true
		}
	}
	return nil
}

// remap re-keys the rows of a side that are copies of base rows, or of
// rows the base lacks that the other side knows (otherKnown: rows it
// holds or held): line.origin maps a row's identity in the side to the
// identity it is a copy of. A row only compactions moved there (not in
// line.copied) is recorded in m.moved: the side relocated it, it did not
// change it.
func (m *merger) remap(side int, line *lineageResult, otherKnown map[uint64]bool) {
	live := m.live[side]
	for id, o := range line.origin {
		at, ok := live[id]
		if !ok {
			continue
		}
		if _, inBase := m.live[0][o]; !inBase && !otherKnown[o] {
			continue
		}
		if _, taken := live[o]; taken {
			continue // the base row is still live: not a copy
		}
		delete(live, id)
		live[o] = at
		if !line.copied[id] {
			m.moved[side-1][o] = true
		}
	}
}

// liveRows lists the identities (interned fragment key << 32 | offset) of
// d's live rows in scan order.
func (m *merger) liveRows(ctx context.Context, d *Dataset) ([]uint64, error) {
	var out []uint64
	for _, f := range d.manifest.Fragments {
		if len(f.Files) == 0 {
			return nil, fmt.Errorf("dataset: merge: fragment %d of version %d has no data file: %w", f.ID, d.Version(), lancer.ErrUnsupported)
		}
		k, err := d.fileKey(ctx, &f.Files[0])
		if err != nil {
			return nil, err
		}
		key := uint64(m.intern(k))
		physical, err := d.physicalRows(ctx, f)
		if err != nil {
			return nil, err
		}
		if physical >= 1<<32 {
			return nil, fmt.Errorf("dataset: merge: fragment %d has %d rows: %w", f.ID, physical, lancer.ErrCorrupt)
		}
		dv, err := d.deletionVector(ctx, f)
		if err != nil {
			return nil, err
		}
		del := dv.bitmap()
		for j := uint64(0); j < physical; j++ {
			if !del.Contains(uint32(j)) {
				out = append(out, key<<32|j)
			}
		}
	}
	return out, nil
}

// lineage replays the commits of one side (1 ours, 2 theirs) since the
// base, or since the oldest version of its line it can read, and returns
// origin (identity of a row of the side's latest version → the base row it
// is an updated copy of) and uncertain (base rows removed in a way that may
// have written a copy the replay cannot find).
func (m *merger) lineage(ctx context.Context, side int) (*lineageResult, error) {
	return m.lineageOf(ctx, m.sides[side].d, 0)
}

// maxTraceDepth bounds how many merges deep lineageOf follows a merge's
// source (a merge of a line that merged another line ...); deeper merges
// count as untraceable.
const maxTraceDepth = 8

// lineageResult is the lineage of one state, cached by traceKey: origin
// maps a row of the state to the row it is a copy of, copied holds the
// rows of origin that a commit wrote with values of its own (an update, a
// merge), as opposed to rows only compactions moved, uncertain holds the
// base rows whose copies, if any, are not known, and live the state's
// rows.
type lineageResult struct {
	origin    map[uint64]uint64
	copied    map[uint64]bool
	uncertain map[uint64]bool
	live      map[uint64]bool
}

func traceKey(d *Dataset) string {
	return fmt.Sprintf("%s@%d", strings.TrimSuffix(d.store.URI(), "/"), d.Version())
}

// lineageOf is lineage for any state d of the family (a side, or the
// source of a merge on a side's line, depth merges deep).
func (m *merger) lineageOf(ctx context.Context, d *Dataset, depth int) (*lineageResult, error) {
	if r, ok := m.traced[traceKey(d)]; ok {
		return r, nil
	}
	base := m.live[0]
	sameLine := strings.TrimSuffix(d.store.URI(), "/") == strings.TrimSuffix(m.base.store.URI(), "/")
	// Walk back to where the replay starts: the base on its own line, else
	// the oldest version of the line there is (a branch's first version is
	// its fork point's state).
	cache := map[uint64]*manifest.Transaction{}
	start := replayStart(ctx, d, sameLine, m.base.Version(), cache)
	origin := map[uint64]uint64{}
	copied := map[uint64]bool{}
	uncertain := map[uint64]bool{}
	prevDS := d
	if start != d.Version() {
		var err error
		if prevDS, err = d.Checkout(ctx, start); err != nil {
			return nil, err
		}
	}
	prev, err := m.liveRows(ctx, prevDS)
	if err != nil {
		return nil, err
	}
	if !sameLine || start != m.base.Version() {
		// How the start state lost a base row is not known; unless it
		// holds no row the base lacks, when the row was deleted.
		in := setOf(prev)
		wrote := false
		for _, id := range prev {
			if _, ok := base[id]; !ok {
				wrote = true
				break
			}
		}
		var fromStart []uint64
		for id := range base {
			if !in[id] && wrote {
				fromStart = append(fromStart, id)
			}
		}
		// The base's own line may say what the start state's rows became
		// there: a base row only compactions on the base's line moved from
		// a row the start state holds is that row (the start is the base
		// line's start too, as where a branch forked from the other line,
		// was compacted, and was merged into it).
		var moved map[uint64]uint64
		if len(fromStart) > 0 {
			bl, err := m.baseMoves(ctx)
			if err != nil {
				return nil, err
			}
			if bl != nil && maps.Equal(bl.start, in) {
				moved = bl.moved
			}
		}
		for _, id := range fromStart {
			if s, ok := moved[id]; ok && in[s] {
				if _, taken := origin[s]; !taken {
					origin[s] = id
					continue
				}
			}
			uncertain[id] = true
		}
	}
	for v := start + 1; v <= d.Version(); v++ {
		step, err := m.replayVersion(ctx, d, v, prev, cache)
		if err != nil {
			return nil, err
		}
		curDS, cur, txn := step.ds, step.rows, step.txn
		var op manifest.Operation
		if txn != nil {
			op = txn.Operation
		}
		prevSet, curSet, removed, written := step.prevSet, step.curSet, step.removed, step.written
		// A row's origin: the base row or earlier row it is a copy of,
		// else itself (a row the base lacks is kept as its own origin for
		// remap, which matches such rows only when the other side knows
		// them).
		originOf := func(id uint64) (uint64, bool) {
			if o, ok := origin[id]; ok {
				return o, true
			}
			return id, true
		}
		switch op := op.(type) {
		case *manifest.Delete, *manifest.Append:
			// Removed rows are deleted, written rows new.
		case *manifest.Update:
			if len(removed) == len(written) {
				for i, id := range removed {
					if o, ok := originOf(id); ok {
						origin[written[i]] = o
						copied[written[i]] = true
					}
				}
				break
			}
			// A merge-insert (or an update Lance wrote otherwise): the
			// copies cannot be told from the insertions.
			for _, id := range removed {
				if o, ok := originOf(id); ok {
					uncertain[o] = true
				}
			}
		case *manifest.Rewrite:
			// Compaction moves rows without changing them: a group's
			// new rows are its old fragments' live rows in order.
			moves, err := m.rewriteMoves(ctx, op, prevDS, curDS, prev, removed, written)
			if err != nil {
				return nil, err
			}
			if moves == nil {
				// The groups do not account for the rows: which row
				// went where is not known.
				for _, id := range removed {
					if o, ok := originOf(id); ok {
						uncertain[o] = true
					}
				}
				break
			}
			for to, from := range moves {
				o, _ := originOf(from)
				origin[to] = o
				if copied[from] {
					copied[to] = true
				}
			}
		default:
			// Another operation (a merge, an overwrite, a restore) that
			// removed rows and wrote none deleted them.
			if len(written) == 0 {
				break
			}
			// The rows written are not only copies of the rows removed
			// here: a merge brings over the source line's rows, among them
			// copies of base rows this line deleted or updated long
			// before (a row deleted here, updated there and brought back
			// by strategy theirs). Left as rows of their own they would be
			// inserted beside the other side's copy. Rows found in the
			// merge's source take their origin there; any other row
			// written (a row merged cell by cell, a commit whose source
			// cannot be opened) may be a copy of any base row this line
			// no longer holds, which are then uncertain. When every row
			// written is traced, a row removed whose origin no row
			// written took was deleted: the source deleted it, or the
			// merge kept the source's copy of it, which is traced.
			traced, err := m.traceWritten(ctx, txn, written, origin, copied, uncertain, depth)
			if err != nil {
				return nil, err
			}
			if len(traced) < len(written) {
				if err := m.traceCells(ctx, txn, prevDS, prevSet, written, traced, origin, copied); err != nil {
					return nil, err
				}
			}
			if len(traced) < len(written) {
				for id := range base {
					if !curSet[id] {
						uncertain[id] = true
					}
				}
			}
		}
		for _, id := range removed {
			delete(origin, id)
			delete(copied, id)
		}
		prev, prevDS = cur, curDS
	}
	// A base row the state holds has no other copy there (every commit
	// that writes a copy of a row removes the row): whatever made it
	// uncertain on the way (the start state, a merge of a line where it
	// was), it is not now. A merge of this state traced on another line
	// takes the rest (traceWritten).
	live := setOf(prev)
	for id := range uncertain {
		if live[id] {
			delete(uncertain, id)
		}
	}
	if m.traced == nil {
		m.traced = map[string]*lineageResult{}
	}
	r := &lineageResult{origin: origin, copied: copied, uncertain: uncertain, live: live}
	m.traced[traceKey(d)] = r
	return r, nil
}

// rewriteMoves pairs the rows a compaction (op, committed as curDS over
// prevDS, whose live rows are prev in scan order) moved: it maps each row
// it wrote to the row it is. Lance's compaction (rewrite_files: a scan in
// order of the group's fragments, in the order the group lists them) and
// lancer's (rewriteTask) write a group's old fragments' live rows in that
// order, deleted rows dropped, into its new fragments in the order listed,
// so the k-th live old row is the k-th new row. Fragments are found by
// their first data file (the ids a transaction records for new fragments
// may be placeholders the commit replaced). It returns nil, and no error,
// when the groups do not account for exactly the rows the commit removed
// and wrote (a rewrite without groups, as very old Lance wrote, or counts
// that differ): then no row can be paired.
func (m *merger) rewriteMoves(ctx context.Context, op *manifest.Rewrite, prevDS, curDS *Dataset,
	prev, removed, written []uint64) (map[uint64]uint64, error) {
	if len(op.Groups) == 0 || len(op.OldFragments) > 0 || len(op.NewFragments) > 0 {
		return nil, nil
	}
	oldRows := map[uint32][]uint64{}
	for _, id := range prev {
		k := uint32(id >> 32)
		oldRows[k] = append(oldRows[k], id)
	}
	physical := map[uint32]uint64{}
	for _, f := range curDS.manifest.Fragments {
		if len(f.Files) == 0 {
			continue
		}
		k, err := curDS.fileKey(ctx, &f.Files[0])
		if err != nil {
			return nil, err
		}
		n, err := curDS.physicalRows(ctx, f)
		if err != nil {
			return nil, err
		}
		physical[m.intern(k)] = n
	}
	wrote := setOf(written)
	oldKeys, newKeys := map[uint32]bool{}, map[uint32]bool{}
	moves := make(map[uint64]uint64, len(written))
	for _, g := range op.Groups {
		var from []uint64
		for _, f := range g.OldFragments {
			if len(f.Files) == 0 {
				return nil, nil
			}
			k, err := prevDS.fileKey(ctx, &f.Files[0])
			if err != nil {
				return nil, err
			}
			key := m.intern(k)
			if _, was := oldRows[key]; !was {
				return nil, nil // not in the previous version
			}
			if _, still := physical[key]; still || oldKeys[key] {
				return nil, nil // not removed, or in two groups
			}
			oldKeys[key] = true
			from = append(from, oldRows[key]...)
		}
		// Count before listing: a new fragment's row count is input, and
		// must match rows the previous version holds.
		var total uint64
		var keys []uint32
		for _, f := range g.NewFragments {
			if len(f.Files) == 0 {
				return nil, nil
			}
			k, err := curDS.fileKey(ctx, &f.Files[0])
			if err != nil {
				return nil, err
			}
			key := m.intern(k)
			n, ok := physical[key]
			if !ok || newKeys[key] || len(oldRows[key]) > 0 {
				return nil, nil // not in the version, listed twice, or not new
			}
			newKeys[key] = true
			keys = append(keys, key)
			total += n
		}
		if total != uint64(len(from)) {
			return nil, nil
		}
		i := 0
		for _, key := range keys {
			for j := range physical[key] {
				if id := uint64(key)<<32 | j; wrote[id] {
					moves[id] = from[i]
				}
				i++
			}
		}
	}
	for _, id := range removed {
		if !oldKeys[uint32(id>>32)] {
			return nil, nil
		}
	}
	for _, id := range written {
		if !newKeys[uint32(id>>32)] {
			return nil, nil
		}
	}
	return moves, nil
}

// replayStart walks d's line back to where a replay of it starts: the base
// (version baseVersion) when the line is the base's (sameLine), else the
// line's oldest version there is (a branch's first version is its fork
// point's state; a Clone starts a line), at most maxReplay back.
func replayStart(ctx context.Context, d *Dataset, sameLine bool, baseVersion uint64, cache map[uint64]*manifest.Transaction) uint64 {
	start := d.Version()
	for n := 0; start > 1 && n < maxReplay; n++ {
		if sameLine && start <= baseVersion {
			break
		}
		t, err := loadTransactions(ctx, d.store, start, start, cache)
		if err != nil {
			break // the version is not in this line's store
		}
		if _, clone := t[0].txn.Operation.(*manifest.Clone); clone {
			break
		}
		start--
	}
	return start
}

// baseLine is what the base's own line did since its start state.
type baseLine struct {
	start map[uint64]bool   // the start state's rows
	moved map[uint64]uint64 // base row → the start row it is, moved by compactions only
}

// baseMoves replays the base's line from its start state (replayStart) to
// the base and returns which base rows are start rows that compactions
// moved (a row another commit wrote, such as an update's copy, is not: its
// values may differ), nil when the start cannot be read. A row a commit
// leaves in place stays what it was, so any commit may come between. It
// is computed once per merge and counts against maxMergeReplay.
func (m *merger) baseMoves(ctx context.Context) (*baseLine, error) {
	if m.baseLineDone {
		return m.baseLine, nil
	}
	m.baseLineDone = true
	d := m.base
	cache := map[uint64]*manifest.Transaction{}
	start := replayStart(ctx, d, false, 0, cache)
	prevDS := d
	if start != d.Version() {
		var err error
		if prevDS, err = d.Checkout(ctx, start); err != nil {
			return nil, nil // an unreadable start: nothing to learn
		}
	}
	prev, err := m.liveRows(ctx, prevDS)
	if err != nil {
		return nil, err
	}
	out := &baseLine{start: setOf(prev), moved: map[uint64]uint64{}}
	for v := start + 1; v <= d.Version(); v++ {
		step, err := m.replayVersion(ctx, d, v, prev, cache)
		if err != nil {
			return nil, err
		}
		curDS, cur, removed := step.ds, step.rows, step.removed
		var rw *manifest.Rewrite
		if step.txn != nil {
			rw, _ = step.txn.Operation.(*manifest.Rewrite)
		}
		if rw != nil {
			moves, err := m.rewriteMoves(ctx, rw, prevDS, curDS, prev, removed, step.written)
			if err != nil {
				return nil, err
			}
			for to, from := range moves {
				if s, ok := out.moved[from]; ok {
					out.moved[to] = s
				} else if out.start[from] {
					out.moved[to] = from
				}
			}
		}
		for _, id := range removed {
			delete(out.moved, id)
		}
		prev, prevDS = cur, curDS
	}
	m.baseLine = out
	return out, nil
}

// replayStep is one version of a line's replay (lineageOf, baseMoves):
// its state and live rows (curSet their set), its transaction (nil when it
// cannot be read), and what it changed since the version before, whose
// live rows are prevSet: the rows it removed and those it wrote, in scan
// order.
type replayStep struct {
	ds               *Dataset
	rows             []uint64
	txn              *manifest.Transaction
	prevSet, curSet  map[uint64]bool
	removed, written []uint64
}

// replayVersion opens version v of d's line (d itself at its own
// version), counting it against maxMergeReplay, and compares its live
// rows with prev, the version before's.
func (m *merger) replayVersion(ctx context.Context, d *Dataset, v uint64, prev []uint64, cache map[uint64]*manifest.Transaction) (*replayStep, error) {
	if m.replayed++; m.replayed > maxMergeReplay {
		return nil, fmt.Errorf("%w: merge: matching rows without stable row ids or a key replays more than %d versions of the merged lines (at %s); name a key (On) or merge from a nearer base",
			lancer.ErrUnsupported, maxMergeReplay, traceKey(d))
	}
	st := &replayStep{ds: d}
	var err error
	if v != d.Version() {
		if st.ds, err = d.Checkout(ctx, v); err != nil {
			return nil, err
		}
	}
	if st.rows, err = m.liveRows(ctx, st.ds); err != nil {
		return nil, err
	}
	if t, err := loadTransactions(ctx, d.store, v, v, cache); err == nil {
		st.txn = t[0].txn
	}
	st.prevSet, st.curSet = setOf(prev), setOf(st.rows)
	for _, id := range prev {
		if !st.curSet[id] {
			st.removed = append(st.removed, id)
		}
	}
	for _, id := range st.rows {
		if !st.prevSet[id] {
			st.written = append(st.written, id)
		}
	}
	return st, nil
}

// traceWritten gives the rows a commit on a line wrote (written), where
// that commit is a merge whose source ThreeWayOptions.TraceMerge opens, the
// origins they have on the source's line, and adds the base rows uncertain
// there to uncertain. It returns the written rows it traced (rows of the
// source's state; the others, such as rows the merge wrote cell by cell,
// are not).
func (m *merger) traceWritten(ctx context.Context, txn *manifest.Transaction, written []uint64,
	origin map[uint64]uint64, copied, uncertain map[uint64]bool, depth int) (map[uint64]bool, error) {
	traced := map[uint64]bool{}
	if txn == nil || m.o.TraceMerge == nil || depth >= maxTraceDepth || len(txn.Properties) == 0 {
		return traced, nil
	}
	src, err := m.o.TraceMerge(ctx, txn.Properties)
	if err != nil || src == nil {
		// The source is gone (a discarded branch) or was never a line's
		// state: its rows cannot be traced.
		return traced, nil
	}
	sl, err := m.lineageOf(ctx, src, depth+1)
	if err != nil {
		return nil, err
	}
	for _, id := range written {
		if !sl.live[id] {
			continue
		}
		traced[id] = true
		if o, ok := sl.origin[id]; ok {
			origin[id] = o
			if sl.copied[id] {
				copied[id] = true
			}
		}
	}
	for id := range sl.uncertain {
		uncertain[id] = true
	}
	return traced, nil
}

// PropCellOrigins records, on a merge's commit, which row of the version
// it merged into each row it wrote cell by cell is a copy of:
// "VERSION:FRAG.OFFSET,FRAG.OFFSET,..." in the order the rows were written
// (fragment ids of that version). A later merge replaying the line follows
// those rows through it (traceCells).
const PropCellOrigins = "lancer.merge.cell_origins"

// maxCellOrigins bounds the rows PropCellOrigins lists; a merge that
// wrote more rows cell by cell records none (those rows are untraceable).
const maxCellOrigins = 4096

// cellOrigins is PropCellOrigins's value for the rows m wrote cell by cell
// (in writeCells's order), "" when there are none or too many.
func (m *merger) cellOrigins() string {
	if len(m.cells) == 0 || len(m.cells) > maxCellOrigins {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d:", m.ours.Version())
	for i, c := range m.cells {
		at, ok := m.live[1][c.ident]
		if !ok {
			return ""
		}
		f, ok := m.sides[1].frags[at.key]
		if !ok {
			return ""
		}
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d.%d", f.frag.ID, at.offset)
	}
	return b.String()
}

// traceCells gives the rows a merge wrote cell by cell (the rows of
// written that traceWritten did not trace, in order) the origins of the
// rows of the version before (prevDS, live rows prevSet) that
// PropCellOrigins says they are copies of, and adds them to traced. It
// traces none unless the record fits exactly.
func (m *merger) traceCells(ctx context.Context, txn *manifest.Transaction, prevDS *Dataset, prevSet map[uint64]bool,
	written []uint64, traced map[uint64]bool, origin map[uint64]uint64, copied map[uint64]bool) error {
	rec := ""
	if txn != nil {
		rec = txn.Properties[PropCellOrigins]
	}
	vs, list, ok := strings.Cut(rec, ":")
	if !ok || vs != strconv.FormatUint(prevDS.Version(), 10) {
		return nil
	}
	var rest []uint64
	for _, id := range written {
		if !traced[id] {
			rest = append(rest, id)
		}
	}
	// Count before splitting: the record is input (a transaction file
	// anyone could have written), and a split of a huge one would
	// allocate a part per comma before any bound was checked.
	if n := strings.Count(list, ",") + 1; n != len(rest) || n > maxCellOrigins {
		return nil
	}
	parts := strings.Split(list, ",")
	byID := make(map[uint64]*manifest.Fragment, len(prevDS.manifest.Fragments))
	for _, f := range prevDS.manifest.Fragments {
		byID[f.ID] = f
	}
	from := make([]uint64, len(parts))
	for i, p := range parts {
		fs, offs, ok := strings.Cut(p, ".")
		fid, err1 := strconv.ParseUint(fs, 10, 64)
		off, err2 := strconv.ParseUint(offs, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return nil
		}
		f, ok := byID[fid]
		if !ok || len(f.Files) == 0 {
			return nil
		}
		k, err := prevDS.fileKey(ctx, &f.Files[0])
		if err != nil {
			return err
		}
		id := uint64(m.intern(k))<<32 | off
		if !prevSet[id] {
			return nil
		}
		from[i] = id
	}
	for i, id := range rest {
		o := from[i]
		if oo, ok := origin[o]; ok {
			o = oo
		}
		origin[id] = o
		copied[id] = true
		traced[id] = true
	}
	return nil
}

func setOf(ids []uint64) map[uint64]bool {
	out := make(map[uint64]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out
}

// rowStrings reads the given columns of the rows of a side (identities in
// m.live[side]) and returns each row's values as one string (equal rows,
// equal strings).
func (m *merger) rowStrings(ctx context.Context, side int, ids []uint64, cols []string) ([]string, error) {
	out := make([]string, 0, len(ids))
	const chunk = 8192
	for lo := 0; lo < len(ids); lo += chunk {
		rec, err := m.takeRows(ctx, side, ids[lo:min(lo+chunk, len(ids))], cols)
		if err != nil {
			return nil, err
		}
		for r := range int(rec.NumRows()) {
			out = append(out, rowString(rec, r))
		}
		rec.Release()
	}
	return out, nil
}

// takeRows reads the given columns of rows of a side (identities in
// m.live[side]), in the order given. The caller releases the batch.
func (m *merger) takeRows(ctx context.Context, side int, ids []uint64, cols []string) (arrow.RecordBatch, error) {
	d := m.sides[side].d
	pos := make(map[*manifest.Fragment]int, len(d.manifest.Fragments))
	for i, f := range d.manifest.Fragments {
		pos[f] = i
	}
	locs := make([]rowLoc, len(ids))
	for i, id := range ids {
		at, ok := m.live[side][id]
		if !ok {
			return nil, fmt.Errorf("dataset: merge: row %d is not live in version %d: %w", id, d.Version(), lancer.ErrCorrupt)
		}
		sf, ok := m.sides[side].frags[at.key]
		if !ok {
			return nil, fmt.Errorf("dataset: merge: a fragment of version %d is missing: %w", d.Version(), lancer.ErrCorrupt)
		}
		locs[i] = rowLoc{frag: pos[sf.frag], offset: uint64(at.offset)}
	}
	proj, err := d.project(cols, false, false)
	if err != nil {
		return nil, err
	}
	return d.takeLocations(ctx, proj, locs)
}

// rowString encodes row r of rec: each value as Arrow prints it, nulls
// apart from any value.
func rowString(rec arrow.RecordBatch, r int) string {
	var b strings.Builder
	for c := range int(rec.NumCols()) {
		col := rec.Column(c)
		if c > 0 {
			b.WriteByte(0x1f)
		}
		if col.IsNull(r) {
			b.WriteString("\x00null")
			continue
		}
		b.WriteString(col.ValueStr(r))
	}
	return b.String()
}

// keyText prints a key value for messages.
func keyText(cols []string, s string) string {
	vals := strings.Split(s, "\x1f")
	parts := make([]string, len(cols))
	for i, c := range cols {
		v := ""
		if i < len(vals) {
			v = strings.ReplaceAll(vals[i], "\x00null", "NULL")
		}
		parts[i] = c + "=" + v
	}
	return strings.Join(parts, ", ")
}

// identifyByKey matches rows by the key: a new row of a side whose key a
// base row the side removed had is that row's copy (in every mode: with
// stable row ids the copy may have another id); rows both sides inserted
// with one key are matched (equal rows: one row; different: a conflict).
// Keys live twice in a version are an error.
func (m *merger) identifyByKey(ctx context.Context) error {
	keysOf := func(side int, ids []uint64) (map[string]uint64, map[uint64]string, error) {
		vals, err := m.rowStrings(ctx, side, ids, m.key)
		if err != nil {
			return nil, nil, err
		}
		byKey := make(map[string]uint64, len(ids))
		byID := make(map[uint64]string, len(ids))
		for i, id := range ids {
			if _, dup := byKey[vals[i]]; dup {
				return nil, nil, &MergeConflictError{Report: m.report, Reason: fmt.Sprintf(
					"the key (%s) is not unique in version %d: %s is on more than one row; a merge by key needs unique keys",
					strings.Join(m.key, ", "), m.sides[side].d.Version(), keyText(m.key, vals[i]))}
			}
			byKey[vals[i]] = id
			byID[id] = vals[i]
		}
		return byKey, byID, nil
	}
	// Only the base rows a side removed and the rows it added need their
	// keys read; the keys of the base rows still live come from the base.
	baseIDs := sortedKeys(m.live[0])
	baseByKey, baseKey, err := keysOf(0, baseIDs)
	if err != nil {
		return err
	}
	m.baseKey = baseKey
	added := [3]map[string]uint64{}
	for side := 1; side <= 2; side++ {
		var ids []uint64
		for id := range m.live[side] {
			if _, inBase := m.live[0][id]; !inBase {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		byKey, _, err := keysOf(side, ids)
		if err != nil {
			return err
		}
		added[side] = map[string]uint64{}
		for k, id := range byKey {
			b, inBase := baseByKey[k]
			_, baseLive := m.live[side][b]
			switch {
			case inBase && baseLive:
				return &MergeConflictError{Report: m.report, Reason: fmt.Sprintf(
					"the key (%s) is not unique in version %d: %s is on more than one row; a merge by key needs unique keys",
					strings.Join(m.key, ", "), m.sides[side].d.Version(), keyText(m.key, k))}
			case inBase:
				// The side removed the base row and wrote this one (with
				// stable row ids: under another id, as when both sides
				// inserted the key and an earlier merge kept the other's
				// copy).
				m.live[side][b] = m.live[side][id]
				delete(m.live[side], id)
				if m.keyCopy[side] == nil {
					m.keyCopy[side] = map[uint64]uint64{}
				}
				m.keyCopy[side][b] = id
				if m.stable && b != id {
					// Its last-updated version is of another row: not
					// comparable with the base row's.
					m.rekeyed[side][b] = true
				}
			default:
				added[side][k] = id
			}
		}
	}
	// Rows both sides inserted with one key.
	var pairs [][2]uint64
	var keys []string
	for k, t := range added[2] {
		if o, ok := added[1][k]; ok {
			pairs = append(pairs, [2]uint64{o, t})
			keys = append(keys, k)
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	cols := commonColumns(m.base, m.ours, m.theirs)
	os, ts := make([]uint64, len(pairs)), make([]uint64, len(pairs))
	for i, p := range pairs {
		os[i], ts[i] = p[0], p[1]
	}
	ov, err := m.rowStrings(ctx, 1, os, cols)
	if err != nil {
		return err
	}
	tv, err := m.rowStrings(ctx, 2, ts, cols)
	if err != nil {
		return err
	}
	m.insertedBoth = map[uint64]insertPair{}
	for i, p := range pairs {
		m.insertedBoth[p[1]] = insertPair{ours: p[0], same: ov[i] == tv[i], key: keyText(m.key, keys[i])}
	}
	return nil
}

// keyedMoves records in m.moved the base rows a key matched to a copy on a
// side (without stable row ids) that the side only moved, as a compaction
// does, so that classify counts them relocated, not updated: the report
// counts what users changed, and a row one side only moved and the other
// updated is no conflict. The key has settled identity; this only tells a
// move from a change. The side's transactions say it first, reading no
// values (lineage: the row's copy is the base row through compactions
// only); a copy they do not account for (a rewrite whose groups do not say
// where rows went, a history the replay cannot follow, a row deleted and
// inserted again under its key) is compared with the base row by value,
// so only rows whose location changed and the transactions do not explain
// are read. A copy the transactions say an update or a merge wrote is
// updated without a read, even if it holds the base's values.
func (m *merger) keyedMoves(ctx context.Context) error {
	cols := commonColumns(m.base, m.ours, m.theirs)
	for side := 1; side <= 2; side++ {
		copies := m.keyCopy[side]
		if len(copies) == 0 {
			continue // nothing moved: no replay
		}
		line, err := m.lineage(ctx, side)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			// The replay is only a shortcut here (over budget, a version
			// that cannot be read): the values decide instead, and a
			// read that fails for the same reason reports it.
			line = nil
		}
		var compare []uint64
		for _, b := range sortedKeys(copies) {
			id := copies[b]
			if line != nil {
				if o, ok := line.origin[id]; ok && o == b {
					if !line.copied[id] {
						m.moved[side-1][b] = true
					}
					continue
				}
			}
			compare = append(compare, b)
		}
		err = m.sameAsBase(ctx, side, compare, cols, func(b uint64, same bool) {
			if same {
				m.moved[side-1][b] = true
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// insertPair is a row the source inserted whose key the target inserted
// too.
type insertPair struct {
	ours uint64 // the target's row
	same bool   // both rows hold the same values
	key  string
}

func sortedKeys[V any](mp map[uint64]V) []uint64 {
	out := make([]uint64, 0, len(mp))
	for k := range mp {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
