package server

import (
	"context"
	"encoding/json"
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
// "data_type"?, "nullable"?}], "branch"?} as Lance's alter_columns, in
// one commit (dataset.AlterColumns): renames, nullability (a column made
// non-nullable must hold no null) and the casts Lance allows (float64 to
// float32, a vector to float16, integers to wider or narrower ones, ...),
// which rewrite the column. A call that changes nothing still makes a
// version, as in Lance.
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
	alts := make([]dataset.ColumnAlteration, len(body.Alterations))
	for i, a := range body.Alterations {
		if a.Path == "" {
			return invalidf("alter_columns: alteration %d has no path", i)
		}
		alts[i] = dataset.ColumnAlteration{Path: a.Path, Nullable: a.Nullable}
		if a.Rename != nil {
			if *a.Rename == "" {
				return invalidf("alter_columns: the new name of column %q is empty", a.Path)
			}
			alts[i].Rename = *a.Rename
		}
		if !isNull(a.DataType) {
			var jt jsonType
			if err := json.Unmarshal(a.DataType, &jt); err != nil {
				return invalidf("alter_columns: malformed data_type %s of column %q", a.DataType, a.Path)
			}
			dt, err := arrowOfJSON(jt)
			if err != nil {
				return invalidf("alter_columns: data_type of column %q: %v", a.Path, err)
			}
			alts[i].DataType = dt
		}
	}
	branchName := branchOf(r, body.Branch)
	return s.write(w, r, name, func(ctx context.Context) (any, error) {
		ds, err := s.open(ctx, name, 0, branchName)
		if err != nil {
			return nil, err
		}
		out, err := ds.AlterColumns(ctx, alts, nil)
		if err != nil {
			return nil, inTable(err)
		}
		s.remember(ctx, name, branchName, out)
		return map[string]uint64{"version": out.Manifest().Version}, nil
	})
}

// updateFieldMetadata answers update_field_metadata/ {"updates": [{"path",
// "metadata": {key: value | null}, "replace"?}], "branch"?}: a null value
// removes its key, replace drops the keys not given.
func (s *Server) updateFieldMetadata(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	var body struct {
		Updates []struct {
			Path     string             `json:"path"`
			Metadata map[string]*string `json:"metadata"`
			Replace  bool               `json:"replace"`
		} `json:"updates"`
		Branch string `json:"branch"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if len(body.Updates) == 0 {
		return invalidf("update_field_metadata needs at least one update")
	}
	ups := make([]dataset.FieldMetadataUpdate, len(body.Updates))
	for i, u := range body.Updates {
		if u.Path == "" {
			return invalidf("update_field_metadata: update %d has no path", i)
		}
		ups[i] = dataset.FieldMetadataUpdate{Path: u.Path, Set: map[string]string{}, Replace: u.Replace}
		for k, v := range u.Metadata {
			if v == nil {
				ups[i].Delete = append(ups[i].Delete, k)
			} else {
				ups[i].Set[k] = *v
			}
		}
	}
	branchName := branchOf(r, body.Branch)
	return s.write(w, r, name, func(ctx context.Context) (any, error) {
		ds, err := s.open(ctx, name, 0, branchName)
		if err != nil {
			return nil, err
		}
		out, err := ds.UpdateFieldMetadata(ctx, ups, nil)
		if err != nil {
			return nil, inTable(err)
		}
		s.remember(ctx, name, branchName, out)
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
