package dataset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// The model tests run random sequences of commits against an in-memory
// model of the rows: after every step the latest version and every older
// one must scan exactly as the model says.

type modelField struct {
	id       int32
	name     string
	nullable bool
}

type modelRow struct {
	id   uint64
	vals map[int32]json.RawMessage // by top-level field id
}

// modelState is what one version must scan as.
type modelState struct {
	fields []modelField
	rows   []modelRow
}

func (s *modelState) clone() *modelState {
	return &modelState{fields: slices.Clone(s.fields), rows: slices.Clone(s.rows)}
}

// stateOf builds the state of a version from its own scan (the reader is
// checked against real Lance elsewhere).
func stateOf(t testing.TB, d *Dataset) *modelState {
	s := &modelState{}
	for _, f := range d.Schema().Fields {
		s.fields = append(s.fields, modelField{id: f.ID, name: f.Name, nullable: f.Nullable})
	}
	for _, r := range scanAll(t, d) {
		vals := map[int32]json.RawMessage{}
		for _, f := range s.fields {
			vals[f.id] = r.cols[f.name]
		}
		s.rows = append(s.rows, modelRow{id: r.id, vals: vals})
	}
	return s
}

// checkState compares a version's scan with the model.
func checkState(t testing.TB, d *Dataset, want *modelState) {
	t.Helper()
	var names, wantNames []string
	for _, f := range d.Schema().Fields {
		names = append(names, f.Name)
	}
	for _, f := range want.fields {
		wantNames = append(wantNames, f.name)
	}
	if !slices.Equal(names, wantNames) {
		t.Fatalf("version %d: columns %q, want %q", d.Version(), names, wantNames)
	}
	rows := scanAll(t, d)
	if len(rows) != len(want.rows) {
		t.Fatalf("version %d: %d rows, want %d (ids %v, want %v)", d.Version(), len(rows), len(want.rows),
			rowIDs(rows), modelIDs(want.rows))
	}
	n, err := d.CountRows(context.Background())
	if err != nil || n != uint64(len(want.rows)) {
		t.Fatalf("version %d: CountRows = %d, %v; want %d", d.Version(), n, err, len(want.rows))
	}
	for i, r := range rows {
		w := want.rows[i]
		if r.id != w.id {
			t.Fatalf("version %d row %d: _rowid %d, want %d", d.Version(), i, r.id, w.id)
		}
		for _, f := range want.fields {
			got, exp := string(r.cols[f.name]), "null"
			if v, ok := w.vals[f.id]; ok && v != nil {
				exp = string(v)
			}
			if got != exp {
				t.Fatalf("version %d row %d (_rowid %d) column %q: %s, want %s", d.Version(), i, r.id, f.name, got, exp)
			}
		}
	}
}

func modelIDs(rows []modelRow) []uint64 {
	out := make([]uint64, len(rows))
	for i, r := range rows {
		out[i] = r.id
	}
	return out
}

// model drives and checks one random sequence.
type model struct {
	t       *testing.T
	ctx     context.Context
	store   blob.Store
	bank    *bank
	rng     *rand.Rand
	stable  bool
	snaps   map[uint64]*modelState
	handles map[uint64]*Dataset
	// since holds, per version, the kinds of the commits made after it.
	latest    *Dataset
	nextFrag  uint64 // the fragment id the next new fragment gets
	nextRowID uint64
	log       []string
}

func newModel(t *testing.T, store blob.Store, seed uint64) *model {
	ctx := context.Background()
	mem := checkedAlloc(t)
	m := &model{
		t: t, ctx: ctx, store: store,
		rng:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		snaps:   map[uint64]*modelState{},
		handles: map[uint64]*Dataset{},
	}
	m.latest = openStore(t, store, 0, mem)
	m.bank = loadBank(t, store)
	m.stable = m.latest.manifest.StableRowIDs()
	for v := uint64(1); v <= m.latest.Version(); v++ {
		d, err := m.latest.Checkout(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		m.snaps[v] = stateOf(t, d)
		m.handles[v] = d
	}
	if hwm, ok := m.latest.manifest.FragmentHighWater(); ok {
		m.nextFrag = hwm + 1
	}
	m.nextRowID = m.latest.manifest.NextRowID
	return m
}

func (m *model) cur() *modelState { return m.snaps[m.latest.Version()] }

// bankFits reports whether the bank's rows can be appended to a version of
// state s: every non-nullable column must be in the bank.
func (m *model) bankFits(s *modelState) bool {
	for _, f := range s.fields {
		if !f.nullable && m.bank.rows[0][f.id] == nil {
			return false
		}
	}
	return true
}

// committed records a new version with state s.
func (m *model) committed(d *Dataset, s *modelState, what string) {
	m.t.Helper()
	if d.Version() != m.latest.Version()+1 {
		m.t.Fatalf("%s committed version %d after %d", what, d.Version(), m.latest.Version())
	}
	m.log = append(m.log, fmt.Sprintf("v%d: %s", d.Version(), what))
	m.snaps[d.Version()] = s
	m.handles[d.Version()] = d
	m.latest = d
	checkState(m.t, d, s)
}

// bankRows returns the rows n new fragments of the bank add, given the ids
// the fragments get, as the model expects them.
func (m *model) bankRows(fragIDs []uint64) []modelRow {
	var out []modelRow
	for _, fid := range fragIDs {
		for i, vals := range m.bank.rows {
			id := fid<<32 | uint64(i)
			if m.stable {
				id = m.nextRowID
				m.nextRowID++
			}
			out = append(out, modelRow{id: id, vals: vals})
		}
	}
	return out
}

func (m *model) newFragIDs(n int) []uint64 {
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = m.nextFrag
		m.nextFrag++
	}
	return ids
}

