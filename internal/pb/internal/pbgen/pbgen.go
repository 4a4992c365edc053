// Package pbgen turns lancer's .proto files into Go code without an external
// protoc: the files are parsed and linked with github.com/bufbuild/protocompile
// and fed, as an in-memory CodeGeneratorRequest, to the code generator of
// protoc-gen-go (google.golang.org/protobuf/cmd/protoc-gen-go/internal_gengo).
//
// It is used by the protogen command (go generate) and by the test that checks
// that the committed .pb.go files are up to date.
package pbgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"github.com/bufbuild/protocompile/reporter"
	gengo "google.golang.org/protobuf/cmd/protoc-gen-go/internal_gengo"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// GeneratedSuffix is the file name suffix of generated Go files.
const GeneratedSuffix = ".pb.go"

// ProtoFiles returns the .proto files below root as slash-separated paths
// relative to root (which is also the import root), sorted. Directories named
// "internal" or "testdata" and hidden directories are skipped.
func ProtoFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (name == "internal" || name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".proto") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("pbgen: no .proto files below %s", root)
	}
	return files, nil
}

// Generate compiles every .proto file below root and returns the generated Go
// files, keyed by slash-separated path relative to root. Each output file is
// placed next to its .proto file (like protoc-gen-go's paths=source_relative).
// The result depends only on the .proto sources and the versions of the
// protobuf and protocompile modules, so it is byte-for-byte reproducible.
func Generate(root string) (map[string][]byte, error) {
	files, err := ProtoFiles(root)
	if err != nil {
		return nil, err
	}

	// Warnings (for example unused imports) are treated as errors to keep the
	// sources clean.
	var problems []error
	rep := reporter.NewReporter(
		func(e reporter.ErrorWithPos) error { problems = append(problems, e); return nil },
		func(e reporter.ErrorWithPos) { problems = append(problems, fmt.Errorf("warning: %w", e)) },
	)
	compiler := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			ImportPaths: []string{root},
		}),
		SourceInfoMode: protocompile.SourceInfoStandard,
		Reporter:       rep,
	}
	linked, err := compiler.Compile(context.Background(), files...)
	if len(problems) > 0 {
		return nil, fmt.Errorf("pbgen: compiling protos: %w", errors.Join(problems...))
	}
	if err != nil {
		return nil, fmt.Errorf("pbgen: compiling protos: %w", err)
	}

	req := &pluginpb.CodeGeneratorRequest{
		FileToGenerate: files,
		Parameter:      proto.String("paths=source_relative"),
	}
	seen := map[string]bool{}
	var add func(fd protoreflect.FileDescriptor)
	add = func(fd protoreflect.FileDescriptor) {
		if seen[fd.Path()] {
			return
		}
		seen[fd.Path()] = true
		imports := fd.Imports()
		for i := 0; i < imports.Len(); i++ {
			add(imports.Get(i).FileDescriptor)
		}
		req.ProtoFile = append(req.ProtoFile, toProto(fd))
	}
	for _, f := range linked {
		add(f)
	}

	plugin, err := protogen.Options{}.New(req)
	if err != nil {
		return nil, fmt.Errorf("pbgen: %w", err)
	}
	for _, f := range plugin.Files {
		if f.Generate {
			gengo.GenerateFile(plugin, f)
		}
	}
	plugin.SupportedFeatures = gengo.SupportedFeatures
	plugin.SupportedEditionsMinimum = gengo.SupportedEditionsMinimum
	plugin.SupportedEditionsMaximum = gengo.SupportedEditionsMaximum
	resp := plugin.Response()
	if resp.Error != nil {
		return nil, fmt.Errorf("pbgen: protoc-gen-go: %s", resp.GetError())
	}

	out := make(map[string][]byte, len(resp.File))
	for _, f := range resp.File {
		name := path.Clean(f.GetName())
		if f.GetInsertionPoint() != "" || !strings.HasSuffix(name, GeneratedSuffix) ||
			strings.HasPrefix(name, "../") || path.IsAbs(name) {
			return nil, fmt.Errorf("pbgen: unexpected output file %q", f.GetName())
		}
		out[name] = []byte(f.GetContent())
	}
	return out, nil
}

// toProto converts a linked file to its descriptor proto, keeping the source
// code info (comments) that protoc would have sent to a plugin.
func toProto(fd protoreflect.FileDescriptor) *descriptorpb.FileDescriptorProto {
	if res, ok := fd.(linker.Result); ok {
		return proto.Clone(res.FileDescriptorProto()).(*descriptorpb.FileDescriptorProto)
	}
	return protodesc.ToFileDescriptorProto(fd)
}

// ExistingGenerated returns the generated Go files currently below root (see
// ProtoFiles for the directories skipped), keyed like Generate's result.
func ExistingGenerated(root string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (name == "internal" || name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, GeneratedSuffix) {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = b
		return nil
	})
	return out, err
}

// Write stores the generated files below root, rewriting only files whose
// content changed, and deletes generated (.pb.go) files below root that are
// no longer produced. It returns the paths written or removed.
func Write(root string, files map[string][]byte) (changed []string, err error) {
	old, err := ExistingGenerated(root)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		content := files[name]
		if prev, ok := old[name]; ok && bytes.Equal(prev, content) {
			continue
		}
		dst := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return changed, err
		}
		if err := os.WriteFile(dst, content, 0o644); err != nil {
			return changed, err
		}
		changed = append(changed, name)
	}
	var stale []string
	for name := range old {
		if _, ok := files[name]; !ok {
			stale = append(stale, name)
		}
	}
	sort.Strings(stale)
	for _, name := range stale {
		if err := os.Remove(filepath.Join(root, filepath.FromSlash(name))); err != nil {
			return changed, err
		}
		changed = append(changed, name)
	}
	return changed, nil
}
