package dataset

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// Names of the virtual columns scans and takes can add.
const (
	// RowIDColumn is the row id column: the stable row id when the dataset
	// has stable row ids, else the row address.
	RowIDColumn = "_rowid"
	// RowAddressColumn is the row address column: fragment id << 32 | row
	// offset in the fragment.
	RowAddressColumn = "_rowaddr"
	// RowLastUpdatedAtVersionColumn is Lance's row lineage column: the
	// version that last wrote the row (uint64). Datasets with stable row
	// ids record it per row (DataFragment.last_updated_at_version_meta);
	// a fragment that records none reads as version 1, as in Lance.
	RowLastUpdatedAtVersionColumn = "_row_last_updated_at_version"
	// RowCreatedAtVersionColumn is the version that created the row
	// (uint64; an update keeps it), from created_at_version_meta, 1 where
	// a fragment records none.
	RowCreatedAtVersionColumn = "_row_created_at_version"
)

// isLineageColumn says whether name is one of the row lineage columns.
func isLineageColumn(name string) bool {
	return name == RowLastUpdatedAtVersionColumn || name == RowCreatedAtVersionColumn
}

// projection is what a scan or take produces: some fields of the schema and
// maybe the virtual columns.
type projection struct {
	schema      *schema.Schema // the projected (possibly pruned) fields
	arrow       *arrow.Schema  // the output schema
	withRowID   bool
	withRowAddr bool
	// withUpdatedAt and withCreatedAt add the lineage columns (after
	// _rowid and _rowaddr, in Lance's order).
	withUpdatedAt, withCreatedAt bool
}

// project resolves column paths (nil = every field; "_rowid", "_rowaddr"
// and the lineage columns may be named too) into a projection.
func (d *Dataset) project(columns []string, withRowID, withRowAddr bool) (*projection, error) {
	p := &projection{schema: d.manifest.Schema, withRowID: withRowID, withRowAddr: withRowAddr}
	if columns != nil {
		var paths []string
		for _, c := range columns {
			switch {
			case c == RowIDColumn && d.manifest.Schema.Field(c) == nil:
				p.withRowID = true
			case c == RowAddressColumn && d.manifest.Schema.Field(c) == nil:
				p.withRowAddr = true
			case c == RowLastUpdatedAtVersionColumn && d.manifest.Schema.Field(c) == nil:
				p.withUpdatedAt = true
			case c == RowCreatedAtVersionColumn && d.manifest.Schema.Field(c) == nil:
				p.withCreatedAt = true
			default:
				paths = append(paths, c)
			}
		}
		s, err := d.manifest.Schema.Project(paths)
		if err != nil {
			return nil, fmt.Errorf("dataset: version %d: %w", d.manifest.Version, err)
		}
		p.schema = s
	}
	fields := make([]arrow.Field, 0, len(p.schema.Fields)+4)
	for _, f := range p.schema.Fields {
		fields = append(fields, f.ArrowField())
	}
	if p.withRowID {
		fields = append(fields, arrow.Field{Name: RowIDColumn, Type: arrow.PrimitiveTypes.Uint64, Nullable: true})
	}
	if p.withRowAddr {
		fields = append(fields, arrow.Field{Name: RowAddressColumn, Type: arrow.PrimitiveTypes.Uint64, Nullable: true})
	}
	if p.withUpdatedAt {
		fields = append(fields, arrow.Field{Name: RowLastUpdatedAtVersionColumn, Type: arrow.PrimitiveTypes.Uint64, Nullable: true})
	}
	if p.withCreatedAt {
		fields = append(fields, arrow.Field{Name: RowCreatedAtVersionColumn, Type: arrow.PrimitiveTypes.Uint64, Nullable: true})
	}
	md := d.manifest.Schema.Arrow().Metadata()
	p.arrow = arrow.NewSchema(fields, &md)
	return p, nil
}

// fileRead is one data file's share of reading a projection from a
// fragment.
type fileRead struct {
	file   *manifest.DataFile
	fields []*schema.Field // the projected top-level fields it holds, in output order
	out    []int           // their positions among the projected fields
	reader *format.Reader
	cursor *format.Cursor
}

