// Package lancereftest runs lancer's interop scripts (interop/*.mjs) with the
// pinned real Lance: LanceDB for Node, @lancedb/lancedb as pinned in
// interop/package.json, which scripts/test.sh installs in .cache/lance-ref.
//
// A script reads JSON requests, one per line on stdin, and prints one JSON
// reply per request on stdout. Ask runs one node process for a whole batch
// of requests, because starting Node and loading Lance costs far more than
// any one request.
//
// Tests that use it fail, never skip, when Node or the reference is
// missing: Find's error says how to install them.
package lancereftest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Ref locates the tools to run an interop script.
type Ref struct {
	// Node is the node executable.
	Node string
	// Dir is the folder whose node_modules holds the pinned
	// @lancedb/lancedb ($LANCER_LANCE_REF, default <repo>/.cache/lance-ref).
	Dir string
	// Scripts is the folder of the scripts (<repo>/interop).
	Scripts string
}

// repoRoot is the repository holding this source file: the tests that use
// the reference run from a checkout.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Find locates node and the installed reference.
func Find() (Ref, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return Ref{}, fmt.Errorf("lancereftest: node (Node.js 20+) is not on PATH: install it, then run scripts/test.sh")
	}
	root := repoRoot()
	dir := os.Getenv("LANCER_LANCE_REF")
	if dir == "" {
		dir = filepath.Join(root, ".cache", "lance-ref")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@lancedb", "lancedb", "package.json")); err != nil {
		return Ref{}, fmt.Errorf("lancereftest: the Lance reference is not installed in %s: run scripts/test.sh (it installs interop/package.json there), or set LANCER_LANCE_REF", dir)
	}
	return Ref{Node: node, Dir: dir, Scripts: filepath.Join(root, "interop")}, nil
}

// ForTest is Find, failing t when the reference is missing.
func ForTest(t testing.TB) Ref {
	t.Helper()
	r, err := Find()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Command returns a command running script (a file of r.Scripts) with
// args, with the reference in LANCEDB_NODE_DIR as the scripts expect.
func (r Ref) Command(script string, args ...string) *exec.Cmd {
	cmd := exec.Command(r.Node, append([]string{filepath.Join(r.Scripts, script)}, args...)...)
	cmd.Dir = r.Scripts
	cmd.Env = append(os.Environ(), "LANCEDB_NODE_DIR="+r.Dir)
	return cmd
}

// Ask runs script once over reqs and returns its replies, in order. JSON
// numbers in replies decode as json.Number where the reply type leaves
// them untyped, so 64-bit integers stay exact. It fails when the script
// fails or answers fewer requests than asked; a reply's own error field is
// the caller's to check.
func Ask[Req, Reply any](r Ref, script string, reqs []Req) ([]Reply, error) {
	var in bytes.Buffer
	for _, req := range reqs {
		b, err := json.Marshal(req)
		if err != nil {
			return nil, fmt.Errorf("lancereftest: %s request: %w", script, err)
		}
		in.Write(append(b, '\n'))
	}
	cmd := r.Command(script)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("lancereftest: %s: %v\n%s", script, err, stderr.String())
	}
	var replies []Reply
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		var reply Reply
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		if err := dec.Decode(&reply); err != nil {
			return nil, fmt.Errorf("lancereftest: %s printed %.200q: %v", script, sc.Text(), err)
		}
		replies = append(replies, reply)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("lancereftest: %s output: %w", script, err)
	}
	if len(replies) != len(reqs) {
		return replies, fmt.Errorf("lancereftest: %s answered %d of %d requests\n%s", script, len(replies), len(reqs), stderr.String())
	}
	return replies, nil
}
