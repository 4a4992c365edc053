package structural

import (
	"context"
	"encoding/binary"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// Blob columns (docs/spec/lance-format.md §11, docs/spec/lance-on-disk.md §5).
//
// Legacy blobs (2.1): every value's bytes become an out-of-line buffer of
// the data file, and the page is a BlobLayout around a mini-block page of
// {position, size} descriptors, one per item, the items' levels smuggled
// into the descriptors of null items (position = def<<16 | rep, size 0).
//
// Blob v2 (2.2): the column is struct<data: large_binary, uri: utf8>; the
// page is a full-zip page of VariablePackedStruct descriptors {kind u8,
// position u64, size u64, blob_id u32, blob_uri utf8}. Payloads up to the
// inline threshold go into the data file (kind 0), payloads above the
// dedicated threshold into a sidecar file of their own (kind 2), the rest
// into a shared "packed" sidecar (kind 1); a value with only a URI is
// external (kind 3). Sidecars are data/<file stem>/<blob id as 32 binary
// digits, least significant first>.blob, blob ids counting from 1 per data
// file.

// Field metadata keys of blob v2 columns.
const (
	MetaBlobInlineThreshold    = "lance-encoding:blob-inline-size-threshold"
	MetaBlobDedicatedThreshold = "lance-encoding:blob-dedicated-size-threshold"
	metaBlobPackFileThreshold  = "lance-encoding:blob-pack-file-size-threshold"
)

// Default blob v2 thresholds.
const (
	defaultBlobInlineThreshold    = 64
	defaultBlobDedicatedThreshold = 64 << 10
	defaultBlobPackFileThreshold  = 1 << 30
)

// blobV2Input reports whether st is the written type of a blob v2 column.
func blobV2Input(st *arrow.StructType) bool {
	if st.NumFields() != 2 {
		return false
	}
	d, u := st.Field(0), st.Field(1)
	return d.Name == "data" && (d.Type.ID() == arrow.LARGE_BINARY || d.Type.ID() == arrow.BINARY) &&
		u.Name == "uri" && (u.Type.ID() == arrow.STRING || u.Type.ID() == arrow.LARGE_STRING)
}

// blobSidecarKey is the key of sidecar id of the data file at dataKey.
func blobSidecarKey(dataKey string, id uint32) string {
	var digits [32]byte
	for i := range digits {
		digits[i] = '0' + byte(id>>i&1)
	}
	return strings.TrimSuffix(dataKey, path.Ext(dataKey)) + "/" + string(digits[:]) + ".blob"
}

// blobSidecars writes the sidecar files of one data file; every blob v2
// field of the file shares it.
type blobSidecars struct {
	w      *fileio.Sink
	nextID uint32
	// the packed sidecar being filled
	packed     blob.ObjectWriter
	packedID   uint32
	packedSize uint64
	// closed holds the keys of finished sidecars, deleted on abort.
	closed []string
}

func (s *blobSidecars) newID() uint32 {
	s.nextID++
	return s.nextID
}

// dedicated writes b to a sidecar of its own and returns its id.
func (s *blobSidecars) dedicated(ctx context.Context, b []byte) (uint32, error) {
	id := s.newID()
	key := blobSidecarKey(s.w.Key, id)
	out, err := s.w.Store.NewWriter(ctx, key)
	if err != nil {
		return 0, err
	}
	if _, err := out.Write(b); err != nil {
		_ = out.Abort()
		return 0, fmt.Errorf("write blob sidecar %s: %w", key, err)
	}
	if err := out.Close(); err != nil {
		return 0, fmt.Errorf("write blob sidecar %s: %w", key, err)
	}
	s.closed = append(s.closed, key)
	return id, nil
}

// pack appends b to the packed sidecar (starting a new one past limit
// bytes) and returns its id and position.
func (s *blobSidecars) pack(ctx context.Context, b []byte, limit uint64) (uint32, uint64, error) {
	if s.packed != nil && s.packedSize > 0 && s.packedSize+uint64(len(b)) > limit {
		if err := s.closePacked(); err != nil {
			return 0, 0, err
		}
	}
	if s.packed == nil {
		s.packedID = s.newID()
		out, err := s.w.Store.NewWriter(ctx, blobSidecarKey(s.w.Key, s.packedID))
		if err != nil {
			return 0, 0, err
		}
		s.packed, s.packedSize = out, 0
	}
	pos := s.packedSize
	if _, err := s.packed.Write(b); err != nil {
		return 0, 0, fmt.Errorf("write blob sidecar %s: %w", blobSidecarKey(s.w.Key, s.packedID), err)
	}
	s.packedSize += uint64(len(b))
	return s.packedID, pos, nil
}

func (s *blobSidecars) closePacked() error {
	if s.packed == nil {
		return nil
	}
	key := blobSidecarKey(s.w.Key, s.packedID)
	err := s.packed.Close()
	s.packed = nil
	if err != nil {
		return fmt.Errorf("write blob sidecar %s: %w", key, err)
	}
	s.closed = append(s.closed, key)
	return nil
}

// close finishes the packed sidecar (a blob written later starts a new
// one).
func (s *blobSidecars) close() error { return s.closePacked() }

// Abort discards every sidecar written, also when the write was aborted
// because its context was cancelled.
func (s *blobSidecars) Abort(ctx context.Context) {
	if s.packed != nil {
		_ = s.packed.Abort()
		s.packed = nil
	}
	ctx = context.WithoutCancel(ctx)
	for _, key := range s.closed {
		_ = s.w.Store.Delete(ctx, key)
	}
	s.closed = nil
}

// sidecars returns the data file's sidecar writer, shared with the blob
// fields before this one.
func (fw *structuralFieldWriter) sidecars() *blobSidecars {
	if fw.blobs != nil {
		return fw.blobs
	}
	for _, other := range fw.w.Fields {
		if o, ok := other.(*structuralFieldWriter); ok && o.blobs != nil {
			fw.blobs = o.blobs
			break
		}
	}
	if fw.blobs == nil {
		fw.blobs = &blobSidecars{w: fw.w}
	}
	return fw.blobs
}

// metaSize reads a size threshold from field metadata.
func metaSize(md map[string]string, key string, def uint64) uint64 {
	if s, ok := md[key]; ok {
		if v, err := strconv.ParseUint(s, 10, 64); err == nil {
			return v
		}
	}
	return def
}

// encodeBlobV2 writes the payloads of a blob v2 page and encodes its
// descriptors.
func (fw *structuralFieldWriter) encodeBlobV2(ctx context.Context, pg *writePage) ([][]byte, *enc21pb.PageLayout, error) {
	inlineMax := metaSize(pg.meta, MetaBlobInlineThreshold, defaultBlobInlineThreshold)
	dedicatedMin := metaSize(pg.meta, MetaBlobDedicatedThreshold, defaultBlobDedicatedThreshold)
	packLimit := metaSize(pg.meta, metaBlobPackFileThreshold, defaultBlobPackFileThreshold)
	kind := &fixedVals{bits: 8}
	pos := &fixedVals{bits: 64}
	size := &fixedVals{bits: 64}
	ids := &fixedVals{bits: 32}
	uris := &varVals{Off: []uint64{0}}
	put := func(k uint8, p, s uint64, id uint32, uri []byte) {
		kind.data = append(kind.data, k)
		pos.data = binary.LittleEndian.AppendUint64(pos.data, p)
		size.data = binary.LittleEndian.AppendUint64(size.data, s)
		ids.data = binary.LittleEndian.AppendUint32(ids.data, id)
		uris.Data = append(uris.Data, uri...)
		uris.Off = append(uris.Off, uint64(len(uris.Data)))
	}
	at := 0
	for _, p := range pg.pieces {
		st, ok := p.Src.(*array.Struct)
		if !ok {
			return nil, nil, fmt.Errorf("blob v2 column holds a %s array: %w", p.Src.DataType(), lancer.ErrInvalidArgument)
		}
		data, uri := st.Field(0), st.Field(1)
		dataOff, dataBytes := varOffsets(data), varData(data)
		uriOff, uriBytes := varOffsets(uri), varData(uri)
		for _, rg := range p.Ranges {
			for i := rg.Start; i < rg.End; i++ {
				null := pg.nulls != nil && pg.nulls[at]
				at++
				switch {
				case null:
					put(0, 0, 0, 0, nil)
				case data.IsValid(i):
					b := dataBytes[dataOff(i):dataOff(i+1)]
					n := uint64(len(b))
					switch {
					case n == 0:
						put(0, 0, 0, 0, nil)
					case n <= inlineMax:
						off, err := fw.w.WriteBuffer(b)
						if err != nil {
							return nil, nil, err
						}
						put(0, off, n, 0, nil)
					case n > dedicatedMin:
						id, err := fw.sidecars().dedicated(ctx, b)
						if err != nil {
							return nil, nil, err
						}
						put(2, 0, n, id, nil)
					default:
						id, off, err := fw.sidecars().pack(ctx, b, packLimit)
						if err != nil {
							return nil, nil, err
						}
						put(1, off, n, id, nil)
					}
				default:
					put(3, 0, 0, 0, uriBytes[uriOff(i):uriOff(i+1)])
				}
			}
		}
	}
	n := len(kind.data)
	kind.n, pos.n, size.n, ids.n = n, n, n, n
	vals := &packedVals{n: n, children: []any{kind, pos, size, ids, uris}}
	return encodeFullZip(pg, &packedZip{vals: vals})
}

// encodeLegacyBlob writes the payloads of a legacy blob page as out-of-line
// buffers and encodes the descriptors of all its items.
func (fw *structuralFieldWriter) encodeLegacyBlob(pg *writePage) ([][]byte, *enc21pb.PageLayout, error) {
	pos := &fixedVals{bits: 64, n: pg.items}
	size := &fixedVals{bits: 64, n: pg.items}
	v := 0
	pi, ri, slot := 0, 0, 0 // piece, range and slot of the next visible value
	// The value accessors of the last piece read.
	var (
		cur  arrow.Array
		offs func(int) int64
		data []byte
	)
	next := func() (arrow.Array, int) {
		for pi < len(pg.pieces) {
			p := pg.pieces[pi]
			if ri < len(p.Ranges) {
				rg := p.Ranges[ri]
				if slot < rg.Start {
					slot = rg.Start
				}
				if slot < rg.End {
					s := slot
					slot++
					return p.Src, s
				}
				ri++
				slot = 0
				continue
			}
			pi, ri, slot = pi+1, 0, 0
		}
		return nil, -1
	}
	for i := range pg.items {
		r, d := pg.levels(i)
		visible := pg.def == nil || d <= pg.maxVisible
		var src arrow.Array
		s := -1
		if visible {
			src, s = next()
			v++
		}
		if d != 0 || src == nil {
			pos.data = binary.LittleEndian.AppendUint64(pos.data, uint64(d)<<16|uint64(r))
			size.data = binary.LittleEndian.AppendUint64(size.data, 0)
			continue
		}
		if src != cur {
			cur, offs, data = src, varOffsets(src), varData(src)
		}
		b := data[offs(s):offs(s+1)]
		if len(b) == 0 {
			pos.data = binary.LittleEndian.AppendUint64(pos.data, 0)
			size.data = binary.LittleEndian.AppendUint64(size.data, 0)
			continue
		}
		off, err := fw.w.WriteBuffer(b)
		if err != nil {
			return nil, nil, err
		}
		pos.data = binary.LittleEndian.AppendUint64(pos.data, off)
		size.data = binary.LittleEndian.AppendUint64(size.data, uint64(len(b)))
	}
	if v != pg.values {
		return nil, nil, fmt.Errorf("legacy blob page: %d visible items, %d values: %w", v, pg.values, lancer.ErrInvalidArgument)
	}
	inner := &writePage{
		spec: pg.spec, meta: nil, rows: pg.items, items: pg.items, values: pg.items,
		layers: []enc21pb.RepDefLayer{enc21pb.RepDefLayer_REPDEF_ALL_VALID_ITEM},
	}
	enc, err := newPackedMini(&packedVals{n: pg.items, children: []any{pos, size}})
	if err != nil {
		return nil, nil, err
	}
	bufs, innerLayout, err := encodeMiniBlock(inner, enc, nil)
	if err != nil {
		return nil, nil, err
	}
	return bufs, &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_BlobLayout{BlobLayout: &enc21pb.BlobLayout{
		InnerLayout: innerLayout,
		Layers:      pg.layers,
	}}}, nil
}
