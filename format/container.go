package format

import (
	"context"
	"encoding/binary"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer/internal/pb/file2pb"
	"github.com/lancerdb/lancer/internal/pb/filepb"
	"github.com/lancerdb/lancer/internal/schemaproto"
)

// openV2 parses the 40-byte footer, the global buffer table, the file
// descriptor and the column metadata of a 2.x file.
func (r *fileHandle) openV2(ctx context.Context, tail []byte) error {
	if r.size < v2FooterSize {
		return r.corruptf("file of %d bytes is too short for a v2 footer", r.size)
	}
	f := tail[len(tail)-v2FooterSize:]
	columnMetaStart := binary.LittleEndian.Uint64(f[0:])
	cmoTablePos := binary.LittleEndian.Uint64(f[8:])
	gboTablePos := binary.LittleEndian.Uint64(f[16:])
	numGlobal := uint64(binary.LittleEndian.Uint32(f[24:]))
	numColumns := uint64(binary.LittleEndian.Uint32(f[28:]))
	footerPos := uint64(r.size) - v2FooterSize
	switch {
	case numGlobal == 0:
		return r.corruptf("footer names no global buffers (the file descriptor is global buffer 0)")
	case gboTablePos > footerPos || numGlobal*16 > footerPos-gboTablePos:
		return r.corruptf("global buffer table at %d with %d entries runs past the footer at %d", gboTablePos, numGlobal, footerPos)
	case cmoTablePos > gboTablePos || numColumns*16 > gboTablePos-cmoTablePos:
		return r.corruptf("column metadata table at %d with %d entries runs past the global buffer table at %d", cmoTablePos, numColumns, gboTablePos)
	case columnMetaStart > cmoTablePos:
		return r.corruptf("column metadata start %d is after the column metadata table at %d", columnMetaStart, cmoTablePos)
	}
	gboBytes, err := r.readWithTail(ctx, tail, gboTablePos, numGlobal*16)
	if err != nil {
		return err
	}
	r.globalBuffers = make([]bufferRange, numGlobal)
	for i := range r.globalBuffers {
		b := bufferRange{binary.LittleEndian.Uint64(gboBytes[16*i:]), binary.LittleEndian.Uint64(gboBytes[16*i+8:])}
		if err := r.checkRange(b, "global buffer %d", i); err != nil {
			return err
		}
		r.globalBuffers[i] = b
	}
	// Metadata runs from the file descriptor (global buffer 0) to the end
	// of the file; Lance writes it there, so one read usually gets it all.
	metaStart := min(r.globalBuffers[0].Offset, columnMetaStart)
	meta, err := r.readWithTail(ctx, tail, metaStart, footerPos-metaStart)
	if err != nil {
		return err
	}
	r.metadataBytes = int64(footerPos-metaStart) + v2FooterSize
	at := func(b bufferRange) []byte { return meta[b.Offset-metaStart : b.Offset-metaStart+b.Size] }

	fdRange := r.globalBuffers[0]
	if fdRange.Offset+fdRange.Size > footerPos {
		return r.corruptf("file descriptor [%d, +%d) overlaps the footer", fdRange.Offset, fdRange.Size)
	}
	var fd filepb.FileDescriptor
	if err := proto.Unmarshal(at(fdRange), &fd); err != nil {
		return r.corruptf("file descriptor: %v", err)
	}
	r.numRows = fd.GetLength()
	r.schema, err = schemaproto.Decode(fd.GetSchema().GetFields(), fd.GetSchema().GetMetadata())
	if err != nil {
		return fmt.Errorf("format: %s: file schema: %w", r.key, err)
	}

	cmo := meta[cmoTablePos-metaStart : cmoTablePos-metaStart+numColumns*16]
	r.columns = make([]*file2pb.ColumnMetadata, numColumns)
	for i := range r.columns {
		b := bufferRange{binary.LittleEndian.Uint64(cmo[16*i:]), binary.LittleEndian.Uint64(cmo[16*i+8:])}
		if b.Offset < metaStart || b.Offset > footerPos || b.Size > footerPos-b.Offset {
			return r.corruptf("column %d metadata [%d, +%d) is outside the metadata region [%d, %d)", i, b.Offset, b.Size, metaStart, footerPos)
		}
		cm := &file2pb.ColumnMetadata{}
		if err := proto.Unmarshal(at(b), cm); err != nil {
			return r.corruptf("column %d metadata: %v", i, err)
		}
		if err := r.checkColumn(i, cm); err != nil {
			return err
		}
		r.columns[i] = cm
	}
	return r.checkRowCounts()
}

// checkRowCounts holds the file descriptor's row count against the pages:
// from 2.1 on every column's pages hold every row; in 2.0 list item columns
// count items, so only an upper bound holds.
func (r *fileHandle) checkRowCounts() error {
	var most uint64
	for i, cm := range r.columns {
		var sum uint64
		for _, p := range cm.GetPages() {
			if sum+p.GetLength() < sum {
				return r.corruptf("column %d: page lengths overflow", i)
			}
			sum += p.GetLength()
		}
		if r.version.Structural() && sum != r.numRows {
			return r.corruptf("column %d pages hold %d rows, the file descriptor says %d", i, sum, r.numRows)
		}
		most = max(most, sum)
	}
	if len(r.columns) > 0 && r.numRows > most {
		return r.corruptf("the file descriptor says %d rows, but no column holds more than %d", r.numRows, most)
	}
	return nil
}

// checkColumn validates the buffer ranges a column's metadata points at, so
// decoders can trust them.
func (r *fileHandle) checkColumn(i int, cm *file2pb.ColumnMetadata) error {
	if len(cm.GetBufferOffsets()) != len(cm.GetBufferSizes()) {
		return r.corruptf("column %d: %d buffer offsets but %d sizes", i, len(cm.GetBufferOffsets()), len(cm.GetBufferSizes()))
	}
	for j, off := range cm.GetBufferOffsets() {
		if err := r.checkRange(bufferRange{off, cm.GetBufferSizes()[j]}, "column %d buffer %d", i, j); err != nil {
			return err
		}
	}
	for p, page := range cm.GetPages() {
		if len(page.GetBufferOffsets()) != len(page.GetBufferSizes()) {
			return r.corruptf("column %d page %d: %d buffer offsets but %d sizes", i, p, len(page.GetBufferOffsets()), len(page.GetBufferSizes()))
		}
		for j, off := range page.GetBufferOffsets() {
			if err := r.checkRange(bufferRange{off, page.GetBufferSizes()[j]}, "column %d page %d buffer %d", i, p, j); err != nil {
				return err
			}
		}
	}
	return nil
}