// fragmentReader reads the projected fields of one fragment: one cursor per
// data file involved, and the fragment's deletions and row ids.
type fragmentReader struct {
	d        *Dataset
	proj     *projection
	frag     *manifest.Fragment
	physical uint64
	dv       *deletionVector
	files    []*fileRead
	rowIDs   *manifest.RowIDSequence // with withRowID on a dataset with stable row ids
	// updatedAt and createdAt are the rows' lineage versions by physical
	// offset, when the projection asks for them.
	updatedAt, createdAt *manifest.VersionSequence
	// overlays supply newer values of some cells (flag 64); nil when
	// none covers a projected field.
	overlays *fragmentOverlays
}

// planFragment assigns each projected top-level field to the data file that
// holds it. A field no file holds reads as nulls (a column added after the
// fragment was written). A top-level field whose members are spread over
// several data files (possible after adding a member to a struct) is refused
// with lancer.ErrUnsupported: reading it would mean merging struct arrays
// from different files.
//
// A field id listed by two data files of the fragment is read from the
// first of them, as Lance reads it: Lance 0.10 reused the ids of dropped
// columns for added ones (Lance's test dataset v0.10.5/corrupt_schema), so
// such a fragment holds the dropped column's file first and the added
// column's after it, and every Lance since reads the dropped column's values
// until its next commit renumbers the added fields (fixDuplicateFieldIDs).
func planFragment(sch *schema.Schema, f *manifest.Fragment) ([]*fileRead, error) {
	var files []*fileRead
	byFile := map[int]*fileRead{}
	holder := map[int32]int{} // field id → index in f.Files
	for i := range f.Files {
		for _, id := range f.Files[i].Fields {
			if id == manifest.Tombstone || id < 0 {
				continue
			}
			if _, dup := holder[id]; !dup {
				holder[id] = i
			}
		}
	}
	for out, field := range sch.Fields {
		fileIdx := -1
		var clash error
		field.Walk(func(c *schema.Field) {
			i, ok := holder[c.ID]
			switch {
			case !ok || clash != nil:
			case fileIdx < 0:
				fileIdx = i
			case i != fileIdx:
				clash = fmt.Errorf("column %q is spread over data files %s and %s; lancer reads a top-level field from one file only: %w",
					field.Name, f.Files[fileIdx].Path, f.Files[i].Path, lancer.ErrUnsupported)
			}
		})
		if clash != nil {
			return nil, clash
		}
		if fileIdx < 0 {
			continue
		}
		fr, ok := byFile[fileIdx]
		if !ok {
			fr = &fileRead{file: &f.Files[fileIdx]}
			byFile[fileIdx] = fr
			files = append(files, fr)
		}
		fr.fields = append(fr.fields, field)
		fr.out = append(fr.out, out)
	}
	return files, nil
}

// columnMap returns the data file's field id → physical column mapping.
// Legacy files have no column indices: their columns are named by field id.
func columnMap(df *manifest.DataFile) func(int32) (int, bool) {
	if df.IsLegacy() && len(df.ColumnIndices) == 0 {
		return func(id int32) (int, bool) { return int(id), true }
	}
	cols := make(map[int32]int, len(df.Fields))
	for i, id := range df.Fields {
		if id >= 0 && df.ColumnIndices[i] >= 0 {
			cols[id] = int(df.ColumnIndices[i])
		}
	}
	return func(id int32) (int, bool) {
		c, ok := cols[id]
		return c, ok
	}
}

// legacyFileIDs returns fields with the ids the legacy data file df uses
// for them. Lance keys a legacy file's page table by the manifest's ids,
// its first row being the field df lists first (FileFragment's
// field_id_offset), not by the ids in the file's own schema: a file that
// Lance's schema repair (fixDuplicateFieldIDs) renumbered lists ids 4 and
// 5 while its own schema says 2 and 3. The page table's rows are the
// file's ids from its smallest one, so a manifest id maps to
// id − df.Fields[0] + that smallest id. Files whose first listed id is
// their smallest one, every file but such repaired ones, keep their ids.
func legacyFileIDs(fields []*schema.Field, df *manifest.DataFile, file *schema.Schema) []*schema.Field {
	if len(df.Fields) == 0 || len(df.ColumnIndices) > 0 {
		return fields // columns named by column indices (columnMap), not by id
	}
	fileMin := int32(-1)
	file.Walk(func(f *schema.Field) {
		if fileMin < 0 || f.ID < fileMin {
			fileMin = f.ID
		}
	})
	shift := df.Fields[0] - fileMin
	if fileMin < 0 || shift == 0 {
		return fields
	}
	var renumber func(f *schema.Field) *schema.Field
	renumber = func(f *schema.Field) *schema.Field {
		cp := *f
		cp.ID -= shift
		if cp.ParentID >= 0 {
			cp.ParentID -= shift
		}
		cp.Children = make([]*schema.Field, len(f.Children))
		for i, c := range f.Children {
			cp.Children[i] = renumber(c)
		}
		return &cp
	}
	out := make([]*schema.Field, len(fields))
	for i, f := range fields {
		out[i] = renumber(f)
	}
	return out
}

