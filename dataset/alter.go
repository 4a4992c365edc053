package dataset

import (
	"context"
	"fmt"
	"slices"
	"strings"

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
