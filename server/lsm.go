package server

import (
	"fmt"
	"net/http"
)

// lancer has no LSM write path (Lance's MemWAL): the client's LSM calls
// are answered as on a table without one, and the calls that would start
// or drive one are refused as not supported.
func (s *Server) lsmRoutes() {
	post := func(op string, h handlerFunc) {
		s.tableOps = append(s.tableOps, op)
		s.handle("POST /v1/table/{id}/"+op, route{body: bodyJSON}, h)
	}
	// The spec and the stats of a table without an LSM write path: null.
	post("get_lsm_write_spec", func(w http.ResponseWriter, r *http.Request) error {
		if _, err := s.openRead(r); err != nil {
			return err
		}
		return writeJSON(w, map[string]any{"lsm_write_spec": nil})
	})
	post("get_lsm_stats", func(w http.ResponseWriter, r *http.Request) error {
		if _, err := s.openRead(r); err != nil {
			return err
		}
		return writeJSON(w, map[string]any{"lsm_stats": nil})
	})
	// Unsetting a spec that is never set changes nothing.
	post("unset_lsm_write_spec", func(w http.ResponseWriter, r *http.Request) error {
		if _, err := s.openRead(r); err != nil {
			return err
		}
		return writeJSON(w, struct{}{})
	})
	refuse := func(op string) handlerFunc {
		return func(w http.ResponseWriter, r *http.Request) error {
			if _, err := s.openRead(r); err != nil {
				return err
			}
			return unsupportedf("%s is not supported: lancer serve has no LSM write path (Lance's MemWAL); write with add, merge_insert, update and delete", op)
		}
	}
	post("set_lsm_write_spec", refuse("set_lsm_write_spec"))
	post("flush_lsm", refuse("flush_lsm"))
	post("compact_lsm", refuse("compact_lsm"))
	// lancer has no computed columns, so none can be backfilled.
	post("backfill_column", func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			Column string `json:"column"`
			Branch string `json:"branch"`
		}
		name, err := tableName(r)
		if err != nil {
			return err
		}
		if err := decodeJSON(r, &body); err != nil {
			return err
		}
		ds, err := s.open(r.Context(), name, 0, branchOf(r, body.Branch))
		if err != nil {
			return err
		}
		if fieldAt(ds.Schema(), body.Column) == nil {
			return invalidf("backfill_column: no column %q in table %q", body.Column, name)
		}
		return invalidf("Column '%s' is not a computed column", body.Column)
	})
	// Jobs: the server runs none a client could open or cancel.
	noJob := func(w http.ResponseWriter, r *http.Request) error {
		var body struct {
			JobID string `json:"job_id"`
		}
		if err := decodeJSON(r, &body); err != nil {
			return err
		}
		return &apiError{status: http.StatusNotFound, code: codeNotFound,
			msg: fmt.Sprintf("job %q not found: the server runs no submitted jobs (index builds run inside their requests)", body.JobID)}
	}
	s.handle("POST /v1/jobs/describe", route{body: bodyJSON}, noJob)
	s.handle("POST /v1/jobs/cancel", route{body: bodyJSON}, noJob)
}