// withFileDictionaries returns copies of fields whose legacy dictionary
// locations come from the data file's own schema: in legacy datasets the
// manifest's locations point into the manifest file, not the data file.
func withFileDictionaries(fields []*schema.Field, file *schema.Schema) []*schema.Field {
	var fix func(f *schema.Field) *schema.Field
	fix = func(f *schema.Field) *schema.Field {
		cp := *f
		if ff := file.FieldByID(f.ID); ff != nil {
			cp.Dictionary = ff.Dictionary
		}
		cp.Children = make([]*schema.Field, len(f.Children))
		for i, c := range f.Children {
			cp.Children[i] = fix(c)
		}
		return &cp
	}
	out := make([]*schema.Field, len(fields))
	for i, f := range fields {
		out[i] = fix(f)
	}
	return out
}

// openFragment prepares reading proj from fragment f: opens the data files
// it needs, loads its deletions and, when asked, its stable row ids.
func (d *Dataset) openFragment(ctx context.Context, proj *projection, f *manifest.Fragment) (*fragmentReader, error) {
	fr := &fragmentReader{d: d, proj: proj, frag: f}
	var err error
	if fr.physical, err = d.physicalRows(ctx, f); err != nil {
		return nil, err
	}
	if fr.dv, err = d.deletionVector(ctx, f); err != nil {
		return nil, err
	}
	if proj.withRowID && d.manifest.StableRowIDs() {
		if fr.rowIDs, err = d.rowIDs(ctx, f, fr.physical); err != nil {
			return nil, err
		}
	}
	if proj.withUpdatedAt {
		if fr.updatedAt, err = d.lineage(ctx, f.ID, f.LastUpdatedAtVersions, fr.physical); err != nil {
			return nil, err
		}
	}
	if proj.withCreatedAt {
		if fr.createdAt, err = d.lineage(ctx, f.ID, f.CreatedAtVersions, fr.physical); err != nil {
			return nil, err
		}
	}
	if fr.files, err = planFragment(proj.schema, f); err != nil {
		return nil, fmt.Errorf("dataset: version %d fragment %d: %w", d.manifest.Version, f.ID, err)
	}
	for _, file := range fr.files {
		if err := fr.openFile(ctx, file); err != nil {
			fr.close()
			return nil, err
		}
	}
	if fr.overlays, err = d.openOverlays(ctx, proj, f, fr.physical); err != nil {
		fr.close()
		return nil, err
	}
	return fr, nil
}

func (fr *fragmentReader) openFile(ctx context.Context, file *fileRead) error {
	r, err := fr.d.openDataFile(ctx, file.file)
	if err != nil {
		return err
	}
	if r.NumRows() != fr.physical {
		return fmt.Errorf("dataset: fragment %d: data file %s holds %d rows, the fragment %d: %w",
			fr.frag.ID, file.file.Path, r.NumRows(), fr.physical, lancer.ErrCorrupt)
	}
	fields := file.fields
	if r.Version().IsLegacy() {
		fields = withFileDictionaries(legacyFileIDs(fields, file.file, r.Schema()), r.Schema())
	}
	c, err := r.NewCursor(format.Projection{Fields: fields, Column: columnMap(file.file)})
	if err != nil {
		return fmt.Errorf("dataset: fragment %d: %w", fr.frag.ID, err)
	}
	file.reader, file.cursor = r, c
	return nil
}

// close releases the cursors.
func (fr *fragmentReader) close() {
	fr.overlays.close()
	fr.overlays = nil
	for _, file := range fr.files {
		if file.cursor != nil {
			file.cursor.Close()
			file.cursor = nil
		}
	}
}

