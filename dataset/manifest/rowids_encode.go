package manifest

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer/internal/pb/tablepb"
)

// Segment is one segment of a row id sequence to encode (M5): build it
// with RangeSegment or IDSegment, or let RowIDSegments or
// RowIDArraySegments choose the kinds.
type Segment struct{ pb *tablepb.U64Segment }

// EncodeRowIDs encodes segments as a RowIdSequence.
func EncodeRowIDs(segs ...Segment) ([]byte, error) {
	p := &tablepb.RowIdSequence{Segments: make([]*tablepb.U64Segment, len(segs))}
	for i, s := range segs {
		p.Segments[i] = s.pb
	}
	return proto.Marshal(p)
}

// RangeSegment holds every id of [start, end).
func RangeSegment(start, end uint64) Segment {
	return Segment{&tablepb.U64Segment{Segment: &tablepb.U64Segment_Range_{Range: &tablepb.U64Segment_Range{Start: start, End: end}}}}
}

// arraySegment stores values as a sorted array when they strictly
// increase, else as an array, as offsets from their minimum in the
// narrowest width that holds them.
func arraySegment(values []uint64) Segment {
	enc := encodeU64Array(values)
	if isIncreasing(values) {
		return Segment{&tablepb.U64Segment{Segment: &tablepb.U64Segment_SortedArray{SortedArray: enc}}}
	}
	return Segment{&tablepb.U64Segment{Segment: &tablepb.U64Segment_Array{Array: enc}}}
}

// plainArraySegment stores values as an (unsorted) array of plain u64s.
func plainArraySegment(values []uint64) Segment {
	vals := make([]byte, 8*len(values))
	for k, id := range values {
		binary.LittleEndian.PutUint64(vals[8*k:], id)
	}
	return Segment{&tablepb.U64Segment{Segment: &tablepb.U64Segment_Array{
		Array: &tablepb.EncodedU64Array{Array: &tablepb.EncodedU64Array_U64Array_{
			U64Array: &tablepb.EncodedU64Array_U64Array{Values: vals}}}}}}
}

// IDSegment encodes a fragment's row ids as one segment: a range when they
// are consecutive, a range with holes when they increase with few gaps,
// else a (sorted) array.
func IDSegment(ids []uint64) Segment {
	if len(ids) == 0 {
		return Segment{&tablepb.U64Segment{Segment: &tablepb.U64Segment_Range_{Range: &tablepb.U64Segment_Range{}}}}
	}
	if !isIncreasing(ids) {
		return Segment{&tablepb.U64Segment{Segment: &tablepb.U64Segment_Array{Array: encodeU64Array(ids)}}}
	}
	first, last := ids[0], ids[len(ids)-1]
	span := last - first + 1
	holes := span - uint64(len(ids))
	switch {
	case holes == 0:
		return RangeSegment(first, last+1)
	case holes <= uint64(len(ids)):
		hs := make([]uint64, 0, holes)
		next := first
		for _, id := range ids {
			for ; next < id; next++ {
				hs = append(hs, next)
			}
			next = id + 1
		}
		return Segment{&tablepb.U64Segment{Segment: &tablepb.U64Segment_RangeWithHoles_{RangeWithHoles: &tablepb.U64Segment_RangeWithHoles{
			Start: first, End: last + 1, Holes: encodeU64Array(hs),
		}}}}
	}
	return Segment{&tablepb.U64Segment{Segment: &tablepb.U64Segment_SortedArray{SortedArray: encodeU64Array(ids)}}}
}

// minRangeRun is the shortest run of consecutive row ids RowIDSegments
// stores as a range rather than as array values (unless the run is all the
// ids: then it is a range, as Lance writes it).
const minRangeRun = 8

// RowIDSegments encodes row ids, in order, as segments: runs of
// consecutive ids as ranges, the rest as (sorted) arrays of offsets from
// their minimum, in the narrowest width that holds them.
func RowIDSegments(ids []uint64) []Segment {
	var (
		segs  []Segment
		loose []uint64
	)
	flush := func() {
		if len(loose) > 0 {
			segs = append(segs, arraySegment(loose))
			loose = nil
		}
	}
	for i := 0; i < len(ids); {
		j := i + 1
		for j < len(ids) && ids[j-1] != math.MaxUint64 && ids[j] == ids[j-1]+1 {
			j++
		}
		if j-i >= minRangeRun || j-i == len(ids) {
			flush()
			segs = append(segs, RangeSegment(ids[i], ids[j-1]+1))
		} else {
			loose = append(loose, ids[i:j]...)
		}
		i = j
	}
	flush()
	return segs
}

// RowIDArraySegments encodes ids as segments the way a merge writes them:
// runs of at least 8 consecutive ids as ranges, everything between them as
// plain u64 arrays.
func RowIDArraySegments(ids []uint64) []Segment {
	var (
		segs    []Segment
		pending []uint64
	)
	flush := func() {
		if len(pending) > 0 {
			segs = append(segs, plainArraySegment(pending))
			pending = nil
		}
	}
	for i := 0; i < len(ids); {
		j := i + 1
		for j < len(ids) && ids[j] == ids[j-1]+1 {
			j++
		}
		if j-i >= minRangeRun {
			flush()
			segs = append(segs, RangeSegment(ids[i], ids[j-1]+1))
		} else {
			pending = append(pending, ids[i:j]...)
		}
		i = j
	}
	flush()
	return segs
}

func isIncreasing(vs []uint64) bool {
	for i := 1; i < len(vs); i++ {
		if vs[i] <= vs[i-1] {
			return false
		}
	}
	return true
}

