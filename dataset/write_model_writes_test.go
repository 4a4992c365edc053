package dataset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// The columns the write model tests generate, by name.
var genColumns = []arrow.Field{
	{Name: "key", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "vec", Type: arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Float32), Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "meta", Type: arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
	)},
}

// genBatch makes n rows of the given columns (typed as fields say, named
// by what they hold: a column's role is its first name, role[name]) with
// keys from key on.
func genBatch(rng *rand.Rand, mem memory.Allocator, fields []arrow.Field, roles []string, key int64, n int) arrow.RecordBatch {
	cols := make([]arrow.Array, len(fields))
	for i, f := range fields {
		b := array.NewBuilder(mem, f.Type)
		for r := range n {
			k := key + int64(r)
			null := f.Nullable && rng.IntN(6) == 0
			switch roles[i] {
			case "key":
				b.(*array.Int64Builder).Append(k)
			case "name":
				if null {
					b.AppendNull()
				} else {
					b.(*array.StringBuilder).Append(fmt.Sprintf("n%d-%s", k, strings.Repeat("x", rng.IntN(4))))
				}
			case "score":
				if null {
					b.AppendNull()
				} else {
					b.(*array.Float64Builder).Append(float64(k)*1.5 + float64(rng.IntN(100)))
				}
			case "vec":
				fb := b.(*array.FixedSizeListBuilder)
				if null {
					fb.AppendNull()
				} else {
					fb.Append(true)
					vb := fb.ValueBuilder().(*array.Float32Builder)
					for j := range 4 {
						vb.Append(float32(k) + float32(j)/4)
					}
				}
			case "tags":
				lb := b.(*array.ListBuilder)
				if null {
					lb.AppendNull()
				} else {
					lb.Append(true)
					vb := lb.ValueBuilder().(*array.StringBuilder)
					for j := range rng.IntN(4) {
						if rng.IntN(5) == 0 {
							vb.AppendNull()
						} else {
							vb.Append(fmt.Sprintf("t%d", (k+int64(j))%7))
						}
					}
				}
			case "meta":
				sb := b.(*array.StructBuilder)
				sb.Append(true)
				ab := sb.FieldBuilder(0).(*array.Int32Builder)
				if rng.IntN(5) == 0 {
					ab.AppendNull()
				} else {
					ab.Append(int32(k % 1000))
				}
				bb := sb.FieldBuilder(1).(*array.StringBuilder)
				if rng.IntN(5) == 0 {
					bb.AppendNull()
				} else {
					bb.Append(fmt.Sprint("m", k%13))
				}
			default:
				panic("unknown role " + roles[i])
			}
		}
		cols[i] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(n))
	releaseArrays(cols)
	return rec
}

// writeModel drives random writes through the public API.
type writeModel struct {
	t       *testing.T
	ctx     context.Context
	store   blob.Store
	mem     memory.Allocator
	rng     *rand.Rand
	opts    WriteOptions
	stable  bool
	latest  *Dataset
	snaps   map[uint64]*modelState
	handles map[uint64]*Dataset
	// roles maps field ids of the latest schema to what they hold.
	roles     map[uint64]map[int32]string
	keys      map[uint64]map[uint64]int64 // per version: row id → key
	nextKey   int64
	nextFrag  uint64
	nextRowID uint64
	log       []string
}

func (m *writeModel) cur() *modelState { return m.snaps[m.latest.Version()] }

// data makes an append or overwrite of n rows for schema fields (a subset
// of the generated columns, possibly renamed) and the model rows it adds,
// ids still unassigned.
func (m *writeModel) data(fields []arrow.Field, roles []string, n int) (array.RecordReader, []modelRow, []int64) {
	var recs []arrow.RecordBatch
	var rows []modelRow
	var keys []int64
	for n > 0 {
		k := min(n, 1+m.rng.IntN(40))
		rec := genBatch(m.rng, m.mem, fields, roles, m.nextKey, k)
		for i, b := range fixturetest.EncodeRows(m.t, rec) {
			var cols map[string]json.RawMessage
			if err := json.Unmarshal(b, &cols); err != nil {
				m.t.Fatal(err)
			}
			vals := map[int32]json.RawMessage{}
			for j, f := range fields {
				vals[-1-int32(j)] = cols[f.Name] // resolved to field ids by assign
			}
			rows = append(rows, modelRow{vals: vals})
			keys = append(keys, m.nextKey+int64(i))
		}
		m.nextKey += int64(k)
		n -= k
		recs = append(recs, rec)
	}
	r, err := array.NewRecordReader(arrow.NewSchema(fields, nil), recs)
	if err != nil {
		m.t.Fatal(err)
	}
	for _, rec := range recs {
		rec.Release()
	}
	return r, rows, keys
}

