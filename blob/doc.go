// Package blob is where lancer's bytes live: one small Store interface over
// local disk, memory and (in a later layer) object stores such as S3, GCS and
// Azure.
//
// # Contract
//
// Keys are slash-separated paths relative to the store's root, never starting
// with "/" and never containing "." or ".." segments ("data/abc.lance",
// "_versions/1.manifest"). A Store behaves like an object store, not a file
// system: there are no directories, List walks every key under a prefix, and
// writes replace a whole object at once. Readers therefore never observe a
// partially written object.
//
// CreateIfAbsent is the single atomic primitive the commit protocol builds on:
// of several concurrent callers creating the same key (even in different
// processes), exactly one succeeds and the others get an error wrapping
// lancer.ErrConflict. Local disk implements it with link(2), which is atomic
// across processes; memory with a mutex.
//
// Errors wrap lancer.ErrNotFound for missing keys, lancer.ErrInvalidArgument
// for malformed keys and ranges, and lancer.ErrConflict as above.
package blob
