package server_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/server"
)

// TestListIndicesWithoutDetails: old Lance wrote scalar index segments
// without index_details. list_indices names such a BTree "BTREE", as Lance
// tells it from the segment's files, not a vector type.
func TestListIndicesWithoutDetails(t *testing.T) {
	s, dir := newServer(t, server.Options{})
	if rec := do(t, s, "POST", "/v1/table/t/create/", rows(t, 300, true), arrowBody); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, s, "POST", "/v1/table/t/create_index/", []byte(`{"column":"id","index_type":"BTREE","name":"id_idx"}`), nil); rec.Code != 200 {
		t.Fatalf("create_index: %d %s", rec.Code, rec.Body)
	}
	// Strip the segment's details, as old Lance wrote it.
	vdir := filepath.Join(dir, "t.lance", manifest.VersionsDir)
	entries, err := os.ReadDir(vdir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".manifest") {
			continue
		}
		path := filepath.Join(vdir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		store := fixturetest.MemStore(t, map[string][]byte{manifest.VersionsDir + e.Name(): b})
		c, err := manifest.ReadFile(context.Background(), store, manifest.VersionsDir+e.Name(), 0, false)
		if err != nil {
			t.Fatal(err)
		}
		m := c.Manifest.Clone()
		segs := m.IndexSegments()
		for _, seg := range segs {
			seg.Details = nil
		}
		m.SetIndexSegments(segs)
		out, err := manifest.EncodeFile(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rec := do(t, s, "POST", "/v1/table/t/index/list/", []byte(`{}`), nil)
	if body := rec.Body.String(); rec.Code != 200 || !strings.Contains(body, `"index_type":"BTREE"`) {
		t.Errorf("list_indices of a BTree without details: %d %s", rec.Code, body)
	}
}
