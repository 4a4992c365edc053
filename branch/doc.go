// Package branch is lancer's version graph: tags, zero-copy branches,
// opening a dataset at any ref, diff, three-way merge, cherry-pick, log,
// discard and garbage collection.
//
// # On-disk contract (Lance's, unchanged)
//
// Refs live at the root of the main dataset:
//
//	_refs/tags/<tag>.json          {"branch": null|"b", "version": N, "manifestSize": …,
//	                                "createdAt": …, "updatedAt": …, "metadata": {}}
//	_refs/branches/<b>.json        {"parentBranch": null|"p", "parentVersion": N,
//	                                "createAt": <unix s>, "manifestSize": …,
//	                                "identifier": {"version_mapping": [[N, "<hex>"]]},
//	                                "metadata": {}}
//	tree/<b>/                      the branch: a dataset root of its own
//
// A '/' in a branch name is written as %2F in the JSON file name and as a
// real directory under tree/. Keys are camelCase. Tags always live at the main
// root, even when they point into a branch.
//
// A branch is a shallow clone: its first manifest is a copy of the parent's
// at the fork version whose data files point back at the parent through a
// base path holding the parent's absolute location. That location is where
// the dataset was when the branch was made; this package maps it onto the
// root actually opened, so a dataset that was moved or copied still opens.
//
// # The graph and merges
//
// The graph's nodes are the versions of every line (main and each branch);
// its edges are a line's previous version, a branch's fork point (its first
// version is a Clone of the parent's state) and, for a merge commit, the
// source version it merged, which Merge records in the commit's
// transaction properties (PropMergeSource, PropMergeSourceVersion). Log
// lists it; MergeBase finds the newest state two lines share in it.
//
// Merge brings the changes a source line made since that base into a
// target line as one commit (dataset.ThreeWayMerge): up to date when the
// target contains the source, a fast-forward when the source contains the
// target, otherwise three-way: deletions unioned, additions kept, updates of
// different rows combined, and a row changed on both sides a conflict
// reported by row id and columns unless a strategy resolves it. Rows are
// matched by stable row id when the dataset has them (a lancer branch
// allocates ids from a range of its own, picked at random from
// CreateBranchOptions.RowIDSource, crypto/rand by default, so two lines
// never hand out the same id; lines that share a range are renumbered at
// merge time), else by key (MergeOptions.On, or the table's unenforced primary
// key), else by data file and offset, with a row a line updated matched to
// its new copy through that line's Update transactions; a row rewritten on
// one side and changed on the other that none of these can match stops the
// merge (dataset.ConflictUnmatched), never a silent second copy. The
// target references the source's files in place.
//
// merge_identity_model_test.go checks merges against a three-way oracle on
// seeded random histories of two lines, with and without stable row ids,
// with no key, a named key and a primary key.
//
// Invariants the seeded model test (model_test.go) checks after every step
// of random branch, append, delete, update, merge, discard and gc
// sequences: every line holds exactly the rows of a simple model of it, and
// no file a live line needs is gone. Cleanup keeps the versions later
// merges start from (each branch's first version, the latest merge between
// two lines, each pair's merge base) and the files main reaches in a branch
// since a merge; DeleteBranch re-parents child branches onto its own fork
// point.
//
// Two rules keep one ref's files safe from another's removal (tested by
// reserved_test.go, on layouts older lancers could write):
//
//   - R1. No segment of a branch name is named like an entry of a dataset
//     root (manifest.IsRootEntry: _versions, data, _indices, _deletions,
//     _transactions, _refs, tree, ...), so a branch's root tree/<name>/
//     never lies inside one of its parent's folders. CheckBranchName
//     refuses such names; a branch that already has one can still be
//     listed, opened and deleted.
//   - R2. DeleteBranch and Cleanup never remove a file another ref uses:
//     under a branch root they remove only keys of that root's own layout
//     (manifest.OwnKey), never a nested branch's (tree/<name>/<sub>/, or a
//     pre-R1 branch inside its parent's folders), and they keep every file
//     a version of another line that stays references through a base
//     path. Temporary files of killed writers go once older than
//     dataset.MinTempFileAge (and, for Cleanup, than OlderThan); a live
//     writer's never, however old (blob.ListTemp leaves out locked ones).
//
// Refs are resolved in one place (Resolve: a tag becomes the branch and
// version it names), and a line's root in one place (Store). Lookups fail
// with errors wrapping ErrNoSuchTag, ErrNoSuchBranch or
// dataset.ErrNoSuchVersion, creations with ErrTagExists or ErrBranchExists,
// each derived from a lancer category.
//
// What a valid family satisfies, besides each line's versions satisfying
// the dataset invariants (dataset.Check's D1 and on, base paths mapped as
// Open maps them); Check verifies both and names a violation by number:
//
//   - B1. Every tag file decodes and names an existing version of an
//     existing line (main, or a branch with a branch file).
//   - B2. Every branch file decodes; the branch's root tree/<name>/ holds
//     at least one version; its parent line exists and had the fork
//     version (parentVersion is at most the parent's latest version; the
//     fork version itself may since have been cleaned up, as the branch's
//     first manifest is a copy of it).
//
// Nothing below this package knows branches exist: to the dataset package a
// branch is just a dataset root with base paths.
package branch
