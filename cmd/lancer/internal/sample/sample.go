// Package sample embeds a small dataset written by real Lance 12 (LanceDB
// 0.39): a copy of the fixture history_v2_2.lance, with 8 versions of
// appends, deletes, an update, an added and a renamed column, four tags and
// a branch "exp". The CLI reads it when given no URI, and documentation
// examples read it through testdata/history.lance links.
package sample

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sync"

	"github.com/lancerdb/lancer/blob"
)

// Name is the sample dataset's directory name.
const Name = "history.lance"

// URI is where Open serves the sample from: the process's in-memory store
// of that name (blob.Open's mem://), so that the CLI opens it by URI with
// table.Open like any other table.
const URI = "mem://lancer-embedded-sample/" + Name

//go:embed all:history.lance
var files embed.FS

var (
	mu     sync.Mutex
	copied bool
)

// Open copies the sample into the in-memory store at URI, the first time it
// is called in the process, and returns URI. The copy is about 240 KiB. A
// failed copy (a cancelled ctx) is tried again by the next call.
func Open(ctx context.Context) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if copied {
		return URI, nil
	}
	store, err := blob.Open(ctx, URI)
	if err != nil {
		return "", err
	}
	sub, err := fs.Sub(files, Name)
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		return store.Write(ctx, p, data)
	})
	if err != nil {
		return "", fmt.Errorf("sample: copying %s to %s: %w", Name, URI, err)
	}
	copied = true
	return URI, nil
}
