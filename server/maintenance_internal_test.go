package server

import (
	"testing"

	"github.com/lancerdb/lancer/dataset/manifest"
)

// TestMaintenanceTriggers: what the maintenance counts from a manifest,
// and the indices that keep it from compacting.
func TestMaintenanceTriggers(t *testing.T) {
	m := &manifest.Manifest{Fragments: []*manifest.Fragment{{ID: 0, PhysicalRows: 1 << 20}, {ID: 1, PhysicalRows: 10}, {ID: 2, PhysicalRows: 10}}}
	if small, unindexed := fragmentsToFix(m, 1<<20); small != 2 || unindexed != 0 {
		t.Errorf("no index: %d small, %d unindexed; want 2, 0", small, unindexed)
	}
	m.Indices = []manifest.IndexInfo{
		{Name: "a", Fields: []string{"v"}, TypeURL: manifest.VectorIndexTypeURL, Fragments: []uint32{0}},
		{Name: "a", Fields: []string{"v"}, TypeURL: manifest.VectorIndexTypeURL, Fragments: []uint32{1}},
		{Name: "b", Fields: []string{"w"}, TypeURL: manifest.VectorIndexTypeURL, Fragments: []uint32{0}},
		{Name: "gone", Fields: []string{"#7"}, TypeURL: manifest.VectorIndexTypeURL},
	}
	if _, unindexed := fragmentsToFix(m, 1<<20); unindexed != 2 {
		t.Errorf("b misses 2 fragments (gone's column was dropped); counted %d", unindexed)
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
