package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/ftsindex"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/vector"
)

// createIndexTypes maps the client's index_type names to the index types
// lancer builds: vector indices, and the scalar and full-text (FTS) ones
// in Lance's format. The quantizers lancer lacks are refused.
var createIndexTypes = map[string]string{
	"IVF_PQ":        dataset.IndexIVFPQ,
	"IVF_HNSW_SQ":   dataset.IndexIVFHNSWSQ,
	"IVF_FLAT":      dataset.IndexIVFFlat,
	"IVF_SQ":        dataset.IndexIVFSQ,
	"IVF_HNSW_FLAT": dataset.IndexIVFHNSWFlat,
	"IVF_HNSW_PQ":   dataset.IndexIVFHNSWPQ,
	"BTREE":         dataset.IndexBTree,
	"BITMAP":        dataset.IndexBitmap,
	"LABEL_LIST":    dataset.IndexLabelList,
	"FTS":           dataset.IndexFTS,
	"INVERTED":      dataset.IndexFTS,
}

// clientIndexTypes names lancer's index types as the client does.
var clientIndexTypes = map[string]string{
	dataset.IndexIVFPQ:       "IVF_PQ",
	dataset.IndexIVFHNSWSQ:   "IVF_HNSW_SQ",
	dataset.IndexIVFFlat:     "IVF_FLAT",
	dataset.IndexFlat:        "IVF_FLAT",
	dataset.IndexHNSW:        "IVF_HNSW_SQ",
	dataset.IndexIVFSQ:       "IVF_SQ",
	dataset.IndexIVFHNSWFlat: "IVF_HNSW_FLAT",
	dataset.IndexIVFHNSWPQ:   "IVF_HNSW_PQ",
}

// createIndex answers create_index/ (docs/spec/lancedb-remote-protocol.md §7.5) by building one of
// lancer's vector indices, or a BTREE, BITMAP, LABEL_LIST or FTS index in
// Lance's format, synchronously. An FTS request carries the analyzer's
// parameters under Lance's names (with_position, base_tokenizer, stem,
// ...); those it lacks take Lance's defaults. Like the client's default it replaces an
// index of the same name.
func (s *Server) createIndex(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	var body struct {
		Column         string      `json:"column"`
		IndexType      string      `json:"index_type"`
		MetricType     string      `json:"metric_type"`
		Name           string      `json:"name"`
		NumPartitions  json.Number `json:"num_partitions"`
		NumSubVectors  json.Number `json:"num_sub_vectors"`
		NumBits        json.Number `json:"num_bits"`
		M              json.Number `json:"m"`
		EfConstruction json.Number `json:"ef_construction"`
		Branch         string      `json:"branch"`
	}
	var raw json.RawMessage
	if err := decodeJSON(r, &raw); err != nil {
		return err
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return invalidf("create_index: %v", err)
	}
	if body.Column == "" {
		return invalidf("create_index needs a column")
	}
	typ, ok := createIndexTypes[strings.ToUpper(body.IndexType)]
	if !ok {
		return unsupportedf("index type %s is not supported: lancer builds the vector indices IVF_PQ, IVF_HNSW_SQ, IVF_FLAT, IVF_SQ, IVF_HNSW_FLAT and IVF_HNSW_PQ, the scalar indices BTREE, BITMAP and LABEL_LIST and FTS only", body.IndexType)
	}
	opts := &dataset.CreateIndexOptions{Type: typ, Name: body.Name, Replace: true}
	if typ == dataset.IndexFTS {
		params := ftsindex.DefaultParams()
		if err := json.Unmarshal(raw, &params); err != nil {
			return invalidf("create_index: FTS parameters: %v", err)
		}
		opts.FTS = &params
	}
	if body.MetricType != "" {
		if opts.Metric, err = vector.ParseMetric(body.MetricType); err != nil {
			return invalidf("metric_type: %v", err)
		}
	}
	for _, p := range []struct {
		field string
		n     json.Number
		dst   *int
	}{
		{"num_partitions", body.NumPartitions, &opts.Partitions},
		{"num_sub_vectors", body.NumSubVectors, &opts.SubVectors},
		// Index.ivfPq({numBits: 4}) sends num_bits (4 or 8; CreateIndex
		// refuses others, and 4 for any type but IVF_PQ, as Lance does).
		{"num_bits", body.NumBits, &opts.PQBits},
		{"m", body.M, &opts.M},
		{"ef_construction", body.EfConstruction, &opts.EfConstruction},
	} {
		if *p.dst, err = nonNegative(p.field, p.n, 0); err != nil {
			return err
		}
	}
	branchName := branchOf(r, body.Branch)
	return s.write(w, r, name, func(ctx context.Context) (any, error) {
		ds, err := s.open(ctx, name, 0, branchName)
		if err != nil {
			return nil, err
		}
		if _, err := ds.CreateIndex(ctx, body.Column, opts); err != nil {
			return nil, inTable(err)
		}
		return struct{}{}, nil
	})
}

// indexSummary is one logical index (its segments together) as the
// client lists it.
type indexSummary struct {
	Name        string   `json:"index_name"`
	Columns     []string `json:"columns"`
	Type        string   `json:"index_type"`
	UUID        string   `json:"index_uuid"`
	CreatedAt   string   `json:"created_at,omitempty"`
	Indexed     uint64   `json:"num_indexed_rows"`
	Unindexed   uint64   `json:"num_unindexed_rows"`
	Segments    int      `json:"num_segments"`
	Version     int32    `json:"index_version"`
	TypeURL     string   `json:"type_url,omitempty"`
	metric      string
	segmentUUID []string
}

