package dataset

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/filter"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format/schema"
)

// Searches across versions. Every write makes a new version, and a server
// opens each new version as a new Dataset, so what a search computes for
// one version would start cold on the next: a prefiltered search would
// evaluate its filter on every fragment, and read the vectors of every
// unindexed fragment, again. Yet most fragments of a new version are the
// previous version's, unchanged. So the per-fragment parts of that work
// are kept in the Dataset's cache (OpenOptions.Cache, which a server
// shares across versions and tables), keyed by what determines them: the
// dataset root, the fragment as the manifest describes it (data files,
// deletion file, row id sequence; files are immutable and named uniquely)
// and the columns' definitions. A new version then only reads its new or
// changed fragments.

// versionKeys names what a version's searches keep in the cache: each
// fragment (fragmentKey), each lancer index segment's live rows
// (segmentKey) and the version as a whole. They are derived from the
// manifest alone, once per Dataset.
type versionKeys struct {
	frag map[*manifest.Fragment]string
	seg  map[string]string // by segment uuid
	// version names the manifest file and the fragments of this Dataset
	// (a view from withFragments has fewer than its manifest file).
	version string
}

// searchKeys returns the keys of this version, built by the first call.
func (d *Dataset) searchKeys() *versionKeys {
	d.keysOnce.Do(func() {
		k := &versionKeys{frag: make(map[*manifest.Fragment]string, len(d.manifest.Fragments)), seg: map[string]string{}}
		all := sha256.New()
		for _, f := range d.manifest.Fragments {
			fk := d.buildFragmentKey(f)
			k.frag[f] = fk
			all.Write([]byte(fk))
			all.Write([]byte{0})
		}
		k.version = fmt.Sprintf("%s %x", manifest.Location(d.store, d.manifestKey), all.Sum(nil))
		for _, seg := range d.manifest.Indices {
			if seg.TypeURL == manifest.VectorIndexTypeURL {
				k.seg[seg.UUID] = d.buildSegmentKey(seg, k.frag)
			}
		}
		d.keys = k
	})
	return d.keys
}

// fragmentKey identifies what a fragment holds in this version: its
// rows' values (the data files, which are immutable), which are deleted
// (the deletion file, named uniquely per write) and their row ids (row
// addresses from the fragment id, or the stable row id sequence), under
// the dataset root. The keys of a version's fragments are built once per
// Dataset (searchKeys).
func (d *Dataset) fragmentKey(f *manifest.Fragment) string {
	if k, ok := d.searchKeys().frag[f]; ok {
		return k
	}
	return d.buildFragmentKey(f) // not one of the manifest's (a view's copy)
}

func (d *Dataset) buildFragmentKey(f *manifest.Fragment) string {
	b := make([]byte, 0, 256)
	b = append(b, manifest.Location(d.store, "")...)
	b = append(b, "|frag "...)
	b = strconv.AppendUint(b, f.ID, 10)
	b = append(b, " rows "...)
	b = strconv.AppendUint(b, f.PhysicalRows, 10)
	b = append(b, " stable "...)
	b = strconv.AppendBool(b, d.manifest.StableRowIDs())
	for _, df := range f.Files {
		b = append(b, "|file "...)
		b = strconv.AppendQuote(b, df.Path)
		for _, id := range df.Fields {
			b = append(b, ' ')
			b = strconv.AppendInt(b, int64(id), 10)
		}
		b = append(b, " cols"...)
		for _, c := range df.ColumnIndices {
			b = append(b, ' ')
			b = strconv.AppendInt(b, int64(c), 10)
		}
		b = append(b, " v"...)
		b = strconv.AppendUint(b, uint64(df.MajorVersion), 10)
		b = append(b, '.')
		b = strconv.AppendUint(b, uint64(df.MinorVersion), 10)
		b = append(b, ' ')
		b = append(b, d.baseKey(df.BaseID)...)
	}
	if del := f.DeletionFile; del != nil {
		b = append(b, "|del "...)
		b = append(b, del.Key(f.ID)...)
		b = append(b, ' ')
		b = append(b, d.baseKey(del.BaseID)...)
	}
	if r := f.RowIDs; r != nil {
		if e := r.External; e != nil {
			b = fmt.Appendf(b, "|rowids %q %d %d", e.Path, e.Offset, e.Size)
		} else {
			b = fmt.Appendf(b, "|rowids %x", sha256.Sum256(r.Inline))
		}
	}
	// Overlays change the rows' values without changing any data file:
	// the same files with other overlays hold other values.
	for i := range f.Overlays {
		o := &f.Overlays[i]
		b = fmt.Appendf(b, "|overlay %q %v %v v%d.%d %s v%d", o.File.Path, o.File.Fields, o.File.ColumnIndices,
			o.File.MajorVersion, o.File.MinorVersion, d.baseKey(o.File.BaseID), o.CommittedVersion)
		if o.FieldOffsetBitmaps != nil {
			for _, bm := range o.FieldOffsetBitmaps {
				b = fmt.Appendf(b, " %x", sha256.Sum256(bm))
			}
		} else {
			b = fmt.Appendf(b, " shared %x", sha256.Sum256(o.SharedOffsetBitmap))
		}
	}
	return string(b)
}

