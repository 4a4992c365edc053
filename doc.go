// Package lancer is a pure-Go, Lance-compatible store for multimodal datasets
// (embeddings, images, text) with a vector index and git-like branches.
//
// The root package holds only vocabulary shared by every layer: the error
// categories below. Each sub-package states its own job in its doc.go:
//
//	blob/     where bytes live (local disk, memory; object stores later)
//	format/   Lance data files (v2.0, 2.1, 2.2, legacy v1): bytes ↔ Arrow arrays
//	dataset/  the Lance table format: manifests, fragments, versions, scans
//	vector/   pure vector-search algorithms (no files)
//	branch/   the version graph: tags, branches, diff, merge
//	table/    the Go SDK: a Table handle opened by URI at a ref, owning its store
//	server/   the HTTP API speaking LanceDB's remote protocol
//	cmd/lancer the command-line tool
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
