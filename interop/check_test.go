package interop_test

import (
	"context"
	"testing"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// checkInvariants checks every version of every line of the dataset family
// at uri, and its refs (branch.Check): what lancer and real Lance wrote
// between them must satisfy the numbered invariants of packages dataset
// and branch.
func checkInvariants(t *testing.T, uri string) {
	t.Helper()
	ctx := context.Background()
	root, err := blob.Open(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	r, err := branch.Check(ctx, root, &dataset.CheckOptions{AllVersions: true})
	if err != nil {
		t.Fatalf("check %s: %v", uri, err)
	}
	for _, v := range r.Violations {
		t.Errorf("check %s: %s", uri, v)
	}
}