// baseKey names a BasePath by its recorded path, since the id alone means
// nothing outside its manifest.
func (d *Dataset) baseKey(id *uint32) string {
	if id == nil {
		return "-"
	}
	for _, bp := range d.manifest.BasePaths {
		if bp.ID == *id {
			return fmt.Sprintf("%d:%t:%q", bp.ID, bp.IsDatasetRoot, bp.Path)
		}
	}
	return fmt.Sprintf("%d:?", *id)
}

// fieldsKey describes fields as reading and binding them depends on: ids,
// names, types, and their members.
func (d *Dataset) fieldsKey(b *strings.Builder, fields []*schema.Field) {
	for _, f := range fields {
		fmt.Fprintf(b, "(%d %d %q %s %s %t %d", f.ID, f.ParentID, f.Name, f.LogicalType, f.Type, f.Nullable, f.Blob)
		if f.Dictionary != nil {
			// A legacy dictionary may be stored in the manifest itself:
			// share nothing with other versions.
			fmt.Fprintf(b, " dict %d %d in %s", f.Dictionary.Offset, f.Dictionary.Length, manifest.Location(d.store, d.manifestKey))
		}
		d.fieldsKey(b, f.Children)
		b.WriteString(")")
	}
}

// prefilter is a search filter bound to the columns it reads.
type prefilter struct {
	proj  *projection
	bound *filter.Bound
	// key names the filter and what it reads, for the shared cache.
	key string
}

// preparePrefilter parses predicate and binds it to the columns it names
// (and the virtual columns it names), the only ones a prefilter reads.
func (d *Dataset) preparePrefilter(predicate string) (*prefilter, error) {
	expr, err := filter.Parse(predicate)
	if err != nil {
		return nil, fmt.Errorf("dataset: search: %w", err)
	}
	named, withRowID, withRowAddr := d.namedColumns(expr.Columns())
	proj, err := d.project(named, withRowID, withRowAddr)
	if err != nil {
		return nil, err
	}
	bound, err := expr.Bind(proj.arrow)
	if err != nil {
		return nil, fmt.Errorf("dataset: search: %w", err)
	}
	if bound.Type().ID() != arrow.BOOL {
		return nil, fmt.Errorf("dataset: search: filter %q is %s, not a predicate: %w", predicate, bound.Type(), lancer.ErrInvalidArgument)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "filter %q rowid %t rowaddr %t lineage %t %t ", predicate, proj.withRowID, proj.withRowAddr, proj.withUpdatedAt, proj.withCreatedAt)
	d.fieldsKey(&b, proj.schema.Fields)
	return &prefilter{proj: proj, bound: bound, key: b.String()}, nil
}

