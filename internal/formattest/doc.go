// Package formattest makes the data that format's writer tests write:
// random nested schemas and batches (RandGen for 2.1/2.2, V20Rand for
// 2.0), hand-built edge cases (EdgeCases), blob columns and compressible
// or dictionary columns; and the checks those tests and the generation
// packages' tests run on what a reader returns (RowsJSON, CheckArray). It
// is shared by format's own tests, format/internal/structural's, and the
// interop tests that have real Lance read the files written from the same
// data, so it lives outside format/ and knows only Arrow, format/schema and
// internal/rowjson, never package format (whose in-package tests import
// it).
//
// It is test infrastructure: only _test.go files import it.
package formattest
