package fileio

import (
	"context"
	"encoding/binary"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer/internal/pb/file2pb"
	"github.com/lancerdb/lancer/internal/pb/filepb"
	"github.com/lancerdb/lancer/internal/schemaproto"
)

// OpenV2 parses the 40-byte footer, the global buffer table, the file
// descriptor and the column metadata of a 2.x file.
func (r *File) OpenV2(ctx context.Context, tail []byte) error {
	if r.Size < v2FooterSize {
		return r.Corruptf("file of %d bytes is too short for a v2 footer", r.Size)
	}
	f := tail[len(tail)-v2FooterSize:]
	columnMetaStart := binary.LittleEndian.Uint64(f[0:])
	cmoTablePos := binary.LittleEndian.Uint64(f[8:])
	gboTablePos := binary.LittleEndian.Uint64(f[16:])
	numGlobal := uint64(binary.LittleEndian.Uint32(f[24:]))
	numColumns := uint64(binary.LittleEndian.Uint32(f[28:]))
	footerPos := uint64(r.Size) - v2FooterSize
	switch {
	case numGlobal == 0:
		return r.Corruptf("footer names no global buffers (the file descriptor is global buffer 0)")
	case gboTablePos > footerPos || numGlobal*16 > footerPos-gboTablePos:
		return r.Corruptf("global buffer table at %d with %d entries runs past the footer at %d", gboTablePos, numGlobal, footerPos)
	case cmoTablePos > gboTablePos || numColumns*16 > gboTablePos-cmoTablePos:
		return r.Corruptf("column metadata table at %d with %d entries runs past the global buffer table at %d", cmoTablePos, numColumns, gboTablePos)
	case columnMetaStart > cmoTablePos:
		return r.Corruptf("column metadata start %d is after the column metadata table at %d", columnMetaStart, cmoTablePos)
	}
	gboBytes, err := r.ReadWithTail(ctx, tail, gboTablePos, numGlobal*16)
	if err != nil {
		return err
	}
	r.GlobalBuffers = make([]Range, numGlobal)
	for i := range r.GlobalBuffers {
		b := Range{binary.LittleEndian.Uint64(gboBytes[16*i:]), binary.LittleEndian.Uint64(gboBytes[16*i+8:])}
		if err := r.checkRange(b, "global buffer %d", i); err != nil {
			return err
		}
		r.GlobalBuffers[i] = b
	}
	// Metadata runs from the file descriptor (global buffer 0) to the end
	// of the file; Lance writes it there, so one read usually gets it all.
	metaStart := min(r.GlobalBuffers[0].Offset, columnMetaStart)
	meta, err := r.ReadWithTail(ctx, tail, metaStart, footerPos-metaStart)
	if err != nil {
		return err
	}
	r.MetadataBytes = int64(footerPos-metaStart) + v2FooterSize
	at := func(b Range) []byte { return meta[b.Offset-metaStart : b.Offset-metaStart+b.Size] }

	fdRange := r.GlobalBuffers[0]
	if fdRange.Offset+fdRange.Size > footerPos {
		return r.Corruptf("file descriptor [%d, +%d) overlaps the footer", fdRange.Offset, fdRange.Size)
	}
	var fd filepb.FileDescriptor
	if err := proto.Unmarshal(at(fdRange), &fd); err != nil {
		return r.Corruptf("file descriptor: %v", err)
	}
	r.NumRows = fd.GetLength()
	r.Schema, err = schemaproto.Decode(fd.GetSchema().GetFields(), fd.GetSchema().GetMetadata())
	if err != nil {
		return fmt.Errorf("format: %s: file schema: %w", r.Key, err)
	}

	cmo := meta[cmoTablePos-metaStart : cmoTablePos-metaStart+numColumns*16]
	r.Columns = make([]*file2pb.ColumnMetadata, numColumns)
	for i := range r.Columns {
		b := Range{binary.LittleEndian.Uint64(cmo[16*i:]), binary.LittleEndian.Uint64(cmo[16*i+8:])}
		if b.Offset < metaStart || b.Offset > footerPos || b.Size > footerPos-b.Offset {
			return r.Corruptf("column %d metadata [%d, +%d) is outside the metadata region [%d, %d)", i, b.Offset, b.Size, metaStart, footerPos)
		}
		cm := &file2pb.ColumnMetadata{}
		if err := proto.Unmarshal(at(b), cm); err != nil {
			return r.Corruptf("column %d metadata: %v", i, err)
		}
		if err := r.checkColumn(i, cm); err != nil {
			return err
		}
		r.Columns[i] = cm
	}
	return r.checkRowCounts()
}

// checkRowCounts holds the file descriptor's row count against the pages:
// from 2.1 on every column's pages hold every row; in 2.0 list item columns
// count items, so only an upper bound holds.
func (r *File) checkRowCounts() error {
	var most uint64
	for i, cm := range r.Columns {
		var sum uint64
		for _, p := range cm.GetPages() {
			if sum+p.GetLength() < sum {
				return r.Corruptf("column %d: page lengths overflow", i)
			}
			sum += p.GetLength()
		}
		if r.Version.Structural() && sum != r.NumRows {
			return r.Corruptf("column %d pages hold %d rows, the file descriptor says %d", i, sum, r.NumRows)
		}
		most = max(most, sum)
	}
	if len(r.Columns) > 0 && r.NumRows > most {
		return r.Corruptf("the file descriptor says %d rows, but no column holds more than %d", r.NumRows, most)
	}
	return nil
}

// checkColumn validates the buffer ranges a column's metadata points at, so
// decoders can trust them.
func (r *File) checkColumn(i int, cm *file2pb.ColumnMetadata) error {
	if len(cm.GetBufferOffsets()) != len(cm.GetBufferSizes()) {
		return r.Corruptf("column %d: %d buffer offsets but %d sizes", i, len(cm.GetBufferOffsets()), len(cm.GetBufferSizes()))
	}
	for j, off := range cm.GetBufferOffsets() {
		if err := r.checkRange(Range{off, cm.GetBufferSizes()[j]}, "column %d buffer %d", i, j); err != nil {
			return err
		}
	}
	for p, page := range cm.GetPages() {
		if len(page.GetBufferOffsets()) != len(page.GetBufferSizes()) {
			return r.Corruptf("column %d page %d: %d buffer offsets but %d sizes", i, p, len(page.GetBufferOffsets()), len(page.GetBufferSizes()))
		}
		for j, off := range page.GetBufferOffsets() {
			if err := r.checkRange(Range{off, page.GetBufferSizes()[j]}, "column %d page %d buffer %d", i, p, j); err != nil {
				return err
			}
		}
	}
	return nil
}