// encodeU64Array encodes values as offsets from their minimum in the
// narrowest width that holds them, as Lance's EncodedU64Array.
func encodeU64Array(vs []uint64) *tablepb.EncodedU64Array {
	lo, hi := slices.Min(vs), slices.Max(vs)
	switch {
	case hi-lo <= math.MaxUint16:
		b := make([]byte, 0, 2*len(vs))
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint16(b, uint16(v-lo))
		}
		return &tablepb.EncodedU64Array{Array: &tablepb.EncodedU64Array_U16Array_{U16Array: &tablepb.EncodedU64Array_U16Array{Base: lo, Offsets: b}}}
	case hi-lo <= math.MaxUint32:
		b := make([]byte, 0, 4*len(vs))
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, uint32(v-lo))
		}
		return &tablepb.EncodedU64Array{Array: &tablepb.EncodedU64Array_U32Array_{U32Array: &tablepb.EncodedU64Array_U32Array{Base: lo, Offsets: b}}}
	}
	b := make([]byte, 0, 8*len(vs))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return &tablepb.EncodedU64Array{Array: &tablepb.EncodedU64Array_U64Array_{U64Array: &tablepb.EncodedU64Array_U64Array{Values: b}}}
}

// VersionRun says that rows [Start, End) of a fragment have Version (a
// run of a RowDatasetVersionSequence).
type VersionRun struct{ Start, End, Version uint64 }

// VersionRuns encodes per-row versions as runs of equal versions.
func VersionRuns(versions []uint64) []VersionRun {
	var runs []VersionRun
	for i := 0; i < len(versions); {
		j := i + 1
		for j < len(versions) && versions[j] == versions[i] {
			j++
		}
		runs = append(runs, VersionRun{uint64(i), uint64(j), versions[i]})
		i = j
	}
	return runs
}

// EncodeVersions encodes runs as a RowDatasetVersionSequence.
func EncodeVersions(runs ...VersionRun) ([]byte, error) {
	p := &tablepb.RowDatasetVersionSequence{}
	for _, r := range runs {
		p.Runs = append(p.Runs, &tablepb.RowDatasetVersionRun{Span: RangeSegment(r.Start, r.End).pb, Version: r.Version})
	}
	return proto.Marshal(p)
}

// DecodeVersions expands a RowDatasetVersionSequence into one version per
// row, for at most rows rows; overflow reports runs that would exceed
// them (they are left out). Malformed bytes are an error (the caller wraps
// lancer.ErrCorrupt).
func DecodeVersions(data []byte, rows uint64) (out []uint64, overflow bool, err error) {
	var p tablepb.RowDatasetVersionSequence
	if err := proto.Unmarshal(data, &p); err != nil {
		return nil, false, err
	}
	out = make([]uint64, 0, min(rows, 1<<20))
	for i, run := range p.GetRuns() {
		seg, err := decodeSegment(run.GetSpan())
		if err != nil {
			return nil, false, fmt.Errorf("run %d: %v", i, err)
		}
		if uint64(len(out))+seg.n > rows {
			return out, true, nil
		}
		for range seg.n {
			out = append(out, run.GetVersion())
		}
	}
	return out, false, nil
}

// VersionSequence is a decoded RowDatasetVersionSequence: the version of
// each row of a fragment, kept as its runs (memory in proportion to the
// encoded sequence, not to the rows).
type VersionSequence struct {
	ends     []uint64 // ends[i]: rows covered by runs 0..i
	versions []uint64
}

// UniformVersions is the sequence giving rows rows version v.
func UniformVersions(rows, v uint64) *VersionSequence {
	return &VersionSequence{ends: []uint64{rows}, versions: []uint64{v}}
}

// DecodeVersionSequence decodes a RowDatasetVersionSequence of a fragment
// of rows rows; runs that cover more or fewer rows are an error (the
// caller wraps lancer.ErrCorrupt), as are malformed bytes.
func DecodeVersionSequence(data []byte, rows uint64) (*VersionSequence, error) {
	var p tablepb.RowDatasetVersionSequence
	if err := proto.Unmarshal(data, &p); err != nil {
		return nil, err
	}
	s := &VersionSequence{}
	var n uint64
	for i, run := range p.GetRuns() {
		seg, err := decodeSegment(run.GetSpan())
		if err != nil {
			return nil, fmt.Errorf("run %d: %v", i, err)
		}
		if seg.n > rows-n {
			return nil, fmt.Errorf("run %d of %d rows goes past the fragment's %d rows", i, seg.n, rows)
		}
		if seg.n == 0 {
			continue
		}
		n += seg.n
		s.ends = append(s.ends, n)
		s.versions = append(s.versions, run.GetVersion())
	}
	if n != rows {
		return nil, fmt.Errorf("the runs cover %d of the fragment's %d rows", n, rows)
	}
	return s, nil
}

// Len is the number of rows.
func (s *VersionSequence) Len() uint64 {
	if len(s.ends) == 0 {
		return 0
	}
	return s.ends[len(s.ends)-1]
}

// At returns the version of row i (< Len()).
func (s *VersionSequence) At(i uint64) uint64 {
	k, _ := slices.BinarySearch(s.ends, i+1)
	return s.versions[k]
}

// Expand returns the version of every row.
func (s *VersionSequence) Expand() []uint64 {
	out := make([]uint64, 0, s.Len())
	start := uint64(0)
	for k, end := range s.ends {
		for range end - start {
			out = append(out, s.versions[k])
		}
		start = end
	}
	return out
}
