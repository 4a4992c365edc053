package server

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/rowjson"
)

// How the browser API shows values (see ui.go).

// Column kinds, which tell the page how to show a column.
const (
	kindImage  = "image"  // binary or blob column whose first value is an image
	kindBlob   = "blob"   // other blob column
	kindBinary = "binary" // other binary column
	kindVector = "vector" // fixed-size list of floats: searchable
	kindText   = "text"
	kindNumber = "number"
	kindBool   = "bool"
	kindTime   = "time"
	kindOther  = "other"
)

// uiColumn describes a top-level column.
type uiColumn struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
	Kind     string `json:"kind"`
	Dim      int    `json:"dim,omitempty"`
	Blob     bool   `json:"blob,omitempty"`
}

// uiSniffRows is how many rows are looked at to find a column's first
// value for sniffing.
const uiSniffRows = 32

// uiColumnCache keeps what uiColumns found for recent versions: the
// browser asks for a version's columns with every page of rows, row and
// search, and finding image columns reads values. Versions are immutable;
// an entry is keyed by the manifest's location and commit time, so a table
// dropped and written again is looked at afresh.
type uiColumnCache struct {
	mu      sync.Mutex
	entries map[string][]uiColumn
	order   []string // keys, oldest first
}

// uiColumnCacheSize bounds the versions uiColumnCache keeps.
const uiColumnCacheSize = 256

// uiColumnsOf is uiColumns through the server's cache.
func (s *Server) uiColumnsOf(ctx context.Context, ds *dataset.Dataset) ([]uiColumn, error) {
	c := &s.uiCols
	key := fmt.Sprintf("%s\x00%s\x00%d\x00%d", ds.Store().URI(), ds.ManifestKey(), ds.Version(), ds.Manifest().Timestamp.UnixNano())
	c.mu.Lock()
	cols, ok := c.entries[key]
	c.mu.Unlock()
	if ok {
		return slices.Clone(cols), nil
	}
	cols, err := uiColumns(ctx, ds)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string][]uiColumn{}
	}
	if _, ok := c.entries[key]; !ok {
		c.entries[key] = slices.Clone(cols)
		c.order = append(c.order, key)
		if len(c.order) > uiColumnCacheSize {
			delete(c.entries, c.order[0])
			c.order = c.order[1:]
		}
	}
	return cols, nil
}

// uiColumns describes the version's top-level columns. A binary or blob
// column is an image column when the first non-null value among its
// first rows sniffs as image/*.
func uiColumns(ctx context.Context, ds *dataset.Dataset) ([]uiColumn, error) {
	var cols []uiColumn
	var sniff []string // binary and blob columns
	for _, f := range ds.Schema().Fields {
		c := uiColumn{Name: f.Name, Type: f.Type.String(), Nullable: f.Nullable, Kind: kindOther, Blob: f.Blob != schema.NotBlob}
		switch t := f.Type.(type) {
		case *arrow.FixedSizeListType:
			switch t.Elem().ID() {
			case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
				c.Kind, c.Dim = kindVector, int(t.Len())
			}
		}
		switch f.Type.ID() {
		case arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW, arrow.FIXED_SIZE_BINARY:
			c.Kind = kindBinary
		case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
			c.Kind = kindText
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
			arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64, arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256:
			c.Kind = kindNumber
		case arrow.BOOL:
			c.Kind = kindBool
		case arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP, arrow.TIME32, arrow.TIME64, arrow.DURATION:
			c.Kind = kindTime
		}
		if c.Blob {
			c.Kind = kindBlob
		}
		if c.Kind == kindBinary || c.Kind == kindBlob {
			sniff = append(sniff, f.Name)
		}
		cols = append(cols, c)
	}
	if len(sniff) == 0 {
		return cols, nil
	}
	sc, err := ds.Scan(ctx, &dataset.ScanOptions{Columns: sniff, Limit: uiSniffRows, WithRowID: true})
	if err != nil {
		return nil, err
	}
	defer sc.Release()
	found := map[string]bool{}
	for sc.Next() && len(found) < len(sniff) {
		rec := sc.RecordBatch()
		rowids := rec.Column(int(rec.NumCols()) - 1).(*array.Uint64)
		for k, name := range sniff {
			if found[name] {
				continue
			}
			arr := rec.Column(k)
			for i := range int(rec.NumRows()) {
				if arr.IsNull(i) {
					continue
				}
				head, ok, err := sniffHead(ctx, ds, name, arr, i, rowids.Value(i))
				if err != nil {
					return nil, err
				}
				if !ok {
					continue
				}
				found[name] = true
				if isImage(head) {
					for j := range cols {
						if cols[j].Name == name {
							cols[j].Kind = kindImage
						}
					}
				}
				break
			}
		}
	}
	return cols, sc.Err()
}

