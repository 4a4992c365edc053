package fixturetest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer/internal/rowjson"
)

// EncodingRows returns the rows of encodings/<name>.rows.jsonl.gz (name like
// "strs_2_1" or "wide_2_2"): every row as real Lance read it back, in scan
// order, each a JSON object with "_rowid".
func EncodingRows(t testing.TB, name string) []json.RawMessage {
	t.Helper()
	path := filepath.Join(Dir(t), "encodings", name+".rows.jsonl.gz")
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("fixturetest: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("fixturetest: %s: %v", path, err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20) // wide_* rows hold a 40 kB value
	var rows []json.RawMessage
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) {
			t.Fatalf("fixturetest: %s line %d is not JSON", path, len(rows)+1)
		}
		rows = append(rows, append(json.RawMessage(nil), line...))
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("fixturetest: %s: %v", path, err)
	}
	if len(rows) == 0 {
		t.Fatalf("fixturetest: %s holds no rows", path)
	}
	return rows
}

// Facts about the formula datasets, from encodings/ROWS.md and their
// manifests (Lance 12 caps a data file at 1,048,576 rows, and each file
// became its own fragment; neither dataset uses stable row ids, so a row id
// is the row address fragment_id<<32 | offset).
const (
	pagesRows         = 1_100_000
	pagesFragmentRows = 1_048_576 // fragment 0; fragment 1 holds the other 51,424
	mpageRows         = 300_000   // one fragment
)

var mpageWords = [16]string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
	"india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa"}

// FormulaRowCount returns the number of rows of the formula dataset name
// ("pages_2_1", "pages_2_2", "mpage_2_1", "mpage_2_2"), and false for any
// other name.
func FormulaRowCount(name string) (int, bool) {
	switch name {
	case "pages_2_1", "pages_2_2":
		return pagesRows, true
	case "mpage_2_1", "mpage_2_2":
		return mpageRows, true
	}
	return 0, false
}

// FormulaRow returns row i of a formula dataset (see FormulaRowCount) as
// the fixture encoding prints it, with "_rowid":
//
//	pages_*: {"id":i,"small":i%1000,"_rowid":…}   rows 0..1,048,575 in fragment 0, the rest in fragment 1
//	mpage_*: {"id":i,"s":"row-<i>-<word i%16>-padding-padding","_rowid":i}, s null when i%101 == 0
//
// It panics if name is not a formula dataset or i is out of range: both are
// mistakes in the test, not in the reader.
func FormulaRow(name string, i int) []byte {
	n, ok := FormulaRowCount(name)
	if !ok {
		panic(fmt.Sprintf("fixturetest: %q is not a formula dataset", name))
	}
	if i < 0 || i >= n {
		panic(fmt.Sprintf("fixturetest: row %d out of range for %s (%d rows)", i, name, n))
	}
	b := make([]byte, 0, 64)
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	if strings.HasPrefix(name, "pages_") {
		b = append(b, `,"small":`...)
		b = strconv.AppendInt(b, int64(i%1000), 10)
		rowid := uint64(i)
		if i >= pagesFragmentRows {
			rowid = 1<<32 | uint64(i-pagesFragmentRows)
		}
		b = append(b, `,"_rowid":`...)
		b = strconv.AppendUint(b, rowid, 10)
	} else {
		b = append(b, `,"s":`...)
		if i%101 == 0 {
			b = append(b, "null"...)
		} else {
			b = append(b, `"row-`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, '-')
			b = append(b, mpageWords[i%16]...)
			b = append(b, `-padding-padding"`...)
		}
		b = append(b, `,"_rowid":`...)
		b = strconv.AppendInt(b, int64(i), 10)
	}
	return append(b, '}')
}

// EncodeRows prints every row of recs, in order, with package rowjson: the
// "got" side of CompareRows. It fails the test if a column cannot be printed.
func EncodeRows(t testing.TB, recs ...arrow.RecordBatch) [][]byte {
	t.Helper()
	total := 0
	for _, rec := range recs {
		total += int(rec.NumRows())
	}
	// One buffer for all rows; rows are sliced out once it stops growing.
	var buf []byte
	ends := make([]int, 0, total)
	for _, rec := range recs {
		for r := 0; r < int(rec.NumRows()); r++ {
			var err error
			if buf, err = rowjson.AppendRow(buf, rec, r); err != nil {
				t.Fatalf("fixturetest: encoding row %d: %v", len(ends), err)
			}
			ends = append(ends, len(buf))
		}
	}
	rows := make([][]byte, len(ends))
	start := 0
	for i, end := range ends {
		rows[i] = buf[start:end:end]
		start = end
	}
	return rows
}
