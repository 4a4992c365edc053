// Package fixturetest is the one helper every test against the Lance
// compatibility fixtures uses: it finds the fixtures, loads what real Lance
// reported for them, and compares the rows a lancer reader produced with the
// rows Lance produced.
//
// # Finding the fixtures
//
// Dir returns the fixtures root, the folder holding lance/MANIFEST.json and
// encodings/: $LANCER_FIXTURES if set, otherwise the first
// <ancestor>/shared/fixtures found walking up from the working directory
// (so fixtures kept in a shared/ folder beside the checkout are found from
// every package directory). A missing fixture is a failure
// (t.Fatal), never a skip: a test that silently does not run proves nothing.
//
// # What Lance reported
//
// LoadManifest reads lance/MANIFEST.json; LoadExpected reads one
// lance/<name>.expected.json into an Expected; Each and EachKind run a
// subtest per fixture. Rows stay json.RawMessage, exactly as written, so
// int64 values beyond 2^53 are never rounded through float64.
//
// For the bigger datasets in encodings/, EncodingRows loads the rows files of
// strs_* and wide_*, and FormulaRow computes the rows of pages_* and mpage_*,
// which ROWS.md defines by formula.
//
// # Comparing rows
//
// Rows are JSON objects in the fixture encoding (see package rowjson, whose
// output EncodeRows collects from Arrow record batches). CompareRows, or a
// RowChecker for row streams too big to hold, compares them semantically:
// member order does not matter, integers compare as exact decimal text, other
// numbers by float64 value ("0.5" equals "5e-1"), strings, booleans and null
// exactly, arrays and objects recursively. A mismatch fails the test with one
// readable report: the number of differing rows and the first few differences
// with their row and JSON path, e.g.
//
//	types_v2_2 rows: got 99 rows, want 100; 99 of 99 compared rows differ (150 differences); first 10:
//	  row 0 .nested.kv[1].k: got "K1", want "k1"
//	  row 0 .png: strings differ from byte 57 (lengths 96, 96): got …"AAAA…", want …"AAAB…"
//	  ...
//
// IgnoreKeys leaves out columns such as "_rowid"; Columns compares a
// projection. The fixture rows always carry "_rowid" (a row address
// fragment_id<<32 | offset, or the stable row id for
// history_v2_2_stable_rowids).
package fixturetest
