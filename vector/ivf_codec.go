package vector

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"slices"

	"github.com/lancerdb/lancer"
)

// Binary form of an IVF, written by WriteTo and MarshalBinary and read by
// UnmarshalIVF and OpenIVF. This is an on-disk contract: change it only
// with a new version. All integers and floats are little endian.
//
// Version 2 (written since product quantization and lazy loading) keeps
// everything a search needs before it touches a partition at the front —
// header, centroids, quantizer, radii, partition sizes and all row ids —
// and a directory of the partitions (offset, length, CRC-32C of each) at
// the end, so that OpenIVF reads both and loads partitions on demand:
//
//	offset  size        field
//	0       8           magic "LNCRIVF1"
//	8       2           version u16 = 2
//	10      2           flags u16 = 0 (reserved)
//	12      4           dim u32 (≥ 1)
//	16      1           metric u8 (0 l2, 1 cosine, 2 dot)
//	17      1           sub-index u8 (0 flat, 1 hnsw)
//	18      1           storage u8 (0 float32, 1 sq8, 2 pq; pq only with flat)
//	19      1           reserved u8 = 0
//	20      4           partitions P u32 (1 ≤ P ≤ n)
//	24      4           rows n u32
//	28      2           HNSW M u16 (0 for flat)
//	30      4           HNSW efConstruction u32 (0 for flat)
//	34      2           pq: sub-vectors S u16 (divides dim); else 0
//	36      2           pq: codewords per sub-space K u16 (1..256); else 0
//	38      2           reserved u16 = 0
//	40      4*P*dim     centroids f32, row-major (unit length for cosine)
//	        8*dim       sq8 only: per-dimension minimums then maximums, f32
//	        4*K*dim     pq only: codebooks f32; sub-space s's codeword j is
//	                    the dim/S floats at (s*K + j)*dim/S
//	        4*P         radii f32: for l2 the largest distance from centroid
//	                    p to a row of p as searched; 0 for other metrics
//	        4*P         partition sizes u32, summing to n
//	        8*n         row ids u64, partition by partition (distinct)
//	then the partitions, in order and contiguous, partition p of c rows:
//	        4*c*dim     float32: vectors f32, row-major
//	        c*dim       sq8: codes u8, row-major
//	        c*S         pq: codes u8 (< K) of each row's residual to the
//	                    centroid (of the normalized row for cosine)
//	        g           hnsw only: HNSW.MarshalBinary of the c rows (no
//	                    tombstones), the rest of the partition; none when
//	                    c = 0
//	then the directory, 20*P bytes, for each partition:
//	        8           offset u64 of its first byte
//	        8           length u64
//	        4           CRC-32C (Castagnoli) of its bytes
//	and     4           CRC-32C of the header, the bytes from offset 40 to
//	                    the first partition, and the directory
//
// Version 1 (still decoded by UnmarshalIVF and OpenIVF, which reads it
// whole) had a 34-byte header (the same fields up to efConstruction, no
// PQ), the centroids, the sq8 ranges, the partition sizes, then for each
// partition its ids, vectors or codes and a u32 length before the graph,
// and one CRC-32C of every byte before it at the end.
//
// Rows of a partition are in input order. The readers check checksums,
// then every count against the bytes present before allocating.
const (
	ivfMagic       = "LNCRIVF1"
	ivfVersion1    = 1
	ivfVersion     = 2
	ivfHeaderLenV1 = 34
	ivfHeaderLen   = 40
	ivfDirEntry    = 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodedSize returns the length of the binary form in bytes. For an index
// opened with OpenIVF it is the size of the file.
func (x *IVF) EncodedSize() int64 {
	if x.lazy != nil {
		return x.lazy.size
	}
	size := x.metaEnd() + ivfDirEntry*int64(x.Partitions()) + 4
	for p := range x.Partitions() {
		size += x.partBytes(p, x.parts[p])
	}
	return size
}

// metaEnd is the offset of the first partition in the version 2 form.
func (x *IVF) metaEnd() int64 {
	k := 0
	if x.pq != nil {
		k = x.pq.k
	}
	return ivfMetaEnd(uint64(x.dim), uint64(x.Partitions()), uint64(len(x.ids)), x.storage, uint64(k))
}

// ivfMetaEnd is the offset of the first partition of a version 2 index.
// No product overflows for P, n < 2^32, dim ≤ 2^20 and K ≤ 256.
func ivfMetaEnd(dim, P, n uint64, storage Storage, K uint64) int64 {
	size := uint64(ivfHeaderLen) + 4*P*dim + 4*P + 4*P + 8*n
	switch storage {
	case StoreSQ8:
		size += 8 * dim
	case StorePQ:
		size += 4 * K * dim
	}
	return int64(size)
}

// partFixed is the size of partition p's vectors or codes.
func (x *IVF) partFixed(p int) int64 {
	c := int64(x.offsets[p+1] - x.offsets[p])
	switch x.storage {
	case StoreSQ8:
		return c * int64(x.dim)
	case StorePQ:
		return c * int64(x.pq.m)
	}
	return 4 * c * int64(x.dim)
}

// partBytes is the encoded length of partition p.
func (x *IVF) partBytes(p int, pt *ivfPart) int64 {
	size := x.partFixed(p)
	if pt.graph != nil {
		size += int64(pt.graph.encodedSize())
	}
	return size
}

// encodedSize is the length of MarshalBinary's output.
func (h *HNSW) encodedSize() int {
	size := hnswHeader + h.n + 4 + 4*h.Deleted()
	for i := 0; i < h.n; i++ {
		for l := 0; l <= int(h.levels[i]); l++ {
			size += 2 + 4*int(h.links(uint32(i), l)[0])
		}
	}
	return size
}

// MarshalBinary returns the binary form of the index (see WriteTo).
// encoding.BinaryMarshaler takes no ctx: for an index opened with OpenIVF,
// WriteToContext is the cancellable way.
func (x *IVF) MarshalBinary() ([]byte, error) {
	var b bytes.Buffer
	b.Grow(int(x.EncodedSize()))
	if _, err := x.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// crcWriter checksums what it passes to w and counts it.
type crcWriter struct {
	w   *bufio.Writer
	crc hash.Hash32
	n   int64
	err error
	buf [8]byte
}

func (c *crcWriter) write(p []byte) {
	if c.err != nil {
		return
	}
	c.crc.Write(p)
	var k int
	k, c.err = c.w.Write(p)
	c.n += int64(k)
}

func (c *crcWriter) u8(v uint8) { c.write([]byte{v}) }
func (c *crcWriter) u16(v uint16) {
	binary.LittleEndian.PutUint16(c.buf[:], v)
	c.write(c.buf[:2])
}
func (c *crcWriter) u32(v uint32) {
	binary.LittleEndian.PutUint32(c.buf[:], v)
	c.write(c.buf[:4])
}
func (c *crcWriter) u64(v uint64) {
	binary.LittleEndian.PutUint64(c.buf[:], v)
	c.write(c.buf[:8])
}

// f32s writes v in chunks through a scratch buffer.
func (c *crcWriter) f32s(v []float32) {
	var tmp [4096]byte
	for len(v) > 0 && c.err == nil {
		m := min(len(v), len(tmp)/4)
		for i, f := range v[:m] {
			binary.LittleEndian.PutUint32(tmp[4*i:], math.Float32bits(f))
		}
		c.write(tmp[:4*m])
		v = v[m:]
	}
}

func (c *crcWriter) u64s(v []uint64) {
	var tmp [4096]byte
	for len(v) > 0 && c.err == nil {
		m := min(len(v), len(tmp)/8)
		for i, u := range v[:m] {
			binary.LittleEndian.PutUint64(tmp[8*i:], u)
		}
		c.write(tmp[:8*m])
		v = v[m:]
	}
}

// WriteTo is WriteToContext without a ctx, for io.WriterTo: an index
// opened with OpenIVF loads the partitions it does not hold
// uncancellably, so callers holding a ctx use WriteToContext.
func (x *IVF) WriteTo(w io.Writer) (int64, error) {
	return x.WriteToContext(context.Background(), w)
}

// WriteToContext writes the binary form of the index (version 2, layout
// in ivf_codec.go) to w, streaming: it holds at most one partition's graph
// encoding besides a small buffer. For an index opened with OpenIVF it
// loads every partition through its cache with ctx (and fails if one
// cannot be loaded). It stops with an error wrapping ctx's once ctx is
// done, having written part of the index. It returns the bytes written.
func (x *IVF) WriteToContext(ctx context.Context, w io.Writer) (int64, error) {
	if x.pqRaw || (x.pq != nil && x.sub == SubHNSW) {
		return 0, fmt.Errorf("vector: IVF of raw PQ codes has no binary form: %w", lancer.ErrUnsupported)
	}
	meta := crc32.New(castagnoli)
	c := &crcWriter{w: bufio.NewWriterSize(w, 1<<16), crc: meta}
	c.write([]byte(ivfMagic))
	c.u16(ivfVersion)
	c.u16(0)
	c.u32(uint32(x.dim))
	c.u8(uint8(x.metric))
	c.u8(uint8(x.sub))
	c.u8(uint8(x.storage))
	c.u8(0)
	P := x.Partitions()
	c.u32(uint32(P))
	c.u32(uint32(len(x.ids)))
	c.u16(uint16(x.m))
	c.u32(uint32(x.efc))
	if x.pq != nil {
		c.u16(uint16(x.pq.m))
		c.u16(uint16(x.pq.k))
	} else {
		c.u32(0)
	}
	c.u16(0)
	c.f32s(x.centroids)
	switch x.storage {
	case StoreSQ8:
		c.f32s(x.sq.Min())
		c.f32s(x.sq.Max())
	case StorePQ:
		c.f32s(x.pq.books)
	}
	if x.radius != nil {
		c.f32s(x.radius)
	} else {
		c.f32s(make([]float32, P))
	}
	for p := 0; p < P; p++ {
		c.u32(x.offsets[p+1] - x.offsets[p])
	}
	c.u64s(x.ids)
	type dirEntry struct {
		off, n int64
		crc    uint32
	}
	dir := make([]dirEntry, P)
	for p := 0; p < P && c.err == nil; p++ {
		if err := ctx.Err(); err != nil {
			return c.n, fmt.Errorf("vector: write ivf index: partition %d: %w", p, err)
		}
		pt, err := x.part(ctx, p)
		if err != nil {
			return c.n, err
		}
		ph := crc32.New(castagnoli)
		c.crc = ph
		start := c.n
		switch x.storage {
		case StoreFloat32:
			c.f32s(pt.vecs)
		default:
			c.write(pt.codes)
		}
		if pt.graph != nil {
			g, err := pt.graph.MarshalBinary()
			if err != nil {
				return c.n, err
			}
			c.write(g)
		}
		dir[p] = dirEntry{start, c.n - start, ph.Sum32()}
	}
	c.crc = meta
	for _, e := range dir {
		c.u64(uint64(e.off))
		c.u64(uint64(e.n))
		c.u32(e.crc)
	}
	sum := meta.Sum32()
	if c.err == nil {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], sum)
		var k int
		k, c.err = c.w.Write(b[:])
		c.n += int64(k)
	}
	if c.err == nil {
		c.err = c.w.Flush()
	}
	return c.n, c.err
}

