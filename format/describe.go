package format

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/lancerdb/lancer/internal/pb/enc21pb"
	"github.com/lancerdb/lancer/internal/pb/encpb"
	"github.com/lancerdb/lancer/internal/pb/file2pb"
)

// ColumnInfo describes one physical column of a 2.x file, for debugging
// (`lancer inspect`).
type ColumnInfo struct {
	Index int
	// Encoding is the column-level encoding in protobuf text form.
	Encoding string
	// Buffers are the column-level buffers.
	Buffers []BufferInfo
	Pages   []PageInfo
}

// PageInfo describes one page of a column.
type PageInfo struct {
	// Length is the page's row count (2.1+) or value count (2.0).
	Length uint64
	// Priority is the first row of the page (2.1+).
	Priority uint64
	Buffers  []BufferInfo
	// Encoding is the page encoding (ArrayEncoding in 2.0, PageLayout in
	// 2.1+) in protobuf text form.
	Encoding string
}

// BufferInfo is a byte range of the file.
type BufferInfo struct {
	Offset, Size uint64
}

// Columns describes the file's physical columns. Legacy files have none in
// this sense and return an empty slice.
func (r *Reader) Columns() []ColumnInfo {
	out := make([]ColumnInfo, len(r.f.Columns))
	for i, cm := range r.f.Columns {
		ci := ColumnInfo{Index: i, Encoding: describeEncoding(cm.GetEncoding(), &encpb.ColumnEncoding{})}
		for j, off := range cm.GetBufferOffsets() {
			ci.Buffers = append(ci.Buffers, BufferInfo{off, cm.GetBufferSizes()[j]})
		}
		for _, p := range cm.GetPages() {
			var msg proto.Message = &encpb.ArrayEncoding{}
			if r.version.structural() {
				msg = &enc21pb.PageLayout{}
			}
			pi := PageInfo{Length: p.GetLength(), Priority: p.GetPriority(), Encoding: describeEncoding(p.GetEncoding(), msg)}
			for j, off := range p.GetBufferOffsets() {
				pi.Buffers = append(pi.Buffers, BufferInfo{off, p.GetBufferSizes()[j]})
			}
			ci.Pages = append(ci.Pages, pi)
		}
		out[i] = ci
	}
	return out
}

// GlobalBuffers returns the file's global buffers; buffer 0 holds the file
// descriptor.
func (r *Reader) GlobalBuffers() []BufferInfo {
	out := make([]BufferInfo, len(r.f.GlobalBuffers))
	for i, b := range r.f.GlobalBuffers {
		out[i] = BufferInfo(b)
	}
	return out
}

// describeEncoding renders an Encoding holding an Any of msg's type.
func describeEncoding(e *file2pb.Encoding, msg proto.Message) string {
	switch loc := e.GetLocation().(type) {
	case nil:
		return "(none)"
	case *file2pb.Encoding_None:
		return "(none)"
	case *file2pb.Encoding_Indirect:
		return fmt.Sprintf("(indirect at %d, %d bytes)", loc.Indirect.GetBufferLocation(), loc.Indirect.GetBufferLength())
	case *file2pb.Encoding_Direct:
		var a anypb.Any
		if err := proto.Unmarshal(loc.Direct.GetEncoding(), &a); err != nil {
			return fmt.Sprintf("(undecodable Any: %v)", err)
		}
		if err := proto.Unmarshal(a.GetValue(), msg); err != nil {
			return fmt.Sprintf("%s (undecodable: %v)", a.GetTypeUrl(), err)
		}
		text := prototext.MarshalOptions{}.Format(msg)
		return a.GetTypeUrl() + " " + strings.Join(strings.Fields(text), " ")
	}
	return "(unknown)"
}