// gather runs read on every data file and places the arrays by output
// position: one array of n rows per projected field, nil where no file holds
// the field. On error nothing is left allocated.
func (fr *fragmentReader) gather(n int, read func(c *format.Cursor) ([]arrow.Array, error)) ([]arrow.Array, error) {
	cols := make([]arrow.Array, len(fr.proj.schema.Fields))
	for _, file := range fr.files {
		arrs, err := read(file.cursor)
		if err != nil {
			releaseArrays(cols)
			return nil, fmt.Errorf("dataset: fragment %d: %w", fr.frag.ID, err)
		}
		if len(arrs) != len(file.fields) {
			releaseArrays(cols)
			releaseArrays(arrs)
			return nil, fmt.Errorf("dataset: fragment %d: data file %s returned %d columns for %d fields: %w",
				fr.frag.ID, file.file.Path, len(arrs), len(file.fields), lancer.ErrCorrupt)
		}
		for j, a := range arrs {
			cols[file.out[j]] = a
		}
		for j, a := range arrs {
			want := fr.proj.arrow.Field(file.out[j]).Type
			if a.Len() != n || !arrow.TypeEqual(a.DataType(), want) {
				releaseArrays(cols)
				return nil, fmt.Errorf("dataset: fragment %d: data file %s returned %d rows of %s for column %q, want %d of %s: %w",
					fr.frag.ID, file.file.Path, a.Len(), a.DataType(), file.fields[j].Name, n, want, lancer.ErrCorrupt)
			}
		}
	}
	return cols, nil
}

// readRange returns rows [start, end) of the fragment (deleted ones
// included), one array per projected field, nil for fields no file holds.
func (fr *fragmentReader) readRange(ctx context.Context, start, end uint64) ([]arrow.Array, error) {
	cols, err := fr.gather(int(end-start), func(c *format.Cursor) ([]arrow.Array, error) {
		return c.ReadRange(ctx, start, end)
	})
	if err != nil || fr.overlays == nil {
		return cols, err
	}
	return fr.overlays.apply(ctx, fr.d.opts.Allocator, fr.proj, fr.frag.ID, cols, int(end-start), func(i int) uint64 { return start + uint64(i) })
}

// take returns the given rows of the fragment, in the given order.
func (fr *fragmentReader) take(ctx context.Context, rows []uint64) ([]arrow.Array, error) {
	cols, err := fr.gather(len(rows), func(c *format.Cursor) ([]arrow.Array, error) {
		return c.Take(ctx, rows)
	})
	if err != nil || fr.overlays == nil {
		return cols, err
	}
	return fr.overlays.apply(ctx, fr.d.opts.Allocator, fr.proj, fr.frag.ID, cols, len(rows), func(i int) uint64 { return rows[i] })
}

// fillNulls replaces the nil entries of cols (fields no data file holds)
// with all-null arrays of n rows.
func fillNulls(mem memory.Allocator, schema *arrow.Schema, cols []arrow.Array, n int) {
	for i, c := range cols {
		if c == nil {
			cols[i] = array.MakeArrayOfNull(mem, schema.Field(i).Type, n)
		}
	}
}

// rowIDValue returns the _rowid of the fragment's row at offset.
func (fr *fragmentReader) rowIDValue(offset uint64) uint64 {
	if fr.rowIDs != nil {
		return fr.rowIDs.At(offset)
	}
	return fr.frag.ID<<32 | offset
}

// appendVirtual appends the _rowid, _rowaddr and lineage columns for the
// fragment rows at offsets, as the projection asks.
func (fr *fragmentReader) appendVirtual(mem memory.Allocator, cols []arrow.Array, offsets func(yield func(uint64))) []arrow.Array {
	build := func(value func(uint64) uint64) arrow.Array {
		b := array.NewUint64Builder(mem)
		defer b.Release()
		offsets(func(off uint64) { b.Append(value(off)) })
		return b.NewArray()
	}
	if fr.proj.withRowID {
		cols = append(cols, build(fr.rowIDValue))
	}
	if fr.proj.withRowAddr {
		cols = append(cols, build(func(off uint64) uint64 { return fr.frag.ID<<32 | off }))
	}
	if fr.proj.withUpdatedAt {
		cols = append(cols, build(func(off uint64) uint64 { return fr.updatedAt.At(off) }))
	}
	if fr.proj.withCreatedAt {
		cols = append(cols, build(func(off uint64) uint64 { return fr.createdAt.At(off) }))
	}
	return cols
}

func releaseArrays(arrs []arrow.Array) {
	for _, a := range arrs {
		if a != nil {
			a.Release()
		}
	}
}
