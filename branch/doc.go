// Package branch is lancer's version graph: tags, branches, and opening a
// dataset at any of them. (Creating branches, diff, merge, discard and GC come
// in later layers of this package.)
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
// Nothing below this package knows branches exist: to the dataset package a
// branch is just a dataset root with base paths.
package branch
