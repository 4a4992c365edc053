package interop_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// The pinned client's declaration files and, in each, the classes whose
// objects talk to a server: every public method they declare must be
// called on the remote side by some step of lancedb-parity.mjs.
var parityClassFiles = map[string][]string{
	"connection.d.ts": {"Connection", "LocalConnection"},
	"table.d.ts":      {"Table", "LocalTable", "Branches"},
	"query.d.ts":      {"QueryBase", "StandardQueryBase", "VectorQuery", "TakeQuery", "Query"},
	"merge.d.ts":      {"MergeInsertBuilder"},
	"job.d.ts":        {"Job"},
	"blob.d.ts":       {"BlobFile"},
	"native.d.ts":     {"Tags"},
	// lancedb.permutationBuilder(table) reads a remote table through
	// the server; a MaterializedView's handle wraps any table.
	"permutation.d.ts":       {"PermutationBuilder"},
	"materialized_view.d.ts": {"MaterializedView"},
}

// parityNotRemote lists the public members of those classes that no
// step calls, each with why no server can see it. Everything else the
// .d.ts declares must be called.
var parityNotRemote = map[string]string{
	"BlobFile.fromNative":   "static wrapper the client uses to build a BlobFile; fetchBlobFiles returns them",
	"Connection.close":      "closes the client's handle only; no request is sent (isOpen is checked)",
	"Table.close":           "closes the client's handle only; no request is sent (isOpen is checked)",
	"LocalConnection.close": "closes the client's handle only; no request is sent (isOpen is checked)",
	"LocalTable.close":      "closes the client's handle only; no request is sent (isOpen is checked)",
}

// parityCalls holds, for each group of lancedb-parity.mjs that ran in
// this process, the Class.method calls its remote side made.
var (
	parityMu    sync.Mutex
	parityCalls = map[string][]string{}
	// paritySteps holds the steps of each group that ran, for the
	// calls each made.
	paritySteps = map[string]map[string]paritySide{}
	// parityTally counts the steps checked by class: same, differs,
	// both-error (same kind), both-error (other kind), not-supported.
	parityTally = map[string]int{}
	parityDiffs []string
)

// parityGroups are all the groups of lancedb-parity.mjs.
var parityGroups = []string{"arrays", "select", "order", "dict", "fts", "misc", "tables", "namespaces", "surface", "methods", "perm"}

func tally(class, note string) {
	parityMu.Lock()
	defer parityMu.Unlock()
	parityTally[class]++
	if note != "" {
		parityDiffs = append(parityDiffs, note)
	}
}

var (
	dtsClass  = regexp.MustCompile(`^export declare (?:abstract )?class (\w+)(?:<.*?>)?(?: extends (\w+))?`)
	dtsMember = regexp.MustCompile(`^(?:    |  )(?:abstract |static |get |readonly )*([A-Za-z]\w*)\??\s*[(<]`)
)

// clientSurface reads the public methods each listed class declares in
// its own body (inherited ones belong to the parent), and each class's
// parent.
func clientSurface(t *testing.T, dist string) (methods map[string][]string, parent map[string]string, takesArgs map[string]bool) {
	t.Helper()
	methods, parent, takesArgs = map[string][]string{}, map[string]string{}, map[string]bool{}
	for file, classes := range parityClassFiles {
		want := map[string]bool{}
		for _, c := range classes {
			want[c] = true
		}
		f, err := os.Open(filepath.Join(dist, file))
		if err != nil {
			t.Fatalf("the pinned client's declarations: %v", err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		class := ""
		for sc.Scan() {
			line := sc.Text()
			if m := dtsClass.FindStringSubmatch(line); m != nil {
				class = ""
				if want[m[1]] {
					class = m[1]
					parent[class] = m[2]
					methods[class] = nil
				}
				continue
			}
			if line == "}" {
				class = ""
				continue
			}
			if class == "" {
				continue
			}
			m := dtsMember.FindStringSubmatch(line)
			if m == nil || m[1] == "constructor" || strings.HasPrefix(strings.TrimSpace(line), "private ") {
				continue
			}
			if !contains(methods[class], m[1]) {
				methods[class] = append(methods[class], m[1])
			}
			// Some overload has parameters (not "()" nor "(this: X)").
			if i := strings.Index(line, m[1]); i >= 0 {
				rest := line[i+len(m[1]):]
				if j := strings.IndexByte(rest, '('); j >= 0 {
					params := strings.TrimSpace(rest[j+1:])
					if !strings.HasPrefix(params, ")") && !regexp.MustCompile(`^this: \w+\)`).MatchString(params) {
						takesArgs[class+"."+m[1]] = true
					}
				}
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		for c := range want {
			if len(methods[c]) == 0 {
				t.Fatalf("%s: found no public method of class %s: the declaration format changed and this check would check nothing", file, c)
			}
		}
	}
	return methods, parent, takesArgs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// descends reports whether class d is c or a subclass of it.
func descends(d, c string, parent map[string]string) bool {
	for ; d != ""; d = parent[d] {
		if d == c {
			return true
		}
	}
	return false
}
