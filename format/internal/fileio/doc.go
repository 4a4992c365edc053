// Package fileio is what every Lance file generation reads and writes
// through: the open file (File: store, key, size, the 2.x container's
// column metadata and global buffers) with its checked, coalesced range
// reads; the page sink a file being written appends aligned buffers to
// (Sink); the seams the generations implement (Cursor, RowTaker,
// FieldWriter) and the projection they read; and the file Version as the
// generations see it. It parses the container (footer, offset tables, file
// descriptor, column metadata), never a page: that is the generations'.
//
// Every range read through File is checked against the file size first, and
// every error names the file (format's invariant 1).
package fileio