func ivfCorrupt(part, format string, args ...any) error {
	return fmt.Errorf("vector: ivf index: %s: "+format+": %w", append([]any{part}, append(args, lancer.ErrCorrupt)...)...)
}

// UnmarshalIVF decodes an index written by WriteTo or MarshalBinary
// (format version 2, or version 1 of earlier releases). It does not keep
// data; every partition is decoded.
//
// It checks the magic, the checksums and every count, size, id and float
// against the bytes present before allocating (allocations are bounded by
// a small multiple of len(data)), so damaged or hostile input returns an
// error wrapping lancer.ErrCorrupt that names the part at fault (header,
// centroids, sq8, pq, radii, partition sizes, ids, directory, partition N
// vectors/codes/graph), never a panic. A later format version is
// lancer.ErrUnsupported.
func UnmarshalIVF(data []byte) (*IVF, error) {
	if len(data) < 10 {
		return nil, ivfCorrupt("header", "%d bytes, shorter than the header", len(data))
	}
	if string(data[:8]) != ivfMagic {
		return nil, ivfCorrupt("header", "bad magic %q", data[:8])
	}
	if binary.LittleEndian.Uint16(data[8:]) == ivfVersion1 {
		return unmarshalIVFv1(data)
	}
	ctx := context.Background() // the reads are of data, in memory
	x, err := openIVF(ctx, int64(len(data)), func(_ context.Context, off, n int64) ([]byte, error) {
		return data[off : off+n], nil
	}, nil)
	if err != nil {
		return nil, err
	}
	lz := x.lazy
	parts := make([]*ivfPart, x.Partitions())
	for p := range parts {
		if parts[p], err = lz.load(ctx, x, p); err != nil {
			return nil, err
		}
	}
	x.parts, x.lazy = parts, nil
	return x, nil
}

