package fixturetest

import (
	"encoding/binary"
	"os"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer/internal/pb/tablepb"
)

// EditManifest edits the Manifest message of the manifest file at path in
// place, as tests do to a copy of a fixture (to point its base paths at
// the copy, say). The manifest is the file's last section, so the sections
// before it keep their positions.
func EditManifest(t testing.TB, path string, edit func(m *tablepb.Manifest)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 16 {
		t.Fatalf("%s: %d bytes, too short for a manifest file", path, len(b))
	}
	footer := b[len(b)-16:]
	pos := binary.LittleEndian.Uint64(footer)
	if pos+4 > uint64(len(b)-16) {
		t.Fatalf("%s: manifest position %d past the footer", path, pos)
	}
	n := binary.LittleEndian.Uint32(b[pos:])
	if pos+4+uint64(n) > uint64(len(b)-16) {
		t.Fatalf("%s: manifest of %d bytes at %d overruns the footer", path, n, pos)
	}
	var m tablepb.Manifest
	if err := proto.Unmarshal(b[pos+4:pos+4+uint64(n)], &m); err != nil {
		t.Fatal(err)
	}
	edit(&m)
	body, err := proto.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.LittleEndian.AppendUint32(slices.Clone(b[:pos]), uint32(len(body)))
	out = append(append(out, body...), footer...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
