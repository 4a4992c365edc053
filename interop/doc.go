// Package interop holds lancer's interoperability tests against real Lance
// (LanceDB for Node with the Lance 12 core, pinned in package.json here).
//
// TestLanceWritesLancerReads has real Lance write a fresh set of datasets
// (the shared fixture generator with another seed), reads every version and
// branch of each back with real Lance in a fresh process (lance-rows.mjs),
// moves the datasets, and requires lancer to read the same rows from the new
// place. The tests need node and the installed reference; scripts/test.sh
// installs it, and the tests fail, never skip, without it.
package interop
