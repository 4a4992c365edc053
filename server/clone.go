package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// cloneTable answers clone {"source_location", "source_version"?,
// "source_tag"?, "is_shallow"?}: the table {id} becomes a shallow clone of
// a table the server serves at a version or tag (the latest by default),
// as Lance's shallow_clone: one manifest pointing at the source's files,
// nothing copied. The source is named as the client's cloneTable takes
// it: a table name or id (ns$t), the location describe/ answers, or a
// folder relative to the data folder; nothing outside the data folder.
// A deep clone (is_shallow false) is refused as not supported.
func (s *Server) cloneTable(w http.ResponseWriter, r *http.Request) error {
	key, err := tableName(r)
	if err != nil {
		return err
	}
	var body struct {
		SourceLocation string  `json:"source_location"`
		SourceVersion  *uint64 `json:"source_version"`
		SourceTag      *string `json:"source_tag"`
		IsShallow      *bool   `json:"is_shallow"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if body.IsShallow != nil && !*body.IsShallow {
		return unsupportedf("clone table %q: deep clones are not supported; clone shallowly (is_shallow: true)", key)
	}
	if body.SourceVersion != nil && body.SourceTag != nil {
		return invalidf("clone table %q: give source_version or source_tag, not both", key)
	}
	ctx := r.Context()
	srcKey, err := s.cloneSource(ctx, body.SourceLocation)
	if err != nil {
		return err
	}
	if srcKey == key {
		return invalidf("clone table %q: the source is the table itself", key)
	}
	var version uint64
	if body.SourceVersion != nil {
		if *body.SourceVersion == 0 {
			return invalidf("clone table %q: source_version 0 does not exist (versions start at 1)", key)
		}
		version = *body.SourceVersion
	}
	src, err := s.open(ctx, srcKey, 0, "")
	if err != nil {
		return err
	}
	if body.SourceTag != nil {
		t, err := branch.GetTag(ctx, src.Store(), *body.SourceTag)
		if err != nil {
			return tagErr(*body.SourceTag, err)
		}
		if t.Branch != "" {
			return unsupportedf("clone table %q: tag %q is on branch %q; clone from tags of the main line", key, *body.SourceTag, t.Branch)
		}
		version = t.Version
	}
	if version != 0 && version != src.Version() {
		if src, err = s.open(ctx, srcKey, version, ""); err != nil {
			return err
		}
	}
	return s.write(w, r, key, func(ctx context.Context) (any, error) {
		exists, declaredOnly, err := s.tableOrDeclared(ctx, key)
		if err != nil {
			return nil, err
		}
		if exists && !declaredOnly {
			return nil, &apiError{status: http.StatusBadRequest, code: codeAlreadyExists,
				msg: fmt.Sprintf("table %q already exists", key)}
		}
		store, record, err := s.newTableStore(ctx, key)
		if err != nil {
			return nil, err
		}
		ds, err := dataset.Clone(ctx, src, store, nil)
		if err != nil {
			if errors.Is(err, lancer.ErrAlreadyExists) {
				return nil, &apiError{status: http.StatusBadRequest, code: codeAlreadyExists,
					msg: fmt.Sprintf("table %q already exists", key), err: err}
			}
			return nil, err
		}
		if record != nil {
			if err := record(ctx); err != nil {
				return nil, err
			}
		}
		_ = store.Delete(ctx, reservedMarker)
		s.remember(ctx, key, "", ds)
		return map[string]uint64{"version": ds.Version()}, nil
	})
}

// cloneSource resolves the source_location of a clone to the key of a
// table the server serves.
func (s *Server) cloneSource(ctx context.Context, loc string) (string, error) {
	if loc == "" {
		return "", invalidf("clone: source_location is required")
	}
	// A table name or id.
	if !strings.ContainsAny(loc, "/\\:") {
		r, _ := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
		r.SetPathValue("id", loc)
		return tableName(r)
	}
	rel := loc
	if s.local() {
		if abs, err := filepath.Abs(strings.TrimPrefix(loc, "file://")); err == nil && filepath.IsAbs(strings.TrimPrefix(loc, "file://")) {
			if r, err := filepath.Rel(s.dir, abs); err == nil {
				rel = filepath.ToSlash(r)
			}
		}
	} else {
		rel = strings.TrimPrefix(loc, strings.TrimSuffix(s.root.URI(), "/")+"/")
	}
	rel = strings.TrimSuffix(rel, "/")
	if !safeLocation(rel) {
		return "", invalidf("clone: source_location %q is not a table of this server (give its name, or its location inside the data folder)", loc)
	}
	if name, ok := strings.CutSuffix(rel, tableSuffix); ok && CheckTableName(name) == nil {
		return name, nil
	}
	entries, err := s.catalogSnapshot(ctx)
	if err != nil {
		return "", err
	}
	for id, e := range entries {
		if e.kind == objectTable && e.location == rel {
			return id, nil
		}
	}
	return "", &apiError{status: http.StatusNotFound, code: codeTableNotFound,
		msg: fmt.Sprintf("clone: no table of this server at %q", loc)}
}
