package baselinetest

import (
	"slices"
	"testing"
)

// TestMatchesLanceBaseline pins the generator to values that
// lance-baseline.mjs's generator prints under Node (first centre
// coordinates, the last centre coordinate, the first and third vectors).
func TestMatchesLanceBaseline(t *testing.T) {
	r := &mulberry32{12345}
	centers := make([]float32, 256*128)
	for i := range centers {
		centers[i] = float32(r.gauss())
	}
	vecs, _ := Clustered(3, 128, 256, 100, 12345)
	got := []float32{centers[0], centers[1], centers[32767], vecs[0], vecs[383]}
	want := []float32{-0.07064807415008545, 0.49860718846321106, 0.3720998764038086, 1.2214338779449463, 0.8119993209838867}
	if !slices.Equal(got, want) {
		t.Fatalf("generator drifted from lance-baseline.mjs: got %v, want %v", got, want)
	}
}
