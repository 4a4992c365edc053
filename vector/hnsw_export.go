package vector

import (
	"context"
	"fmt"

	"github.com/lancerdb/lancer"
)

// Entry returns the node searches start from (0 for an empty graph): a
// node of the top level, MaxLevel.
func (h *HNSW) Entry() uint32 {
	if h.n == 0 {
		return 0
	}
	return h.entry
}

// MaxLevel returns the graph's top level (0 when it is one layer).
func (h *HNSW) MaxLevel() int { return h.maxLevel }

// M returns the graph's M (neighbours per node on the upper levels; twice
// as many on level 0) and EfConstruction.
func (h *HNSW) M() (m, efConstruction int) { return h.m, h.efc }

// Level returns node id's top level: it is on levels 0..Level(id).
func (h *HNSW) Level(id uint32) int { return int(h.levels[id]) }

// Neighbors returns node id's neighbours on level l (at most Level(id)),
// for writing the graph in another format. Do not modify them; the graph
// must not be built on meanwhile.
func (h *HNSW) Neighbors(id uint32, l int) []uint32 {
	if l > int(h.levels[id]) {
		return nil
	}
	return h.neighbors(id, l)
}

// PartitionGraph returns partition p's HNSW graph (SubHNSW; nil for an
// empty partition or a SubFlat index), whose node i is row i of
// PartitionRows(p), for writing the index in another format.
func (x *IVF) PartitionGraph(ctx context.Context, p int) (*HNSW, error) {
	if p < 0 || p >= x.Partitions() {
		return nil, fmt.Errorf("vector: partition %d of %d: %w", p, x.Partitions(), lancer.ErrInvalidArgument)
	}
	pt, err := x.part(ctx, p)
	if err != nil {
		return nil, err
	}
	return pt.graph, nil
}

// HNSWParams returns the M and EfConstruction the partitions' graphs were
// built with (0, 0 for SubFlat).
func (x *IVF) HNSWParams() (m, efConstruction int) { return x.m, x.efc }

// BuildPartitionHNSW builds the graph of one IVF partition (rows packed in
// vecs, dim floats each) as BuildIVF builds its partitions' graphs: from
// exact candidate lists for small partitions, by BuildHNSW's insertion
// (one worker, so the graph is a pure function of its input) for larger
// ones. It is for writing a partition's graph in another index format
// over rows BuildIVF did not partition (a delta segment, a remapped one).
func BuildPartitionHNSW(vecs []float32, dim int, opts *HNSWOptions) (*HNSW, error) {
	var o HNSWOptions
	if opts != nil {
		o = *opts
	}
	o.Workers = 1
	o = o.withDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if dim < 1 || len(vecs)%dim != 0 {
		return nil, fmt.Errorf("vector: HNSW of %d floats with dimension %d: %w", len(vecs), dim, lancer.ErrInvalidArgument)
	}
	return buildPartitionGraph(vecs[:len(vecs):len(vecs)], dim, o, nil)
}
