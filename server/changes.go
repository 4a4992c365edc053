package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/rowjson"
)

// The changes/ endpoint: lancer's own, the change feed of a table's line
// (dataset.Dataset.ChangeFeed), paged.

const (
	defaultChangesLimit = 1000
	maxChangesLimit     = 10000
)

type changesBody struct {
	Since   uint64   `json:"since"`
	Until   uint64   `json:"until"`
	Branch  string   `json:"branch"`
	Columns []string `json:"columns"`
	Offset  uint64   `json:"offset"`
	Limit   int      `json:"limit"`
}

// changes answers changes/ {"since", "until"?, "branch"?, "columns"?,
// "offset"?, "limit"?} with {"since", "until", "rows": [...], "next_offset"}:
// and "lineage" (true: rows matched by stable row id and the row lineage
// columns, false: derived from the version history; see
// dataset.ChangeFeed.FromLineage): the rows of the change feed after
// version since up to until (default:
// the line's latest, returned so that later pages read the same range),
// from the offset-th on, at most limit (default 1000, at most 10000), each
// row as JSON with _change_type, _commit_version and _commit_timestamp.
// next_offset is null when the feed ended before the page was full (after
// a full page the next may be empty). A page may end between an
// update_preimage row and its update_postimage row.
func (s *Server) changes(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	var body changesBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if body.Limit == 0 {
		body.Limit = defaultChangesLimit
	}
	if body.Limit < 0 || body.Limit > maxChangesLimit {
		return fmt.Errorf("changes: limit %d: want 1 to %d: %w", body.Limit, maxChangesLimit, lancer.ErrInvalidArgument)
	}
	ds, err := s.open(r.Context(), name, 0, body.Branch)
	if err != nil {
		return err
	}
	// A column the table lacks is the request's mistake (a 400), named
	// here before the feed looks anything up.
	for _, c := range body.Columns {
		if ds.Schema().Field(c) == nil {
			return invalidf("changes: no column %q in version %d", c, ds.Version())
		}
	}
	feed, err := ds.ChangeFeed(r.Context(), &dataset.ChangeFeedOptions{Since: body.Since, Until: body.Until, Columns: body.Columns})
	if err != nil {
		return err
	}
	until := body.Until
	if until == 0 {
		until = ds.Version()
	}
	rows := []json.RawMessage{}
	var next *uint64
	var seen uint64
	var buf bytes.Buffer
	for rec, err := range feed.Batches(r.Context()) {
		if err != nil {
			return err
		}
		n := uint64(rec.NumRows())
		if seen+n <= body.Offset {
			seen += n
			continue
		}
		lo := int64(0)
		if body.Offset > seen {
			lo = int64(body.Offset - seen)
		}
		hi := min(int64(n), lo+int64(body.Limit-len(rows)))
		part := rec.NewSlice(lo, hi)
		buf.Reset()
		err = rowjson.WriteJSONL(&buf, part)
		part.Release()
		if err != nil {
			return err
		}
		for line := range bytes.SplitSeq(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
			if len(line) > 0 {
				rows = append(rows, json.RawMessage(bytes.Clone(line)))
			}
		}
		seen += n
		if len(rows) == body.Limit {
			more := body.Offset + uint64(len(rows))
			next = &more
			break
		}
	}
	b, err := marshal(map[string]any{"since": body.Since, "until": until, "rows": rows, "next_offset": next, "lineage": feed.FromLineage()})
	if err != nil {
		return err
	}
	w.Header().Set("content-type", "application/json")
	_, err = w.Write(b)
	return err
}
