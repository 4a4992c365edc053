// Package legacy reads Lance's v1 data files (table format 0.1, footer 0.1
// or 0.2): Reader.Open parses the metadata, schema, page table and
// dictionaries behind the 16-byte footer, and NewCursor reads row ranges of
// a projection from them, the way Lance reads them back (lossy by design:
// v1 stores no validity). Writer writes them in the same layout, for writes
// on legacy datasets (one batch per 1024 rows, no statistics pages, no
// dictionaries). The layout is described in legacy.go.
package legacy
