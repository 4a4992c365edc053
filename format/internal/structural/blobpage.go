package structural

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/format/internal/arrays"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// Legacy blob pages of file version 2.1 (docs/spec/lance-format.md §11). A BlobLayout wraps an
// inner page (a mini-block page of PackedStruct{[64, 64], Flat{128}}) holding
// one {position u64, size u64} descriptor per item, null and invisible items
// included; the blob bytes live elsewhere in the file. The inner page has no
// levels of its own: the column's rep/def travel inside the descriptors, a
// descriptor with size 0 and a non-zero position standing for
// position = def<<16 | rep. An empty blob is (0, 0). The outer layers give
// the column's real rep/def meaning.
//
// Blob v2 columns (2.2+) need nothing special here: they are full-zip pages
// of a VariablePackedStruct descriptor (fullzip.go).

// decodeBlob decodes a legacy blob page into descriptors of its visible
// items and the levels smuggled in them.
func (d *pageDecoder) decodeBlob(l *enc21pb.BlobLayout, bufs [][]byte) (*leafPage, error) {
	if l.GetInnerLayout() == nil {
		return nil, pageCorruptf("blob layout without an inner layout")
	}
	if _, nested := l.GetInnerLayout().GetLayout().(*enc21pb.PageLayout_BlobLayout); nested {
		return nil, pageCorruptf("blob layout inside a blob layout")
	}
	layers := l.GetLayers()
	lay, err := newRepDefLayout(layers)
	if err != nil {
		return nil, err
	}
	innerDec := &pageDecoder{Mem: d.Mem, NumRows: d.NumRows, ScanType: schema.LegacyBlobDescriptor}
	inner, err := innerDec.decodeLayout(l.GetInnerLayout(), bufs)
	if err != nil {
		return nil, pageWrapf(err, "blob descriptors")
	}
	defer inner.Release()
	if inner.rep != nil || inner.def != nil {
		return nil, pageCorruptf("blob descriptor page has rep/def levels of its own")
	}
	desc, ok := inner.values.(*array.Struct)
	if !ok || desc.NumField() != 2 || inner.values.NullN() != 0 {
		return nil, pageCorruptf("blob descriptors are %s, not {position, size}", inner.values.DataType())
	}
	positions, ok1 := desc.Field(0).(*array.Uint64)
	sizes, ok2 := desc.Field(1).(*array.Uint64)
	if !ok1 || !ok2 {
		return nil, pageCorruptf("blob descriptors are %s, not {position u64, size u64}", desc.DataType())
	}
	n := desc.Len()
	rep, def := make([]uint16, n), make([]uint16, n)
	anyRep := false
	visible := make([]int, 0, n)
	for i := range n {
		if pos := positions.Value(i); sizes.Value(i) == 0 && pos != 0 {
			if pos>>32 != 0 {
				return nil, pageCorruptf("item %d: empty blob at position %#x is neither empty nor a packed rep/def", i, pos)
			}
			rep[i], def[i] = uint16(pos), uint16(pos>>16)
			anyRep = anyRep || rep[i] != 0
		}
		if def[i] <= lay.MaxVisible {
			visible = append(visible, i)
		}
	}
	lp := &leafPage{numRows: d.NumRows, layers: layers, numItems: n}
	if anyRep {
		lp.rep = rep
	}
	if len(layers) != 1 || layers[0] != enc21pb.RepDefLayer_REPDEF_ALL_VALID_ITEM {
		lp.def = def
	}
	if len(visible) == n {
		inner.values.Retain()
		lp.values = inner.values
		return lp, nil
	}
	pos, size := make([]uint64, len(visible)), make([]uint64, len(visible))
	for j, i := range visible {
		pos[j], size[j] = positions.Value(i), sizes.Value(i)
	}
	members := []arrow.Array{
		arrays.MakeArray(arrow.PrimitiveTypes.Uint64, len(pos), nil, [][]byte{arrow.Uint64Traits.CastToBytes(pos)}, nil),
		arrays.MakeArray(arrow.PrimitiveTypes.Uint64, len(size), nil, [][]byte{arrow.Uint64Traits.CastToBytes(size)}, nil),
	}
	defer fileio.ReleaseAll(members)
	lp.values = arrays.StructArray(schema.LegacyBlobDescriptor, len(visible), members, nil)
	return lp, nil
}
