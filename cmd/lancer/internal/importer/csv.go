package importer

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
)

// newCSVReader reads src as CSV and returns its header row.
func newCSVReader(src io.Reader, name string) (*csv.Reader, []string, error) {
	r := csv.NewReader(src)
	r.ReuseRecord = true
	header, err := r.Read()
	if err == io.EOF {
		return nil, nil, fmt.Errorf("importer: %s is empty (a CSV file needs a header row): %w", name, lancer.ErrInvalidArgument)
	}
	if err != nil {
		return nil, nil, csvError(name, err)
	}
	header = append([]string(nil), header...)
	header[0] = strings.TrimPrefix(header[0], "\ufeff")
	seen := map[string]bool{}
	for i, h := range header {
		if h == "" {
			return nil, nil, lineError(name, 1, "", fmt.Errorf("header cell %d is empty", i+1))
		}
		if seen[h] {
			return nil, nil, lineError(name, 1, h, errors.New("the header names the column twice"))
		}
		seen[h] = true
	}
	r.FieldsPerRecord = len(header)
	return r, header, nil
}

// csvError wraps an error of encoding/csv, which names the line.
func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return lineError(name, pe.Line, "", pe.Err)
	}
	return fmt.Errorf("importer: read %s: %w", name, err)
}

func openCSV(src Source, o Options) (array.RecordReader, error) {
	schema := o.Schema
	if schema == nil {
		var err error
		if schema, err = inferCSV(src, o.Name); err != nil {
			return nil, err
		}
		if _, err := src.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("importer: rewind %s: %w", o.Name, err)
		}
	}
	r, header, err := newCSVReader(src, o.Name)
	if err != nil {
		return nil, err
	}
	index := fieldIndex(schema)
	fields := schema.Fields()
	// cols[i] is the schema field of CSV column i.
	cols := make([]int, len(header))
	present := make([]bool, len(fields))
	for i, h := range header {
		f, ok := index[h]
		if !ok {
			return nil, lineError(o.Name, 1, h, errors.New("no such column in the schema"))
		}
		cols[i], present[f] = f, true
	}
	for i, f := range fields {
		if !present[i] && !f.Nullable {
			return nil, lineError(o.Name, 1, f.Name, errors.New("the file lacks this non-nullable column"))
		}
	}
	return newRowReader(o, schema, func(rb *array.RecordBuilder) error {
		record, err := r.Read()
		if err != nil {
			if err == io.EOF {
				return err
			}
			return csvError(o.Name, err)
		}
		for i := range fields {
			if !present[i] {
				rb.Field(i).AppendNull()
			}
		}
		for i, cell := range record {
			f := fields[cols[i]]
			line, _ := r.FieldPos(i)
			v, err := csvValue(cell, f)
			if err == nil && v == nil && !f.Nullable {
				err = errors.New("empty cell in a non-nullable column")
			}
			if err != nil {
				return lineError(o.Name, line, f.Name, err)
			}
			if err := appendValue(rb.Field(cols[i]), v); err != nil {
				return lineError(o.Name, line, f.Name, err)
			}
		}
		return nil
	}), nil
}

// csvValue turns a cell into a value for appendValue: nil when empty
// (except in non-nullable string and binary columns, where it is the empty
// value), JSON for nested types, else the text.
func csvValue(cell string, f arrow.Field) (any, error) {
	if cell == "" {
		if !f.Nullable && (arrow.IsBaseBinary(f.Type.ID()) || f.Type.ID() == arrow.STRING_VIEW || f.Type.ID() == arrow.BINARY_VIEW) {
			return "", nil
		}
		return nil, nil
	}
	switch f.Type.(type) {
	case arrow.ListLikeType, *arrow.StructType:
		return parseJSON([]byte(cell))
	}
	return cell, nil
}

// csvColumn collects what the cells of a CSV column can be.
type csvColumn struct {
	seen                                        bool
	notInt, notFloat, notBool, notDate, notTime bool
	zoned                                       bool
	// notInteger is set by a cell that is not an integer of any size;
	// until then ints decides the column's integer type.
	notInteger bool
	ints       intRange
}

func (c *csvColumn) add(s string, line int) {
	c.seen = true
	s = strings.TrimSpace(s)
	if !c.notInt {
		_, err := strconv.ParseInt(s, 10, 64)
		c.notInt = err != nil
	}
	if !c.notInteger {
		if c.notInteger = !isIntegerText(s); !c.notInteger {
			c.ints.note(s, line, nil)
		}
	}
	if !c.notFloat {
		_, err := strconv.ParseFloat(s, 64)
		c.notFloat = err != nil && !errors.Is(err, strconv.ErrRange)
	}
	if !c.notBool {
		c.notBool = !strings.EqualFold(s, "true") && !strings.EqualFold(s, "false")
	}
	if !c.notDate {
		_, err := time.Parse("2006-01-02", s)
		c.notDate = err != nil
	}
	if !c.notTime {
		_, zoned, ok := parseTimeText(s)
		c.notTime = !ok
		c.zoned = c.zoned || zoned
	}
}

// arrowType is the column's type. Integers that no integer type holds
// (and that no other cell makes floats) are text, kept exactly: a CSV cell
// is text, and such a column is ids or codes more often than numbers.
func (c *csvColumn) arrowType() (arrow.DataType, error) {
	switch {
	case !c.seen:
		return arrow.BinaryTypes.String, nil
	case !c.notInt:
		return arrow.PrimitiveTypes.Int64, nil
	case !c.notInteger:
		if dt, err := c.ints.integerType(); err == nil {
			return dt, nil
		}
		return arrow.BinaryTypes.String, nil
	case !c.notFloat:
		return arrow.PrimitiveTypes.Float64, nil
	case !c.notBool:
		return arrow.FixedWidthTypes.Boolean, nil
	case !c.notDate:
		return arrow.FixedWidthTypes.Date32, nil
	case !c.notTime && c.zoned:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
	case !c.notTime:
		return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
	}
	return arrow.BinaryTypes.String, nil
}

// inferCSV reads every row of src and returns the schema of its columns.
func inferCSV(src io.Reader, name string) (*arrow.Schema, error) {
	r, header, err := newCSVReader(src, name)
	if err != nil {
		return nil, err
	}
	cols := make([]csvColumn, len(header))
	for {
		record, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(name, err)
		}
		for i, cell := range record {
			if cell != "" {
				line, _ := r.FieldPos(i)
				cols[i].add(cell, line)
			}
		}
	}
	fields := make([]arrow.Field, len(header))
	for i, h := range header {
		dt, err := cols[i].arrowType()
		if err != nil {
			return nil, inferLineError(name, h, err)
		}
		fields[i] = arrow.Field{Name: h, Type: dt, Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}
