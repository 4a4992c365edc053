// Package managedtest builds datasets with managed blobs (reader and writer
// feature flag 16384) the way docs/spec/managed-blobs.md lays them out, for
// the tests of the dataset package and the CLI: lancer cannot write them,
// so a test writes a blob v2 dataset with lancer and then hand-sets the
// flag, a base path binding the dataset root, the descriptor bytes and a
// _blobs/<uuid>.blob object.
package managedtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/manifesttest"
)

// Placeholder is the URI the external blob of row 1 is written with; its
// bytes are then overwritten in place. Every URI a test sets must have its
// length, so that the data file's layout stays the same.
const Placeholder = "_blobs/0191f3a2-7c1e-7d40-9a51-3e6f8c2b4d10.blob"

// BaseID is the base path id the manifest binds the dataset root to.
const BaseID = 7

// Dataset is a managed blob dataset in Store: row 0 (rowid 0) an inline
// value, row 1 (rowid 1) a managed descriptor (Kind 4, BaseID, Placeholder
// at [Prefix, Prefix+len(Payload)) of Object), row 2 null.
type Dataset struct {
	Store    blob.Store
	Root     string // the dataset root's path, as the base path records it
	DataFile string // the data file's key
	Inline   []byte
	Payload  []byte
	Object   []byte // the whole _blobs object
	Prefix   uint64 // where Payload starts in Object

	key  string // the manifest's key
	orig []byte // the data file as lancer wrote it
	at   int    // where row 1's descriptor starts in it
}

// Build writes the dataset in a local store at dir (an absolute path).
func Build(t testing.TB, dir string) *Dataset {
	t.Helper()
	ctx := context.Background()
	store, err := blob.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	md := &Dataset{Store: store, Root: dir, Inline: []byte("inline value"),
		Payload: []byte("the managed payload, read from _blobs"), Prefix: 11}
	md.Object = append(append([]byte("other blob "), md.Payload...), []byte(" and after")...)

	mem := memory.NewGoAllocator()
	st := arrow.StructOf(
		arrow.Field{Name: "data", Type: arrow.BinaryTypes.LargeBinary, Nullable: true},
		arrow.Field{Name: "uri", Type: arrow.BinaryTypes.String, Nullable: true},
	)
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "blob", Type: st, Nullable: true,
			Metadata: arrow.NewMetadata([]string{schema.MetaExtensionName}, []string{schema.BlobV2Extension})},
	}, nil)
	ib := array.NewInt64Builder(mem)
	defer ib.Release()
	sb := array.NewStructBuilder(mem, st)
	defer sb.Release()
	data, uri := sb.FieldBuilder(0).(*array.BinaryBuilder), sb.FieldBuilder(1).(*array.StringBuilder)
	ib.AppendValues([]int64{0, 1, 2}, nil)
	sb.Append(true)
	data.Append(md.Inline)
	uri.AppendNull()
	sb.Append(true)
	data.AppendNull()
	uri.Append(Placeholder)
	sb.AppendNull()
	cols := []arrow.Array{ib.NewArray(), sb.NewArray()}
	rec := array.NewRecordBatch(sch, cols, 3)
	for _, c := range cols {
		c.Release()
	}
	defer rec.Release()
	rr, err := array.NewRecordReader(sch, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	d, err := dataset.Write(ctx, store, rr, &dataset.WriteOptions{FileVersion: format.Version2_2})
	if err != nil {
		t.Fatal(err)
	}
	m := d.Manifest()
	if len(m.Fragments) != 1 || len(m.Fragments[0].Files) != 1 {
		t.Fatalf("wrote %d fragments, want one of one file", len(m.Fragments))
	}
	md.DataFile = "data/" + m.Fragments[0].Files[0].Path
	if err := store.Write(ctx, Placeholder, md.Object); err != nil {
		t.Fatal(err)
	}
	md.SetDescriptor(t, format.BlobDescriptor{Kind: format.BlobManaged, Position: md.Prefix,
		Size: uint64(len(md.Payload)), BlobID: BaseID, URI: Placeholder})

	md.key = d.ManifestKey()
	md.EditManifest(t, func(m *manifest.Manifest) {
		m.ReaderFeatureFlags |= manifest.FlagManagedBlobs | manifest.FlagBasePaths
		m.WriterFeatureFlags |= manifest.FlagManagedBlobs | manifest.FlagBasePaths
		m.BasePaths = append(m.BasePaths, manifest.BasePath{ID: BaseID, IsDatasetRoot: true, Path: dir})
	})
	return md
}

// SetDescriptor overwrites row 1's descriptor in the data file. The writer
// stores a blob v2 descriptor as a packed struct row (kind u8, position
// u64, size u64, blob_id u32, then blob_uri as a u32 length and its bytes),
// so Build finds the row by its URI once; a new URI must keep its length so
// that the file's layout stays the same.
func (md *Dataset) SetDescriptor(t testing.TB, d format.BlobDescriptor) {
	t.Helper()
	ctx := context.Background()
	if len(d.URI) != len(Placeholder) {
		t.Fatalf("URI %q: want %d bytes, the placeholder's length", d.URI, len(Placeholder))
	}
	if md.orig == nil {
		file, err := md.Store.ReadAll(ctx, md.DataFile)
		if err != nil {
			t.Fatal(err)
		}
		var row []byte
		row = append(row, format.BlobExternal)
		row = append(row, make([]byte, 20)...) // position, size, blob_id: 0
		row = binary.LittleEndian.AppendUint32(row, uint32(len(Placeholder)))
		row = append(row, Placeholder...)
		if n := bytes.Count(file, row); n != 1 {
			t.Fatalf("%s: the external descriptor of row 1 found %d times, want once", md.DataFile, n)
		}
		md.orig, md.at = file, bytes.Index(file, row)
	}
	out := append([]byte(nil), md.orig...)
	row := out[md.at:]
	row[0] = d.Kind
	binary.LittleEndian.PutUint64(row[1:], d.Position)
	binary.LittleEndian.PutUint64(row[9:], d.Size)
	binary.LittleEndian.PutUint32(row[17:], d.BlobID)
	copy(row[25:], d.URI)
	if err := md.Store.Write(ctx, md.DataFile, out); err != nil {
		t.Fatal(err)
	}
}

// EditManifest rewrites the dataset's manifest in place with edit applied.
func (md *Dataset) EditManifest(t testing.TB, edit func(m *manifest.Manifest)) {
	t.Helper()
	manifesttest.EditAt(t, md.Store, md.key, edit)
}

// ClearFlag clears the managed_blobs bits, leaving the kind 4 descriptor.
func (md *Dataset) ClearFlag(t testing.TB) {
	t.Helper()
	md.EditManifest(t, func(m *manifest.Manifest) {
		m.ReaderFeatureFlags &^= manifest.FlagManagedBlobs
		m.WriterFeatureFlags &^= manifest.FlagManagedBlobs
	})
}
