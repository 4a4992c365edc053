package schema

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer"
)

// FromArrow builds a Lance schema from an Arrow schema, numbering
// fields depth-first in pre-order from nextID (a new dataset starts at 0;
// new columns of an existing one at its max field id + 1, since ids are
// never reused). Struct members, list items and map entries become child
// fields; fixed-size lists are leaves. Field and schema metadata are kept.
func FromArrow(as *arrow.Schema, nextID int32) (*Schema, error) {
	s := &Schema{}
	if md := as.Metadata(); md.Len() > 0 {
		s.Metadata = make(map[string]string, md.Len())
		for i, k := range md.Keys() {
			s.Metadata[k] = md.Values()[i]
		}
	}
	for _, af := range as.Fields() {
		f, err := fieldFromArrow(af, -1, &nextID)
		if err != nil {
			return nil, err
		}
		s.Fields = append(s.Fields, f)
	}
	return s, nil
}

func fieldFromArrow(af arrow.Field, parent int32, nextID *int32) (*Field, error) {
	if *nextID < 0 {
		return nil, fmt.Errorf("format: field %q: field ids exhausted: %w", af.Name, lancer.ErrInvalidArgument)
	}
	lt, err := LogicalType(af.Type)
	if err != nil {
		return nil, fmt.Errorf("format: field %q: %w", af.Name, err)
	}
	f := &Field{ID: *nextID, ParentID: parent, Name: af.Name, LogicalType: lt, Nullable: af.Nullable}
	*nextID++
	if af.Metadata.Len() > 0 {
		f.Metadata = make(map[string]string, af.Metadata.Len())
		for i, k := range af.Metadata.Keys() {
			f.Metadata[k] = af.Metadata.Values()[i]
		}
	}
	var children []arrow.Field
	switch t := af.Type.(type) {
	case *arrow.StructType:
		children = t.Fields()
	case *arrow.ListType:
		children = []arrow.Field{t.ElemField()}
	case *arrow.LargeListType:
		children = []arrow.Field{t.ElemField()}
	case *arrow.MapType:
		children = []arrow.Field{t.ElemField()}
	}
	for _, c := range children {
		cf, err := fieldFromArrow(c, f.ID, nextID)
		if err != nil {
			return nil, err
		}
		f.Children = append(f.Children, cf)
	}
	if err := resolveTypes(f); err != nil {
		return nil, err
	}
	return f, nil
}

// LogicalType returns Lance's type string for an Arrow type (the inverse of
// ParseLogicalType, plus the nested kinds). Types Lance cannot store are an
// error wrapping lancer.ErrUnsupported.
func LogicalType(dt arrow.DataType) (string, error) {
	for name, t := range simpleTypes {
		if name != "json" && arrow.TypeEqual(t, dt) {
			return name, nil
		}
	}
	unit := func(u arrow.TimeUnit) string {
		for name, tu := range timeUnits {
			if tu == u {
				return name
			}
		}
		return "?"
	}
	switch t := dt.(type) {
	case *arrow.TimestampType:
		tz := t.TimeZone
		if tz == "" {
			tz = "-"
		}
		return "timestamp:" + unit(t.Unit) + ":" + tz, nil
	case *arrow.DurationType:
		return "duration:" + unit(t.Unit), nil
	case *arrow.Decimal128Type:
		return fmt.Sprintf("decimal:128:%d:%d", t.Precision, t.Scale), nil
	case *arrow.Decimal256Type:
		return fmt.Sprintf("decimal:256:%d:%d", t.Precision, t.Scale), nil
	case *arrow.FixedSizeBinaryType:
		return "fixed_size_binary:" + strconv.Itoa(t.ByteWidth), nil
	case *arrow.FixedSizeListType:
		if md := t.ElemField().Metadata; md.FindKey(MetaExtensionName) >= 0 && md.Values()[md.FindKey(MetaExtensionName)] == "lance.bfloat16" {
			return fmt.Sprintf("fixed_size_list:lance.bfloat16:%d", t.Len()), nil
		}
		child, err := LogicalType(t.Elem())
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("fixed_size_list:%s:%d", child, t.Len()), nil
	case *arrow.DictionaryType:
		v, err := LogicalType(t.ValueType)
		if err != nil {
			return "", err
		}
		k, err := LogicalType(t.IndexType)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("dict:%s:%s:%t", v, k, t.Ordered), nil
	case *arrow.StructType:
		return "struct", nil
	case *arrow.ListType:
		if t.Elem().ID() == arrow.STRUCT {
			return "list.struct", nil
		}
		return "list", nil
	case *arrow.LargeListType:
		if t.Elem().ID() == arrow.STRUCT {
			return "large_list.struct", nil
		}
		return "large_list", nil
	case *arrow.MapType:
		return "map", nil
	}
	return "", fmt.Errorf("arrow type %s has no Lance logical type: %w", dt, lancer.ErrUnsupported)
}
