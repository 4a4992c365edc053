// Package table is lancer's Go SDK: a Table is one Lance table, opened by
// URI at a ref, that owns its store and is closed when done. It is the one
// obvious way in; every method is a thin wrapper over package dataset (one
// version's reads and writes) or package branch (refs, branches, tags,
// merge, diff, log and the branch-safe cleanup), adding no behaviour of its
// own.
//
//	t, err := table.Open(ctx, "s3://bucket/people.lance", &table.Options{
//		Ref:            table.Ref{Branch: "exp"},
//		StorageOptions: map[string]string{"aws_region": "eu-west-1"},
//	})
//	...
//	defer t.Close()
//	sc, err := t.Scan(&dataset.ScanOptions{Filter: "age > 30"})
//
// # On-disk contract
//
// None of its own: a table is a Lance dataset root with its refs (see
// packages dataset and branch). The handle writes nothing but what the
// wrapped calls write.
//
// # Options of writes
//
// Each write method takes package dataset's options for its verb:
// dataset.CommitOptions (retries, allocator, transaction properties) as its
// last argument, or embedded in the verb's own options (AppendOptions,
// MergeInsertOptions, ...); nil means the defaults. A handle carries no
// default CommitOptions of its own: what a write records and how long it
// retries are the call's, as they are in dataset. Options.Allocator, the
// handle's, is also the default allocator of writes on its version.
//
// # Invariants
//
//  1. A Table is at one state: a line (main or a branch) and a version of
//     it. Reads see that version; a write on the handle commits on its line
//     and advances the handle to the version it committed (a write that
//     commits nothing, a dry-run merge, leaves it where it was). Versions
//     other writers commit are seen only after Checkout.
//  2. A Table is safe for concurrent use. Each call works on the state the
//     handle was at when it began; concurrent writes through one handle, or
//     through several, are ordered by the commit protocol of package
//     dataset (rebased or failed with lancer.ErrConflict, never lost), and
//     the handle advances to the newest version any of them committed.
//     Concurrent Appends through one handle are group committed
//     (dataset.GroupCommitter with its default bounds): appends ready
//     while another commit of the handle is in flight share the next
//     commit, one version for all of them. Compact, OptimizeIndexes and
//     Optimize commit in turn with those group commits
//     (dataset.CommitOptions.Group, unless the caller names a committer),
//     so a stream of Appends through the handle cannot starve them.
//  3. The handle from Open (or Create) owns its store: Close closes it (a
//     cloud store's connections), and with it, once, every store a handle
//     on it opened for a base path outside the table's family (the source
//     of a shallow clone; one store per URI, shared by the handle and its
//     derived handles). Every call after Close, on it or on a
//     handle Checkout or CreateBranch derived from it, fails with an error
//     wrapping lancer.ErrClosed. Derived handles share the store and do not
//     own it; their Close only ends their own use.
//  4. Cleanup is branch.Cleanup: it never removes a version or file a tag,
//     a branch or a later merge still needs (dataset.Cleanup, which knows
//     no branches and refuses a root holding them, is not exposed).
package table
