// Package interop holds lancer's interoperability tests against real Lance
// (LanceDB for Node with the Lance 12 core, pinned in package.json here).
//
// TestLanceWritesLancerReads has real Lance write a fresh set of datasets
// (the shared fixture generator with another seed), reads every version and
// branch of each back with real Lance in a fresh process (lance-rows.mjs),
// moves the datasets, and requires lancer to read the same rows from the new
// place.
//
// TestReleasesWriteLancerReads does the same across releases: each old
// release of LanceDB for Node in releases.json (vectordb 0.1.19 to
// @lancedb/lancedb 0.31, legacy and 2.0 files) writes a history with every
// operation it has (lance-release-history.mjs); lancer reads every version
// as Lance 12 and the release read it, then writes on it (append, delete,
// update, compaction), and Lance 12 and the release read that and keep
// writing on it. TestReleasesLegacyDictionaryColumns does it for tables
// with an Arrow dictionary column, whose values legacy (and early 2.0)
// datasets keep in the manifest file.
//
// The tests need node, the installed reference and the installed releases
// (.cache/lance-releases, or $LANCER_LANCE_RELEASES); scripts/test.sh
// installs them, and the tests fail, never skip, without them.
package interop
