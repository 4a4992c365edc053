// Package structural reads and writes the 2.1+ "structural" generation of
// Lance data files (2.1, 2.2, and 2.3 read like 2.2): only leaves have
// physical columns, each page holds a PageLayout (mini-block, full-zip,
// constant/all-null, blob), and struct and list structure travels as
// repetition and definition levels inside each leaf.
//
// Reader decodes pages (decodeLeafPage) and reads the parts of pages a
// take needs (take_pages.go); NewCursor assembles the leaves of a
// projection into nested Arrow arrays and implements fileio.RowTaker;
// NewFieldWriter shreds a field's rows into leaves and encodes their pages
// into a fileio.Sink, blob sidecars included.
package structural
