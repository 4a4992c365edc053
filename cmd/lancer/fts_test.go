package main

import (
	"strings"
	"testing"

	"github.com/lancerdb/lancer/internal/fixturetest"
)

// TestSearchTextErrors: --text on the fixture's stemmed FTS index says
// what is unsupported; --text with --queries, a hybrid search's bad
// --fusion or --weight, and --text on a column without an index, are
// refused.
func TestSearchTextErrors(t *testing.T) {
	uri := fixturetest.DatasetPath(t, "indexed_v2_2")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"search", uri, "--text", "alpha"}, "stemming"},
		{[]string{"search", uri, "--text", "alpha", "--queries", "-"}, "exactly one"},
		// --text with --vector is a hybrid search.
		{[]string{"search", uri, "--text", "alpha", "--vector", "[1]", "--fusion", "max"}, `--fusion "max"`},
		{[]string{"search", uri, "--text", "alpha", "--vector", "[1]", "--fusion", "linear", "--weight", "1.5"}, "weight"},
		{[]string{"search", uri, "--text", "alpha", "--near-row", "3"}, "needs --vector-column"},
		{[]string{"search", uri, "--text", "alpha", "--column", "category"}, "no FTS index on column"},
	} {
		code, _, errOut := runLancer(t, tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q (want %q)", tc.args, code, errOut, tc.want)
		}
	}
}
