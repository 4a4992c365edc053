package server

import (
	"fmt"
	"strconv"

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
