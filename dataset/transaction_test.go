package dataset

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// manifestBytes returns the bytes of version v's manifest file.
func manifestBytes(t *testing.T, store blob.Store, v uint64) (string, []byte) {
	t.Helper()
	e, err := findManifest(context.Background(), store, v)
	if err != nil {
		t.Fatal(err)
	}
	b, err := store.ReadAll(context.Background(), e.key)
	if err != nil {
		t.Fatal(err)
	}
	return e.key, b
}

// TestCommitRecords checks what a commit records, against what Lance 12
// records (docs/spec/lance-format.md §3, §4.7): the manifest file layout, the transaction in
// both places, the version hint and every manifest field.
func TestCommitRecords(t *testing.T) {
	ctx := context.Background()
	_, store := copyFixture(t, "indexed_v2_2")
	mem := checkedAlloc(t)
	d := openStore(t, store, 0, mem)
	if len(d.manifest.IndexSegments()) == 0 {
		t.Fatal("the fixture has no indices")
	}
	rows := scanAll(t, d)
	start := time.Now()
	d2, err := d.DeleteRowIDs(ctx, []uint64{rows[3].id, rows[700].id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	v := d2.Version()
	key, file := manifestBytes(t, store, v)
	if want := fmt.Sprintf("_versions/%020d.manifest", ^uint64(0)-v); key != want {
		t.Errorf("manifest at %s, want %s", key, want)
	}
	// Layout: index section at 0, the transaction right after, then the
	// manifest, which ends at the footer.
	n := len(file)
	if string(file[n-4:]) != "LANC" || binary.LittleEndian.Uint16(file[n-8:]) != 0 || binary.LittleEndian.Uint16(file[n-6:]) != 2 {
		t.Errorf("footer % x, want version 0.2 and LANC", file[n-16:])
	}
	c, err := manifest.ReadFile(ctx, store, key, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	pm, txn := c.Manifest, c.Transaction
	// The layout itself (index section at 0, the transaction right after,
	// the manifest up to the footer) is manifest.EncodeFile's, tested there.
	if binary.LittleEndian.Uint32(file) == 0 {
		t.Error("the manifest file does not start with its index section")
	}
	txnBytes, err := manifest.EncodeTransaction(txn)
	if err != nil {
		t.Fatal(err)
	}
	fileTxn, err := store.ReadAll(ctx, manifest.TransactionsDir+pm.TransactionFile)
	if err != nil || !bytes.Equal(fileTxn, txnBytes) {
		t.Errorf("transaction file %s: %v; equal to the inline copy: %v", pm.TransactionFile, err, bytes.Equal(fileTxn, txnBytes))
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(txn.UUID) ||
		pm.TransactionFile != fmt.Sprintf("%d-%s.txn", d.Version(), txn.UUID) || txn.ReadVersion != d.Version() {
		t.Errorf("transaction %s read %d recorded as %s", txn.UUID, txn.ReadVersion, pm.TransactionFile)
	}
	del := opAs[*manifest.Delete](txn)
	if del == nil || len(del.UpdatedFragments) != 1 || len(del.DeletedFragmentIDs) != 0 {
		t.Errorf("transaction %+v, want a Delete updating fragment 0", txn)
	}
	hint, err := store.ReadAll(ctx, versionHintKey)
	if err != nil || string(hint) != fmt.Sprintf(`{"version":%d}`, v) {
		t.Errorf("version hint %q, %v", hint, err)
	}
	if wv := pm.WriterVersion; wv.Library != "lancer" || len(strings.Split(wv.Version, ".")) != 3 {
		t.Errorf("writer version %v", wv)
	}
	if ts := pm.Timestamp; ts.Before(start.Add(-time.Second)) || ts.After(time.Now().Add(time.Second)) {
		t.Errorf("timestamp %v", ts)
	}
	prev := d.manifest
	if pm.DataFormat != prev.DataFormat || pm.Version != v || pm.ReaderFeatureFlags != 1 || pm.WriterFeatureFlags != 1 ||
		*pm.MaxFragmentID != *prev.MaxFragmentID ||
		!slices.EqualFunc(pm.Fields(), prev.Fields(), (*schema.Field).EqualRecord) {
		t.Errorf("manifest %+v\nprevious %+v", pm, prev)
	}
	// Indices are kept as they were, byte for byte.
	if !reflect.DeepEqual(d2.manifest.IndexSegments(), d.manifest.IndexSegments()) {
		t.Error("a delete changed the index section")
	}
	// The new deletion files are Lance's: .arrow below 5000 rows.
	for _, f := range pm.Fragments {
		if df := f.DeletionFile; df != nil && df.ReadVersion == d.Version() && df.Kind != manifest.DeletionArrow {
			t.Errorf("fragment %d deletion file %v", f.ID, df)
		}
	}

	// Dropping an indexed column drops its index; the others stay.
	d3, err := d2.DropColumns(ctx, []string{"category"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ix := range d3.manifest.IndexSegments() {
		names = append(names, ix.Name)
		if i := slices.IndexFunc(d2.manifest.IndexSegments(), func(o *manifest.IndexMetadata) bool { return o.Name == ix.Name }); i < 0 || !reflect.DeepEqual(ix, d2.manifest.IndexSegments()[i]) {
			t.Errorf("index %s changed", ix.Name)
		}
	}
	if slices.Contains(names, "category_idx") || len(names) != len(d2.manifest.IndexSegments())-1 {
		t.Errorf("indices after dropping category: %q", names)
	}
	if got := opAs[*manifest.Project](rawTransaction(t, store, d3.Version())); got == nil || !got.PreservesNullability {
		t.Errorf("drop recorded as %v", got)
	}

	// An overwrite drops every index; a restore brings them back.
	d4, err := overwriteBank(ctx, t, d3, loadBank(t, store), false)
	if err != nil {
		t.Fatal(err)
	}
	_, file4 := manifestBytes(t, store, d4.Version())
	if len(d4.manifest.IndexSegments()) != 0 || len(d4.Indices()) != 0 {
		t.Error("an overwrite kept indices")
	}
	if binary.LittleEndian.Uint32(file4) == 0 {
		t.Error("manifest without indices does not start with the transaction")
	}
	d5, err := d.Restore(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d5.manifest.IndexSegments(), d.manifest.IndexSegments()) {
		t.Error("a restore did not bring back the indices")
	}
	if got := opAs[*manifest.Restore](rawTransaction(t, store, d5.Version())); got == nil || got.Version != d.Version() {
		t.Errorf("restore recorded as %v", got)
	}
	if *d5.manifest.MaxFragmentID < *d4.manifest.MaxFragmentID {
		t.Errorf("restore lowered max_fragment_id to %d", *d5.manifest.MaxFragmentID)
	}
}

// withUnknownField returns the manifest file with an unknown field 9999
// holding text appended to its Manifest message, as a newer Lance would
// write one (the layout is manifest.EncodeFile's, which writes no section
// after the manifest).
func withUnknownField(t *testing.T, file []byte, text string) []byte {
	t.Helper()
	n := len(file)
	mpos := binary.LittleEndian.Uint64(file[n-16:])
	extra := protowire.AppendString(protowire.AppendTag(nil, 9999, protowire.BytesType), text)
	out := append([]byte(nil), file[:n-16]...)
	out = append(out, extra...)
	binary.LittleEndian.PutUint32(out[mpos:], binary.LittleEndian.Uint32(out[mpos:])+uint32(len(extra)))
	return append(out, file[n-16:]...)
}

// TestUnknownFieldsCarried: fields lancer does not know, config and table
// metadata survive every kind of commit (docs/spec/lance-format.md §14). The manifest package
// checks that every message of a manifest keeps its unknown fields through
// Clone and EncodeFile; this checks that the commits build on those.
func TestUnknownFieldsCarried(t *testing.T) {
	ctx := context.Background()
	_, store := copyFixture(t, "indexed_v2_2")
	d := openStore(t, store, 0, checkedAlloc(t))
	// Commit, as a future Lance would, a version with unknown fields.
	m := d.manifest.Clone()
	m.Version++
	m.Config = map[string]string{"lance.future": "1", "user": "x"}
	m.TableMetadata = map[string]string{"owner": "me"}
	tb, err := manifest.EncodeTransaction(&manifest.Transaction{ReadVersion: d.Version(), UUID: "00000000-0000-4000-8000-000000000000",
		Operation: &manifest.UpdateConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	m.TransactionFile = ""
	file, err := manifest.EncodeFile(m, tb)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.CreateIfAbsent(ctx, manifest.Key(manifest.ManifestNamingV2, m.Version), withUnknownField(t, file, "future-lance-field")); err != nil {
		t.Fatal(err)
	}
	d = openStore(t, store, 0, checkedAlloc(t))
	check := func(d *Dataset, what string) {
		t.Helper()
		_, file := manifestBytes(t, store, d.Version())
		if !bytes.Contains(file, []byte("future-lance-field")) {
			t.Errorf("%s: unknown field lost", what)
		}
		m := d.manifest
		if m.Config["lance.future"] != "1" || m.Config["user"] != "x" || m.TableMetadata["owner"] != "me" {
			t.Errorf("%s: config %v, table metadata %v", what, m.Config, m.TableMetadata)
		}
		if m.WriterFeatureFlags&manifest.FlagTableConfig == 0 || m.ReaderFeatureFlags&manifest.FlagTableConfig != 0 {
			t.Errorf("%s: flags %d/%d with config", what, m.ReaderFeatureFlags, m.WriterFeatureFlags)
		}
	}
	rows := scanAll(t, d)
	d, err = d.DeleteRowIDs(ctx, []uint64{rows[len(rows)-1].id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	check(d, "delete")
	if d, err = d.RenameColumn(ctx, "text", "body", nil); err != nil {
		t.Fatal(err)
	}
	check(d, "rename")
	if d, err = appendBank(ctx, t, d, loadBank(t, store), 1, 0); err != nil {
		t.Fatal(err)
	}
	check(d, "append")
}

// TestNamingFollowsDataset: commits on a V1-named dataset make V1 names.
func TestNamingFollowsDataset(t *testing.T) {
	ctx := context.Background()
	dir, store := copyFixture(t, "v1_manifest_paths_v2_2")
	d := openStore(t, store, 0, checkedAlloc(t))
	d2, err := d.DeleteRowIDs(ctx, []uint64{rowIDs(scanAll(t, d))[0]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d2.manifestKey != fmt.Sprintf("_versions/%d.manifest", d2.Version()) {
		t.Fatalf("manifest %s in %s", d2.manifestKey, dir)
	}
}

// recordReader makes a RecordReader of one batch.
func recordReader(t *testing.T, fields []arrow.Field, cols ...arrow.Array) array.RecordReader {
	t.Helper()
	schema := arrow.NewSchema(fields, nil)
	rec := array.NewRecordBatch(schema, cols, int64(cols[0].Len()))
	for _, c := range cols {
		c.Release()
	}
	defer rec.Release()
	r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Release)
	return r
}

// TestWriteErrors: misuse is refused before anything is committed.
func TestWriteErrors(t *testing.T) {
	ctx := context.Background()
	_, store := copyFixture(t, "history_v2_2")
	d := openStore(t, store, 0, checkedAlloc(t))
	mem := checkedAlloc(t)
	ints := func(vals ...int64) arrow.Array {
		b := array.NewInt64Builder(mem)
		defer b.Release()
		b.AppendValues(vals, nil)
		return b.NewArray()
	}
	check := func(what string, err error, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", what, err, want)
		}
	}
	_, err := Write(ctx, store, recordReader(t, []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, ints(1)), nil)
	check("create over a dataset", err, lancer.ErrAlreadyExists)
	_, err = d.Append(ctx, recordReader(t, []arrow.Field{{Name: "nope", Type: arrow.PrimitiveTypes.Int64}}, ints(1)), nil)
	check("append of an unknown column", err, lancer.ErrInvalidArgument)
	_, err = d.Append(ctx, recordReader(t, []arrow.Field{{Name: "label2", Type: arrow.PrimitiveTypes.Int64}}, ints(1)), nil)
	check("append of a wrongly typed column", err, lancer.ErrInvalidArgument)
	_, err = d.Append(ctx, recordReader(t, []arrow.Field{{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true}},
		func() arrow.Array {
			b := array.NewFloat64Builder(mem)
			defer b.Release()
			b.Append(1)
			return b.NewArray()
		}()), nil)
	check("append without the non-nullable id", err, lancer.ErrInvalidArgument)
	_, err = Write(ctx, blob.NewMemStore("x"), recordReader(t, []arrow.Field{{Name: RowIDColumn, Type: arrow.PrimitiveTypes.Int64}}, ints(1)), nil)
	check("a reserved column name", err, lancer.ErrInvalidArgument)
	_, err = d.DropColumns(ctx, []string{"nope"}, nil)
	check("drop of an unknown column", err, lancer.ErrNotFound)
	_, err = d.DropColumns(ctx, []string{"id", "label2", "value", "vec", "flag", "tags", "extra"}, nil)
	check("drop of every column", err, lancer.ErrInvalidArgument)
	_, err = d.RenameColumn(ctx, "id", "value", nil)
	check("rename to a taken name", err, lancer.ErrInvalidArgument)
	_, err = d.RenameColumn(ctx, "id", "a.b", nil)
	check("rename to a dotted name", err, lancer.ErrInvalidArgument)
	_, err = d.RenameColumn(ctx, "tags.item", "x", nil)
	check("rename of a list item", err, lancer.ErrInvalidArgument)
	_, err = d.DropColumns(ctx, []string{"vec.item"}, nil)
	check("drop of a list item", err, lancer.ErrInvalidArgument)
	_, err = Write(ctx, store, recordReader(t, []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, ints(1)),
		&WriteOptions{Mode: WriteAppend, FileVersion: format.Version2_3})
	check("file version 2.3", err, lancer.ErrUnsupported)
	if v, err := LatestVersion(ctx, store); err != nil || v != d.Version() {
		t.Errorf("latest version %d, %v after refused writes, want %d", v, err, d.Version())
	}
}

// TestDeleteNothing: a delete matching no live row still commits a version,
// as Lance's does.
func TestDeleteNothing(t *testing.T) {
	ctx := context.Background()
	_, store := copyFixture(t, "history_v2_2")
	d := openStore(t, store, 0, checkedAlloc(t))
	d2, err := d.DeleteRowIDs(ctx, []uint64{1 << 40, 0}, nil) // no fragment 256; row 0 is deleted
	if err != nil {
		t.Fatal(err)
	}
	if d2.Version() != d.Version()+1 || len(scanAll(t, d2)) != len(scanAll(t, d)) {
		t.Fatalf("version %d", d2.Version())
	}
	if del := opAs[*manifest.Delete](rawTransaction(t, store, d2.Version())); del == nil || len(del.UpdatedFragments)+len(del.DeletedFragmentIDs) != 0 {
		t.Fatalf("transaction %v", del)
	}
}

// TestNestedRenameAndDrop renames and drops struct members.
func TestNestedRenameAndDrop(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"types_v2_2", "types_v2_1", "types_v2_0"} {
		t.Run(name, func(t *testing.T) {
			_, store := copyFixture(t, name)
			d := openStore(t, store, 0, checkedAlloc(t))
			before := scanAll(t, d)
			d2, err := d.RenameColumn(ctx, "struct_nn.a", "alpha", nil)
			if err != nil {
				t.Fatal(err)
			}
			d3, err := d2.DropColumns(ctx, []string{"struct_nn.b", "u8"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			after := scanAll(t, d3)
			if len(after) != len(before) {
				t.Fatalf("%d rows, want %d", len(after), len(before))
			}
			for i := range after {
				var b, a map[string]any
				if err := json.Unmarshal(before[i].cols["struct_nn"], &b); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(after[i].cols["struct_nn"], &a); err != nil {
					t.Fatal(err)
				}
				if len(a) != 1 || fmt.Sprint(a["alpha"]) != fmt.Sprint(b["a"]) {
					t.Fatalf("row %d: struct_nn %v, was %v", i, a, b)
				}
				if _, ok := after[i].cols["u8"]; ok {
					t.Fatalf("row %d still has u8", i)
				}
			}
			if _, err := d3.DropColumns(ctx, []string{"struct_nn.alpha"}, nil); !errors.Is(err, lancer.ErrInvalidArgument) {
				t.Errorf("dropping the last struct member: %v", err)
			}
		})
	}
}

// TestWriterVersionFloor: a 0.x lancer records writer version 1.0.0 with
// its real version in the build metadata, so that older Lance releases
// do not take its manifests for those of a Lance before 0.8.15.
func TestWriterVersionFloor(t *testing.T) {
	for _, tc := range []struct {
		in, want manifest.WriterVersion
	}{
		{manifest.WriterVersion{Library: "lancer", Version: "0.1.0"},
			manifest.WriterVersion{Library: "lancer", Version: "1.0.0", BuildMetadata: "lancer.0.1.0"}},
		{manifest.WriterVersion{Library: "lancer", Version: "0.9.2", Prerelease: "rc.1", BuildMetadata: "dirty"},
			manifest.WriterVersion{Library: "lancer", Version: "1.0.0", BuildMetadata: "lancer.0.9.2-rc.1.dirty"}},
		{manifest.WriterVersion{Library: "lancer", Version: "1.2.3"},
			manifest.WriterVersion{Library: "lancer", Version: "1.2.3"}},
	} {
		if got := floorWriterVersion(tc.in); got != tc.want {
			t.Errorf("floorWriterVersion(%+v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
	if got := writerVersion(); got.Version == "" || got.Version[0] == '0' {
		t.Errorf("writerVersion() = %+v: records a version below %s", got, minWriterVersion)
	}
}
