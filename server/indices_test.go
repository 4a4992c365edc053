package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/dataset/vecindex"
	"github.com/lancerdb/lancer/server"
)

// TestServerCreateIndexNumBits: the official client's
// Index.ivfPq({numBits: 4}) sends num_bits (observed with the 0.39
// client); the index is built with 4-bit codes, as embedded LanceDB
// builds it, and widths Lance refuses are refused with a message naming
// them.
func TestServerCreateIndexNumBits(t *testing.T) {
	s, dir := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", vectorRows(t, 400, 8, 1), arrowBody); rec.Code != http.StatusOK {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	for _, tc := range []struct {
		body    string
		status  int
		bits    int
		mention string
	}{
		{`{"column":"vector","index_type":"IVF_PQ","max_iterations":50,"metric_type":"l2","num_bits":4,"num_partitions":2,"num_sub_vectors":2,"sample_rate":256}`, 200, 4, ""},
		{`{"column":"vector","index_type":"IVF_PQ","metric_type":"l2","num_partitions":2,"num_sub_vectors":2}`, 200, 8, ""},
		{`{"column":"vector","index_type":"IVF_PQ","metric_type":"l2","num_bits":8,"num_partitions":2,"num_sub_vectors":2}`, 200, 8, ""},
		{`{"column":"vector","index_type":"IVF_PQ","num_bits":3,"num_partitions":2,"num_sub_vectors":2}`, 400, 0, "3-bit PQ"},
		{`{"column":"vector","index_type":"IVF_HNSW_PQ","num_bits":4,"num_partitions":2,"num_sub_vectors":2}`, 400, 0, "4-bit PQ"},
		{`{"column":"vector","index_type":"IVF_PQ","num_bits":-4}`, 400, 0, "num_bits must be a non-negative integer"},
	} {
		rec := do(t, s, "POST", "/v1/table/t/create_index/", []byte(tc.body), nil)
		if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.mention) {
			t.Errorf("create_index %s: %d %s, want %d mentioning %q", tc.body, rec.Code, rec.Body, tc.status, tc.mention)
			continue
		}
		if tc.status != 200 {
			continue
		}
		ds := openLatest(t, dir)
		ixs := ds.Indices()
		if len(ixs) != 1 {
			t.Fatalf("create_index %s: %d segments, want the one replacing the last", tc.body, len(ixs))
		}
		spec, err := vecindex.ParseDetailsSpec(ixs[0].DetailsValue())
		if err != nil || spec.Quant != vecindex.QuantPQ || spec.PQBits != tc.bits {
			t.Errorf("create_index %s: details %+v (%v), want IVF_PQ of %d-bit codes", tc.body, spec, err, tc.bits)
		}
	}
}
