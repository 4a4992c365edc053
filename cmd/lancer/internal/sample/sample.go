// Package sample embeds a small dataset written by real Lance 12 (LanceDB
// 0.39): a copy of the fixture history_v2_2.lance, with 8 versions of
// appends, deletes, an update, an added and a renamed column, four tags and
// a branch "exp". The CLI reads it when given no URI, and documentation
// examples read it through testdata/history.lance links.
package sample

import (
	"embed"
	"io/fs"

	"github.com/lancerdb/lancer/blob"
)

// Name is the sample dataset's directory name.
const Name = "history.lance"

//go:embed all:history.lance
var files embed.FS

// Store returns the sample dataset as a read-only store.
func Store() blob.Store {
	sub, err := fs.Sub(files, Name)
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return blob.NewFSStore(sub, "embedded://"+Name)
}
