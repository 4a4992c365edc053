package vecindex

import (
	"context"
	"encoding/binary"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/internal/pb/indexpb"
	"github.com/lancerdb/lancer/vector"
)

// The legacy vector index (L1-L4 of doc.go): index.idx alone, raw
// partitions followed by a length-prefixed pb.Index message, and a
// 16-byte footer.
const (
	legacyFooter   = 16
	legacyMagic    = "LANC"
	maxLegacyIndex = 64 << 20 // the pb.Index message: centroids and codebook
)

// legacyFile is where a legacy segment's partitions are.
type legacyFile struct {
	store blob.Store
	key   string
	// offsets are each partition's byte offset in the file: its PQ codes
	// (rows × m bytes, row-major) then its row ids (rows × 8 bytes).
	offsets []uint64
}

// openLegacy reads a legacy index.idx (L1-L4): an IVF_PQ segment whose
// partitions are then read as the v3 ones and searched alike.
func (ix *Index) openLegacy(ctx context.Context, store blob.Store, key string) error {
	info, err := store.Stat(ctx, key)
	if err != nil {
		return fmt.Errorf("vecindex: index %s: %w", ix.location, err)
	}
	size := info.Size
	if size < legacyFooter+4 {
		return ix.corrupt(IndexFile, "legacy index of %d bytes", size)
	}
	foot, err := store.ReadRange(ctx, key, size-legacyFooter, legacyFooter)
	if err != nil {
		return fmt.Errorf("vecindex: index %s: %s: %w", ix.location, IndexFile, err)
	}
	if len(foot) != legacyFooter || string(foot[12:]) != legacyMagic {
		return ix.corrupt(IndexFile, "no %q footer", legacyMagic)
	}
	pos := binary.LittleEndian.Uint64(foot)
	major, minor := binary.LittleEndian.Uint16(foot[8:]), binary.LittleEndian.Uint16(foot[10:])
	if major >= 2 {
		// A Lance v2 data file: a v3 segment that lost its other file.
		return ix.corrupt(IndexFile, "a v3 index (file version %d.%d) without %s", major, minor, AuxiliaryFile)
	}
	if major != 0 || minor > 1 {
		return fmt.Errorf("vecindex: index %s: %s: legacy file version %d.%d: %w", ix.location, IndexFile, major, minor, lancer.ErrUnsupported)
	}
	end := uint64(size - legacyFooter)
	if pos > end-4 {
		return ix.corrupt(IndexFile, "index message at %d beyond the file's %d bytes", pos, size)
	}
	lb, err := store.ReadRange(ctx, key, int64(pos), 4)
	if err != nil {
		return fmt.Errorf("vecindex: index %s: %s: %w", ix.location, IndexFile, err)
	}
	n := uint64(binary.LittleEndian.Uint32(lb))
	if n > maxLegacyIndex || n > end-pos-4 {
		return ix.corrupt(IndexFile, "index message of %d bytes at %d in a file of %d", n, pos, size)
	}
	mb, err := store.ReadRange(ctx, key, int64(pos)+4, int64(n))
	if err != nil {
		return fmt.Errorf("vecindex: index %s: %s: %w", ix.location, IndexFile, err)
	}
	var msg indexpb.Index
	if err := proto.Unmarshal(mb, &msg); err != nil {
		return ix.corrupt(IndexFile, "index message: %v", err)
	}
	vi := msg.GetVectorIndex()
	if vi == nil {
		return ix.corrupt(IndexFile, "index message without a vector index")
	}
	switch vi.GetMetricType() {
	case indexpb.VectorMetricType_L2:
		ix.Metric = vector.L2
	case indexpb.VectorMetricType_Cosine:
		ix.Metric = vector.Cosine
	default:
		// Lance 0.10 sums 1 - dot per sub-vector (m - a·b), unlike its v3
		// indices; no reference answers were recorded for it.
		return fmt.Errorf("vecindex: index %s: legacy index of metric %v: %w", ix.location, vi.GetMetricType(), lancer.ErrUnsupported)
	}
	// Stages are IVF then PQ (an OPQ transform first, when built with it).
	var ivf *indexpb.IVF
	var pq *indexpb.PQ
	for i, st := range vi.GetStages() {
		switch {
		case st.GetIvf() != nil && ivf == nil && pq == nil:
			ivf = st.GetIvf()
		case st.GetPq() != nil && ivf != nil && pq == nil:
			pq = st.GetPq()
		case st.GetTransform() != nil:
			return fmt.Errorf("vecindex: index %s: legacy index with an OPQ transform: %w", ix.location, lancer.ErrUnsupported)
		default:
			return fmt.Errorf("vecindex: index %s: legacy index stage %d (%v): %w", ix.location, i, st, lancer.ErrUnsupported)
		}
	}
	if ivf == nil || pq == nil {
		return fmt.Errorf("vecindex: index %s: legacy index of %d stages, not IVF then PQ: %w", ix.location, len(vi.GetStages()), lancer.ErrUnsupported)
	}
	ix.Type, ix.Quant, ix.Sub, ix.Legacy = "IVF_PQ", QuantPQ, SubFlat, true
	ix.nparts = len(ivf.GetLengths())
	if ix.nparts == 0 || ix.nparts > maxPartitions || len(ivf.GetOffsets()) != ix.nparts {
		return ix.corrupt(IndexFile, "IVF of %d partitions and %d offsets", ix.nparts, len(ivf.GetOffsets()))
	}
	if err := ix.readCentroids(ivf, IndexFile); err != nil {
		return err
	}
	if d := int(vi.GetDimension()); d != ix.dim {
		return ix.corrupt(IndexFile, "vector index of %d dimensions, centroids %d", d, ix.dim)
	}
	if pq.GetNumBits() != 8 {
		return fmt.Errorf("vecindex: index %s: %d-bit legacy PQ: %w", ix.location, pq.GetNumBits(), lancer.ErrUnsupported)
	}
	m := int(pq.GetNumSubVectors())
	if int(pq.GetDimension()) != ix.dim || m <= 0 || ix.dim%m != 0 {
		return ix.corrupt(IndexFile, "PQ of %d sub-vectors over %d dimensions (centroids %d)", m, pq.GetDimension(), ix.dim)
	}
	cb := pq.GetCodebook()
	if t := pq.GetCodebookTensor(); t != nil {
		if cb, err = tensorFloats(t); err != nil {
			return ix.corrupt(IndexFile, "PQ codebook: %v", err)
		}
	}
	if want := 256 * ix.dim; len(cb) != want {
		return ix.corrupt(IndexFile, "PQ codebook of %d values, want %d (256 centroids × %d dimensions)", len(cb), want, ix.dim)
	}
	ix.pq = pqMeta{nbits: 8, m: m, codebook: cb}
	// Each partition's codes and row ids lie before the index message.
	ix.auxStart, ix.auxLen = make([]uint64, ix.nparts), make([]uint64, ix.nparts)
	lf := &legacyFile{store: store, key: key, offsets: ivf.GetOffsets()}
	for p, l := range ivf.GetLengths() {
		off := lf.offsets[p]
		if off > pos || uint64(l) > (pos-off)/uint64(m+8) {
			return ix.corrupt(IndexFile, "partition %d of %d rows at byte %d overruns the partitions' %d bytes", p, l, off, pos)
		}
		ix.auxLen[p] = uint64(l)
	}
	ix.legacy = lf
	return nil
}

// readLegacyPartition reads partition p of a legacy segment.
func (ix *Index) readLegacyPartition(ctx context.Context, p int) (*partition, error) {
	n, m := ix.auxLen[p], uint64(ix.pq.m)
	part := &partition{}
	if n == 0 {
		return part, nil
	}
	b, err := ix.legacy.store.ReadRange(ctx, ix.legacy.key, int64(ix.legacy.offsets[p]), int64(n*(m+8)))
	if err != nil {
		return nil, fmt.Errorf("vecindex: index %s: %s: partition %d: %w", ix.location, IndexFile, p, err)
	}
	if uint64(len(b)) != n*(m+8) {
		return nil, ix.corrupt(IndexFile, "partition %d: read %d bytes of %d", p, len(b), n*(m+8))
	}
	part.codes = transpose(b[:n*m], int(n), int(m))
	part.rowIDs = make([]uint64, n)
	for i := range part.rowIDs {
		part.rowIDs[i] = binary.LittleEndian.Uint64(b[n*m+8*uint64(i):])
	}
	part.bytes = int64(8*len(part.rowIDs) + len(part.codes))
	return part, nil
}
