package vector

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"

	"github.com/lancerdb/lancer"
)

// Binary form of an IVF, written by WriteTo and MarshalBinary and read by
// UnmarshalIVF. This is an on-disk contract: change it only with a new
// version. All integers and floats are little endian.
//
//	offset  size        field
//	0       8           magic "LNCRIVF1"
//	8       2           version u16 = 1
//	10      2           flags u16 = 0 (reserved)
//	12      4           dim u32 (≥ 1)
//	16      1           metric u8 (0 l2, 1 cosine, 2 dot)
//	17      1           sub-index u8 (0 flat, 1 hnsw)
//	18      1           storage u8 (0 float32, 1 sq8)
//	19      1           reserved u8 = 0
//	20      4           partitions P u32 (1 ≤ P ≤ n)
//	24      4           rows n u32
//	28      2           HNSW M u16 (0 for flat)
//	30      4           HNSW efConstruction u32 (0 for flat)
//	34      4*P*dim     centroids f32, row-major (unit length for cosine)
//	        8*dim       sq8 only: per-dimension minimums then maximums, f32
//	        4*P         partition sizes u32, summing to n
//	then for each partition p in order, with c = its size:
//	        8*c         row ids u64 (distinct over the whole index)
//	        4*c*dim     float32: vectors f32, row-major
//	        c*dim       sq8: codes u8, row-major
//	        4 + g       hnsw only: g u32, then g bytes of HNSW.MarshalBinary
//	                    (graph of the c rows in this order, no tombstones;
//	                    g = 0 when c = 0)
//	        4           CRC-32C (Castagnoli) of every byte before it
//
// Rows of a partition are in input order. The reader checks the checksum,
// then every count against the bytes present before allocating.
const (
	ivfMagic     = "LNCRIVF1"
	ivfVersion   = 1
	ivfHeaderLen = 34
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodedSize returns the length of the binary form in bytes.
func (x *IVF) EncodedSize() int64 {
	n, dim, P := int64(len(x.ids)), int64(x.dim), int64(x.Partitions())
	size := int64(ivfHeaderLen) + 4*P*dim + 4*P + 8*n + 4
	if x.storage == StoreSQ8 {
		size += 8*dim + n*dim
	} else {
		size += 4 * n * dim
	}
	for _, g := range x.graphs {
		size += 4
		if g != nil {
			size += int64(g.encodedSize())
		}
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

// WriteTo writes the binary form of the index (layout in ivf_codec.go) to
// w, streaming: it holds at most one partition's graph encoding besides a
// small buffer. It returns the bytes written.
func (x *IVF) WriteTo(w io.Writer) (int64, error) {
	c := &crcWriter{w: bufio.NewWriterSize(w, 1<<16), crc: crc32.New(castagnoli)}
	c.write([]byte(ivfMagic))
	c.u16(ivfVersion)
	c.u16(0)
	c.u32(uint32(x.dim))
	c.u8(uint8(x.metric))
	c.u8(uint8(x.sub))
	c.u8(uint8(x.storage))
	c.u8(0)
	c.u32(uint32(x.Partitions()))
	c.u32(uint32(len(x.ids)))
	c.u16(uint16(x.m))
	c.u32(uint32(x.efc))
	c.f32s(x.centroids)
	if x.storage == StoreSQ8 {
		c.f32s(x.sq.Min())
		c.f32s(x.sq.Max())
	}
	for p := 0; p < x.Partitions(); p++ {
		c.u32(x.offsets[p+1] - x.offsets[p])
	}
	dim := x.dim
	for p := 0; p < x.Partitions(); p++ {
		lo, hi := int(x.offsets[p]), int(x.offsets[p+1])
		c.u64s(x.ids[lo:hi])
		if x.storage == StoreSQ8 {
			c.write(x.codes[lo*dim : hi*dim])
		} else {
			c.f32s(x.vecs[lo*dim : hi*dim])
		}
		if x.sub == SubHNSW {
			var g []byte
			if x.graphs[p] != nil {
				var err error
				if g, err = x.graphs[p].MarshalBinary(); err != nil {
					return c.n, err
				}
			}
			c.u32(uint32(len(g)))
			c.write(g)
		}
	}
	sum := c.crc.Sum32()
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

// UnmarshalIVF decodes an index written by WriteTo or MarshalBinary. It
// does not keep data.
//
// It checks the magic, the checksum and every count, size, id and float
// against the bytes present before allocating (allocations are bounded by
// a small multiple of len(data)), so damaged or hostile input returns an
// error wrapping lancer.ErrCorrupt that names the part at fault (header,
// centroids, sq8, partition sizes, partition N ids/vectors/codes/graph),
// never a panic. A later format version is lancer.ErrUnsupported.
func UnmarshalIVF(data []byte) (*IVF, error) {
	le := binary.LittleEndian
	if len(data) < ivfHeaderLen+4 {
		return nil, ivfCorrupt("header", "%d bytes, shorter than the %d-byte header and checksum", len(data), ivfHeaderLen+4)
	}
	if string(data[:8]) != ivfMagic {
		return nil, ivfCorrupt("header", "bad magic %q", data[:8])
	}
	body := data[:len(data)-4]
	if want, got := le.Uint32(data[len(data)-4:]), crc32.Checksum(body, castagnoli); want != got {
		return nil, ivfCorrupt("checksum", "stored CRC-32C %08x, computed %08x (truncated or damaged)", want, got)
	}
	if v := le.Uint16(data[8:]); v != ivfVersion {
		return nil, fmt.Errorf("vector: ivf index version %d (want %d): %w", v, ivfVersion, lancer.ErrUnsupported)
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
	switch {
	case dim == 0 || dim > 1<<20:
		return nil, ivfCorrupt("header", "dimension %d", dim)
	case metric > Dot:
		return nil, ivfCorrupt("header", "metric %d", metric)
	case sub > SubHNSW:
		return nil, ivfCorrupt("header", "sub-index %d", sub)
	case storage > StoreSQ8:
		return nil, ivfCorrupt("header", "storage %d", storage)
	case reserved != 0:
		return nil, ivfCorrupt("header", "reserved byte %d", reserved)
	case P == 0 || P > n || n >= math.MaxUint32:
		return nil, ivfCorrupt("header", "%d partitions of %d rows", P, n)
	case sub == SubHNSW && (hm < 2 || hm > maxHNSWM || hefc < 1 || hefc > 1<<20):
		return nil, ivfCorrupt("header", "HNSW M %d, efConstruction %d", hm, hefc)
	case sub == SubFlat && (hm != 0 || hefc != 0):
		return nil, ivfCorrupt("header", "flat index with HNSW M %d, efConstruction %d", hm, hefc)
	}
	// Everything but the graphs has a size fixed by the header: check it
	// before allocating anything. No product overflows: P and n are below
	// 2^32 and dim at most 2^20.
	elem := uint64(4)
	if storage == StoreSQ8 {
		elem = 1
	}
	fixed := uint64(ivfHeaderLen) + 4*P*dim + 4*P + 8*n + elem*n*dim
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
	p := body[ivfHeaderLen:]
	x.centroids = make([]float32, P*dim)
	readF32s(x.centroids, p)
	p = p[4*P*dim:]
	for i, v := range x.centroids {
		if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, ivfCorrupt("centroids", "centroid %d has the value %v", uint64(i)/dim, v)
		}
	}
	if storage == StoreSQ8 {
		lo := make([]float32, dim)
		hi := make([]float32, dim)
		readF32s(lo, p)
		readF32s(hi, p[4*dim:])
		p = p[8*dim:]
		var err error
		if x.sq, err = NewSQ8(lo, hi); err != nil {
			return nil, ivfCorrupt("sq8", "%v", err)
		}
	}
	x.offsets = make([]uint32, P+1)
	sum := uint64(0)
	for i := uint64(0); i < P; i++ {
		sum += uint64(le.Uint32(p[4*i:]))
		if sum > n {
			return nil, ivfCorrupt("partition sizes", "sizes up to partition %d add up to %d, more than the %d rows", i, sum, n)
		}
		x.offsets[i+1] = uint32(sum)
	}
	if sum != n {
		return nil, ivfCorrupt("partition sizes", "sizes add up to %d, not the %d rows", sum, n)
	}
	p = p[4*P:]

	x.ids = make([]uint64, n)
	if storage == StoreSQ8 {
		x.codes = make([]uint8, n*dim)
	}
	if storage == StoreFloat32 || sub == SubHNSW {
		x.vecs = make([]float32, n*dim)
	}
	if sub == SubHNSW {
		x.graphs = make([]*HNSW, P)
	}
	d := int(dim)
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
		if storage == StoreSQ8 {
			copy(x.codes[lo*d:hi*d], p[:c*d])
			p = p[c*d:]
			if x.vecs != nil {
				seg := x.vecs[lo*d : lo*d]
				for pos := lo; pos < hi; pos++ {
					seg = x.sq.Decode(seg, x.codes[pos*d:(pos+1)*d])
				}
			}
		} else {
			seg := x.vecs[lo*d : hi*d]
			readF32s(seg, p)
			p = p[4*c*d:]
			for i, v := range seg {
				if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
					return nil, ivfCorrupt(name+" vectors", "row %d has the value %v", i/d, v)
				}
			}
		}
		if sub == SubHNSW {
			if len(p) < 4 {
				return nil, ivfCorrupt(name+" graph", "truncated length")
			}
			g := uint64(le.Uint32(p))
			p = p[4:]
			if g > uint64(len(p)) {
				return nil, ivfCorrupt(name+" graph", "%d bytes, have %d", g, len(p))
			}
			if c == 0 {
				if g != 0 {
					return nil, ivfCorrupt(name+" graph", "%d bytes for an empty partition", g)
				}
				continue
			}
			h := new(HNSW)
			if err := h.UnmarshalBinary(p[:g]); err != nil {
				return nil, fmt.Errorf("vector: ivf index: %s graph: %w", name, err)
			}
			p = p[g:]
			switch {
			case h.Len() != c || h.Dim() != d || h.Metric() != metric || h.m != hm || h.efc != hefc:
				return nil, ivfCorrupt(name+" graph", "graph of %d nodes, dim %d, metric %v, M %d, efConstruction %d in an index of %d rows, dim %d, metric %v, M %d, efConstruction %d", h.Len(), h.Dim(), h.Metric(), h.m, h.efc, c, d, metric, hm, hefc)
			case h.Deleted() != 0:
				return nil, ivfCorrupt(name+" graph", "%d tombstones", h.Deleted())
			}
			if err := h.SetVectors(x.vecs[lo*d : hi*d : hi*d]); err != nil {
				return nil, ivfCorrupt(name+" graph", "%v", err)
			}
			x.graphs[part] = h
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

// readF32s decodes len(dst) little-endian float32s from src.
func readF32s(dst []float32, src []byte) {
	src = src[:4*len(dst)]
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}
