package importer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
)

// maxLineBytes bounds a line of JSON lines input, so that a file without
// line breaks is an error rather than a buffer as large as the file. A
// variable for tests.
var maxLineBytes = 256 << 20

// errLongLine is the error of a line longer than maxLineBytes.
var errLongLine = errors.New("line too long")

// lineReader reads the lines of a text file, counting them.
type lineReader struct {
	r    *bufio.Reader
	buf  []byte
	line int
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 1<<16)}
}

// next returns the next line holding more than JSON whitespace (valid until
// the next call), or io.EOF.
func (l *lineReader) next() ([]byte, error) {
	for {
		l.buf = l.buf[:0]
		for {
			chunk, err := l.r.ReadSlice('\n')
			if len(l.buf)+len(chunk) > maxLineBytes {
				return nil, fmt.Errorf("%w: longer than %d bytes", errLongLine, maxLineBytes)
			}
			l.buf = append(l.buf, chunk...)
			if err == bufio.ErrBufferFull {
				continue
			}
			if err != nil && err != io.EOF {
				return nil, err
			}
			if err == io.EOF && len(l.buf) == 0 {
				return nil, io.EOF
			}
			break
		}
		l.line++
		if l.line == 1 {
			l.buf = bytes.TrimPrefix(l.buf, []byte("\xef\xbb\xbf"))
		}
		if line := bytes.Trim(l.buf, " \t\r\n"); len(line) > 0 {
			return line, nil
		}
	}
}

// readObject reads the next line as a JSON object.
func (l *lineReader) readObject(name string) (*object, error) {
	line, err := l.next()
	if err != nil {
		if err == io.EOF {
			return nil, err
		}
		if errors.Is(err, errLongLine) {
			return nil, lineError(name, l.line+1, "", err)
		}
		return nil, fmt.Errorf("importer: read %s: %w", name, err)
	}
	v, err := parseJSON(line)
	if err != nil {
		return nil, lineError(name, l.line, "", err)
	}
	obj, ok := v.(*object)
	if !ok {
		return nil, lineError(name, l.line, "", fmt.Errorf("want a JSON object, got %s", describe(v)))
	}
	return obj, nil
}

func openJSONL(src Source, o Options) (array.RecordReader, error) {
	schema := o.Schema
	if schema == nil {
		var err error
		if schema, err = inferJSONL(src, o.Name, o.vectorColumns()); err != nil {
			return nil, err
		}
		if _, err := src.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("importer: rewind %s: %w", o.Name, err)
		}
	}
	index := fieldIndex(schema)
	lines := newLineReader(src)
	fields := schema.Fields()
	vals := make([]any, len(fields))
	return newRowReader(o, schema, func(rb *array.RecordBuilder) error {
		obj, err := lines.readObject(o.Name)
		if err != nil {
			return err
		}
		clear(vals)
		for j, k := range obj.keys {
			i, ok := index[k]
			if !ok {
				return lineError(o.Name, lines.line, k, errors.New("no such column in the schema"))
			}
			vals[i] = obj.vals[j]
		}
		for i, v := range vals {
			if v == nil && !fields[i].Nullable {
				return lineError(o.Name, lines.line, fields[i].Name, errors.New("null (or missing) value in a non-nullable column"))
			}
			if err := appendValue(rb.Field(i), v); err != nil {
				return lineError(o.Name, lines.line, fields[i].Name, err)
			}
		}
		return nil
	}), nil
}

// inferJSONL reads every line of src and returns the schema that holds
// them all.
func inferJSONL(src io.Reader, name string, vectorColumns []string) (*arrow.Schema, error) {
	lines := newLineReader(src)
	root := &inferred{kind: kindStruct, members: map[string]*inferred{}}
	for {
		obj, err := lines.readObject(name)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		for j, k := range obj.keys {
			m := root.members[k]
			if m == nil {
				m = &inferred{}
				root.members[k] = m
				root.names = append(root.names, k)
			}
			if err := m.add(obj.vals[j], lines.line, nil); err != nil {
				return nil, lineError(name, lines.line, k, err)
			}
		}
	}
	if len(root.names) == 0 {
		return nil, fmt.Errorf("importer: %s holds no JSON objects to infer a schema from: %w", name, lancer.ErrInvalidArgument)
	}
	for _, c := range vectorColumns {
		if m := root.members[c]; m != nil {
			m.vector = true
		}
	}
	fields := make([]arrow.Field, len(root.names))
	for i, k := range root.names {
		dt, err := root.members[k].arrowType()
		if err != nil {
			return nil, inferLineError(name, k, err)
		}
		fields[i] = arrow.Field{Name: k, Type: dt, Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}