// step runs one random operation.
func (m *model) step(i int) {
	t := m.t
	cur := m.cur()
	// A stale handle: an older version whose later commits an append or a
	// delete can be rebased over.
	base := m.latest
	if v := m.latest.Version(); v > 1 && m.rng.IntN(4) == 0 {
		if old := v - 1 - uint64(m.rng.IntN(min(int(v)-1, 3))); m.rebasable(old) {
			base = m.handles[old]
		}
	}
	r := m.rng.IntN(100)
	if r >= 92 && r < 96 {
		r = 60 + m.rng.IntN(10) // restore rather than overwrite, mostly
	}
	switch {
	case r < 30 && m.bankFits(cur):
		n := 1 + m.rng.IntN(2)
		d, err := appendBank(m.ctx, t, base, m.bank, n, 0)
		if err != nil {
			t.Fatalf("step %d: append on version %d: %v", i, base.Version(), err)
		}
		s := cur.clone()
		s.rows = append(s.rows, m.bankRows(m.newFragIDs(n))...)
		m.committed(d, s, fmt.Sprintf("append %d fragments read at %d", n, base.Version()))
	case r < 60 && len(cur.rows) > 0:
		// Delete rows live in both the base and the latest version, and
		// sometimes every row of one fragment.
		baseRows := scanAll(t, base)
		live := map[uint64]bool{}
		for _, r := range cur.rows {
			live[r.id] = true
		}
		var ids []uint64
		if m.rng.IntN(3) == 0 {
			frag := baseRows[m.rng.IntN(len(baseRows))].addr >> 32
			for _, r := range baseRows {
				if r.addr>>32 == frag && live[r.id] {
					ids = append(ids, r.id)
				}
			}
		} else {
			for _, r := range baseRows {
				if live[r.id] && m.rng.IntN(4) == 0 {
					ids = append(ids, r.id)
				}
			}
		}
		d, err := base.DeleteRowIDs(m.ctx, ids, nil)
		if err != nil {
			t.Fatalf("step %d: delete %v on version %d: %v", i, ids, base.Version(), err)
		}
		gone := map[uint64]bool{}
		for _, id := range ids {
			gone[id] = true
		}
		s := cur.clone()
		s.rows = slices.DeleteFunc(s.rows, func(r modelRow) bool { return gone[r.id] })
		m.committed(d, s, fmt.Sprintf("delete %d rows read at %d", len(ids), base.Version()))
		m.checkDeletionFiles(d)
	case r < 80 && r >= 70 && len(cur.fields) > 1:
		k := m.rng.IntN(len(cur.fields))
		d, err := m.latest.DropColumns(m.ctx, []string{cur.fields[k].name}, nil)
		if err != nil {
			t.Fatalf("step %d: drop %q: %v", i, cur.fields[k].name, err)
		}
		s := cur.clone()
		s.fields = slices.Delete(s.fields, k, k+1)
		m.committed(d, s, "drop "+cur.fields[k].name)
	case r < 90 && r >= 80:
		k := m.rng.IntN(len(cur.fields))
		name := fmt.Sprintf("c%d_%s", i, strings.SplitN(cur.fields[k].name, "_", 2)[len(strings.SplitN(cur.fields[k].name, "_", 2))-1])
		d, err := m.latest.RenameColumn(m.ctx, cur.fields[k].name, name, nil)
		if err != nil {
			t.Fatalf("step %d: rename %q: %v", i, cur.fields[k].name, err)
		}
		s := cur.clone()
		s.fields[k].name = name
		m.committed(d, s, "rename "+cur.fields[k].name+" to "+name)
	case r < 96:
		v := 1 + uint64(m.rng.IntN(int(m.latest.Version())))
		d, err := m.handles[v].Restore(m.ctx, nil)
		if err != nil {
			t.Fatalf("step %d: restore %d: %v", i, v, err)
		}
		m.committed(d, m.snaps[v].clone(), fmt.Sprintf("restore %d", v))
	default:
		d, err := overwriteBank(m.ctx, t, m.latest, m.bank, false)
		if err != nil {
			t.Fatalf("step %d: overwrite: %v", i, err)
		}
		s := &modelState{}
		for _, f := range m.bank.schema.Fields {
			s.fields = append(s.fields, modelField{id: f.ID, name: f.Name, nullable: f.Nullable})
		}
		m.nextFrag = 0
		s.rows = m.bankRows(m.newFragIDs(1))
		m.committed(d, s, "overwrite")
		if hwm, ok := d.manifest.FragmentHighWater(); ok {
			m.nextFrag = hwm + 1
		}
	}
}

