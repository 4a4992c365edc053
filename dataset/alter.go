package dataset

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/float16"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format/schema"
)

// DropColumns removes columns from the schema and returns the new version.
// A path names a top-level column ("vec") or a member of a struct column
// ("meta.source"). Like Lance's drop_columns it is a metadata change (a
// Project transaction): no data is rewritten, data files that hold none of
// the remaining fields leave the fragments, and indices on dropped columns
// are dropped. Field ids are never reused. Dropping every column, or every
// member of a struct, is an error wrapping lancer.ErrInvalidArgument; an
// unknown path one wrapping lancer.ErrNotFound. opts configure the commit
// (nil: the defaults).
func (d *Dataset) DropColumns(ctx context.Context, columns []string, opts *CommitOptions) (*Dataset, error) {
	if len(columns) == 0 {
		return nil, fmt.Errorf("dataset: drop columns: no column named: %w", lancer.ErrInvalidArgument)
	}
	paths := slices.Clone(columns)
	return d.alter(ctx, opts, func(m *manifest.Manifest) ([]*schema.Field, error) { return dropFields(m, paths) })
}

// RenameColumn renames the column at path (a top-level column or a member
// of a struct column, "meta.source") to newName and returns the new version.
// Like Lance's alter_columns it only changes the schema (a Project
// transaction); indices follow the column. newName must be non-empty,
// without dots, and unused among the column's siblings. opts configure
// the commit (nil: the defaults).
func (d *Dataset) RenameColumn(ctx context.Context, path, newName string, opts *CommitOptions) (*Dataset, error) {
	return d.alter(ctx, opts, func(m *manifest.Manifest) ([]*schema.Field, error) { return renameField(m, path, newName) })
}

// alter commits the Project operation whose schema project derives from a
// manifest.
func (d *Dataset) alter(ctx context.Context, opts *CommitOptions, project func(m *manifest.Manifest) ([]*schema.Field, error)) (*Dataset, error) {
	d = d.using(opts)
	if err := d.checkWritable(); err != nil {
		return nil, err
	}
	fields, err := project(d.manifest)
	if err != nil {
		return nil, err
	}
	return d.commit(ctx, &operation{kind: opProject, fields: fields, project: project}, opts)
}

// resolveColumn finds the field at path: a top-level name (which may itself
// contain dots) or dotted names through struct columns. parent is the
// enclosing struct, nil for a top-level field.
func resolveColumn(s *schema.Schema, path string) (f, parent *schema.Field, err error) {
	if f := s.Field(path); f != nil {
		return f, nil, nil
	}
	parts := strings.Split(path, ".")
	cur := s.Field(parts[0])
	if cur == nil {
		return nil, nil, fmt.Errorf("dataset: no column %q: %w", path, lancer.ErrNotFound)
	}
	for _, name := range parts[1:] {
		if cur.LogicalType != "struct" || cur.Blob != schema.NotBlob ||
			cur.Metadata[schema.MetaPacked] == "true" || cur.Metadata["packed"] == "true" {
			return nil, nil, fmt.Errorf("dataset: column %q: %q is not a struct whose members are columns: %w", path, cur.Name, lancer.ErrInvalidArgument)
		}
		var next *schema.Field
		for _, c := range cur.Children {
			if c.Name == name {
				next = c
				break
			}
		}
		if next == nil {
			return nil, nil, fmt.Errorf("dataset: no column %q: %w", path, lancer.ErrNotFound)
		}
		parent, cur = cur, next
	}
	return cur, parent, nil
}

// cloneFields copies the manifest's recorded fields, what lancer does not
// know of them kept.
func cloneFields(m *manifest.Manifest) []*schema.Field {
	out := make([]*schema.Field, len(m.Fields()))
	for i, f := range m.Fields() {
		out[i] = f.Clone()
	}
	return out
}

