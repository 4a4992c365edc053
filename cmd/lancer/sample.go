package main

import (
	"embed"
	"io/fs"

	"github.com/lancerdb/lancer/blob"
)

// sampleName is the dataset embedded in the binary: a copy of the fixture
// history_v2_2.lance written by real Lance 12 (LanceDB 0.39): 8 versions of
// appends, deletes, an update, an added and a renamed column, four tags and
// a branch "exp".
const sampleName = "history.lance"

//go:embed all:sample/history.lance
var sampleFS embed.FS

func sampleStore() blob.Store {
	sub, err := fs.Sub(sampleFS, "sample/"+sampleName)
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return blob.NewFSStore(sub, "embedded://"+sampleName)
}
