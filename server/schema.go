package server

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer"
)

// jsonSchema is Lance's JSON schema, as describe/ returns it:
// {"fields":[...], "metadata":{...}}.
type jsonSchema struct {
	Fields   []jsonField       `json:"fields"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

type jsonField struct {
	Name     string            `json:"name"`
	Type     jsonType          `json:"type"`
	Nullable bool              `json:"nullable"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

type jsonType struct {
	Type   string      `json:"type"`
	Fields []jsonField `json:"fields,omitempty"`
	Length *int        `json:"length,omitempty"`
}

// schemaJSON converts an Arrow schema to Lance's JSON schema.
func schemaJSON(s *arrow.Schema) (jsonSchema, error) {
	out := jsonSchema{Fields: []jsonField{}}
	if md := s.Metadata(); md.Len() > 0 {
		out.Metadata = metadataMap(md)
	}
	for _, f := range s.Fields() {
		jf, err := fieldJSON(f)
		if err != nil {
			return jsonSchema{}, err
		}
		out.Fields = append(out.Fields, jf)
	}
	return out, nil
}

func metadataMap(md arrow.Metadata) map[string]string {
	m := make(map[string]string, md.Len())
	for i, k := range md.Keys() {
		m[k] = md.Values()[i]
	}
	return m
}

func fieldJSON(f arrow.Field) (jsonField, error) {
	t, err := typeJSON(f.Type)
	if err != nil {
		return jsonField{}, fmt.Errorf("field %q: %w", f.Name, err)
	}
	jf := jsonField{Name: f.Name, Type: t, Nullable: f.Nullable}
	if f.Metadata.Len() > 0 {
		jf.Metadata = metadataMap(f.Metadata)
	}
	return jf, nil
}

var timeUnitNames = [...]string{arrow.Second: "s", arrow.Millisecond: "ms", arrow.Microsecond: "us", arrow.Nanosecond: "ns"}

// typeJSON names an Arrow type as Lance's JSON schema does (docs/spec/lancedb-remote-protocol.md §6.6).
func typeJSON(dt arrow.DataType) (jsonType, error) {
	simple := map[arrow.Type]string{
		arrow.NULL: "null", arrow.BOOL: "bool",
		arrow.INT8: "int8", arrow.INT16: "int16", arrow.INT32: "int32", arrow.INT64: "int64",
		arrow.UINT8: "uint8", arrow.UINT16: "uint16", arrow.UINT32: "uint32", arrow.UINT64: "uint64",
		arrow.FLOAT16: "halffloat", arrow.FLOAT32: "float", arrow.FLOAT64: "double",
		arrow.STRING: "string", arrow.LARGE_STRING: "large_string", arrow.STRING_VIEW: "string_view",
		arrow.BINARY: "binary", arrow.LARGE_BINARY: "large_binary", arrow.BINARY_VIEW: "binary_view",
		arrow.DATE32: "date32:day", arrow.DATE64: "date64:ms",
	}
	if name, ok := simple[dt.ID()]; ok {
		return jsonType{Type: name}, nil
	}
	switch t := dt.(type) {
	case *arrow.FixedSizeBinaryType:
		n := t.ByteWidth
		return jsonType{Type: "fixed_size_binary", Length: &n}, nil
	case *arrow.Time32Type:
		return jsonType{Type: "time32:" + timeUnitNames[t.Unit]}, nil
	case *arrow.Time64Type:
		return jsonType{Type: "time64:" + timeUnitNames[t.Unit]}, nil
	case *arrow.TimestampType:
		tz := t.TimeZone
		if tz == "" {
			tz = "-"
		}
		return jsonType{Type: "timestamp:" + timeUnitNames[t.Unit] + ":" + tz}, nil
	case *arrow.DurationType:
		return jsonType{Type: "duration:" + timeUnitNames[t.Unit]}, nil
	case *arrow.Decimal128Type:
		return jsonType{Type: "decimal:128:" + strconv.Itoa(int(t.Precision)) + ":" + strconv.Itoa(int(t.Scale))}, nil
	case *arrow.Decimal256Type:
		return jsonType{Type: "decimal:256:" + strconv.Itoa(int(t.Precision)) + ":" + strconv.Itoa(int(t.Scale))}, nil
	case *arrow.DictionaryType:
		v, err := typeJSON(t.ValueType)
		if err != nil {
			return jsonType{}, err
		}
		k, err := typeJSON(t.IndexType)
		if err != nil {
			return jsonType{}, err
		}
		return jsonType{Type: fmt.Sprintf("dict:%s:%s:%t", v.Type, k.Type, t.Ordered)}, nil
	case *arrow.ListType:
		return nestedJSON("list", []arrow.Field{t.ElemField()}, nil)
	case *arrow.LargeListType:
		return nestedJSON("large_list", []arrow.Field{t.ElemField()}, nil)
	case *arrow.FixedSizeListType:
		n := int(t.Len())
		return nestedJSON("fixed_size_list", []arrow.Field{t.ElemField()}, &n)
	case *arrow.StructType:
		return nestedJSON("struct", t.Fields(), nil)
	}
	return jsonType{}, fmt.Errorf("type %s has no JSON schema name: %w", dt, lancer.ErrUnsupported)
}

func nestedJSON(name string, children []arrow.Field, length *int) (jsonType, error) {
	out := jsonType{Type: name, Length: length}
	for _, c := range children {
		jf, err := fieldJSON(c)
		if err != nil {
			return jsonType{}, err
		}
		out.Fields = append(out.Fields, jf)
	}
	return out, nil
}

// arrowOfJSON is typeJSON's inverse: the Arrow type a JSON schema type
// names.
func arrowOfJSON(t jsonType) (arrow.DataType, error) {
	simple := map[string]arrow.DataType{
		"null": arrow.Null, "bool": arrow.FixedWidthTypes.Boolean, "boolean": arrow.FixedWidthTypes.Boolean,
		"int8": arrow.PrimitiveTypes.Int8, "int16": arrow.PrimitiveTypes.Int16, "int32": arrow.PrimitiveTypes.Int32, "int64": arrow.PrimitiveTypes.Int64,
		"uint8": arrow.PrimitiveTypes.Uint8, "uint16": arrow.PrimitiveTypes.Uint16, "uint32": arrow.PrimitiveTypes.Uint32, "uint64": arrow.PrimitiveTypes.Uint64,
		"halffloat": arrow.FixedWidthTypes.Float16, "float16": arrow.FixedWidthTypes.Float16,
		"float": arrow.PrimitiveTypes.Float32, "float32": arrow.PrimitiveTypes.Float32,
		"double": arrow.PrimitiveTypes.Float64, "float64": arrow.PrimitiveTypes.Float64,
		"string": arrow.BinaryTypes.String, "utf8": arrow.BinaryTypes.String, "large_string": arrow.BinaryTypes.LargeString,
		"large_utf8": arrow.BinaryTypes.LargeString, "binary": arrow.BinaryTypes.Binary, "large_binary": arrow.BinaryTypes.LargeBinary,
		"date32:day": arrow.FixedWidthTypes.Date32, "date64:ms": arrow.FixedWidthTypes.Date64,
	}
	name := strings.ToLower(t.Type)
	if dt, ok := simple[name]; ok {
		return dt, nil
	}
	units := map[string]arrow.TimeUnit{"s": arrow.Second, "ms": arrow.Millisecond, "us": arrow.Microsecond, "ns": arrow.Nanosecond}
	parts := strings.Split(name, ":")
	child := func() (arrow.Field, error) {
		if len(t.Fields) != 1 {
			return arrow.Field{}, fmt.Errorf("%s needs exactly one field, got %d", t.Type, len(t.Fields))
		}
		dt, err := arrowOfJSON(t.Fields[0].Type)
		if err != nil {
			return arrow.Field{}, err
		}
		return arrow.Field{Name: t.Fields[0].Name, Type: dt, Nullable: t.Fields[0].Nullable}, nil
	}
	switch parts[0] {
	case "list", "large_list":
		f, err := child()
		if err != nil {
			return nil, err
		}
		if parts[0] == "list" {
			return arrow.ListOfField(f), nil
		}
		return arrow.LargeListOfField(f), nil
	case "fixed_size_list":
		f, err := child()
		if err != nil {
			return nil, err
		}
		if t.Length == nil || *t.Length <= 0 || *t.Length > 1<<20 {
			return nil, fmt.Errorf("fixed_size_list needs a length from 1 to %d", 1<<20)
		}
		return arrow.FixedSizeListOfField(int32(*t.Length), f), nil
	case "fixed_size_binary":
		if t.Length == nil || *t.Length <= 0 || *t.Length > 1<<20 {
			return nil, fmt.Errorf("fixed_size_binary needs a length from 1 to %d", 1<<20)
		}
		return &arrow.FixedSizeBinaryType{ByteWidth: *t.Length}, nil
	case "struct":
		fields := make([]arrow.Field, len(t.Fields))
		for i, f := range t.Fields {
			dt, err := arrowOfJSON(f.Type)
			if err != nil {
				return nil, err
			}
			fields[i] = arrow.Field{Name: f.Name, Type: dt, Nullable: f.Nullable}
		}
		return arrow.StructOf(fields...), nil
	case "timestamp":
		if len(parts) == 3 {
			if u, ok := units[parts[1]]; ok {
				tz := parts[2]
				if tz == "-" {
					tz = ""
				}
				return &arrow.TimestampType{Unit: u, TimeZone: tz}, nil
			}
		}
	case "time32", "time64", "duration":
		if len(parts) == 2 {
			if u, ok := units[parts[1]]; ok {
				switch parts[0] {
				case "time32":
					return &arrow.Time32Type{Unit: u}, nil
				case "time64":
					return &arrow.Time64Type{Unit: u}, nil
				}
				return &arrow.DurationType{Unit: u}, nil
			}
		}
	}
	return nil, fmt.Errorf("unknown data type %q: %w", t.Type, lancer.ErrInvalidArgument)
}
