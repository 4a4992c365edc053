package dataset

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// ConflictError reports a commit that cannot be rebased over a version a
// concurrent writer committed after the version it read. It wraps
// lancer.ErrConflict.
type ConflictError struct {
	// Operation is the operation that failed to commit, as Lance names it
	// ("Append", "Delete", "Overwrite", "Restore", "Project", "Update").
	Operation string
	// ReadVersion is the version the operation was computed from.
	ReadVersion uint64
	// Version is the conflicting version: the one whose transaction is
	// incompatible, or the version the commit could not take after its
	// retries.
	Version uint64
	// OtherOperation and OtherTransaction name the conflicting version's
	// transaction (operation and uuid); "" when there is none.
	OtherOperation, OtherTransaction string
	// Reason says why the commit was refused.
	Reason string
	// Retryable reports that the operation may succeed if computed again
	// from the latest version (as Lance's retryable commit conflicts).
	Retryable bool
}

// Error describes the conflict.
func (e *ConflictError) Error() string {
	var b strings.Builder
	b.WriteString("dataset: commit")
	if e.Operation != "" {
		fmt.Fprintf(&b, " of %s", e.Operation)
	}
	fmt.Fprintf(&b, " read at version %d", e.ReadVersion)
	if e.OtherOperation != "" || e.OtherTransaction != "" {
		op := e.OtherOperation
		if op == "" {
			op = "an unknown operation"
		}
		fmt.Fprintf(&b, " conflicts with %s (transaction %s) committed as version %d", op, e.OtherTransaction, e.Version)
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	b.WriteString(": ")
	b.WriteString(lancer.ErrConflict.Error())
	return b.String()
}

// Unwrap returns lancer.ErrConflict.
func (e *ConflictError) Unwrap() error { return lancer.ErrConflict }

// rebase checks op, read at readVersion, against the transactions committed
// since (others, ascending) and returns the operation to commit on top of
// latest, following Lance's conflict resolver (docs/spec/lance-format.md §4.4):
//
//   - Append conflicts only with Overwrite and Restore; its fragment ids and
//     row ids are assigned when the manifest is built, so it needs no change.
//   - Overwrite and Restore win over anything.
//   - Delete is compatible with appends, index changes, config changes and
//     column projections; deletes on the same fragments are merged (a new
//     deletion file holding both); a fragment a concurrent delete removed is
//     dropped from this one; data changes to the same fragments (update,
//     compaction, data replacement, new columns) and overwrites conflict.
//   - Update (and merge insert) rewrites rows: the deletion of their old
//     copies is rebased as a delete's, except that rows a concurrent
//     commit deleted or rewrote meanwhile conflict (retryably): writing
//     them again would resurrect or duplicate them.
//   - Project (drop or rename columns) is recomputed from the latest schema
//     after a concurrent Project or Merge, and conflicts with Overwrite and
//     Restore.
//   - CreateIndex (new or dropped index segments) is compatible with
//     appends, deletes, updates and column additions (rows it does not
//     cover are searched exactly, deleted ones are filtered out); a
//     compaction of a fragment it covers, a concurrent change to an index
//     of the same name, or the loss of an indexed column conflicts.
//   - Merge (added columns) records the whole fragment list and schema, so
//     it is compatible only with index, config, clone and base changes and
//     reserved fragment ids; any data change (append, delete, update,
//     rewrite, merge, data replacement) is a retryable conflict, and
//     Overwrite, Restore and Project an incompatible one, as in Lance's
//     check_merge_txn.
//
// Every operation conflicts with a transaction lancer does not know
// (UpdateMemWalState, newer operations). Transactions are not trusted
// blindly: a delete or update conflicts (retryably) when a fragment it
// changes has a new deletion file in latest that no transaction records.
// Deletion files written while merging are appended to written.
func rebase(ctx context.Context, op *operation, others []committed, latest *Dataset, written *[]string) (*operation, error) {
	conflict := func(c committed, retryable bool, format string, args ...any) error {
		e := &ConflictError{
			Operation:        op.kind.String(),
			ReadVersion:      others[0].version - 1,
			Version:          c.version,
			OtherOperation:   manifest.OperationName(c.txn),
			OtherTransaction: c.txn.UUID,
			Reason:           fmt.Sprintf(format, args...),
			Retryable:        retryable,
		}
		if e.OtherOperation == "" {
			e.Reason = "lancer does not know that operation; " + e.Reason
		}
		return e
	}
	switch op.kind {
	case opOverwrite, opRestore:
		for _, c := range others {
			switch c.txn.Operation.(type) {
			case *manifest.Append, *manifest.Delete, *manifest.Overwrite,
				*manifest.CreateIndex, *manifest.Rewrite, *manifest.Merge,
				*manifest.Restore, *manifest.ReserveFragments, *manifest.Update,
				*manifest.Project, *manifest.UpdateConfig, *manifest.DataReplacement,
				*manifest.Clone, *manifest.UpdateBases:
			default:
				return nil, conflict(c, false, "it cannot be overwritten safely")
			}
		}
		return op, nil
	case opAppend:
		for _, c := range others {
			switch c.txn.Operation.(type) {
			case *manifest.Append, *manifest.Delete, *manifest.CreateIndex,
				*manifest.Rewrite, *manifest.Merge, *manifest.ReserveFragments,
				*manifest.Update, *manifest.Project, *manifest.UpdateConfig,
				*manifest.DataReplacement, *manifest.Clone, *manifest.UpdateBases:
			case *manifest.Overwrite, *manifest.Restore:
				return nil, conflict(c, false, "it replaced the rows this append was added to")
			default:
				return nil, conflict(c, false, "cannot append over it")
			}
		}
		return op, nil
	case opProject:
		recompute := false
		for _, c := range others {
			switch c.txn.Operation.(type) {
			case *manifest.Append, *manifest.Delete, *manifest.CreateIndex,
				*manifest.Rewrite, *manifest.ReserveFragments, *manifest.Update,
				*manifest.UpdateConfig, *manifest.DataReplacement, *manifest.Clone,
				*manifest.UpdateBases:
			case *manifest.Merge, *manifest.Project:
				recompute = true
			case *manifest.Overwrite, *manifest.Restore:
				return nil, conflict(c, false, "it replaced the schema this change was made to")
			default:
				return nil, conflict(c, false, "cannot change columns over it")
			}
		}
		if !recompute {
			return op, nil
		}
		fields, err := op.project(latest.manifest)
		if err != nil {
			last := others[len(others)-1]
			return nil, conflict(last, false, "the schema changed concurrently and the change no longer applies: %v", err)
		}
		out := *op
		out.fields = fields
		return &out, nil
	case opMerge:
		for _, c := range others {
			switch c.txn.Operation.(type) {
			case *manifest.CreateIndex, *manifest.ReserveFragments, *manifest.Clone,
				*manifest.UpdateConfig, *manifest.UpdateBases:
			case *manifest.Append, *manifest.Delete, *manifest.Update,
				*manifest.Rewrite, *manifest.Merge, *manifest.DataReplacement:
				return nil, conflict(c, true, "it changed the rows or fragments the new columns were computed for")
			case *manifest.Overwrite, *manifest.Restore, *manifest.Project:
				return nil, conflict(c, false, "it replaced the schema or rows the new columns were added to")
			default:
				return nil, conflict(c, false, "cannot add columns over it")
			}
		}
		return op, nil
	case opDelete, opUpdate:
		// An Update rewrites rows: its deletion of their old copies is
		// rebased as a delete, more strictly (see rebaseDelete).
		return rebaseDelete(ctx, op, others, latest, written, conflict)
	case opRewrite:
		if err := rebaseRewrite(op, others, conflict); err != nil {
			return nil, err
		}
		out := renumberRewrite(op, latest.manifest)
		if out != op && len(op.rewritten) > 0 {
			// The remapped index segments name the new fragments' ids.
			return nil, conflict(others[len(others)-1], true, "it took the fragment ids this compaction's remapped indices name")
		}
		return out, nil
	case opCreateIndex:
		return op, rebaseCreateIndex(op, others, latest, conflict)
	case opReserveFragments:
		// As Lance's check_reserve_fragments_txn: ids are reserved past
		// whatever was committed since, except over an overwrite or a
		// restore, which replaced the fragments they were reserved for.
		for _, c := range others {
			switch c.txn.Operation.(type) {
			case *manifest.Overwrite, *manifest.Restore:
				return nil, conflict(c, false, "it replaced the fragments these ids were reserved for")
			case *manifest.Append, *manifest.Delete, *manifest.CreateIndex, *manifest.Rewrite,
				*manifest.DataReplacement, *manifest.Merge, *manifest.ReserveFragments, *manifest.Update,
				*manifest.Project, *manifest.Clone, *manifest.UpdateConfig, *manifest.UpdateBases:
			default:
				return nil, conflict(c, false, "cannot reserve fragment ids over it")
			}
		}
		return op, nil
	case opDataReplacement:
		for _, c := range others {
			switch c.txn.Operation.(type) {
			case *manifest.Append, *manifest.CreateIndex, *manifest.ReserveFragments, *manifest.Clone,
				*manifest.UpdateConfig, *manifest.UpdateBases:
			case *manifest.Delete, *manifest.Update, *manifest.Rewrite, *manifest.Merge, *manifest.DataReplacement:
				return nil, conflict(c, true, "it changed the fragments whose data this replaces")
			default:
				return nil, conflict(c, false, "cannot replace data over it")
			}
		}
		return op, nil
	}
	return nil, fmt.Errorf("dataset: rebase of %s: %w", op.kind, lancer.ErrUnsupported)
}

// rebaseRewrite checks a compaction against the transactions committed
// since it read, as Lance's check_rewrite_txn: appends, projections,
// reserved ids, config, clone and base changes are fine; a delete, update,
// rewrite or data replacement of a fragment it rewrites, a merge, or an
// index built over one is a retryable conflict; an overwrite or a restore
// an incompatible one. A rewrite that survives keeps its groups; its new
// fragments are given fresh ids if a concurrent commit took theirs (see
// renumberRewrite).
func rebaseRewrite(op *operation, others []committed, conflict func(committed, bool, string, ...any) error) error {
	mine := map[uint64]bool{}
	for _, g := range op.groups {
		for _, f := range g.OldFragments {
			mine[f.ID] = true
		}
	}
	touching := func(c committed, what string, ids ...uint64) error {
		for _, id := range ids {
			if mine[id] {
				return conflict(c, true, "it %s fragment %d, which this compaction rewrites", what, id)
			}
		}
		return nil
	}
	for _, c := range others {
		var err error
		switch t := c.txn.Operation.(type) {
		case *manifest.Append, *manifest.ReserveFragments, *manifest.Project,
			*manifest.Clone, *manifest.UpdateConfig, *manifest.UpdateBases:
		case *manifest.Delete:
			err = touching(c, "deleted rows of", append(manifest.FragmentIDs(t.UpdatedFragments), t.DeletedFragmentIDs...)...)
		case *manifest.Update:
			err = touching(c, "updated rows of", append(manifest.FragmentIDs(t.UpdatedFragments), t.RemovedFragmentIDs...)...)
		case *manifest.Rewrite:
			err = touching(c, "rewrote", t.RewrittenIDs()...)
		case *manifest.DataReplacement:
			err = touching(c, "replaced data of", t.ReplacedIDs()...)
		case *manifest.CreateIndex:
			for _, ix := range t.NewIndices {
				if len(ix.FragmentBitmap) == 0 {
					return conflict(c, true, "it built index %s without a fragment bitmap", ix.Name)
				}
				bm, derr := manifest.DecodeRoaring(ix.FragmentBitmap)
				if derr != nil {
					return conflict(c, true, "it built index %s with an unreadable fragment bitmap", ix.Name)
				}
				for id := range mine {
					if bm.Contains(uint32(id)) {
						return conflict(c, true, "it indexed fragment %d, which this compaction rewrites", id)
					}
				}
			}
		case *manifest.Merge:
			err = conflict(c, true, "it rewrote the fragment list")
		case *manifest.Overwrite, *manifest.Restore:
			err = conflict(c, false, "it replaced the rows this compaction rewrites")
		default:
			err = conflict(c, false, "cannot compact over it")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// checkUnreported fails with a retryable conflict if a fragment op's
// delete changes, and that no transaction since reported changing (neither
// merged nor gone), has another deletion file in latest than when op read it.
func checkUnreported(op *operation, latest *Dataset, merge, gone map[uint64]bool, last committed,
	conflict func(committed, bool, string, ...any) error) error {
	del := op.del
	now := map[uint64]*manifest.Fragment{}
	for _, f := range latest.manifest.Fragments {
		now[f.ID] = f
	}
	check := func(id uint64) error {
		base, f := del.base[id], now[id]
		if base == nil || f == nil || merge[id] || gone[id] {
			return nil
		}
		if !base.DeletionFile.Equal(f.DeletionFile) {
			return conflict(last, true, "the deletion file of fragment %d, which this %s changes, changed though no transaction since records it",
				id, strings.ToLower(op.kind.String()))
		}
		return nil
	}
	for _, u := range del.updated {
		if err := check(u.ID); err != nil {
			return err
		}
	}
	for _, id := range del.deleted {
		if err := check(id); err != nil {
			return err
		}
	}
	return nil
}

// rebaseDelete rebases a delete (see rebase).
func rebaseDelete(ctx context.Context, op *operation, others []committed, latest *Dataset, written *[]string,
	conflict func(committed, bool, string, ...any) error) (*operation, error) {
	del := op.del
	mine := map[uint64]bool{}
	for _, u := range del.updated {
		mine[u.ID] = true
	}
	for _, id := range del.deleted {
		mine[id] = true
	}
	var (
		merge    = map[uint64]bool{} // fragments whose deletion file changed meanwhile
		updated  = map[uint64]bool{} // ... by an Update, whose rows must not overlap ours
		gone     = map[uint64]bool{} // fragments a concurrent delete removed
		touching = func(ids []uint64) (uint64, bool) {
			for _, id := range ids {
				if mine[id] {
					return id, true
				}
			}
			return 0, false
		}
	)
	changedFiles := func(u *manifest.Fragment) bool {
		base := del.base[u.ID]
		return base == nil || !slices.EqualFunc(base.Files, u.Files, func(a, b manifest.DataFile) bool { return a.Equal(&b) })
	}
	// mergeWith records the fragments of ours whose deletion file c
	// changed; rowsMatter when ours must not remove rows c removed.
	mergeWith := func(c committed, frags []*manifest.Fragment, rowsMatter bool) error {
		for _, u := range frags {
			if !mine[u.ID] {
				continue
			}
			if changedFiles(u) {
				return conflict(c, true, "it changed the data files of fragment %d, which this delete changes", u.ID)
			}
			merge[u.ID] = true
			if rowsMatter {
				updated[u.ID] = true
			}
		}
		return nil
	}
	for _, c := range others {
		switch t := c.txn.Operation.(type) {
		case *manifest.Append, *manifest.CreateIndex, *manifest.ReserveFragments,
			*manifest.Clone, *manifest.Project, *manifest.UpdateConfig,
			*manifest.UpdateBases:
		case *manifest.Rewrite:
			if id, ok := touching(t.RewrittenIDs()); ok {
				return nil, conflict(c, true, "it rewrote fragment %d, which this delete changes", id)
			}
		case *manifest.DataReplacement:
			if id, ok := touching(t.ReplacedIDs()); ok {
				return nil, conflict(c, true, "it replaced data of fragment %d, which this delete changes", id)
			}
		case *manifest.Delete:
			for _, id := range t.DeletedFragmentIDs {
				if mine[id] && op.kind == opUpdate {
					// The rows this update rewrites were deleted: writing
					// them again would bring them back.
					return nil, conflict(c, true, "it deleted fragment %d, whose rows this update rewrites", id)
				}
				if mine[id] {
					gone[id] = true
				}
			}
			// An update must not rewrite rows deleted meanwhile (as
			// Lance's row-level check); deletes may overlap.
			if err := mergeWith(c, t.UpdatedFragments, op.kind == opUpdate); err != nil {
				return nil, err
			}
		case *manifest.Update:
			if id, ok := touching(t.RemovedFragmentIDs); ok {
				return nil, conflict(c, true, "it moved the rows of fragment %d, which this delete changes", id)
			}
			if err := mergeWith(c, t.UpdatedFragments, true); err != nil {
				return nil, err
			}
		case *manifest.Merge:
			return nil, conflict(c, true, "it rewrote the fragment list")
		case *manifest.Overwrite, *manifest.Restore:
			return nil, conflict(c, false, "it replaced the rows this delete removes")
		default:
			return nil, conflict(c, false, "cannot delete over it")
		}
	}
	// The transactions are only what their writers recorded; the latest
	// manifest is what the commit builds on. A fragment this operation
	// changes whose deletion file changed meanwhile though no transaction
	// said so (a corrupt or incomplete transaction) must not get this
	// operation's deletion file: that would bring the rows deleted
	// meanwhile back.
	if err := checkUnreported(op, latest, merge, gone, others[len(others)-1], conflict); err != nil {
		return nil, err
	}
	if len(merge) == 0 && len(gone) == 0 {
		return op, nil
	}

	last := others[len(others)-1]
	index := map[uint64]int{} // fragment id → position in latest
	for i, f := range latest.manifest.Fragments {
		index[f.ID] = i
	}
	nd := *del
	nd.updated, nd.deleted = nil, nil
	for _, id := range del.deleted {
		if merge[id] && op.kind == opUpdate {
			// Every live row of the fragment is this update's, so any
			// row deleted meanwhile is one it would bring back.
			return nil, conflict(last, true, "a concurrent commit deleted rows of fragment %d, which this update rewrites", id)
		}
		if !gone[id] {
			nd.deleted = append(nd.deleted, id)
		}
	}
	for _, u := range del.updated {
		switch {
		case gone[u.ID]:
			continue
		case !merge[u.ID]:
			nd.updated = append(nd.updated, u)
			continue
		}
		i, ok := index[u.ID]
		if !ok {
			return nil, conflict(last, true, "fragment %d, which this delete changes, is gone", u.ID)
		}
		f := latest.manifest.Fragments[i]
		dv, err := latest.deletionVector(ctx, f)
		if err != nil {
			return nil, err
		}
		current := dv.bitmap()
		affected := del.affected[u.ID]
		if updated[u.ID] {
			theirs := roaring.AndNot(current, del.baseDV[u.ID])
			if theirs.Intersects(affected) {
				return nil, conflict(last, true, "a concurrent commit removed rows of fragment %d that this %s also removes", u.ID, strings.ToLower(op.kind.String()))
			}
		}
		current.Or(affected)
		physical, err := latest.physicalRows(ctx, f)
		if err != nil {
			return nil, err
		}
		nu, err := latest.withDeletions(ctx, latest.manifest.Fragments[i], physical, current, written)
		switch {
		case err != nil:
			return nil, err
		case nu == nil:
			nd.deleted = append(nd.deleted, u.ID)
		default:
			nd.updated = append(nd.updated, nu)
		}
	}
	out := *op
	out.del = &nd
	return &out, nil
}

// reexecute runs op on d and, while it fails with a retryable conflict,
// again on the latest version, as RetryCommit allows with opts: the
// operations whose effect depends on the rows they read (delete by filter,
// update, merge-insert) compute it anew rather than rebase it, as Lance
// does. op gets the options to commit with, which share the call's
// retries.
func reexecute[S any](ctx context.Context, d *Dataset, opts *CommitOptions, op func(*Dataset, *CommitOptions) (*Dataset, S, error)) (*Dataset, S, error) {
	cur := d
	var (
		out   *Dataset
		stats S
		runs  int
	)
	err := retry(ctx, opts, func(ctx context.Context, co *CommitOptions) error {
		if runs++; runs > 1 {
			latest, err := cur.Checkout(ctx, 0)
			if err != nil {
				return err
			}
			cur = latest
		}
		var err error
		out, stats, err = op(cur, co)
		return err
	})
	if err != nil {
		return nil, stats, err
	}
	return out, stats, nil
}

// rebaseCreateIndex checks an index change against the transactions
// committed since it read (see rebase).
func rebaseCreateIndex(op *operation, others []committed, latest *Dataset, conflict func(committed, bool, string, ...any) error) error {
	names := map[string]bool{}
	covered := roaring.New()
	for _, ix := range op.newIndices {
		names[ix.Name] = true
		if bm, err := manifest.DecodeRoaring(ix.FragmentBitmap); err == nil {
			covered.Or(bm)
		}
	}
	for _, ix := range op.removedIndices {
		names[ix.Name] = true
	}
	for _, c := range others {
		switch t := c.txn.Operation.(type) {
		case *manifest.Append, *manifest.Delete, *manifest.Update,
			*manifest.ReserveFragments, *manifest.UpdateConfig, *manifest.Merge,
			*manifest.Clone, *manifest.UpdateBases, *manifest.DataReplacement,
			*manifest.Project:
		case *manifest.CreateIndex:
			for _, ix := range append(slices.Clone(t.NewIndices), t.RemovedIndices...) {
				if names[ix.Name] {
					return conflict(c, true, "it changed index %q too", ix.Name)
				}
			}
		case *manifest.Rewrite:
			for _, id := range t.RewrittenIDs() {
				if covered.Contains(uint32(id)) {
					return conflict(c, true, "it compacted fragment %d, which the new index covers", id)
				}
			}
		case *manifest.Overwrite, *manifest.Restore:
			return conflict(c, false, "it replaced the rows the index was built on")
		default:
			return conflict(c, false, "cannot change indices over it")
		}
	}
	inSchema := map[int32]bool{}
	for _, f := range latest.manifest.Fields() {
		inSchema[f.ID] = true
	}
	for _, ix := range op.newIndices {
		for _, id := range ix.Fields {
			if !inSchema[id] {
				return conflict(others[len(others)-1], false, "the indexed field %d was dropped", id)
			}
		}
	}
	return nil
}
