// Package demo builds the dataset `lancer demo` shows off: a folder that
// `lancer serve --data` serves, holding one table, images, of small
// generated pictures (coloured shapes on plain backgrounds) with their
// labels, captions and embeddings, a vector index over the embeddings, a
// branch that relabelled some rows and was merged back, and tags.
//
// Everything is computed locally and deterministically, so the demo runs on
// a machine without network access and gives the same table every time:
// the images come from a seeded generator (Generate), the embeddings from
// their pixels (Embed), chosen so that nearest neighbours look alike.
//
// Build checks each step's outcome (the search finds its example first, the
// merge brings the relabelled rows to main...) instead of only printing it,
// so a regression anywhere in the stack makes the demo fail loudly rather
// than print a plausible story.
package demo
