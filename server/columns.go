package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/format/schema"
)

// The column endpoints: the client's addColumns (SQL expressions),
// alterColumns and dropColumns. Each commits one version of main or of
// the "branch" of the body and answers {"version": N}.

// addColumns answers add_columns/ {"new_columns": [{"name", "expression"}],
// "branch"?}: columns computed by SQL expressions (dataset.AddColumns).
// Computed (virtual) and function columns, which LanceDB Enterprise plans
// itself, are refused.
func (s *Server) addColumns(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	var body struct {
		NewColumns []struct {
			Name       string          `json:"name"`
			Expression *string         `json:"expression"`
			Computed   json.RawMessage `json:"computed"`
			AllNull    bool            `json:"all_null"`
		} `json:"new_columns"`
		Function json.RawMessage `json:"function"`
		Branch   string          `json:"branch"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if !isNull(body.Function) {
		return unsupportedf("function columns are not supported")
	}
	if len(body.NewColumns) == 0 {
		return invalidf("add_columns needs at least one column in new_columns")
	}
	cols := make([]dataset.NewColumn, 0, len(body.NewColumns))
	for _, c := range body.NewColumns {
		if !isNull(c.Computed) {
			return unsupportedf("computed columns are not supported (column %q): add it with an SQL expression", c.Name)
		}
		if c.Expression == nil || strings.TrimSpace(*c.Expression) == "" {
			return invalidf("new column %q needs an SQL expression", c.Name)
		}
		if c.Name == "" {
			return invalidf("a new column needs a name")
		}
		cols = append(cols, dataset.NewColumn{Name: c.Name, Expr: *c.Expression})
	}
	branchName := branchOf(r, body.Branch)
	return s.write(w, r, name, func(ctx context.Context) (any, error) {
		ds, err := s.open(ctx, name, 0, branchName)
		if err != nil {
			return nil, err
		}
		out, err := ds.AddColumns(ctx, cols, nil)
		if err != nil {
			return nil, inTable(err)
		}
		s.remember(ctx, name, branchName, out)
		return map[string]uint64{"version": out.Manifest().Version}, nil
	})
}

// alteration is one entry of alter_columns/'s "alterations".
type alteration struct {
	Path     string          `json:"path"`
	Rename   *string         `json:"rename"`
	DataType json.RawMessage `json:"data_type"`
	Nullable *bool           `json:"nullable"`
}

// alterColumns answers alter_columns/ {"alterations": [{"path", "rename"?,
// "data_type"?, "nullable"?}], "branch"?}. Renames are applied, in order,
// as one commit each (dataset.RenameColumn); a data type or nullability
// the column already has is accepted as a no-op, and any other change of
// type or nullability is refused with a 400 before anything is committed.
func (s *Server) alterColumns(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	var body struct {
		Alterations []alteration `json:"alterations"`
		Branch      string       `json:"branch"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if len(body.Alterations) == 0 {
		return invalidf("alter_columns needs at least one alteration")
	}
	branchName := branchOf(r, body.Branch)
	return s.write(w, r, name, func(ctx context.Context) (any, error) {
		ds, err := s.open(ctx, name, 0, branchName)
		if err != nil {
			return nil, err
		}
		// Check every alteration first, so that a refused one leaves the
		// table as it was.
		for _, a := range body.Alterations {
			f := fieldAt(ds.Schema(), a.Path)
			if f == nil {
				return nil, invalidf("alter_columns: no column %q", a.Path)
			}
			if a.Nullable != nil && *a.Nullable != f.Nullable {
				if *a.Nullable {
					return nil, unsupportedf("alter_columns: making column %q nullable is not supported", a.Path)
				}
				return nil, unsupportedf("alter_columns: making column %q non-nullable is not supported", a.Path)
			}
			if !isNull(a.DataType) {
				same, err := sameType(f, a.DataType)
				if err != nil {
					return nil, err
				}
				if !same {
					return nil, unsupportedf("alter_columns: changing the data type of column %q is not supported (cast it into a new column with add_columns)", a.Path)
				}
			}
			if a.Rename != nil && *a.Rename == "" {
				return nil, invalidf("alter_columns: the new name of column %q is empty", a.Path)
			}
		}
		out := ds
		for _, a := range body.Alterations {
			if a.Rename == nil || *a.Rename == lastSegment(a.Path) {
				continue
			}
			if out, err = out.RenameColumn(ctx, a.Path, *a.Rename, nil); err != nil {
				return nil, inTable(err)
			}
		}
		if out != ds {
			s.remember(ctx, name, branchName, out)
		}
		return map[string]uint64{"version": out.Manifest().Version}, nil
	})
}

// dropColumns answers drop_columns/ {"columns": [...], "branch"?}.
func (s *Server) dropColumns(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	var body struct {
		Columns []string `json:"columns"`
		Branch  string   `json:"branch"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if len(body.Columns) == 0 {
		return invalidf("drop_columns needs at least one column")
	}
	branchName := branchOf(r, body.Branch)
	return s.write(w, r, name, func(ctx context.Context) (any, error) {
		ds, err := s.open(ctx, name, 0, branchName)
		if err != nil {
			return nil, err
		}
		out, err := ds.DropColumns(ctx, body.Columns, nil)
		if err != nil {
			return nil, inTable(err)
		}
		s.remember(ctx, name, branchName, out)
		return map[string]uint64{"version": out.Manifest().Version}, nil
	})
}

// fieldAt returns the field at a dotted path ("meta.source"), or nil.
func fieldAt(s *schema.Schema, path string) *schema.Field {
	parts := strings.Split(path, ".")
	f := s.Field(parts[0])
	for _, p := range parts[1:] {
		if f == nil {
			return nil
		}
		var next *schema.Field
		for _, c := range f.Children {
			if c.Name == p {
				next = c
				break
			}
		}
		f = next
	}
	return f
}

func lastSegment(path string) string {
	return path[strings.LastIndexByte(path, '.')+1:]
}

// sameType reports whether the client's JSON data type (Lance's JSON
// schema type, {"type": "int32"}) is the field's own type.
func sameType(f *schema.Field, dt json.RawMessage) (bool, error) {
	var want jsonType
	if err := json.Unmarshal(dt, &want); err != nil {
		return false, invalidf("alter_columns: malformed data_type %s", dt)
	}
	have, err := typeJSON(f.LogicalArrowField().Type)
	if err != nil {
		return false, nil
	}
	if want.Fields == nil && want.Length == nil {
		// A bare {"type": ...}: compare the type names.
		return strings.EqualFold(have.Type, want.Type) && have.Fields == nil, nil
	}
	hb, _ := json.Marshal(have)
	wb, err := json.Marshal(want)
	if err != nil {
		return false, fmt.Errorf("data_type: %w", err)
	}
	return bytes.Equal(hb, wb), nil
}