// sniffHead returns the first bytes of value i of arr (a binary column,
// or a blob column's descriptors, whose value is opened by row id).
func sniffHead(ctx context.Context, ds *dataset.Dataset, column string, arr arrow.Array, i int, rowID uint64) ([]byte, bool, error) {
	if b, ok := bytesAt(arr, i); ok {
		return b[:min(len(b), 512)], true, nil
	}
	desc, ok, err := format.BlobDescriptorAt(arr, i)
	if err != nil || !ok || desc.Size == 0 {
		return nil, false, nil
	}
	br, err := ds.OpenBlob(ctx, column, rowID)
	if err != nil {
		// An external or unreadable blob says nothing about the column's
		// kind; the cell endpoint reports its error when it is asked for.
		return nil, false, nil
	}
	defer br.Close()
	head := make([]byte, min(desc.Size, 512))
	n, err := io.ReadFull(br, head)
	if err != nil && n == 0 {
		return nil, false, nil
	}
	return head[:n], true, nil
}

func isImage(head []byte) bool {
	t := http.DetectContentType(head)
	return len(t) > 6 && t[:6] == "image/"
}

// uiRow is one row of a response: its _rowid (a string: row ids may pass
// 2^53, where JavaScript numbers lose digits), its values by column, and
// for searches the distance, for diffs the values before an update and
// the columns it changed.
type uiRow struct {
	RowID    string         `json:"_rowid"`
	Distance *float64       `json:"_distance,omitempty"`
	Values   map[string]any `json:"values"`
	Before   map[string]any `json:"before,omitempty"`
	// Changed names the columns an update changed (diffs only).
	Changed []string `json:"changed,omitempty"`
}

// uiEncoder turns batches into uiRows.
type uiEncoder struct {
	st   *uiState
	cols map[string]uiColumn
	// full keeps every value whole (the row detail); otherwise long
	// text, lists and bytes are abbreviated (grids).
	full bool
}

func (s *Server) uiEncoder(st *uiState, cols []uiColumn, full bool) *uiEncoder {
	m := make(map[string]uiColumn, len(cols))
	for _, c := range cols {
		m[c.Name] = c
	}
	return &uiEncoder{st: st, cols: m, full: full}
}

// Abbreviation limits of the grids.
const (
	uiMaxText     = 160 // characters of a string
	uiMaxList     = 8   // elements shown of a longer list or vector
	uiShownOfList = 4
	uiMaxJSON     = 300 // bytes of any other value's JSON
	uiHexBytes    = 16  // bytes shown of a non-image binary value (64 in full)
)

// rows encodes every row of rec. rec must hold "_rowid".
func (e *uiEncoder) rows(rec arrow.RecordBatch) ([]uiRow, error) {
	schema := rec.Schema()
	idIdx, distIdx := -1, -1
	for i, f := range schema.Fields() {
		switch f.Name {
		case "_rowid":
			idIdx = i
		case dataset.DistanceColumn:
			distIdx = i
		}
	}
	if idIdx < 0 {
		return nil, fmt.Errorf("ui: batch without _rowid")
	}
	ids, ok := rec.Column(idIdx).(*array.Uint64)
	if !ok {
		return nil, fmt.Errorf("ui: _rowid is %s", rec.Column(idIdx).DataType())
	}
	out := make([]uiRow, rec.NumRows())
	for i := range out {
		id := ids.Value(i)
		row := uiRow{RowID: strconv.FormatUint(id, 10), Values: map[string]any{}}
		if distIdx >= 0 {
			if d, ok := rec.Column(distIdx).(*array.Float32); ok && d.IsValid(i) {
				v := float64(d.Value(i))
				row.Distance = &v
			}
		}
		for c, f := range schema.Fields() {
			if c == idIdx || c == distIdx || f.Name == "_rowaddr" || f.Name == dataset.ChangeColumn {
				continue
			}
			v, err := e.value(f.Name, rec.Column(c), i, id)
			if err != nil {
				return nil, fmt.Errorf("ui: column %q: %w", f.Name, err)
			}
			row.Values[f.Name] = v
		}
		out[i] = row
	}
	return out, nil
}