// unmarshalIVFv1 decodes format version 1.
func unmarshalIVFv1(data []byte) (*IVF, error) {
	le := binary.LittleEndian
	if len(data) < ivfHeaderLenV1+4 {
		return nil, ivfCorrupt("header", "%d bytes, shorter than the %d-byte header and checksum", len(data), ivfHeaderLenV1+4)
	}
	body := data[:len(data)-4]
	if want, got := le.Uint32(data[len(data)-4:]), crc32.Checksum(body, castagnoli); want != got {
		return nil, ivfCorrupt("checksum", "stored CRC-32C %08x, computed %08x (truncated or damaged)", want, got)
	}
	if f := le.Uint16(data[10:]); f != 0 {
		return nil, fmt.Errorf("vector: ivf index flags %#x: %w", f, lancer.ErrUnsupported)
	}
	dim := uint64(le.Uint32(data[12:]))
	metric, sub, storage, reserved := Metric(data[16]), SubIndex(data[17]), Storage(data[18]), data[19]
	P := uint64(le.Uint32(data[20:]))
	n := uint64(le.Uint32(data[24:]))
	hm := int(le.Uint16(data[28:]))
	hefc := int(le.Uint32(data[30:]))
	if err := checkIVFHeader(dim, metric, sub, storage, reserved, P, n, hm, hefc); err != nil {
		return nil, err
	}
	if storage > StoreSQ8 {
		return nil, ivfCorrupt("header", "storage %d", storage)
	}
	// Everything but the graphs has a size fixed by the header: check it
	// before allocating anything. No product overflows: P and n are below
	// 2^32 and dim at most 2^20.
	elem := uint64(4)
	if storage == StoreSQ8 {
		elem = 1
	}
	fixed := uint64(ivfHeaderLenV1) + 4*P*dim + 4*P + 8*n + elem*n*dim
	if storage == StoreSQ8 {
		fixed += 8 * dim
	}
	if sub == SubHNSW {
		fixed += 4 * P
	}
	if fixed > uint64(len(body)) {
		return nil, ivfCorrupt("header", "%d partitions of %d rows of dimension %d need %d bytes, have %d", P, n, dim, fixed, len(body))
	}

	x := &IVF{dim: int(dim), metric: metric, sub: sub, storage: storage}
	if sub == SubHNSW {
		x.m, x.efc = hm, hefc
	}
	p := body[ivfHeaderLenV1:]
	var err error
	if p, err = x.readCentroids(p, P); err != nil {
		return nil, err
	}
	if storage == StoreSQ8 {
		if p, err = x.readSQ8(p); err != nil {
			return nil, err
		}
	}
	if p, err = x.readSizes(p, P, n); err != nil {
		return nil, err
	}

	x.ids = make([]uint64, n)
	x.parts = make([]*ivfPart, P)
	for part := 0; part < int(P); part++ {
		lo, hi := int(x.offsets[part]), int(x.offsets[part+1])
		c := hi - lo
		name := fmt.Sprintf("partition %d", part)
		// The fixed-size parts were counted in the total checked above,
		// but the graphs before this partition were not: recheck.
		if uint64(len(p)) < uint64(c)*(8+elem*dim) {
			return nil, ivfCorrupt(name, "truncated: %d rows need %d bytes, have %d", c, uint64(c)*(8+elem*dim), len(p))
		}
		for i := range c {
			x.ids[lo+i] = le.Uint64(p[8*i:])
		}
		p = p[8*c:]
		vc := p[:uint64(c)*elem*dim]
		p = p[len(vc):]
		var g []byte
		if sub == SubHNSW {
			if len(p) < 4 {
				return nil, ivfCorrupt(name+" graph", "truncated length")
			}
			gl := uint64(le.Uint32(p))
			p = p[4:]
			if gl > uint64(len(p)) {
				return nil, ivfCorrupt(name+" graph", "%d bytes, have %d", gl, len(p))
			}
			g, p = p[:gl], p[gl:]
		}
		if x.parts[part], err = x.decodePart(part, vc, g); err != nil {
			return nil, err
		}
	}
	if len(p) != 0 {
		return nil, ivfCorrupt("trailer", "%d bytes after the last partition", len(p))
	}
	if err := x.buildByID(); err != nil {
		return nil, ivfCorrupt("ids", "%v", err)
	}
	x.computeRadii()
	return x, nil
}

