package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// checkExport checks that the rows real Lance read from the dataset
// <db>/t.lance and exported as the Arrow IPC file out (lance-write.mjs's
// export) are recs, column by column, and removes out.
func checkExport(out, db string, schema *arrow.Schema, recs []arrow.RecordBatch) error {
	defer os.Remove(out)
	f, err := os.Open(out)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return fmt.Errorf("bench: rows Lance read from %s: %w", db, err)
	}
	defer r.Close()
	var got []arrow.RecordBatch
	for i := range r.NumRecords() {
		rec, err := r.RecordBatchAt(i)
		if err != nil {
			return fmt.Errorf("bench: rows Lance read from %s: %w", db, err)
		}
		defer rec.Release()
		got = append(got, rec)
	}
	for _, f := range schema.Fields() {
		want, err := column(recs, schema, f.Name)
		if err != nil {
			return err
		}
		defer want.Release()
		have, err := column(got, r.Schema(), f.Name)
		if err != nil {
			return fmt.Errorf("bench: Lance's rows of %s: %w", db, err)
		}
		defer have.Release()
		if err := sameValues(want, have); err != nil {
			return fmt.Errorf("bench: column %s of %s: real Lance read other values than were written: %w", f.Name, db, err)
		}
	}
	return nil
}

// column concatenates the named column of recs.
func column(recs []arrow.RecordBatch, schema *arrow.Schema, name string) (arrow.Array, error) {
	idx := schema.FieldIndices(name)
	if len(idx) != 1 {
		return nil, fmt.Errorf("bench: no column %s in %s", name, schema)
	}
	parts := make([]arrow.Array, len(recs))
	for i, r := range recs {
		parts[i] = r.Column(idx[0])
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("bench: no rows of column %s", name)
	}
	return array.Concatenate(parts, memory.DefaultAllocator)
}

// sameValues compares two columns value by value. array.Equal is tried
// first; it also compares what lies under null slots (the members of a
// null struct, for one), which writers need not keep, so a difference it
// finds is confirmed row by row on the values a reader sees.
func sameValues(want, have arrow.Array) error {
	if want.Len() != have.Len() {
		return fmt.Errorf("%d rows, want %d", have.Len(), want.Len())
	}
	if array.Equal(want, have) {
		return nil
	}
	if !arrow.TypeEqual(want.DataType(), have.DataType()) {
		return fmt.Errorf("type %s, want %s", have.DataType(), want.DataType())
	}
	for i := range want.Len() {
		w, err := json.Marshal(want.GetOneForMarshal(i))
		if err != nil {
			return err
		}
		h, err := json.Marshal(have.GetOneForMarshal(i))
		if err != nil {
			return err
		}
		if !bytes.Equal(w, h) {
			return fmt.Errorf("row %d is %.200s, want %.200s", i, h, w)
		}
	}
	return nil
}
