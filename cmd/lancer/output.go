package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/rowjson"
)

// rowWriter prints record batches in one output format.
type rowWriter interface {
	begin(schema *arrow.Schema) error
	write(rec arrow.RecordBatch) error
	end() error
}

func newRowWriter(format string, w io.Writer) (rowWriter, error) {
	switch format {
	case "jsonl":
		return &jsonlWriter{w: w}, nil
	case "csv":
		return &csvWriter{w: csv.NewWriter(w)}, nil
	case "table":
		return &tableWriter{w: w}, nil
	}
	return nil, fmt.Errorf("unknown --format %q (want table, jsonl or csv): %w", format, lancer.ErrInvalidArgument)
}

type jsonlWriter struct{ w io.Writer }

func (j *jsonlWriter) begin(*arrow.Schema) error { return nil }
func (j *jsonlWriter) write(rec arrow.RecordBatch) error {
	return rowjson.WriteJSONL(j.w, rec)
}
func (j *jsonlWriter) end() error { return nil }

// cellText renders one value as text: strings bare, null empty, everything
// else as its JSON encoding (nested values as JSON).
func cellText(buf []byte, col arrow.Array, i int) (string, []byte, error) {
	if col.IsNull(i) {
		return "", buf, nil
	}
	buf, err := rowjson.AppendValue(buf[:0], col, i)
	if err != nil {
		return "", buf, err
	}
	if len(buf) > 0 && buf[0] == '"' {
		var s string
		if err := json.Unmarshal(buf, &s); err == nil {
			return s, buf, nil
		}
	}
	return string(buf), buf, nil
}

type csvWriter struct {
	w   *csv.Writer
	buf []byte
}

func (c *csvWriter) begin(schema *arrow.Schema) error {
	names := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		names[i] = f.Name
	}
	return c.w.Write(names)
}

func (c *csvWriter) write(rec arrow.RecordBatch) error {
	record := make([]string, rec.NumCols())
	for r := range int(rec.NumRows()) {
		for i, col := range rec.Columns() {
			var err error
			record[i], c.buf, err = cellText(c.buf, col, r)
			if err != nil {
				return err
			}
		}
		if err := c.w.Write(record); err != nil {
			return err
		}
	}
	c.w.Flush()
	return c.w.Error()
}

func (c *csvWriter) end() error {
	c.w.Flush()
	return c.w.Error()
}

// tableWriter prints aligned columns. It sizes columns from the first
// batch of rows it sees and truncates longer cells, so it streams.
type tableWriter struct {
	w       io.Writer
	names   []string
	widths  []int
	started bool
	rows    int
	buf     []byte
}

const maxCellWidth = 40

func (t *tableWriter) begin(schema *arrow.Schema) error {
	for _, f := range schema.Fields() {
		t.names = append(t.names, f.Name)
	}
	return nil
}

func (t *tableWriter) write(rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	cells := make([][]string, n)
	for r := range n {
		cells[r] = make([]string, rec.NumCols())
		for i, col := range rec.Columns() {
			s, buf, err := cellText(t.buf, col, r)
			t.buf = buf
			if err != nil {
				return err
			}
			if col.IsNull(r) {
				s = "null"
			}
			cells[r][i] = truncateCell(strings.ReplaceAll(s, "\n", "\\n"))
		}
	}
	if !t.started {
		if err := t.header(cells); err != nil {
			return err
		}
	}
	for _, row := range cells {
		if err := t.line(row); err != nil {
			return err
		}
	}
	t.rows += n
	return nil
}

// header sizes the columns from the names and the first rows, and prints
// the names and a rule.
func (t *tableWriter) header(first [][]string) error {
	t.started = true
	t.widths = make([]int, len(t.names))
	for i, name := range t.names {
		t.widths[i] = min(max(utf8.RuneCountInString(name), 1), maxCellWidth)
	}
	for _, row := range first {
		for i, s := range row {
			t.widths[i] = max(t.widths[i], utf8.RuneCountInString(s))
		}
	}
	if err := t.line(t.names); err != nil {
		return err
	}
	rule := make([]string, len(t.names))
	for i, w := range t.widths {
		rule[i] = strings.Repeat("-", w)
	}
	return t.line(rule)
}

func (t *tableWriter) line(cells []string) error {
	var b strings.Builder
	for i, s := range cells {
		if i > 0 {
			b.WriteString("  ")
		}
		s = truncateCell(s)
		b.WriteString(s)
		if i < len(cells)-1 {
			b.WriteString(strings.Repeat(" ", max(0, t.widths[i]-utf8.RuneCountInString(s))))
		}
	}
	b.WriteByte('\n')
	_, err := io.WriteString(t.w, b.String())
	return err
}

func (t *tableWriter) end() error {
	if !t.started {
		if err := t.header(nil); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(t.w, "(%d rows)\n", t.rows)
	return err
}

func truncateCell(s string) string {
	if utf8.RuneCountInString(s) <= maxCellWidth {
		return s
	}
	r := []rune(s)
	return string(r[:maxCellWidth-1]) + "…"
}
