package manifest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// TestLegacyDictionaryManifests: the manifests of legacy datasets with a
// dictionary column, as real releases wrote them (testdata/releases: a
// table {id, cat: dictionary<int32, utf8> of red/green/blue, vector}
// created by vectordb 0.4.20 and by @lancedb/lancedb 0.10.0; Lance 12's
// legacy types fixture), and those of a 2.0 dataset by @lancedb/lancedb
// 0.15.0 (whose Lance still wrote, and read, the values for 2.x datasets;
// its values red, green, blue, yellow), hold the dictionary values at the
// start of the file. lancer reads them, and lays them out again byte for byte as the
// release did, so that Lance (which decodes every data file's keys with the
// manifest's values) reads the versions lancer commits.
func TestLegacyDictionaryManifests(t *testing.T) {
	lance12, err := filepath.Glob(filepath.Join(fixturetest.DatasetPath(t, "types_vlegacy"), "_versions", "*.manifest"))
	if err != nil || len(lance12) == 0 {
		t.Fatalf("the legacy types fixture's manifest: %v", err)
	}
	rgb := []string{"red", "green", "blue"}
	cases := []struct {
		path   string
		values map[int32][]string // nil: not checked
	}{
		{"testdata/releases/vectordb-0.4.20-dictionary.manifest", map[int32][]string{1: rgb}},
		{"testdata/releases/lancedb-0.10.0-dictionary.manifest", map[int32][]string{1: rgb}},
		{"testdata/releases/lancedb-0.15.0-v2-dictionary.manifest", map[int32][]string{1: append(rgb, "yellow")}},
		{lance12[0], nil},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			file, err := os.ReadFile(c.path)
			if err != nil {
				t.Fatal(err)
			}
			m, err := readBytes(file)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Dictionaries()) == 0 {
				t.Fatalf("format %s: no dictionary loaded", m.DataFormat)
			}
			for id, want := range c.values {
				d := m.Dictionaries()[id]
				if d == nil || len(d.Values) != len(want) {
					t.Fatalf("field %d: dictionary %+v, want %q", id, d, want)
				}
				for i, v := range want {
					if string(d.Values[i]) != v {
						t.Errorf("field %d value %d: %q, want %q", id, i, d.Values[i], v)
					}
				}
			}
			layout, _, err := appendDictionaries(m, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(layout) == 0 || !bytes.Equal(layout, file[:min(len(layout), len(file))]) {
				t.Errorf("the dictionaries laid out again (%d bytes) differ from the release's first bytes", len(layout))
			}
			enc, err := EncodeFile(m.Clone(), nil)
			if err != nil {
				t.Fatal(err)
			}
			back, err := readBytes(enc)
			if err != nil {
				t.Fatalf("reading lancer's manifest: %v", err)
			}
			for id, d := range m.Dictionaries() {
				e := back.Dictionaries()[id]
				if e == nil || len(e.Values) != len(d.Values) {
					t.Fatalf("field %d: %d values written back as %+v", id, len(d.Values), e)
				}
				for i := range d.Values {
					if !bytes.Equal(d.Values[i], e.Values[i]) {
						t.Errorf("field %d value %d: %q written back as %q", id, i, d.Values[i], e.Values[i])
					}
				}
			}
		})
	}
}

// TestLegacyDictionaryManifestDamaged: a dictionary whose values or
// positions lie outside the manifest file, or go backwards, is ErrCorrupt
// naming the field, never a panic.
func TestLegacyDictionaryManifestDamaged(t *testing.T) {
	orig, err := os.ReadFile("testdata/releases/vectordb-0.4.20-dictionary.manifest")
	if err != nil {
		t.Fatal(err)
	}
	// The release's layout: "redgreenblue" at 0, then four positions.
	cases := []struct {
		name string
		edit func(b []byte)
	}{
		{"position past the values", func(b []byte) { binary.LittleEndian.PutUint64(b[12+8:], 1000) }},
		{"positions backwards", func(b []byte) {
			binary.LittleEndian.PutUint64(b[12+8:], 9)
			binary.LittleEndian.PutUint64(b[12+16:], 2)
		}},
		{"negative position", func(b []byte) { binary.LittleEndian.PutUint64(b[12:], 1<<63) }},
	}
	for _, c := range cases {
		b := bytes.Clone(orig)
		c.edit(b)
		_, err := readBytes(b)
		if !errors.Is(err, lancer.ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte(`"cat"`)) {
			t.Errorf("%s: %v, want ErrCorrupt naming field \"cat\"", c.name, err)
		}
	}
}

func readBytes(file []byte) (*Manifest, error) {
	s := blob.NewMemStore("dict")
	if err := s.Write(context.Background(), "_versions/1.manifest", file); err != nil {
		return nil, err
	}
	c, err := ReadFile(context.Background(), s, "_versions/1.manifest", 0, false)
	if err != nil {
		return nil, err
	}
	return c.Manifest, nil
}
