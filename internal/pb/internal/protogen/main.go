// Command protogen regenerates the Go code of lancer's Lance protobuf
// definitions. It needs no protoc binary: see package pbgen.
//
// Run it from internal/pb (that is what `go generate` does):
//
//	go generate ./internal/pb
//
// Flags:
//
//	-root dir   import root holding the .proto files (default ".")
//	-out dir    where to write the .pb.go files (default: the root)
//	-check      write nothing; exit with status 1 if any file is out of date
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/lancerdb/lancer/internal/pb/internal/pbgen"
)

func main() {
	root := flag.String("root", ".", "import root holding the .proto files")
	out := flag.String("out", "", "directory receiving the generated files (default: root)")
	check := flag.Bool("check", false, "only report whether the generated files are up to date")
	flag.Parse()
	if *out == "" {
		*out = *root
	}

	files, err := pbgen.Generate(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	if *check {
		old, err := pbgen.ExistingGenerated(*out)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		var bad []string
		for name, content := range files {
			if !bytes.Equal(old[name], content) {
				bad = append(bad, name)
			}
		}
		for name := range old {
			if _, ok := files[name]; !ok {
				bad = append(bad, name)
			}
		}
		sort.Strings(bad)
		for _, name := range bad {
			fmt.Fprintf(os.Stderr, "out of date: %s\n", name)
		}
		if len(bad) > 0 {
			os.Exit(1)
		}
		return
	}

	changed, err := pbgen.Write(*out, files)
	for _, name := range changed {
		fmt.Printf("protogen: wrote %s\n", name)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
