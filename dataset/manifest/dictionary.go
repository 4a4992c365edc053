package manifest

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/schema"
)

// Legacy dictionaries (M1): a legacy manifest file starts with the values
// of every dictionary field, field by field in id order, each encoded as a
// legacy page of the value type, and the field's Dictionary records where
// (binary-like values: the bytes, then count+1 i64 absolute positions of
// their boundaries, Offset at the positions; integers: the values back to
// back, Offset at the first). Lance loads them on open and writes them
// again into every manifest it commits; so does lancer. Releases up to
// about Lance 0.22 also wrote them into the manifests of 2.x datasets, and
// load the values of any field whose Dictionary records some, whatever
// the format: a manifest that keeps such a record must keep the values
// too. Later releases record {0, 0} for 2.x datasets: nothing to load or
// write.

// maxDictionaryValues bounds the values of one legacy dictionary a
// manifest may declare: Lance's keys are at most 32-bit in practice, and
// the positions alone of more values than this would not fit a manifest
// worth opening.
const maxDictionaryValues = 1 << 24

// Dictionaries returns the values of the legacy dictionary fields by field
// id (empty unless the manifest is legacy and has dictionary fields).
// Callers must not modify them.
func (m *Manifest) Dictionaries() map[int32]*schema.DictionaryValues { return m.dictionaries }

// dictionaryFields returns the recorded fields that are dictionaries, by
// id ascending, with their value types.
func (m *Manifest) dictionaryFields() ([]*schema.Field, []arrow.DataType) {
	var fields []*schema.Field
	var types []arrow.DataType
	for _, f := range m.fields {
		if f.Dictionary == nil || m.Schema == nil {
			continue
		}
		sf := m.Schema.FieldByID(f.ID)
		if sf == nil {
			continue
		}
		dt, ok := sf.Type.(*arrow.DictionaryType)
		if !ok {
			continue
		}
		fields = append(fields, f)
		types = append(types, dt.ValueType)
	}
	order := make([]int, len(fields))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(fields[a].ID) - int(fields[b].ID) })
	outF := make([]*schema.Field, len(order))
	outT := make([]arrow.DataType, len(order))
	for i, j := range order {
		outF[i], outT[i] = fields[j], types[j]
	}
	return outF, outT
}

// isBinaryLike reports whether legacy files store t as bytes plus
// positions.
func isBinaryLike(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
		return true
	}
	return false
}

// loadDictionaries reads the values of every legacy dictionary field from
// the manifest file (end is where the footer starts).
func (f *manifestFile) loadDictionaries(ctx context.Context, m *Manifest, end int64) error {
	fields, types := m.dictionaryFields()
	if len(fields) == 0 {
		return nil
	}
	m.dictionaries = make(map[int32]*schema.DictionaryValues, len(fields))
	for i, fd := range fields {
		d := fd.Dictionary
		if !m.DataFormat.IsLegacy() && d.Length == 0 {
			continue
		}
		if d.Offset < 0 || d.Length < 0 || d.Length > maxDictionaryValues || d.Offset > end {
			return f.corruptf("dictionary field %q (id %d) has %d values at %d", fd.Name, fd.ID, d.Length, d.Offset)
		}
		n := int(d.Length)
		var values [][]byte // made once the file is known to hold n values
		switch t := types[i]; {
		case isBinaryLike(t):
			if int64(n+1)*8 > end-d.Offset {
				return f.corruptf("dictionary field %q (id %d): %d value positions at %d run past the manifest", fd.Name, fd.ID, n+1, d.Offset)
			}
			raw, err := f.readAt(ctx, d.Offset, int64(n+1)*8)
			if err != nil {
				return err
			}
			pos := make([]int64, n+1)
			for k := range pos {
				pos[k] = int64(binary.LittleEndian.Uint64(raw[8*k:]))
				if pos[k] < 0 || pos[k] > d.Offset || (k > 0 && pos[k] < pos[k-1]) {
					return f.corruptf("dictionary field %q (id %d): value position %d is %d (values end at %d)", fd.Name, fd.ID, k, pos[k], d.Offset)
				}
			}
			bytes, err := f.readAt(ctx, pos[0], pos[n]-pos[0])
			if err != nil {
				return err
			}
			values = make([][]byte, n)
			for k := range values {
				values[k] = bytes[pos[k]-pos[0] : pos[k+1]-pos[0]]
			}
		case arrow.IsInteger(t.ID()):
			width := int64(t.(arrow.FixedWidthDataType).BitWidth() / 8)
			if int64(n)*width > end-d.Offset {
				return f.corruptf("dictionary field %q (id %d): %d values at %d run past the manifest", fd.Name, fd.ID, n, d.Offset)
			}
			raw, err := f.readAt(ctx, d.Offset, int64(n)*width)
			if err != nil {
				return err
			}
			values = make([][]byte, n)
			for k := range values {
				values[k] = raw[int64(k)*width : int64(k+1)*width]
			}
		default:
			return fmt.Errorf("dataset: manifest %s: dictionary field %q (id %d) of %s values: %w", f.where(), fd.Name, fd.ID, t, lancer.ErrUnsupported)
		}
		m.dictionaries[fd.ID] = schema.NewDictionaryValues(values)
	}
	return nil
}

// appendDictionaries lays out the dictionary values of m at the start of
// buf (empty) as Lance's write_manifest does, and returns buf and where
// each field's values went.
func appendDictionaries(m *Manifest, buf []byte) ([]byte, map[int32]schema.Dictionary, error) {
	fields, types := m.dictionaryFields()
	if len(fields) == 0 {
		return buf, nil, nil
	}
	at := make(map[int32]schema.Dictionary, len(fields))
	for i, fd := range fields {
		d := m.dictionaries[fd.ID]
		if d == nil && !m.DataFormat.IsLegacy() {
			continue // a 2.x manifest that records no values
		}
		if d == nil {
			return nil, nil, fmt.Errorf("dataset: encode manifest: dictionary field %q (id %d) without its values: %w", fd.Name, fd.ID, lancer.ErrUnsupported)
		}
		if isBinaryLike(types[i]) {
			start := uint64(len(buf))
			positions := binary.LittleEndian.AppendUint64(nil, start)
			for _, v := range d.Values {
				buf = append(buf, v...)
				positions = binary.LittleEndian.AppendUint64(positions, uint64(len(buf)))
			}
			at[fd.ID] = schema.Dictionary{Offset: int64(len(buf)), Length: int64(len(d.Values))}
			buf = append(buf, positions...)
			continue
		}
		at[fd.ID] = schema.Dictionary{Offset: int64(len(buf)), Length: int64(len(d.Values))}
		for _, v := range d.Values {
			buf = append(buf, v...)
		}
	}
	return buf, at, nil
}

func cloneDictionaries(d map[int32]*schema.DictionaryValues) map[int32]*schema.DictionaryValues {
	if d == nil {
		return nil
	}
	// The values are read-only: the map is what a writer may change.
	return maps.Clone(d)
}
