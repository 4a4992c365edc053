package branch_test

import (
	"context"
	"fmt"
	"log"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
)

// A dataset written by real Lance, with four tags and a branch "exp".
const historyFixture = "testdata/history.lance"

// Open a branch, a tag, and list what the dataset has.
func Example() {
	ctx := context.Background()
	// branch works on the root's store; table.Open(ctx, uri, opts) is the
	// SDK's way in, and owns (and closes) the store it opens.
	root, err := blob.NewLocalStore(historyFixture)
	if err != nil {
		log.Fatal(err)
	}
	exp, err := branch.Open(ctx, root, branch.Ref{Branch: "exp"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	n, _ := exp.CountRows(ctx)
	fmt.Printf("branch %s at version %d: %d rows\n", exp.Manifest().Branch, exp.Version(), n)

	tagged, err := branch.Open(ctx, root, branch.Ref{Tag: "three_fragments"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("tag three_fragments is version %d with %d fragments\n", tagged.Version(), len(tagged.Manifest().Fragments))

	branches, _ := branch.ListBranches(ctx, root)
	for _, b := range branches {
		parent := b.ParentBranch
		if parent == "" {
			parent = branch.Main
		}
		fmt.Printf("branch %s forked from %s@%d\n", b.Name, parent, b.ParentVersion)
	}
	tags, _ := branch.ListTags(ctx, root)
	for _, t := range tags {
		fmt.Printf("tag %s → version %d\n", t.Name, t.Version)
	}
	// Output:
	// branch exp at version 6: 52 rows
	// tag three_fragments is version 3 with 3 fragments
	// branch exp forked from main@4
	// tag after_update → version 5
	// tag final → version 8
	// tag moving → version 4
	// tag three_fragments → version 3
}