// dropFields returns m's fields without those at paths and their
// descendants.
func dropFields(m *manifest.Manifest, paths []string) ([]*schema.Field, error) {
	drop := map[int32]bool{}
	for _, p := range paths {
		f, _, err := resolveColumn(m.Schema, p)
		if err != nil {
			return nil, fmt.Errorf("dataset: drop columns: %w", err)
		}
		f.Walk(func(c *schema.Field) { drop[c.ID] = true })
	}
	left := 0
	for _, f := range m.Schema.Fields {
		if !drop[f.ID] {
			left++
		}
	}
	if left == 0 {
		return nil, fmt.Errorf("dataset: drop columns %q: a dataset needs at least one column: %w", paths, lancer.ErrInvalidArgument)
	}
	var emptied error
	m.Schema.Walk(func(f *schema.Field) {
		if drop[f.ID] || len(f.Children) == 0 || emptied != nil {
			return
		}
		if !slices.ContainsFunc(f.Children, func(c *schema.Field) bool { return !drop[c.ID] }) {
			emptied = fmt.Errorf("dataset: drop columns %q: struct %q would have no members: %w", paths, f.Name, lancer.ErrInvalidArgument)
		}
	})
	if emptied != nil {
		return nil, emptied
	}
	var out []*schema.Field
	for _, f := range cloneFields(m) {
		if !drop[f.ID] {
			out = append(out, f)
		}
	}
	return out, nil
}

// renameField returns m's fields with the field at path named newName.
func renameField(m *manifest.Manifest, path, newName string) ([]*schema.Field, error) {
	f, parent, err := resolveColumn(m.Schema, path)
	if err != nil {
		return nil, fmt.Errorf("dataset: rename column: %w", err)
	}
	if newName == "" || strings.Contains(newName, ".") {
		return nil, fmt.Errorf("dataset: rename column %q to %q: the name must be non-empty and without dots: %w", path, newName, lancer.ErrInvalidArgument)
	}
	siblings := m.Schema.Fields
	if parent != nil {
		siblings = parent.Children
	} else if reservedColumns[newName] {
		return nil, fmt.Errorf("dataset: rename column %q: %q is reserved: %w", path, newName, lancer.ErrInvalidArgument)
	}
	for _, s := range siblings {
		if s != f && s.Name == newName {
			return nil, fmt.Errorf("dataset: rename column %q to %q: the name is taken: %w", path, newName, lancer.ErrInvalidArgument)
		}
	}
	out := cloneFields(m)
	for _, pf := range out {
		if pf.ID == f.ID {
			pf.Name = newName
		}
	}
	return out, nil
}

// ColumnAlteration is one change of AlterColumns.
type ColumnAlteration struct {
	// Path names the column: a top-level name or "struct.member".
	Path string
	// Rename, when not "", is the column's new name (see RenameColumn).
	Rename string
	// Nullable, when set, is the column's new nullability. Making a column
	// non-nullable checks that it holds no null (Lance does the same).
	Nullable *bool
	// DataType, when not nil, is the column's new type. Lance's casts are
	// allowed: integer to integer, float to float, string to string,
	// binary to binary, temporal to temporal, decimal to decimal, and
	// lists (also fixed-size ones, such as vectors to float16) whose items
	// cast so; a value that does not fit is an error. Only top-level
	// columns are cast.
	DataType arrow.DataType
}