// checkIVFHeader validates the header fields common to both versions.
func checkIVFHeader(dim uint64, metric Metric, sub SubIndex, storage Storage, reserved uint8, P, n uint64, hm, hefc int) error {
	switch {
	case dim == 0 || dim > 1<<20:
		return ivfCorrupt("header", "dimension %d", dim)
	case metric > Dot:
		return ivfCorrupt("header", "metric %d", metric)
	case sub > SubHNSW:
		return ivfCorrupt("header", "sub-index %d", sub)
	case storage > StorePQ || (storage == StorePQ && sub != SubFlat):
		return ivfCorrupt("header", "storage %d with sub-index %v", storage, sub)
	case reserved != 0:
		return ivfCorrupt("header", "reserved byte %d", reserved)
	case P == 0 || P > n || n >= math.MaxUint32:
		return ivfCorrupt("header", "%d partitions of %d rows", P, n)
	case sub == SubHNSW && (hm < 2 || hm > maxHNSWM || hefc < 1 || hefc > 1<<20):
		return ivfCorrupt("header", "HNSW M %d, efConstruction %d", hm, hefc)
	case sub == SubFlat && (hm != 0 || hefc != 0):
		return ivfCorrupt("header", "flat index with HNSW M %d, efConstruction %d", hm, hefc)
	}
	return nil
}