// assign resolves the rows' provisional column indices to the field ids of
// d's schema and gives them the row ids the commit must have assigned.
func (m *writeModel) assign(d *Dataset, fields []arrow.Field, rows []modelRow, prevNextFrag uint64) {
	perFile := uint64(m.opts.MaxRowsPerFile)
	for i := range rows {
		vals := map[int32]json.RawMessage{}
		for j, f := range fields {
			vals[d.Schema().Field(f.Name).ID] = rows[i].vals[-1-int32(j)]
		}
		rows[i].vals = vals
		if m.stable {
			rows[i].id = m.nextRowID
			m.nextRowID++
		} else {
			rows[i].id = (prevNextFrag+uint64(i)/perFile)<<32 | uint64(i)%perFile
		}
	}
	m.nextFrag = prevNextFrag + (uint64(len(rows))+perFile-1)/perFile
}

// committed records a new version.
func (m *writeModel) committed(d *Dataset, s *modelState, keys map[uint64]int64, roles map[int32]string, what string) {
	m.t.Helper()
	if d.Version() != m.latest.Version()+1 {
		m.t.Fatalf("%s committed version %d after %d", what, d.Version(), m.latest.Version())
	}
	m.log = append(m.log, fmt.Sprintf("v%d: %s", d.Version(), what))
	m.snaps[d.Version()] = s
	m.handles[d.Version()] = d
	m.keys[d.Version()] = keys
	m.roles[d.Version()] = roles
	m.latest = d
	checkState(m.t, d, s)
}

// columnsOf returns the generated columns the latest schema holds, as Arrow
// fields with the schema's names and types, and their roles.
func (m *writeModel) columnsOf(d *Dataset) ([]arrow.Field, []string) {
	roles := m.roles[d.Version()]
	var fields []arrow.Field
	var rs []string
	for _, f := range d.Schema().Fields {
		fields = append(fields, f.LogicalArrowField())
		rs = append(rs, roles[f.ID])
	}
	return fields, rs
}

