// Package lancer is a pure-Go, Lance-compatible store for multimodal datasets
// (embeddings, images, text) with a vector index and git-like branches.
//
// # The way in
//
// Package table is the Go SDK: table.Open (or table.Create) gives a handle
// on one table at a ref; it scans, takes, searches and writes, makes
// branches and tags, diffs and merges them, and owns its store, so Close
// it when done:
//
//	t, err := table.Open(ctx, "s3://bucket/images.lance", &table.Options{Ref: table.Ref{Branch: "exp"}})
//	...
//	defer t.Close()
//	sc, err := t.Scan(&dataset.ScanOptions{Filter: "label = 'cat'"}) // then sc.Batches(ctx)
//	rows, err := t.Search(ctx, "vector", query, &dataset.SearchOptions{K: 10})
//	err = t.Append(ctx, more, nil)
//	b, err := t.CreateBranch(ctx, "relabel", table.Ref{}, nil) // a handle on the branch; its writes land there
//	res, err := t.Merge(ctx, table.Ref{Branch: "relabel"}, nil)
//
// The packages under it work on a blob.Store their caller opens and
// closes, for what the handle does not wrap.
//
// # Packages
//
// The root package holds only vocabulary shared by every layer: the error
// categories below. Each sub-package states its own job in its doc.go:
//
//	blob/              where bytes live: local disk, memory, S3, GCS, Azure
//	format/            Lance data files (v2.0, 2.1, 2.2, legacy v1): bytes ↔ Arrow arrays
//	dataset/manifest/  the table format's model and codecs: manifests, transactions, deletions, row ids
//	dataset/           one dataset root: reads, writes, commits and their conflict rules
//	vector/            pure vector-search algorithms (no files)
//	branch/            the version graph: tags, branches, diff, merge
//	table/             the Go SDK: a Table handle opened by URI at a ref, owning its store
//	server/            the HTTP API speaking LanceDB's remote protocol
//	cmd/lancer         the command-line tool
//
// Imports point one way: blob ← format ← dataset ← branch ← table ← server ← cmd.
//
// # Errors
//
// Every error returned by lancer packages wraps exactly one of the category
// sentinels with %w, so callers can branch on the category with errors.Is
// while the message names the file, field, row or request at fault:
//
//	if errors.Is(err, lancer.ErrNotFound) { ... }
package lancer
