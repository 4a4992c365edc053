package pb_test

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/lancerdb/lancer/internal/pb/internal/pbgen"
)

// TestGeneratedCodeIsCurrent regenerates the Go code into a temporary
// directory and fails if any committed .pb.go file differs from it (or is
// missing, or is no longer produced). Fix a failure with
// `go generate ./internal/pb`.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	files, err := pbgen.Generate(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("generator produced no files")
	}

	tmp := t.TempDir()
	if _, err := pbgen.Write(tmp, files); err != nil {
		t.Fatal(err)
	}
	fresh, err := pbgen.ExistingGenerated(tmp)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := pbgen.ExistingGenerated(".")
	if err != nil {
		t.Fatal(err)
	}

	var names []string
	for name := range fresh {
		names = append(names, name)
	}
	for name := range committed {
		if _, ok := fresh[name]; !ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		want, inFresh := fresh[name]
		got, inCommitted := committed[name]
		switch {
		case !inCommitted:
			t.Errorf("%s is not committed; run go generate ./internal/pb", name)
		case !inFresh:
			t.Errorf("%s is no longer generated; run go generate ./internal/pb", name)
		case !bytes.Equal(got, want):
			t.Errorf("%s is stale; run go generate ./internal/pb", name)
		}
	}
}

// TestGeneratorIsDeterministic runs the generator twice and requires
// identical output.
func TestGeneratorIsDeterministic(t *testing.T) {
	a, err := pbgen.Generate(".")
	if err != nil {
		t.Fatal(err)
	}
	b, err := pbgen.Generate(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(b) {
		t.Fatalf("runs produced %d and %d files", len(a), len(b))
	}
	for name, content := range a {
		if !bytes.Equal(content, b[name]) {
			t.Errorf("%s differs between two runs", name)
		}
	}
}

// TestEveryProtoHasGoPackageDir checks that each .proto file sits in the
// directory of the Go package it generates into.
func TestEveryProtoHasGoPackageDir(t *testing.T) {
	protos, err := pbgen.ProtoFiles(".")
	if err != nil {
		t.Fatal(err)
	}
	files, err := pbgen.Generate(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range protos {
		want := p[:len(p)-len(".proto")] + pbgen.GeneratedSuffix
		if _, ok := files[want]; !ok {
			t.Errorf("%s: expected generated file %s", p, want)
		}
		if _, err := os.Stat(filepath.FromSlash(p)); err != nil {
			t.Error(err)
		}
	}
}
