package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// listVersions answers version/list/ with every version of the table (or
// of ?branch=), its commit time and Lance's summary metadata.
func (s *Server) listVersions(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	latest, err := s.open(ctx, name, 0, r.URL.Query().Get("branch"))
	if err != nil {
		return err
	}
	versions, err := dataset.ListVersions(ctx, latest.Store())
	if err != nil {
		return err
	}
	if len(versions) > maxListedVersions {
		versions = versions[len(versions)-maxListedVersions:]
	}
	type entry struct {
		Version   uint64            `json:"version"`
		Timestamp string            `json:"timestamp"`
		Metadata  map[string]string `json:"metadata"`
	}
	out := make([]entry, 0, len(versions))
	for _, v := range versions {
		ds, err := latest.Checkout(ctx, v)
		if err != nil {
			if errors.Is(err, lancer.ErrNotFound) {
				continue // removed by a concurrent cleanup
			}
			return err
		}
		m := ds.Manifest()
		out = append(out, entry{Version: v, Timestamp: m.Timestamp.UTC().Format(time.RFC3339Nano), Metadata: m.Summary().Map()})
	}
	return writeJSON(w, map[string]any{"versions": out})
}

// restore answers restore/ {"version": N}: version N's state becomes the
// new latest version.
func (s *Server) restore(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	var body versionBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if body.Version == nil || *body.Version == 0 {
		return invalidf("restore needs a version")
	}
	return s.write(w, r, name, func(ctx context.Context) (any, error) {
		ds, err := s.open(ctx, name, *body.Version, body.Branch)
		if err != nil {
			return nil, err
		}
		out, err := ds.Restore(ctx, nil)
		if err != nil {
			return nil, err
		}
		return map[string]uint64{"version": out.Manifest().Version}, nil
	})
}

// tagBody is the body of the tags/ calls.
type tagBody struct {
	Tag     string  `json:"tag"`
	Version *uint64 `json:"version"`
	Branch  *string `json:"branch"`
}

// listTags answers tags/list/ with Lance's TagContents per tag.
func (s *Server) listTags(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	ds, err := s.open(r.Context(), name, 0, "")
	if err != nil {
		return err
	}
	tags, err := branch.ListTags(r.Context(), ds.Store())
	if err != nil {
		return err
	}
	out := make(map[string]any, len(tags))
	for _, t := range tags {
		c := map[string]any{"branch": nil, "version": t.Version, "manifestSize": t.ManifestSize}
		if t.Branch != "" {
			c["branch"] = t.Branch
		}
		if !t.CreatedAt.IsZero() {
			c["createdAt"] = t.CreatedAt.UTC().Format(time.RFC3339Nano)
		}
		if !t.UpdatedAt.IsZero() {
			c["updatedAt"] = t.UpdatedAt.UTC().Format(time.RFC3339Nano)
		}
		if len(t.Metadata) > 0 {
			c["metadata"] = t.Metadata
		}
		out[t.Name] = c
	}
	return writeJSON(w, out)
}

// tagCall decodes {"tag", "version"?, "branch"?} and opens the table.
func (s *Server) tagCall(r *http.Request, needVersion bool) (*dataset.Dataset, tagBody, error) {
	name, err := tableName(r)
	if err != nil {
		return nil, tagBody{}, err
	}
	var body tagBody
	if err := decodeJSON(r, &body); err != nil {
		return nil, body, err
	}
	if body.Tag == "" {
		return nil, body, invalidf("the request names no tag")
	}
	if needVersion && (body.Version == nil || *body.Version == 0) {
		return nil, body, invalidf("the request names no version")
	}
	ds, err := s.open(r.Context(), name, 0, "")
	return ds, body, err
}

func (b tagBody) ref() branch.Ref {
	ref := branch.Ref{Version: *b.Version}
	if b.Branch != nil {
		ref.Branch = *b.Branch
	}
	return ref
}

// tagVersion answers tags/version/ {"tag"} with the version it names.
func (s *Server) tagVersion(w http.ResponseWriter, r *http.Request) error {
	ds, body, err := s.tagCall(r, false)
	if err != nil {
		return err
	}
	t, err := branch.GetTag(r.Context(), ds.Store(), body.Tag)
	if err != nil {
		return tagErr(body.Tag, err)
	}
	resp := map[string]any{"version": t.Version}
	if t.Branch != "" {
		resp["branch"] = t.Branch
	}
	return writeJSON(w, resp)
}

// createTag answers tags/create/ {"tag", "version"}. An existing tag is a
// 400 (a 409 would make the client retry).
func (s *Server) createTag(w http.ResponseWriter, r *http.Request) error {
	ds, body, err := s.tagCall(r, true)
	if err != nil {
		return err
	}
	return s.write(w, r, r.PathValue("id"), func(ctx context.Context) (any, error) {
		if _, err := branch.CreateTag(ctx, ds.Store(), body.Tag, body.ref()); err != nil {
			return nil, tagErr(body.Tag, err)
		}
		return struct{}{}, nil
	})
}

// updateTag answers tags/update/ {"tag", "version"}.
func (s *Server) updateTag(w http.ResponseWriter, r *http.Request) error {
	ds, body, err := s.tagCall(r, true)
	if err != nil {
		return err
	}
	return s.write(w, r, r.PathValue("id"), func(ctx context.Context) (any, error) {
		if _, err := branch.UpdateTag(ctx, ds.Store(), body.Tag, body.ref()); err != nil {
			return nil, tagErr(body.Tag, err)
		}
		return struct{}{}, nil
	})
}

// deleteTag answers tags/delete/ {"tag"}.
func (s *Server) deleteTag(w http.ResponseWriter, r *http.Request) error {
	ds, body, err := s.tagCall(r, false)
	if err != nil {
		return err
	}
	return s.write(w, r, r.PathValue("id"), func(ctx context.Context) (any, error) {
		if err := branch.DeleteTag(ctx, ds.Store(), body.Tag); err != nil {
			return nil, tagErr(body.Tag, err)
		}
		return struct{}{}, nil
	})
}

// tagErr maps a tag error: a missing tag or version is the request's
// fault, a 400 (the client reports a 404 on a table call as a missing
// table).
func tagErr(tag string, err error) error {
	if errors.Is(err, lancer.ErrNotFound) {
		return &apiError{status: http.StatusBadRequest, code: codeNotFound, msg: fmt.Sprintf("tag %q: %v", tag, err), err: err}
	}
	return err
}
