package vector

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/lancerdb/lancer"
)

func le32put(b []byte, v uint32) { binary.LittleEndian.PutUint32(b, v) }

func crc32c(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }

// FuzzUnmarshalIVF feeds UnmarshalIVF arbitrary bytes, as they are and with
// the trailing checksum recomputed (which reaches the structural checks).
// It must return an index or an error wrapping lancer.ErrCorrupt or
// lancer.ErrUnsupported, never panic; an index it accepts must be
// searchable and re-encode to the same bytes.
func FuzzUnmarshalIVF(f *testing.F) {
	for _, sub := range []SubIndex{SubFlat, SubHNSW} {
		for _, st := range []Storage{StoreFloat32, StoreSQ8} {
			f.Add(smallIVFBytes(f, sub, st))
		}
	}
	f.Add(smallIVFBytes(f, SubFlat, StorePQ))
	tiny, err := BuildIVF([]float32{1, 2, 3, 4, 5, 6}, 2, []uint64{7, 8, 9}, &IVFOptions{Sub: SubHNSW, Storage: StoreSQ8, Partitions: 2, HNSW: HNSWOptions{M: 2}})
	if err != nil {
		f.Fatal(err)
	}
	b, _ := tiny.MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		try := func(data []byte) {
			x, err := UnmarshalIVF(data)
			if err != nil {
				if !errors.Is(err, lancer.ErrCorrupt) && !errors.Is(err, lancer.ErrUnsupported) {
					t.Fatalf("error %v is neither corrupt nor unsupported", err)
				}
				return
			}
			q := make([]float32, x.Dim())
			searchIVF(x, q, 3, nil, nil)
			searchIVF(x, q, 3, &IVFSearchOptions{NProbes: x.Partitions()}, NewAllowList(x.IDs()[:1]...))
			again, err := x.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if binary.LittleEndian.Uint16(data[8:]) == ivfVersion && !bytes.Equal(again, data) {
				t.Fatalf("accepted %d bytes re-encode to %d other bytes", len(data), len(again))
			}
		}
		try(data)
		if len(data) >= 4 {
			try(withCRC(data))
		}
	})
}