// filterFragment returns the row ids of fragment f's live rows that pf
// keeps, from the shared cache or evaluated. It reads only the columns the
// filter names and evaluates the filter once per batch.
func (d *Dataset) filterFragment(ctx context.Context, pf *prefilter, f *manifest.Fragment) (*roaring64.Bitmap, error) {
	return cached(ctx, d.opts.Cache, cacheSearch, pf.key+"|"+d.fragmentKey(f), func(ctx context.Context) (*roaring64.Bitmap, int64, error) {
		ids, err := d.evalFragmentFilter(ctx, pf, f)
		if err != nil {
			return nil, 0, err
		}
		// Not run-optimized: a filter such as "id % 10 != 3" makes
		// thousands of short runs, and the index probes the allow-list
		// for every candidate, which bitmap containers answer in constant
		// time.
		return ids, int64(ids.GetSizeInBytes()) + 256, nil
	})
}

func (d *Dataset) evalFragmentFilter(ctx context.Context, pf *prefilter, f *manifest.Fragment) (*roaring64.Bitmap, error) {
	fr, err := d.openFragment(ctx, pf.proj, f)
	if err != nil {
		return nil, err
	}
	defer fr.close()
	if d.manifest.StableRowIDs() && fr.rowIDs == nil {
		// _rowid values come from the sequence even when the filter does
		// not name _rowid.
		if fr.rowIDs, err = d.rowIDs(ctx, f, fr.physical); err != nil {
			return nil, err
		}
	}
	out := roaring64.New()
	mem := d.opts.Allocator
	var ids []uint64
	for start := uint64(0); start < fr.physical; start += defaultBatchSize {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		end := min(start+defaultBatchSize, fr.physical)
		runs, live := fr.liveRuns(start, end)
		if live == 0 {
			continue
		}
		rec, err := fr.readLive(ctx, mem, start, end, runs, live)
		if err != nil {
			return nil, err
		}
		mask, err := pf.bound.Eval(ctx, mem, rec)
		rec.Release()
		if err != nil {
			return nil, fmt.Errorf("dataset: search: %w", err)
		}
		keep := mask.(*array.Boolean)
		ids = ids[:0]
		i := 0
		for _, r := range runs {
			for off := r[0]; off < r[1]; off++ {
				if keep.IsValid(i) && keep.Value(i) {
					ids = append(ids, fr.rowIDValue(off))
				}
				i++
			}
		}
		mask.Release()
		out.AddMany(ids)
	}
	return out, nil
}

// flatFragment returns the finite, non-null vectors of column (dim wide)
// in fragment f with their row ids, from the shared cache or read.
func (d *Dataset) flatFragment(ctx context.Context, column, colKey string, dim int, f *manifest.Fragment) (*flatVectorSet, error) {
	return cached(ctx, d.opts.Cache, cacheSearch, colKey+"|"+d.fragmentKey(f), func(ctx context.Context) (*flatVectorSet, int64, error) {
		vecs, ids, err := d.readVectors(ctx, column, dim, []uint64{f.ID}, nil)
		if err != nil {
			return nil, 0, err
		}
		return &flatVectorSet{vecs: vecs, ids: ids}, int64(4*len(vecs)+8*len(ids)) + 256, nil
	})
}

// columnKey names a column and its definition for the shared cache.
func (d *Dataset) columnKey(column string, dim int) (string, error) {
	proj, err := d.project([]string{column}, false, false)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "vectors %q %d ", column, dim)
	d.fieldsKey(&b, proj.schema.Fields)
	return b.String(), nil
}

// segmentKey names the live rows of an index segment's fragments in this
// version: the segment and the fragments as they are now. The keys of a
// version's segments are built once per Dataset (searchKeys).
func (d *Dataset) segmentKey(seg manifest.IndexInfo) string {
	if k, ok := d.searchKeys().seg[seg.UUID]; ok {
		return k
	}
	return d.buildSegmentKey(seg, d.searchKeys().frag)
}

func (d *Dataset) buildSegmentKey(seg manifest.IndexInfo, fragKeys map[*manifest.Fragment]string) string {
	h := sha256.New()
	covered := map[uint64]bool{}
	for _, id := range seg.Fragments {
		covered[uint64(id)] = true
	}
	for _, f := range d.manifest.Fragments {
		if covered[f.ID] {
			h.Write([]byte(fragKeys[f]))
			h.Write([]byte{0})
		}
	}
	return fmt.Sprintf("live %s %s %x", manifest.Location(d.store, ""), seg.UUID, h.Sum(nil))
}