// readCentroids decodes P centroids from the front of p, which holds them.
func (x *IVF) readCentroids(p []byte, P uint64) ([]byte, error) {
	dim := uint64(x.dim)
	x.centroids = make([]float32, P*dim)
	readF32s(x.centroids, p)
	for i, v := range x.centroids {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, ivfCorrupt("centroids", "centroid %d has the value %v", uint64(i)/dim, v)
		}
	}
	return p[4*P*dim:], nil
}

// readSQ8 decodes the SQ8 ranges from the front of p, which holds them.
func (x *IVF) readSQ8(p []byte) ([]byte, error) {
	dim := x.dim
	lo := make([]float32, dim)
	hi := make([]float32, dim)
	readF32s(lo, p)
	readF32s(hi, p[4*dim:])
	var err error
	if x.sq, err = NewSQ8(lo, hi); err != nil {
		return nil, ivfCorrupt("sq8", "%v", err)
	}
	return p[8*dim:], nil
}

// readSizes decodes the partition sizes from the front of p, which holds
// them, into offsets.
func (x *IVF) readSizes(p []byte, P, n uint64) ([]byte, error) {
	x.offsets = make([]uint32, P+1)
	sum := uint64(0)
	for i := uint64(0); i < P; i++ {
		sum += uint64(binary.LittleEndian.Uint32(p[4*i:]))
		if sum > n {
			return nil, ivfCorrupt("partition sizes", "sizes up to partition %d add up to %d, more than the %d rows", i, sum, n)
		}
		x.offsets[i+1] = uint32(sum)
	}
	if sum != n {
		return nil, ivfCorrupt("partition sizes", "sizes add up to %d, not the %d rows", sum, n)
	}
	return p[4*P:], nil
}