// rebasable reports whether only appends and deletes were committed after
// version v, so an append or delete read at v can be rebased.
func (m *model) rebasable(v uint64) bool {
	for w := v + 1; w <= m.latest.Version(); w++ {
		switch manifest.OperationName(rawTransaction(m.t, m.store, w)) {
		case "Append", "Delete":
		default:
			return false
		}
	}
	return true
}

// checkDeletionFiles checks that each fragment's deletion file holds all
// its deleted rows and that no fragment lost every row.
func (m *model) checkDeletionFiles(d *Dataset) {
	for _, f := range d.manifest.Fragments {
		if f.DeletionFile == nil {
			continue
		}
		dv, err := d.deletionVector(m.ctx, f)
		if err != nil {
			m.t.Fatal(err)
		}
		if dv.count() == f.PhysicalRows {
			m.t.Fatalf("version %d: fragment %d has every row deleted but is still listed", d.Version(), f.ID)
		}
		wantKind := manifest.DeletionArrow
		if dv.count() >= 5000 { // manifest.EncodeDeletionFile's threshold
			wantKind = manifest.DeletionBitmap
		}
		if f.DeletionFile.Kind != wantKind && f.DeletionFile.ReadVersion >= m.snapsStart() {
			m.t.Fatalf("version %d: fragment %d: %d deletions in a %s file", d.Version(), f.ID, dv.count(), f.DeletionFile.Kind)
		}
	}
}

func (m *model) snapsStart() uint64 { return 1 }

// checkAll checks every version against its snapshot.
func (m *model) checkAll() {
	for v := uint64(1); v <= m.latest.Version(); v++ {
		d, err := m.latest.Checkout(m.ctx, v)
		if err != nil {
			m.t.Fatalf("checkout %d: %v", v, err)
		}
		checkState(m.t, d, m.snaps[v])
	}
	versions, err := ListVersions(m.ctx, m.store)
	if err != nil {
		m.t.Fatal(err)
	}
	for i, v := range versions {
		if v != uint64(i+1) {
			m.t.Fatalf("versions %v are not dense from 1", versions)
		}
	}
}

// TestWriteModel runs random operations on copies of Lance-written
// datasets of every file version, committed by lancer without a data file
// writer (appends copy the data file of the first fragment).
func TestWriteModel(t *testing.T) {
	fixtures := []string{"history_v2_2", "history_v2_1", "history_v2_0", "history_vlegacy", "history_v2_2_stable_rowids", "v1_manifest_paths_v2_2"}
	for _, name := range fixtures {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", name, seed), func(t *testing.T) {
				_, store := copyFixture(t, name)
				m := newModel(t, store, seed)
				if !m.bankFits(m.cur()) {
					// Lance's added column "extra" is not nullable: drop
					// it so that appends of the bank fit.
					var drop []string
					for _, f := range m.cur().fields {
						if !f.nullable && m.bank.rows[0][f.id] == nil {
							drop = append(drop, f.name)
						}
					}
					d, err := m.latest.DropColumns(m.ctx, drop, nil)
					if err != nil {
						t.Fatal(err)
					}
					s := m.cur().clone()
					s.fields = slices.DeleteFunc(s.fields, func(f modelField) bool { return slices.Contains(drop, f.name) })
					m.committed(d, s, "drop "+strings.Join(drop, ","))
				}
				for i := range 24 {
					m.step(i)
					if t.Failed() {
						t.Fatalf("after %s", strings.Join(m.log, "; "))
					}
					if i%6 == 5 {
						m.checkAll()
					}
				}
				m.checkAll()
				names := map[string]bool{}
				err := scanVersions(m.ctx, store, func(e manifestEntry, s manifest.ManifestNaming) bool {
					names[s.String()] = true
					return true
				})
				if err != nil || len(names) != 1 {
					t.Fatalf("manifest names %v: %v", slices.Collect(maps.Keys(names)), err)
				}
			})
		}
	}
}

// TestStaleAppendAfterOverwrite: an append read before an overwrite or a
// restore fails with a ConflictError naming the version.
func TestStaleAppendAfterOverwrite(t *testing.T) {
	ctx := context.Background()
	_, store := copyFixture(t, "history_v2_2")
	mem := checkedAlloc(t)
	d := openStore(t, store, 0, mem)
	b := loadBank(t, store)
	if _, err := overwriteBank(ctx, t, d, b, false); err != nil {
		t.Fatal(err)
	}
	_, err := appendBank(ctx, t, d, b, 1, 3)
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, lancer.ErrConflict) {
		t.Fatalf("append over an overwrite: %v, want a ConflictError", err)
	}
	if ce.Version != d.Version()+1 || ce.OtherOperation != "Overwrite" || ce.Operation != "Append" || ce.OtherTransaction == "" {
		t.Errorf("conflict %+v", ce)
	}
	t.Log(err)
}