// summarizeIndices groups a version's index segments by name, in the
// order the names first appear.
func summarizeIndices(ctx context.Context, ds *dataset.Dataset) []*indexSummary {
	live := map[uint32]uint64{}
	var total uint64
	for _, f := range ds.Manifest().Fragments {
		n := f.PhysicalRows
		if d, _ := f.NumDeletedRows(); d <= n {
			n -= d
		}
		live[uint32(f.ID)] = n
		total += n
	}
	var out []*indexSummary
	byName := map[string]*indexSummary{}
	covered := map[string]map[uint32]bool{}
	for _, ix := range ds.Indices() {
		sum := byName[ix.Name]
		if sum == nil {
			sum = &indexSummary{Name: ix.Name, Columns: ix.Fields, UUID: ix.UUID, Version: ix.IndexVersion,
				TypeURL: ix.TypeURL, Type: listedIndexTypeName(ctx, ds, ix)}
			if !ix.CreatedAt.IsZero() {
				sum.CreatedAt = ix.CreatedAt.Format(time.RFC3339Nano)
			}
			if det, ok := lancerDetails(ix); ok {
				sum.metric = det.Metric
			}
			byName[ix.Name] = sum
			covered[ix.Name] = map[uint32]bool{}
			out = append(out, sum)
		}
		sum.Segments++
		sum.segmentUUID = append(sum.segmentUUID, ix.UUID)
		for _, f := range ix.Fragments {
			if !covered[ix.Name][f] {
				covered[ix.Name][f] = true
				sum.Indexed += live[f]
			}
		}
	}
	for _, sum := range out {
		sum.Unindexed = total - min(sum.Indexed, total)
	}
	return out
}

// lancerDetails decodes the details of one of lancer's vector indices.
func lancerDetails(ix manifest.IndexInfo) (*manifest.VectorIndexDetails, bool) {
	if v := ix.DetailsValue(); v != nil && strings.HasSuffix(ix.TypeURL, dataset.LanceVectorIndexTypeURL) {
		// Lance's VectorIndexDetails, of the kinds lancer writes so (and
		// searches as Lance does).
		det, ok, err := dataset.LanceDetailsType(v)
		if err != nil || !ok {
			return nil, false
		}
		return det, true
	}
	det, err := ix.VectorDetails()
	if err != nil || det == nil {
		return nil, false
	}
	return det, true
}

// listedIndexTypeName is indexTypeName for list_indices, which also names
// the segments old Lance wrote without details: the dataset tells their
// type from the segment's files, as Lance does.
func listedIndexTypeName(ctx context.Context, ds *dataset.Dataset, ix manifest.IndexInfo) string {
	if ix.TypeURL == "" {
		switch ds.IndexTypeName(ctx, ix) {
		case "BTree":
			return "BTREE"
		case "Bitmap":
			return "BITMAP"
		case "LabelList":
			return "LABEL_LIST"
		case "FTS":
			return "INVERTED"
		}
	}
	return indexTypeName(ix)
}

// indexTypeName names an index segment's type as the client does.
func indexTypeName(ix manifest.IndexInfo) string {
	if det, ok := lancerDetails(ix); ok {
		if n, ok := clientIndexTypes[det.Type]; ok {
			return n
		}
	}
	switch ix.Type {
	case "BTree":
		return "BTREE"
	case "Bitmap":
		return "BITMAP"
	case "LabelList":
		return "LABEL_LIST"
	case "Inverted":
		return "INVERTED"
	case "Vector":
		return "IVF_PQ"
	}
	return strings.ToUpper(ix.Type)
}

// listIndices answers index/list/ {"version"}.
func (s *Server) listIndices(w http.ResponseWriter, r *http.Request) error {
	ds, err := s.openRead(r)
	if err != nil {
		return err
	}
	out := summarizeIndices(r.Context(), ds)
	if out == nil {
		out = []*indexSummary{}
	}
	return writeJSON(w, map[string]any{"indexes": out})
}

// indexStats answers index/{name}/stats/ {"version"}; a missing index is
// a 404, which the client reports as undefined.
func (s *Server) indexStats(w http.ResponseWriter, r *http.Request) error {
	ds, err := s.openRead(r)
	if err != nil {
		return err
	}
	index := r.PathValue("name")
	for _, sum := range summarizeIndices(r.Context(), ds) {
		if sum.Name != index {
			continue
		}
		resp := map[string]any{
			"num_indexed_rows":   sum.Indexed,
			"num_unindexed_rows": sum.Unindexed,
			"index_type":         sum.Type,
			"num_indices":        sum.Segments,
		}
		if sum.metric != "" {
			resp["distance_type"] = sum.metric
		}
		return writeJSON(w, resp)
	}
	return &apiError{status: http.StatusNotFound, code: codeNotFound, msg: fmt.Sprintf("index %q not found in table %q", index, r.PathValue("id"))}
}

// dropIndex answers index/{name}/drop/; a missing index is a 404, which
// the client reports as IndexNotFound.
func (s *Server) dropIndex(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	index := r.PathValue("name")
	branchName := r.URL.Query().Get("branch")
	return s.write(w, r, name, func(ctx context.Context) (any, error) {
		ds, err := s.open(ctx, name, 0, branchName)
		if err != nil {
			return nil, err
		}
		if _, err := ds.DropIndex(ctx, index, nil); err != nil {
			if errors.Is(err, lancer.ErrNotFound) {
				return nil, &apiError{status: http.StatusNotFound, code: codeNotFound,
					msg: fmt.Sprintf("index %q not found in table %q", index, name), err: err}
			}
			return nil, err
		}
		return struct{}{}, nil
	})
}
