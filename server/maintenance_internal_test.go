package server

import (
	"testing"

	"github.com/lancerdb/lancer/dataset/manifest"
)

// TestMaintenanceTriggers: what the maintenance counts from a manifest,
// and the indices that keep it from compacting.
func TestMaintenanceTriggers(t *testing.T) {
	m := &manifest.Manifest{Fragments: []*manifest.Fragment{{ID: 0, PhysicalRows: 1 << 20}, {ID: 1, PhysicalRows: 10}, {ID: 2, PhysicalRows: 10}}}
	if n := fragmentsToFix(m, 1<<20); n.small != 2 || n.unindexed != 0 || n.unindexedRows != 0 {
		t.Errorf("no index: %+v; want 2 small, nothing unindexed", n)
	}
	m.Indices = []manifest.IndexInfo{
		{Name: "a", Fields: []string{"v"}, TypeURL: manifest.VectorIndexTypeURL, Fragments: []uint32{0}},
		{Name: "a", Fields: []string{"v"}, TypeURL: manifest.VectorIndexTypeURL, Fragments: []uint32{1}},
		{Name: "b", Fields: []string{"w"}, TypeURL: manifest.VectorIndexTypeURL, Fragments: []uint32{0}},
		{Name: "gone", Fields: []string{"#7"}, TypeURL: manifest.VectorIndexTypeURL},
	}
	if n := fragmentsToFix(m, 1<<20); n.unindexed != 2 || n.unindexedRows != 20 {
		t.Errorf("b misses 2 fragments of 20 rows (gone's column was dropped); counted %+v", n)
	}
	// One large fragment no index covers: few fragments, many rows.
	m.Fragments = append(m.Fragments, &manifest.Fragment{ID: 3, PhysicalRows: 50_000})
	if n := fragmentsToFix(m, 1<<20); n.unindexed != 3 || n.unindexedRows != 50_020 {
		t.Errorf("b misses 3 fragments of 50,020 rows; counted %+v", n)
	}
	if foreignIndex(m) {
		t.Error("lancer's own indices keep maintenance from compacting")
	}
	m.Indices = append(m.Indices, manifest.IndexInfo{Name: "lance", TypeURL: "/lance.table.VectorIndexDetails"})
	if !foreignIndex(m) {
		t.Error("an index real Lance built does not keep maintenance from compacting (without stable row ids)")
	}
	m.ReaderFeatureFlags |= manifest.FlagStableRowIDs
	if foreignIndex(m) {
		t.Error("with stable row ids every index keeps its rows: compaction is safe")
	}
}
