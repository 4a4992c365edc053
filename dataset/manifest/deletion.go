package manifest

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
)

// MaxDeletionFileSize bounds the deletion files read whole: a bitmap of
// every offset of a 2^32-row fragment takes 512 MiB plus headers.
const MaxDeletionFileSize = 520 << 20

// DecodeDeletionFile decodes the bytes of a deletion file of the given kind
// for a fragment of physicalRows rows (0 = unknown, then up to 2^32)
// (doc.go, M6). Offsets at or beyond physicalRows are corruption.
func DecodeDeletionFile(kind DeletionFileKind, data []byte, physicalRows uint64) (*roaring.Bitmap, error) {
	limit := physicalRows
	if limit == 0 {
		limit = MaxRowsPerFragment
	}
	var (
		bm  *roaring.Bitmap
		err error
	)
	switch kind {
	case DeletionArrow:
		bm, err = decodeArrowDeletions(data, limit)
	case DeletionBitmap:
		bm, err = DecodeRoaring(data)
	default:
		return nil, fmt.Errorf("deletion file kind %d: %w", kind, lancer.ErrUnsupported)
	}
	if err != nil {
		return nil, err
	}
	if !bm.IsEmpty() && uint64(bm.Maximum()) >= limit {
		return nil, fmt.Errorf("deletes row %d of a fragment of %d rows: %w", bm.Maximum(), limit, lancer.ErrCorrupt)
	}
	return bm, nil
}

// DecodeRoaring reads a portable 32-bit Roaring bitmap that fills data
// exactly.
func DecodeRoaring(data []byte) (bm *roaring.Bitmap, err error) {
	// roaring validates what it reads, but a decoder of untrusted bytes must
	// not bring the process down if it misses a case.
	defer func() {
		if r := recover(); r != nil {
			bm, err = nil, fmt.Errorf("roaring bitmap: %v: %w", r, lancer.ErrCorrupt)
		}
	}()
	bm = roaring.New()
	n, err := bm.ReadFrom(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("roaring bitmap: %v: %w", err, lancer.ErrCorrupt)
	}
	if n != int64(len(data)) {
		return nil, fmt.Errorf("roaring bitmap of %d bytes followed by %d more: %w", n, int64(len(data))-n, lancer.ErrCorrupt)
	}
	if err := bm.Validate(); err != nil {
		return nil, fmt.Errorf("roaring bitmap: %v: %w", err, lancer.ErrCorrupt)
	}
	return bm, nil
}

// decodeArrowDeletions reads an Arrow IPC file with one non-nullable uint32
// column named row_id (see deletion_ipc.go). Lance writes it with ZSTD body
// compression, storing small buffers raw (length prefix -1).
func decodeArrowDeletions(data []byte, physicalRows uint64) (*roaring.Bitmap, error) {
	bm := roaring.New()
	if err := readArrowRowIDs(data, physicalRows, bm.AddMany); err != nil {
		return nil, err
	}
	return bm, nil
}

// bitmapDeletionThreshold is the number of deleted rows from which a
// deletion file is a Roaring bitmap (.bin) rather than an Arrow file, as in
// Lance.
const bitmapDeletionThreshold = 5000

// deletionSchema is the schema of an Arrow deletion file, exactly as Lance
// compares it: one non-nullable uint32 column row_id, no metadata.
var deletionSchema = arrow.NewSchema([]arrow.Field{{Name: "row_id", Type: arrow.PrimitiveTypes.Uint32}}, nil)

// EncodeDeletionFile returns the bytes of a deletion file listing the
// offsets of dv, and its kind: an Arrow IPC file with ZSTD body compression
// below 5000 rows, else a portable Roaring bitmap (no run containers, which
// Lance's reader does not take).
func EncodeDeletionFile(dv *roaring.Bitmap) ([]byte, DeletionFileKind, error) {
	if dv.GetCardinality() >= bitmapDeletionThreshold {
		var buf bytes.Buffer
		bm := dv
		if bm.HasRunCompression() {
			bm = roaring.New()
			bm.AddMany(dv.ToArray())
		}
		if _, err := bm.WriteTo(&buf); err != nil {
			return nil, 0, err
		}
		return buf.Bytes(), DeletionBitmap, nil
	}
	mem := memory.NewGoAllocator()
	b := array.NewUint32Builder(mem)
	defer b.Release()
	b.AppendValues(dv.ToArray(), nil)
	arr := b.NewArray()
	defer arr.Release()
	rec := array.NewRecordBatch(deletionSchema, []arrow.Array{arr}, int64(arr.Len()))
	defer rec.Release()
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(deletionSchema), ipc.WithAllocator(mem), ipc.WithZstd())
	if err != nil {
		return nil, 0, err
	}
	if err := w.Write(rec); err != nil {
		return nil, 0, errors.Join(err, w.Close())
	}
	if err := w.Close(); err != nil {
		return nil, 0, err
	}
	return buf.Bytes(), DeletionArrow, nil
}
