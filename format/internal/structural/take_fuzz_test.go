package structural

import (
	"errors"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// Fuzzing the decoders' entry points for takes: the mini-block chunk index
// and the decoding of runs of chunks, and full-zip rows decoded without the
// page's item counts. Seeds are the fixtures' pages (addFixtureSeeds); the
// rows taken come from the fuzzed sel bits.

// takeRowsOf picks rows of a page of n rows from the bits of sel: the first
// and last row when its low bits say so, and every k-th row.
func takeRowsOf(n uint64, sel uint8) []uint64 {
	if n == 0 {
		return nil
	}
	var rows []uint64
	step := uint64(sel>>2) + 1
	if sel&1 != 0 {
		rows = append(rows, 0)
	}
	for r := step; r < n; r += step {
		rows = append(rows, r)
	}
	if sel&2 != 0 && (len(rows) == 0 || rows[len(rows)-1] != n-1) {
		rows = append(rows, n-1)
	}
	if len(rows) == 0 {
		rows = []uint64{n / 2}
	}
	return rows
}

// checkTakeOutcome fails on errors of no expected category and on
// allocations the input cannot justify (as fuzzDecode).
func checkTakeOutcome(t *testing.T, err error, before, after *runtime.MemStats, inputLen int) {
	t.Helper()
	if err != nil && !errors.Is(err, lancer.ErrCorrupt) && !errors.Is(err, lancer.ErrUnsupported) {
		t.Fatalf("error of no expected category: %v", err)
	}
	if grown, limit := after.TotalAlloc-before.TotalAlloc, uint64(64<<20)+uint64(inputLen)<<15; grown > limit {
		t.Fatalf("decoding %d input bytes allocated %d bytes (limit %d)", inputLen, grown, limit)
	}
}

func FuzzMiniBlockTake(f *testing.F) {
	addFixtureSeeds(f, func(l *enc21pb.PageLayout) proto.Message {
		if m := l.GetMiniBlockLayout(); m != nil {
			return m
		}
		return nil
	}, 16<<10)
	f.Fuzz(func(t *testing.T, layout, packed []byte, rows uint16, sel uint8) {
		var l enc21pb.MiniBlockLayout
		if proto.Unmarshal(layout, &l) != nil {
			return
		}
		bufs := unpackBuffers(packed)
		if len(bufs) != miniBlockBuffers(&l) {
			return
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		d := newTestDecoder(mem, uint64(rows), fuzzScanTypes[int(sel)%len(fuzzScanTypes)])
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := func() error {
			var repIndex []byte
			if l.GetRepCompression() != nil {
				if l.GetRepetitionIndexDepth() == 0 {
					return nil
				}
				repIndex = bufs[len(bufs)-1]
			}
			idx, err := newMiniBlockIndex(&l, bufs[0], uint64(len(bufs[1])), uint64(rows), repIndex)
			if err != nil {
				return err
			}
			want := takeRowsOf(uint64(rows), sel)
			runs, _, err := idx.ChunkRuns(want)
			if err != nil {
				return err
			}
			data := make([][]byte, len(runs))
			for i, run := range runs {
				from, to := idx.Chunks[run.First], idx.Chunks[run.Last]
				data[i] = bufs[1][from.Offset : to.Offset+to.Size]
			}
			var dict []byte
			if l.GetDictionary() != nil {
				dict = bufs[2]
			}
			lp, segs, err := d.DecodeChunkRuns(&l, idx, runs, data, dict, want)
			if err != nil {
				return err
			}
			defer lp.Release()
			if _, err := lp.Check(lp.numRows); err != nil {
				return err
			}
			// Every row asked for lies in a segment.
			s := 0
			for _, row := range want {
				for s < len(segs) && row >= segs[s].End {
					s++
				}
				if s == len(segs) || row < segs[s].Start {
					t.Fatalf("row %d is in no segment of %v", row, segs)
				}
			}
			return nil
		}()
		runtime.ReadMemStats(&after)
		checkTakeOutcome(t, err, &before, &after, len(layout)+len(packed))
		mem.AssertSize(t, 0)
	})
}

func FuzzFullZipRows(f *testing.F) {
	addFixtureSeeds(f, func(l *enc21pb.PageLayout) proto.Message {
		if m := l.GetFullZipLayout(); m != nil {
			return m
		}
		return nil
	}, 64<<10)
	f.Fuzz(func(t *testing.T, layout, packed []byte, rows uint16, sel uint8) {
		var l enc21pb.FullZipLayout
		if proto.Unmarshal(layout, &l) != nil || checkFullZip(&l) != nil {
			return
		}
		bufs := unpackBuffers(packed)
		if len(bufs) == 0 {
			return
		}
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		// Some rows' bytes: a prefix of the zipped buffer cut where the
		// row index (or the fixed row size) says, else all of it.
		data := bufs[0]
		numRows := uint64(rows)
		if len(bufs) > 1 && rows > 0 {
			w := uint64(len(bufs[1])) / (numRows + 1)
			if w == 1 || w == 2 || w == 4 || w == 8 {
				k := min(uint64(sel)%numRows+1, numRows)
				if end := getLE(bufs[1][k*w:], int(w)); end <= uint64(len(data)) {
					data, numRows = data[:end], k
				}
			}
		}
		d := newTestDecoder(mem, numRows, fuzzScanTypes[int(sel)%len(fuzzScanTypes)])
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		lp, err := d.DecodeZipped(&l, data, -1, -1)
		if err == nil {
			_, err = lp.Check(numRows)
			lp.Release()
		}
		runtime.ReadMemStats(&after)
		checkTakeOutcome(t, err, &before, &after, len(layout)+len(packed))
		mem.AssertSize(t, 0)
	})
}
