// Package arrowutil holds small Arrow helpers several lancer layers need.
// It knows nothing of files or datasets.
package arrowutil

import (
	"context"
	"fmt"
	"iter"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
)

// ConcatTake joins pieces (of one type) into one array and, when indices
// is not nil, returns its rows in the order indices gives (repeats
// allowed). The pieces stay owned by the caller; the result is the caller's
// to release. Joining can fail only on Arrow's size limits (more than 2 GiB
// of utf8 in one array, say): that is an error wrapping
// lancer.ErrUnsupported, to be avoided by reading fewer rows at once.
func ConcatTake(ctx context.Context, mem memory.Allocator, pieces []arrow.Array, indices []int64) (arrow.Array, error) {
	var joined arrow.Array
	switch len(pieces) {
	case 0:
		return nil, fmt.Errorf("arrowutil: nothing to join: %w", lancer.ErrInvalidArgument)
	case 1:
		joined = pieces[0]
		joined.Retain()
	default:
		var err error
		if joined, err = array.Concatenate(pieces, mem); err != nil {
			return nil, fmt.Errorf("joining %d arrays of %s: %v: %w", len(pieces), pieces[0].DataType(), err, lancer.ErrUnsupported)
		}
	}
	if indices == nil {
		return joined, nil
	}
	defer joined.Release()
	for _, i := range indices {
		if i < 0 || i >= int64(joined.Len()) {
			return nil, fmt.Errorf("arrowutil: index %d outside %d rows: %w", i, joined.Len(), lancer.ErrInvalidArgument)
		}
	}
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.AppendValues(indices, nil)
	idx := b.NewArray()
	defer idx.Release()
	taken, err := compute.TakeArray(compute.WithAllocator(ctx, mem), joined, idx)
	if err != nil {
		return nil, fmt.Errorf("reordering %d rows of %s: %v: %w", len(indices), joined.DataType(), err, lancer.ErrUnsupported)
	}
	return taken, nil
}

// ReaderOptions configures ReaderFromIter. A nil pointer gives the
// defaults.
type ReaderOptions struct {
	// Borrowed says that batches yields batches it keeps owning, valid
	// only until its next iteration (as dataset's Batches yield them):
	// the reader retains each for its caller, as arrow's reader releases
	// each batch on the next Next. Default false: batches hands each
	// batch it yields over to the reader.
	Borrowed bool
	// Cleanup, if not nil, runs once on the reader's final Release,
	// after the iterator has stopped. Arrow's reader stops an iterator
	// that was never started without running any of its code, so what
	// was opened before the iterator (a file, a first part) must be
	// closed here rather than by the iterator's defers. Default nil.
	Cleanup func()
}

// ReaderFromIter is arrow's array.ReaderFromIter over batches, with what
// opts adds: borrowed batches retained, a cleanup on the final Release.
// The iterator is where a ctx lives: a closure of the function that takes
// it, never a field.
func ReaderFromIter(schema *arrow.Schema, batches iter.Seq2[arrow.RecordBatch, error], opts *ReaderOptions) array.RecordReader {
	var o ReaderOptions
	if opts != nil {
		o = *opts
	}
	if o.Borrowed {
		borrowed := batches
		batches = func(yield func(arrow.RecordBatch, error) bool) {
			for rec, err := range borrowed {
				if rec != nil {
					rec.Retain()
				}
				if !yield(rec, err) {
					return
				}
			}
		}
	}
	r := &cleanupReader{RecordReader: array.ReaderFromIter(schema, batches), cleanup: o.Cleanup}
	r.refs.Add(1)
	return r
}

type cleanupReader struct {
	array.RecordReader
	refs    atomic.Int64
	cleanup func()
}

func (r *cleanupReader) Retain() { r.refs.Add(1) }

func (r *cleanupReader) Release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	// Stopping the iterator first runs its defers before what it reads
	// from is closed.
	r.RecordReader.Release()
	if r.cleanup != nil {
		r.cleanup()
	}
}