func (m *writeModel) step(i int) {
	t, ctx := m.t, m.ctx
	cur := m.cur()
	base := m.latest
	if v := m.latest.Version(); v > 1 && m.rng.IntN(4) == 0 && (&model{t: t, store: m.store, latest: m.latest}).rebasable(v-1) {
		base = m.handles[v-1]
	}
	fields, roles := m.columnsOf(m.latest)
	keyName := ""
	for j, r := range roles {
		if r == "key" {
			keyName = fields[j].Name
		}
	}
	r := m.rng.IntN(100)
	if r >= 90 && r < 95 {
		r = 0 // overwrites replace everything: keep them rare
	}
	switch {
	case r < 30:
		// Append, sometimes without a nullable column.
		afields, aroles := fields, roles
		if k := m.rng.IntN(len(fields)); fields[k].Nullable && m.rng.IntN(3) == 0 {
			afields = slices.Delete(slices.Clone(fields), k, k+1)
			aroles = slices.Delete(slices.Clone(roles), k, k+1)
		}
		n := m.rng.IntN(3 * m.opts.MaxRowsPerFile)
		data, rows, keys := m.data(afields, aroles, n)
		defer data.Release()
		prevNextFrag := m.nextFrag
		d, err := base.Append(ctx, data, &AppendOptions{CommitOptions: m.opts.CommitOptions, MaxRowsPerFile: m.opts.MaxRowsPerFile})
		if err != nil {
			t.Fatalf("step %d: append: %v", i, err)
		}
		m.assign(d, afields, rows, prevNextFrag)
		s := cur.clone()
		s.rows = append(s.rows, rows...)
		km := cloneKeys(m.keys[m.latest.Version()])
		for j, r := range rows {
			km[r.id] = keys[j]
		}
		m.committed(d, s, km, m.roles[m.latest.Version()], fmt.Sprintf("append %d rows read at %d", n, base.Version()))
	case r < 55 && keyName != "" && len(cur.rows) > 0:
		// Delete by a predicate on the key.
		var pred string
		var match func(int64) bool
		switch m.rng.IntN(3) {
		case 0:
			mod, rem := int64(2+m.rng.IntN(6)), int64(m.rng.IntN(2))
			pred, match = fmt.Sprintf("%s %% %d = %d", quoteName(keyName), mod, rem), func(k int64) bool { return k%mod == rem }
		case 1:
			lo := m.keys[m.latest.Version()][cur.rows[m.rng.IntN(len(cur.rows))].id]
			hi := lo + int64(m.rng.IntN(30))
			pred, match = fmt.Sprintf("%s >= %d AND %s < %d", quoteName(keyName), lo, quoteName(keyName), hi), func(k int64) bool { return k >= lo && k < hi }
		default:
			pred, match = quoteName(keyName)+" < 0", func(int64) bool { return false }
		}
		d, err := base.Delete(ctx, pred, nil)
		if err != nil {
			t.Fatalf("step %d: delete %q read at %d: %v", i, pred, base.Version(), err)
		}
		// The predicate removes what matched in the base version.
		baseKeys := m.keys[base.Version()]
		gone := map[uint64]bool{}
		for _, r := range m.snaps[base.Version()].rows {
			if match(baseKeys[r.id]) {
				gone[r.id] = true
			}
		}
		s := cur.clone()
		s.rows = slices.DeleteFunc(s.rows, func(r modelRow) bool { return gone[r.id] })
		m.committed(d, s, m.keys[m.latest.Version()], m.roles[m.latest.Version()], fmt.Sprintf("delete %q read at %d", pred, base.Version()))
		(&model{t: t, ctx: ctx}).checkDeletionFiles(d)
	case r < 65 && len(cur.rows) > 0:
		var ids []uint64
		for _, r := range cur.rows {
			if m.rng.IntN(5) == 0 {
				ids = append(ids, r.id)
			}
		}
		d, err := m.latest.DeleteRowIDs(ctx, ids, nil)
		if err != nil {
			t.Fatalf("step %d: delete row ids: %v", i, err)
		}
		gone := map[uint64]bool{}
		for _, id := range ids {
			gone[id] = true
		}
		s := cur.clone()
		s.rows = slices.DeleteFunc(s.rows, func(r modelRow) bool { return gone[r.id] })
		m.committed(d, s, m.keys[m.latest.Version()], m.roles[m.latest.Version()], fmt.Sprintf("delete %d row ids", len(ids)))
	case r < 72:
		v := 1 + uint64(m.rng.IntN(int(m.latest.Version())))
		d, err := m.handles[v].Restore(ctx, nil)
		if err != nil {
			t.Fatalf("step %d: restore %d: %v", i, v, err)
		}
		m.committed(d, m.snaps[v].clone(), m.keys[v], m.roles[v], fmt.Sprintf("restore %d", v))
	case r < 80 && len(fields) > 1:
		k := m.rng.IntN(len(fields))
		if !fields[k].Nullable && m.rng.IntN(2) == 0 {
			return // keep the key column most of the time
		}
		d, err := m.latest.DropColumns(ctx, []string{fields[k].Name}, nil)
		if err != nil {
			t.Fatalf("step %d: drop %q: %v", i, fields[k].Name, err)
		}
		s := cur.clone()
		s.fields = slices.DeleteFunc(s.fields, func(f modelField) bool { return f.name == fields[k].Name })
		m.committed(d, s, m.keys[m.latest.Version()], m.roles[m.latest.Version()], "drop "+fields[k].Name)
	case r < 90:
		k := m.rng.IntN(len(fields))
		name := fmt.Sprintf("%s_%d", roles[k], i)
		if m.rng.IntN(3) == 0 {
			name = fmt.Sprintf("%s %d", strings.ToUpper(roles[k]), i)
		}
		d, err := m.latest.RenameColumn(ctx, fields[k].Name, name, nil)
		if err != nil {
			t.Fatalf("step %d: rename %q: %v", i, fields[k].Name, err)
		}
		s := cur.clone()
		for j := range s.fields {
			if s.fields[j].name == fields[k].Name {
				s.fields[j].name = name
			}
		}
		m.committed(d, s, m.keys[m.latest.Version()], m.roles[m.latest.Version()], "rename "+fields[k].Name+" to "+name)
	default:
		// Overwrite with a new schema: a random subset of the columns,
		// key first.
		ofields, oroles := []arrow.Field{genColumns[0]}, []string{"key"}
		for _, f := range genColumns[1:] {
			if m.rng.IntN(3) != 0 {
				ofields, oroles = append(ofields, f), append(oroles, f.Name)
			}
		}
		n := m.rng.IntN(2 * m.opts.MaxRowsPerFile)
		data, rows, keys := m.data(ofields, oroles, n)
		defer data.Release()
		o := m.opts
		o.Mode = WriteOverwrite
		d, err := Write(ctx, m.store, data, &o)
		if err != nil {
			t.Fatalf("step %d: overwrite: %v", i, err)
		}
		// An overwrite numbers its fragments from 0 again, and the
		// high-water mark stays.
		hwm := m.nextFrag
		m.assign(d, ofields, rows, 0)
		m.nextFrag = max(m.nextFrag, hwm)
		s := &modelState{rows: rows}
		roleOf := map[int32]string{}
		for j, f := range d.Schema().Fields {
			s.fields = append(s.fields, modelField{id: f.ID, name: f.Name, nullable: f.Nullable})
			roleOf[f.ID] = oroles[j]
		}
		km := map[uint64]int64{}
		for j, r := range rows {
			km[r.id] = keys[j]
		}
		m.committed(d, s, km, roleOf, fmt.Sprintf("overwrite with %d rows", n))
	}
}

