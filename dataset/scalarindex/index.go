package scalarindex

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/filter"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// Kind is the kind of a scalar index.
type Kind uint8

const (
	// BTree is Lance's BTREE index: page_lookup.lance and page_data.lance.
	BTree Kind = iota + 1
	// Bitmap is Lance's BITMAP index: bitmap_page_lookup.lance.
	Bitmap
	// LabelList is Lance's LABEL_LIST index on a list column: a bitmap
	// index of the lists' items, in bitmap_page_lookup.lance.
	LabelList
)

// String returns the kind as Lance names it ("BTREE", ...).
func (k Kind) String() string {
	switch k {
	case BTree:
		return "BTREE"
	case Bitmap:
		return "BITMAP"
	case LabelList:
		return "LABEL_LIST"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// KindOf returns the kind of an index segment from the type URL of its
// details ("/lance.table.BTreeIndexDetails", ...); ok false for any other
// index.
func KindOf(typeURL string) (Kind, bool) {
	switch {
	case strings.HasSuffix(typeURL, ".BTreeIndexDetails"):
		return BTree, true
	case strings.HasSuffix(typeURL, ".BitmapIndexDetails"):
		return Bitmap, true
	case strings.HasSuffix(typeURL, ".LabelListIndexDetails"):
		return LabelList, true
	}
	return 0, false
}

// File names in an index directory.
const (
	BTreeLookupFile = "page_lookup.lance"
	BTreePagesFile  = "page_data.lance"
	BitmapFile      = "bitmap_page_lookup.lance"
)

// OpenOptions configures Open. The zero value (or nil) is valid.
type OpenOptions struct {
	// Allocator allocates the Arrow arrays read. Default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
	// Sizes are the files' sizes when the manifest records them (file
	// name → bytes); a missing one is asked of the store.
	Sizes map[string]int64
}

// Index is an opened scalar index segment. It is immutable and safe for
// concurrent use; each Search reads what it needs with cursors of its own.
type Index interface {
	// Kind is the index kind.
	Kind() Kind
	// ValueType is the type of the indexed values (a label list's item
	// type).
	ValueType() arrow.DataType
	// Supports reports whether Search answers t: the op suits the index
	// kind (IndexEq, IndexRange, IndexIsNull for BTREE and BITMAP,
	// IndexHasAny and IndexHasAll for LABEL_LIST) and t's values have the
	// index's value domain.
	Supports(t *filter.IndexTerm) bool
	// Search returns the row ids (or row addresses, as the dataset's
	// indices hold them) the index records for rows satisfying t: exactly
	// those, for the rows it indexes (invariant 1). A term it does not
	// support is an error wrapping lancer.ErrUnsupported; malformed index
	// files lancer.ErrCorrupt, naming the file.
	Search(ctx context.Context, t *filter.IndexTerm) (*RowSet, error)
	// ResidentBytes is about how many bytes the opened index holds.
	ResidentBytes() int64
}

// Open opens the index segment of the given kind whose files are in dir
// of store ("_indices/<uuid>"). It reads what every search needs (a
// BTREE's page lookup, a BITMAP's keys); Search reads the rest.
func Open(ctx context.Context, store blob.Store, dir string, kind Kind, opts *OpenOptions) (Index, error) {
	if opts == nil {
		opts = &OpenOptions{}
	}
	if opts.Allocator == nil {
		opts = &OpenOptions{Allocator: memory.DefaultAllocator, Sizes: opts.Sizes}
	}
	switch kind {
	case BTree:
		return openBTree(ctx, store, dir, opts)
	case Bitmap, LabelList:
		return openBitmap(ctx, store, dir, kind, opts)
	}
	return nil, fmt.Errorf("scalarindex: %s: index kind %v: %w", dir, kind, lancer.ErrUnsupported)
}

// openFile opens one index file.
func openFile(ctx context.Context, store blob.Store, dir, name string, opts *OpenOptions) (*format.Reader, string, error) {
	key := dir + "/" + name
	r, err := format.Open(ctx, store, key, &format.OpenOptions{Size: opts.Sizes[name], Allocator: opts.Allocator})
	if err != nil {
		return nil, key, fmt.Errorf("scalarindex: %w", err)
	}
	return r, key, nil
}

// columns returns the named top-level fields of a file, in order, or an
// error naming the file when one is missing.
func columns(r *format.Reader, key string, names ...string) ([]*schema.Field, error) {
	out := make([]*schema.Field, len(names))
	for i, name := range names {
		for _, f := range r.Schema().Fields {
			if f.Name == name {
				out[i] = f
				break
			}
		}
		if out[i] == nil {
			return nil, corruptf(key, "no column %q", name)
		}
	}
	return out, nil
}

func corruptf(key, format string, args ...any) error {
	return fmt.Errorf("scalarindex: %s: %s: %w", key, fmt.Sprintf(format, args...), lancer.ErrCorrupt)
}

// termKeys returns the keys of values; ok false if one is null or of no
// kind.
func termKeys(vs []scalar.Scalar) ([]key, bool) {
	out := make([]key, 0, len(vs))
	for _, v := range vs {
		kv, ok := scalarKey(v)
		if !ok {
			return nil, false
		}
		out = append(out, kv)
	}
	return out, true
}

// keyRange is a term's range in keys: lo and hi nil for no bound.
type keyRange struct {
	lo, hi       *key
	loInc, hiInc bool
}

func termRange(t *filter.IndexTerm) (keyRange, bool) {
	var r keyRange
	if t.Lo != nil {
		k, ok := scalarKey(t.Lo.Value)
		if !ok {
			return r, false
		}
		r.lo, r.loInc = &k, t.Lo.Inclusive
	}
	if t.Hi != nil {
		k, ok := scalarKey(t.Hi.Value)
		if !ok {
			return r, false
		}
		r.hi, r.hiInc = &k, t.Hi.Inclusive
	}
	return r, true
}

// holds reports whether v lies in the range.
func (r keyRange) holds(k keyKind, v key) bool {
	if r.lo != nil {
		c := compareKeys(k, v, *r.lo)
		if c < 0 || c == 0 && !r.loInc {
			return false
		}
	}
	if r.hi != nil {
		c := compareKeys(k, v, *r.hi)
		if c > 0 || c == 0 && !r.hiInc {
			return false
		}
	}
	return true
}

// termInDomain checks that t's values (and bounds) are of the domain of
// valueType.
func termInDomain(valueType arrow.DataType, t *filter.IndexTerm) bool {
	for _, v := range t.Values {
		if v == nil || !v.IsValid() || !sameDomain(valueType, v.DataType()) {
			return false
		}
	}
	for _, b := range []*filter.IndexBound{t.Lo, t.Hi} {
		if b != nil && (b.Value == nil || !b.Value.IsValid() || !sameDomain(valueType, b.Value.DataType())) {
			return false
		}
	}
	return true
}
