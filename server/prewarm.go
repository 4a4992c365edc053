package server

import (
	"fmt"
	"net/http"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// prewarmIndex answers index/{name}/prewarm/: every file of the index's
// segments is read once, so that the searches after it find them in the
// operating system's page cache (the server's own read cache fills as
// searches open the index). On object storage, where a read warms
// nothing but the first search's memory, it is answered as not supported.
// A missing index is a 404, which the client reports as IndexNotFound.
func (s *Server) prewarmIndex(w http.ResponseWriter, r *http.Request) error {
	ds, err := s.openRead(r)
	if err != nil {
		return err
	}
	index := r.PathValue("name")
	var uuids []string
	for _, ix := range ds.Indices() {
		if ix.Name == index {
			uuids = append(uuids, ix.UUID)
		}
	}
	if len(uuids) == 0 {
		return &apiError{status: http.StatusNotFound, code: codeNotFound,
			msg: fmt.Sprintf("index %q not found in table %q", index, r.PathValue("id"))}
	}
	if !s.local() {
		return unsupportedf("prewarm_index: the data is on object storage, where the server has no page cache to load index %q into; its searches load what they need", index)
	}
	ctx := r.Context()
	for _, u := range uuids {
		for info, err := range ds.Store().List(ctx, "_indices/"+u+"/") {
			if err != nil {
				return err
			}
			if err := readThrough(r, ds.Store(), info.Key, info.Size); err != nil {
				return err
			}
		}
	}
	return writeJSON(w, struct{}{})
}

// prewarmChunk is how much of a file prewarm reads at once.
const prewarmChunk = 8 << 20

// readThrough reads a file in chunks and drops what it read.
func readThrough(r *http.Request, store blob.Store, key string, size int64) error {
	for off := int64(0); off < size; off += prewarmChunk {
		if _, err := store.ReadRange(r.Context(), key, off, min(prewarmChunk, size-off)); err != nil {
			return err
		}
	}
	return nil
}

// prewarmData answers page_cache/prewarm/ {"columns": [...]} (none: every
// column): the columns of the latest version are read once, through the
// server's read cache, within the request's time limit. Unknown columns
// are a 400.
func (s *Server) prewarmData(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	var body struct {
		Columns []string `json:"columns"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	ds, err := s.open(r.Context(), name, 0, "")
	if err != nil {
		return err
	}
	for _, c := range body.Columns {
		if fieldAt(ds.Schema(), c) == nil {
			return invalidf("prewarm_data: no column %q in table %q", c, name)
		}
	}
	sc, err := ds.Scan(&dataset.ScanOptions{Columns: body.Columns})
	if err != nil {
		return inTable(err)
	}
	for _, err := range sc.Batches(r.Context()) {
		if err != nil {
			return err
		}
		// Read, and dropped: each batch is the scan's.
	}
	return writeJSON(w, struct{}{})
}

// listJobs answers POST /v1/jobs/list: the server runs no background jobs
// a client submits (index builds and drops run inside their requests), so
// the list is empty.
func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		PageToken string `json:"page_token"`
	}
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	return writeJSON(w, map[string]any{"jobs": []any{}})
}