func cloneKeys(m map[uint64]int64) map[uint64]int64 {
	out := make(map[uint64]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func quoteName(name string) string {
	if strings.ContainsAny(name, " .`") || strings.ToLower(name) != name {
		return "`" + strings.ReplaceAll(name, "`", "``") + "`"
	}
	return name
}

// TestWriteModelWrites runs random writes through the public API (Write,
// Append, Delete, DeleteRowIDs, Restore, DropColumns, RenameColumn) on new
// datasets of every writable file version, with and without stable row ids
// and with both manifest namings, against the model.
func TestWriteModelWrites(t *testing.T) {
	for _, v := range []format.Version{format.Version2_0, format.Version2_1, format.Version2_2} {
		for _, tc := range []struct {
			name   string
			stable bool
			naming manifest.ManifestNaming
		}{{"plain", false, manifest.ManifestNamingV2}, {"stable", true, manifest.ManifestNamingV2}, {"v1names", false, manifest.ManifestNamingV1}} {
			for seed := uint64(1); seed <= 2; seed++ {
				t.Run(fmt.Sprintf("%s/%s/seed%d", v, tc.name, seed), func(t *testing.T) {
					runWriteModel(t, v, tc.stable, tc.naming, seed, 30)
				})
			}
		}
	}
}

func runWriteModel(t *testing.T, v format.Version, stable bool, naming manifest.ManifestNaming, seed uint64, steps int) *writeModel {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store, err := blob.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := &writeModel{
		t: t, ctx: ctx, store: store, mem: mem,
		rng:     rand.New(rand.NewPCG(seed, uint64(v.Minor)*31+seed)),
		opts:    WriteOptions{FileVersion: v, MaxRowsPerFile: 16, EnableStableRowIDs: stable, ManifestNaming: naming, CommitOptions: CommitOptions{Allocator: mem}},
		stable:  stable,
		snaps:   map[uint64]*modelState{},
		handles: map[uint64]*Dataset{},
		roles:   map[uint64]map[int32]string{},
		keys:    map[uint64]map[uint64]int64{},
	}
	roles := make([]string, len(genColumns))
	for i, f := range genColumns {
		roles[i] = f.Name
	}
	data, rows, keys := m.data(genColumns, roles, 40)
	d, err := Write(ctx, store, data, &m.opts)
	data.Release()
	if err != nil {
		t.Fatal(err)
	}
	m.assign(d, genColumns, rows, 0)
	s := &modelState{rows: rows}
	roleOf := map[int32]string{}
	for i, f := range d.Schema().Fields {
		s.fields = append(s.fields, modelField{id: f.ID, name: f.Name, nullable: f.Nullable})
		roleOf[f.ID] = roles[i]
	}
	km := map[uint64]int64{}
	for i, r := range rows {
		km[r.id] = keys[i]
	}
	m.snaps[1], m.handles[1], m.keys[1], m.roles[1], m.latest = s, d, km, roleOf, d
	checkState(t, d, s)
	if _, err := Write(ctx, store, data, &m.opts); !errors.Is(err, lancer.ErrAlreadyExists) {
		t.Fatalf("a second create: %v", err)
	}
	for i := range steps {
		m.step(i)
		if t.Failed() {
			t.Fatalf("after %s", strings.Join(m.log, "; "))
		}
	}
	for v := uint64(1); v <= m.latest.Version(); v++ {
		d, err := m.latest.Checkout(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		checkState(t, d, m.snaps[v])
	}
	t.Log(strings.Join(m.log, "\n"))
	names := map[manifest.ManifestNaming]bool{}
	if err := scanVersions(ctx, store, func(e manifestEntry, s manifest.ManifestNaming) bool { names[s] = true; return true }); err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || !names[naming] {
		t.Fatalf("manifest names %v, want %s", names, naming)
	}
	return m
}