// decodePart decodes partition p from its vectors or codes (exactly
// partFixed(p) bytes) and its graph bytes (SubHNSW). It keeps neither.
func (x *IVF) decodePart(p int, data, graph []byte) (*ivfPart, error) {
	d := x.dim
	c := int(x.offsets[p+1] - x.offsets[p])
	name := fmt.Sprintf("partition %d", p)
	if int64(len(data)) != x.partFixed(p) {
		return nil, ivfCorrupt(name, "%d bytes of vectors or codes for %d rows, want %d", len(data), c, x.partFixed(p))
	}
	pt := &ivfPart{}
	switch x.storage {
	case StoreFloat32:
		pt.vecs = make([]float32, c*d)
		readF32s(pt.vecs, data)
		for i, v := range pt.vecs {
			if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, ivfCorrupt(name+" vectors", "row %d has the value %v", i/d, v)
			}
		}
	case StoreSQ8:
		pt.codes = slices.Clone(data)
		if x.sub == SubHNSW {
			pt.vecs = make([]float32, 0, c*d)
			for i := 0; i < c; i++ {
				pt.vecs = x.sq.Decode(pt.vecs, pt.codes[i*d:(i+1)*d])
			}
		}
	case StorePQ:
		pt.codes = slices.Clone(data)
		for i, b := range pt.codes {
			if int(b) >= x.pq.k {
				return nil, ivfCorrupt(name+" codes", "row %d has code %d of %d codewords", i/x.pq.m, b, x.pq.k)
			}
		}
	}
	if x.sub != SubHNSW {
		if len(graph) != 0 {
			return nil, ivfCorrupt(name, "%d bytes after the codes", len(graph))
		}
		return pt, nil
	}
	if c == 0 {
		if len(graph) != 0 {
			return nil, ivfCorrupt(name+" graph", "%d bytes for an empty partition", len(graph))
		}
		return pt, nil
	}
	h := new(HNSW)
	if err := h.UnmarshalBinary(graph); err != nil {
		return nil, fmt.Errorf("vector: ivf index: %s graph: %w", name, err)
	}
	switch {
	case h.Len() != c || h.Dim() != d || h.Metric() != x.metric || h.m != x.m || h.efc != x.efc:
		return nil, ivfCorrupt(name+" graph", "graph of %d nodes, dim %d, metric %v, M %d, efConstruction %d in an index of %d rows, dim %d, metric %v, M %d, efConstruction %d", h.Len(), h.Dim(), h.Metric(), h.m, h.efc, c, d, x.metric, x.m, x.efc)
	case h.Deleted() != 0:
		return nil, ivfCorrupt(name+" graph", "%d tombstones", h.Deleted())
	}
	if err := h.SetVectors(pt.vecs[: c*d : c*d]); err != nil {
		return nil, ivfCorrupt(name+" graph", "%v", err)
	}
	pt.graph = h
	return pt, nil
}

// readF32s decodes len(dst) little-endian float32s from src.
func readF32s(dst []float32, src []byte) {
	src = src[:4*len(dst)]
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}