// cellURL is the URL of a value's bytes, at the exact state read.
func (e *uiEncoder) cellURL(column string, rowID uint64) string {
	q := url.Values{"ref": {e.st.ref()}, "column": {column}, "row": {strconv.FormatUint(rowID, 10)}}
	return "/ui/api/tables/" + url.PathEscape(e.st.table) + "/cell?" + q.Encode()
}

// value encodes one value. Special values are objects with a "$" key:
//
//	{"$image": url, "size": n, "type": mime}      an image
//	{"$binary": n, "type"?, "url", "hex"}         other bytes (the first few in hex)
//	{"$list": [first elements], "len": n}         a list cut short (grids)
//	{"$text": prefix, "len": n}                   a string cut short (grids; n in characters)
//	{"$json": prefix}                             another value whose JSON is long (grids)
func (e *uiEncoder) value(column string, arr arrow.Array, i int, rowID uint64) (any, error) {
	if arr.IsNull(i) {
		return nil, nil
	}
	col := e.cols[column]
	if col.Blob {
		desc, ok, err := format.BlobDescriptorAt(arr, i)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, nil
		}
		if col.Kind == kindImage {
			return map[string]any{"$image": e.cellURL(column, rowID), "size": desc.Size}, nil
		}
		return map[string]any{"$binary": desc.Size, "url": e.cellURL(column, rowID)}, nil
	}
	switch a := arr.(type) {
	case *array.Binary, *array.LargeBinary, *array.BinaryView, *array.FixedSizeBinary:
		b, _ := bytesAt(a, i)
		t := http.DetectContentType(b[:min(len(b), 512)])
		if len(b) > 0 && isImage(b) {
			return map[string]any{"$image": e.cellURL(column, rowID), "size": len(b), "type": t}, nil
		}
		n := uiHexBytes
		if e.full {
			n = 4 * uiHexBytes
		}
		return map[string]any{"$binary": len(b), "type": t, "url": e.cellURL(column, rowID), "hex": hex.EncodeToString(b[:min(len(b), n)])}, nil
	case *array.String, *array.LargeString, *array.StringView:
		b, _ := bytesAt(a, i)
		s := string(b)
		if n := utf8.RuneCountInString(s); !e.full && n > uiMaxText {
			cut := 0
			for range uiMaxText {
				_, size := utf8.DecodeRuneInString(s[cut:])
				cut += size
			}
			return map[string]any{"$text": s[:cut], "len": n}, nil
		}
		return s, nil
	case *array.Float32:
		return float32JSON(a.Value(i)), nil
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		n := int(end - start)
		shown := n
		if !e.full && n > uiMaxList {
			shown = uiShownOfList
		}
		elems := make([]any, 0, shown)
		child := a.ListValues()
		for j := range shown {
			v, err := e.elem(child, int(start)+j)
			if err != nil {
				return nil, err
			}
			elems = append(elems, v)
		}
		if shown < n {
			return map[string]any{"$list": elems, "len": n}, nil
		}
		return elems, nil
	}
	b, err := rowjson.AppendValue(nil, arr, i)
	if err != nil {
		return map[string]any{"$json": fmt.Sprintf("(%s)", arr.DataType())}, nil
	}
	return e.shortJSON(b), nil
}

// shortJSON returns a value's JSON, or in grids, when it is long, its
// beginning as {"$json": prefix}.
func (e *uiEncoder) shortJSON(b []byte) any {
	if e.full || len(b) <= uiMaxJSON {
		return json.RawMessage(b)
	}
	cut := uiMaxJSON
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return map[string]any{"$json": string(b[:cut]) + "…"}
}

// elem encodes a list element: floats compactly, anything else as rowjson
// prints it.
func (e *uiEncoder) elem(arr arrow.Array, i int) (any, error) {
	if arr.IsNull(i) {
		return nil, nil
	}
	if f, ok := arr.(*array.Float32); ok {
		return float32JSON(f.Value(i)), nil
	}
	b, err := rowjson.AppendValue(nil, arr, i)
	if err != nil {
		return nil, err
	}
	return e.shortJSON(b), nil
}

// float32JSON prints a float32 as the shortest decimal that reads back as
// the same float32 (0.7, not 0.699999988079071); NaN and infinities, which
// JSON lacks, as rowjson spells them ("NaN", "Infinity", "-Infinity").
func float32JSON(f float32) any {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		// As every other float the browser shows (rowjson): JSON has no
		// number for them, and null would read as a missing value.
		return json.RawMessage(rowjson.AppendFloat(nil, float64(f)))
	}
	return json.Number(strconv.FormatFloat(float64(f), 'g', -1, 32))
}
