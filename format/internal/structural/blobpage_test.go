package structural

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// legacyBlobPage builds a 2.1 legacy blob page: a mini-block page of
// PackedStruct{[64, 64], Flat{128}} descriptors in one chunk inside a
// BlobLayout with the given outer layers.
func legacyBlobPage(descriptors [][2]uint64, layers []enc21pb.RepDefLayer) (*enc21pb.PageLayout, [][]byte) {
	var values []byte
	for _, d := range descriptors {
		values = binary.LittleEndian.AppendUint64(values, d[0])
		values = binary.LittleEndian.AppendUint64(values, d[1])
	}
	chunk := binary.LittleEndian.AppendUint16(nil, 0)
	chunk = binary.LittleEndian.AppendUint16(chunk, uint16(len(values)))
	chunk = padTo8(chunk, 0xFE)
	chunk = padTo8(append(chunk, values...), 0)
	meta := binary.LittleEndian.AppendUint16(nil, uint16(len(chunk)/8-1)<<4)
	inner := &enc21pb.MiniBlockLayout{
		ValueCompression: &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_PackedStruct{PackedStruct: &enc21pb.PackedStruct{
			BitsPerValue: []uint64{64, 64}, Values: flatEnc(128)}}},
		Layers:     []enc21pb.RepDefLayer{allValidItem},
		NumBuffers: 1,
		NumItems:   uint64(len(descriptors)),
	}
	return &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_BlobLayout{BlobLayout: &enc21pb.BlobLayout{
		InnerLayout: miniBlockPage(inner),
		Layers:      layers,
	}}}, [][]byte{meta, chunk}
}

func TestLegacyBlobPage(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	// Rows as Lance 12 wrote blob_legacy_v2_1: empty, two payloads, null.
	page, bufs := legacyBlobPage([][2]uint64{{0, 0}, {64, 10}, {1 << 16, 0}, {128, 63}}, []enc21pb.RepDefLayer{nullableItem})
	lp, err := newTestDecoder(mem, 4, schema.LegacyBlobDescriptor).Decode(page, bufs)
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Release()
	if !slices.Equal(lp.def, []uint16{0, 0, 1, 0}) || lp.rep != nil {
		t.Errorf("levels rep %v def %v", lp.rep, lp.def)
	}
	if got, want := valuesJSON(t, lp), `[{"position":0,"size":0},{"position":64,"size":10},null,{"position":128,"size":63}]`; got != want {
		t.Errorf("values %s, want %s", got, want)
	}
}

// TestLegacyBlobPageLists checks that descriptors of null and empty lists
// become invisible items with their smuggled levels.
func TestLegacyBlobPageLists(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	// Rows [[b0], null, [], [b1]] of list<blob>: def 2 = null list, 3 = empty.
	page, bufs := legacyBlobPage([][2]uint64{{1 << 16, 0}, {2<<16 | 1, 0}, {3<<16 | 1, 0}, {256, 5}}, []enc21pb.RepDefLayer{nullableItem, nullAndEmpty})
	lp, err := newTestDecoder(mem, 1, schema.LegacyBlobDescriptor).Decode(page, bufs)
	// The first descriptor starts no row (its rep is 0): Lance cannot
	// write list<blob> pages whose valid items carry their rep levels.
	if !errors.Is(err, lancer.ErrCorrupt) {
		lp.Release()
		t.Fatalf("got %v, want ErrCorrupt for a page that does not start a row", err)
	}
	page, bufs = legacyBlobPage([][2]uint64{{1<<16 | 1, 0}, {2<<16 | 1, 0}, {3<<16 | 1, 0}}, []enc21pb.RepDefLayer{nullableItem, nullAndEmpty})
	lp, err = newTestDecoder(mem, 3, schema.LegacyBlobDescriptor).Decode(page, bufs)
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Release()
	if !slices.Equal(lp.rep, []uint16{1, 1, 1}) || !slices.Equal(lp.def, []uint16{1, 2, 3}) || lp.values.Len() != 1 {
		t.Errorf("rep %v def %v, %d values", lp.rep, lp.def, lp.values.Len())
	}
}

func TestLegacyBlobPageCorrupt(t *testing.T) {
	page, bufs := legacyBlobPage([][2]uint64{{1 << 40, 0}}, []enc21pb.RepDefLayer{nullableItem})
	lp, err := newTestDecoder(memory.NewGoAllocator(), 1, schema.LegacyBlobDescriptor).Decode(page, bufs)
	if !errors.Is(err, lancer.ErrCorrupt) {
		lp.Release()
		t.Fatalf("position beyond 32 bits: got %v, want ErrCorrupt", err)
	}
	page, bufs = legacyBlobPage([][2]uint64{{0, 0}}, []enc21pb.RepDefLayer{nullableItem})
	page.GetBlobLayout().InnerLayout = nil
	if lp, err = newTestDecoder(memory.NewGoAllocator(), 1, schema.LegacyBlobDescriptor).Decode(page, bufs); !errors.Is(err, lancer.ErrCorrupt) {
		lp.Release()
		t.Fatalf("no inner layout: got %v, want ErrCorrupt", err)
	}
}
