// Package v20 reads and writes Lance 2.0 data files (footer 0.3): every
// schema field has a physical column (structs a header column, lists an
// offsets column) and each page holds an ArrayEncoding tree (flat,
// bit-packed, dictionary, FSST, general compression, nullable, list,
// struct, fixed-size list, binary). NewCursor reads row ranges of a
// projection; NewFieldWriter encodes a field's rows into pages written to a
// fileio.Sink.
package v20