// AlterColumns renames columns, changes their nullability and casts them
// to other types in one commit, and returns the new version, as Lance's
// alter_columns. Without a cast it is a Project (the schema alone
// changes), even when nothing changes, as in Lance, where every call
// makes a version. A cast rewrites the column: every fragment gets a data
// file with the cast values under a new field id, at the column's place in
// the schema, committed as a Merge; indices on the column are dropped
// (they indexed the old values), and data files left holding no column
// leave the fragments.
//
// An unknown path is an error wrapping lancer.ErrNotFound; a cast Lance
// does not allow, a value that does not fit the new type, or a null in a
// column made non-nullable one wrapping lancer.ErrInvalidArgument. opts
// configure the commit (nil: the defaults).
func (d *Dataset) AlterColumns(ctx context.Context, alts []ColumnAlteration, opts *CommitOptions) (*Dataset, error) {
	d = d.using(opts)
	if err := d.checkWritable(); err != nil {
		return nil, err
	}
	if len(alts) == 0 {
		return nil, fmt.Errorf("dataset: alter columns: no alteration given: %w", lancer.ErrInvalidArgument)
	}
	m := d.manifest
	fields := cloneFields(m)
	byID := map[int32]*schema.Field{}
	for _, f := range fields {
		byID[f.ID] = f
	}
	type cast struct {
		old  *schema.Field // in m.Schema
		to   arrow.Field
		into *schema.Field // the new field, once ids are given
	}
	var casts []*cast
	for _, a := range alts {
		f, parent, err := resolveColumn(m.Schema, a.Path)
		if err != nil {
			return nil, fmt.Errorf("dataset: alter columns: %w", err)
		}
		rec := byID[f.ID]
		if a.Rename != "" && a.Rename != rec.Name {
			if a.Rename == "" || strings.Contains(a.Rename, ".") {
				return nil, fmt.Errorf("dataset: alter column %q: the new name %q must be non-empty and without dots: %w", a.Path, a.Rename, lancer.ErrInvalidArgument)
			}
			if parent == nil && reservedColumns[a.Rename] {
				return nil, fmt.Errorf("dataset: alter column %q: %q is reserved: %w", a.Path, a.Rename, lancer.ErrInvalidArgument)
			}
			for _, s := range fields {
				if s.ID != rec.ID && s.ParentID == rec.ParentID && s.Name == a.Rename {
					return nil, fmt.Errorf("dataset: alter column %q to %q: the name is taken: %w", a.Path, a.Rename, lancer.ErrInvalidArgument)
				}
			}
			rec.Name = a.Rename
		}
		if a.Nullable != nil {
			if !*a.Nullable && f.Nullable {
				if err := d.checkNoNulls(ctx, a.Path); err != nil {
					return nil, err
				}
			}
			rec.Nullable = *a.Nullable
		}
		if a.DataType != nil && !arrow.TypeEqual(a.DataType, f.LogicalArrowField().Type) {
			from := f.LogicalArrowField().Type
			if parent != nil {
				return nil, fmt.Errorf("dataset: alter column %q: casting a member of a struct is not supported: %w", a.Path, lancer.ErrUnsupported)
			}
			if !castAllowed(from, a.DataType) {
				return nil, fmt.Errorf("dataset: alter columns: cannot cast column %q from %s to %s: %w", a.Path, from, a.DataType, lancer.ErrInvalidArgument)
			}
			casts = append(casts, &cast{old: f, to: arrow.Field{Name: rec.Name, Type: a.DataType, Nullable: rec.Nullable}})
		}
	}
	if len(casts) == 0 {
		return d.commit(ctx, &operation{kind: opProject, fields: fields,
			project: func(*manifest.Manifest) ([]*schema.Field, error) { return fields, nil }}, opts)
	}
	arrowFields := make([]arrow.Field, len(casts))
	readNames := make([]string, len(casts))
	for i, c := range casts {
		c.to.Nullable = byID[c.old.ID].Nullable
		arrowFields[i] = c.to
		readNames[i] = c.old.Name
	}
	added, err := d.newFields(arrowFields)
	if err != nil {
		return nil, err
	}
	for i, c := range casts {
		c.into = added.Fields[i]
		c.into.Metadata = maps.Clone(byID[c.old.ID].Metadata)
	}
	read, err := d.readProjection(readNames)
	if err != nil {
		return nil, err
	}
	readSchema := read.arrow
	outTypes := added.LogicalArrow()
	mem := d.opts.Allocator
	merge, err := d.writeColumns(ctx, read, added, func(live arrow.RecordBatch) ([]arrow.Array, error) {
		out := make([]arrow.Array, len(casts))
		for i, c := range casts {
			idx := readSchema.FieldIndices(c.old.Name)
			if len(idx) == 0 {
				releaseArrays(out)
				return nil, fmt.Errorf("dataset: alter column %q: not read: %w", c.old.Name, lancer.ErrCorrupt)
			}
			a, err := castColumn(ctx, mem, live.Column(idx[0]), outTypes.Field(i).Type)
			if err != nil {
				releaseArrays(out)
				return nil, fmt.Errorf("dataset: alter column %q: cast to %s: %v: %w", c.old.Name, outTypes.Field(i).Type, err, lancer.ErrInvalidArgument)
			}
			out[i] = a
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	// The new fields take the old ones' places.
	replaced := map[int32][]*schema.Field{}
	gone := map[int32]bool{}
	for _, c := range casts {
		replaced[c.old.ID] = (&schema.Schema{Fields: []*schema.Field{c.into}}).Flatten()
		c.old.Walk(func(x *schema.Field) { gone[x.ID] = true })
	}
	var out []*schema.Field
	for _, f := range fields {
		if r, ok := replaced[f.ID]; ok {
			out = append(out, r...)
		}
		if !gone[f.ID] {
			out = append(out, f)
		}
	}
	keep := map[int32]bool{}
	for _, f := range out {
		keep[f.ID] = true
	}
	for _, fr := range merge.fragments {
		fr.Files = slices.DeleteFunc(fr.Files, func(df manifest.DataFile) bool {
			return !slices.ContainsFunc(df.Fields, func(id int32) bool { return keep[id] })
		})
	}
	return d.commit(ctx, &operation{kind: opMerge, fields: out, merge: merge}, opts)
}

// castAllowed is Lance's rule for alter_columns casts (is_upcast_downcast):
// within integers, floats, temporal types, strings, binaries, decimals,
// and lists of such.
func castAllowed(from, to arrow.DataType) bool {
	isInt := func(t arrow.DataType) bool { return arrow.IsInteger(t.ID()) }
	isFloat := func(t arrow.DataType) bool { return arrow.IsFloating(t.ID()) }
	isTemporal := func(t arrow.DataType) bool {
		switch t.ID() {
		case arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION, arrow.INTERVAL_MONTHS, arrow.INTERVAL_DAY_TIME, arrow.INTERVAL_MONTH_DAY_NANO:
			return true
		}
		return false
	}
	in := func(t arrow.DataType, ids ...arrow.Type) bool { return slices.Contains(ids, t.ID()) }
	elem := func(t arrow.DataType) (arrow.DataType, bool) {
		switch l := t.(type) {
		case *arrow.ListType:
			return l.Elem(), true
		case *arrow.LargeListType:
			return l.Elem(), true
		case *arrow.FixedSizeListType:
			return l.Elem(), true
		}
		return nil, false
	}
	switch {
	case isInt(from):
		return isInt(to)
	case isFloat(from):
		return isFloat(to)
	case isTemporal(from):
		return isTemporal(to)
	case in(from, arrow.BOOL):
		return in(to, arrow.BOOL)
	case in(from, arrow.STRING, arrow.LARGE_STRING):
		return in(to, arrow.STRING, arrow.LARGE_STRING)
	case in(from, arrow.BINARY, arrow.LARGE_BINARY):
		return in(to, arrow.BINARY, arrow.LARGE_BINARY)
	case in(from, arrow.DECIMAL128, arrow.DECIMAL256):
		return in(to, arrow.DECIMAL128, arrow.DECIMAL256)
	}
	if fe, ok := elem(from); ok {
		if te, ok := elem(to); ok {
			return castAllowed(fe, te)
		}
	}
	return false
}

// checkNoNulls fails, wrapping lancer.ErrInvalidArgument, when the column
// at path holds a null in a live row.
func (d *Dataset) checkNoNulls(ctx context.Context, path string) error {
	sc, err := d.Scan(&ScanOptions{Columns: []string{topLevelName(path)}, Filter: quotePath(path) + " IS NULL", Limit: 1})
	if err != nil {
		return fmt.Errorf("dataset: alter column %q: %w", path, err)
	}
	for rec, err := range sc.Batches(ctx) {
		if err != nil {
			return fmt.Errorf("dataset: alter column %q: %w", path, err)
		}
		if rec.NumRows() > 0 {
			return fmt.Errorf("dataset: alter column %q: it holds nulls and so cannot be made non-nullable: %w", path, lancer.ErrInvalidArgument)
		}
	}
	return nil
}

// quotePath quotes each name of a column path for a filter.
func quotePath(path string) string {
	parts := strings.Split(path, ".")
	for i, p := range parts {
		parts[i] = "`" + strings.ReplaceAll(p, "`", "``") + "`"
	}
	return strings.Join(parts, ".")
}

// FieldMetadataUpdate is one change of UpdateFieldMetadata.
type FieldMetadataUpdate struct {
	// Path names the field: a top-level name or "struct.member".
	Path string
	// Set are the keys to set; Delete the keys to remove.
	Set    map[string]string
	Delete []string
	// Replace drops every other key of the field's metadata first.
	Replace bool
}

// UpdateFieldMetadata changes the metadata of fields and returns the new
// version, as Lance's update_field_metadata: only the schema changes. An
// unknown path is an error wrapping lancer.ErrNotFound.
func (d *Dataset) UpdateFieldMetadata(ctx context.Context, updates []FieldMetadataUpdate, opts *CommitOptions) (*Dataset, error) {
	if len(updates) == 0 {
		return nil, fmt.Errorf("dataset: update field metadata: no update given: %w", lancer.ErrInvalidArgument)
	}
	ups := slices.Clone(updates)
	return d.alter(ctx, opts, func(m *manifest.Manifest) ([]*schema.Field, error) {
		out := cloneFields(m)
		for _, u := range ups {
			f, _, err := resolveColumn(m.Schema, u.Path)
			if err != nil {
				return nil, fmt.Errorf("dataset: update field metadata: %w", err)
			}
			for _, rec := range out {
				if rec.ID != f.ID {
					continue
				}
				md := map[string]string{}
				if !u.Replace {
					maps.Copy(md, rec.Metadata)
				}
				maps.Copy(md, u.Set)
				for _, k := range u.Delete {
					delete(md, k)
				}
				if len(md) == 0 {
					md = nil
				}
				rec.Metadata = md
			}
		}
		return out, nil
	})
}

// castColumn casts a column to type to, failing on values that do not fit.
// Lists (also fixed-size ones) are cast item by item, and floats to and
// from float16 directly, which arrow's cast kernels do not do.
func castColumn(ctx context.Context, mem memory.Allocator, a arrow.Array, to arrow.DataType) (arrow.Array, error) {
	if arrow.TypeEqual(a.DataType(), to) {
		a.Retain()
		return a, nil
	}
	switch lt := to.(type) {
	case *arrow.FixedSizeListType, *arrow.ListType, *arrow.LargeListType:
		var values arrow.Array
		switch l := a.(type) {
		case *array.FixedSizeList:
			values = l.ListValues()
		case *array.List:
			values = l.ListValues()
		case *array.LargeList:
			values = l.ListValues()
		default:
			return nil, fmt.Errorf("cannot cast %s to %s", a.DataType(), to)
		}
		elem := lt.(arrow.ListLikeType).Elem()
		cast, err := castColumn(ctx, mem, values, elem)
		if err != nil {
			return nil, err
		}
		defer cast.Release()
		src := a.Data()
		if _, fixed := lt.(*arrow.FixedSizeListType); fixed != (a.DataType().ID() == arrow.FIXED_SIZE_LIST) ||
			lt.ID() != a.DataType().ID() {
			return nil, fmt.Errorf("cannot cast %s to %s: only the item type of a list may change", a.DataType(), to)
		}
		data := array.NewData(to, src.Len(), src.Buffers(), []arrow.ArrayData{cast.Data()}, src.NullN(), src.Offset())
		defer data.Release()
		return array.MakeFromData(data), nil
	}
	if to.ID() == arrow.FLOAT16 || a.DataType().ID() == arrow.FLOAT16 {
		return castFloat16(mem, a, to)
	}
	return compute.CastArray(compute.WithAllocator(ctx, mem), a, compute.SafeCastOptions(to))
}

// castFloat16 casts floats to or from float16.
func castFloat16(mem memory.Allocator, a arrow.Array, to arrow.DataType) (arrow.Array, error) {
	get := func(i int) (float64, bool) {
		switch v := a.(type) {
		case *array.Float16:
			return float64(v.Value(i).Float32()), true
		case *array.Float32:
			return float64(v.Value(i)), true
		case *array.Float64:
			return v.Value(i), true
		}
		return 0, false
	}
	if _, ok := get(0); !ok && a.Len() > 0 {
		return nil, fmt.Errorf("cannot cast %s to %s", a.DataType(), to)
	}
	b := array.NewBuilder(mem, to)
	defer b.Release()
	b.Reserve(a.Len())
	for i := 0; i < a.Len(); i++ {
		if a.IsNull(i) {
			b.AppendNull()
			continue
		}
		v, _ := get(i)
		switch fb := b.(type) {
		case *array.Float16Builder:
			fb.Append(float16.New(float32(v)))
		case *array.Float32Builder:
			fb.Append(float32(v))
		case *array.Float64Builder:
			fb.Append(v)
		default:
			return nil, fmt.Errorf("cannot cast %s to %s", a.DataType(), to)
		}
	}
	return b.NewArray(), nil
}
