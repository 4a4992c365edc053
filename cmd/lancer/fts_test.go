package main

import (
	"strings"
	"testing"

	"github.com/lancerdb/lancer/internal/fixturetest"
)

// TestSearchTextErrors: --text on the fixture's stemmed FTS index says
// what is unsupported; --text with --vector, and an empty --text on a
// column without an index, are refused.
func TestSearchTextErrors(t *testing.T) {
	uri := fixturetest.DatasetPath(t, "indexed_v2_2")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"search", uri, "--text", "alpha"}, "stemming"},
		{[]string{"search", uri, "--text", "alpha", "--vector", "[1]", "--column", "vec"}, "exactly one"},
		{[]string{"search", uri, "--text", "alpha", "--column", "category"}, "no FTS index on column"},
	} {
		code, _, errOut := runLancer(t, tc.args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q (want %q)", tc.args, code, errOut, tc.want)
		}
	}
}
