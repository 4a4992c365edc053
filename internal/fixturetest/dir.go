package fixturetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// EnvDir names the environment variable that overrides where the fixtures
// are: the folder holding lance/MANIFEST.json.
const EnvDir = "LANCER_FIXTURES"

// manifestRel is the file whose presence marks a fixtures root.
var manifestRel = filepath.Join("lance", "MANIFEST.json")

// Dir returns the absolute path of the fixtures root (the folder holding
// lance/ and encodings/). It fails the test if there is none.
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := findDir()
	if err != nil {
		t.Fatalf("fixturetest: %v", err)
	}
	return dir
}

// DatasetPath returns the path of the fixture dataset lance/<name>.lance.
func DatasetPath(t testing.TB, name string) string {
	t.Helper()
	return existing(t, filepath.Join(Dir(t), "lance", name+".lance"))
}

// EncodingDatasetPath returns the path of the dataset encodings/<name>.lance
// (name like "strs_2_1" or "pages_2_2").
func EncodingDatasetPath(t testing.TB, name string) string {
	t.Helper()
	return existing(t, filepath.Join(Dir(t), "encodings", name+".lance"))
}

func existing(t testing.TB, path string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("fixturetest: %v", err)
	}
	return path
}

// findDir is Dir without the testing.TB, so its failure path can be tested.
func findDir() (string, error) {
	if env := os.Getenv(EnvDir); env != "" {
		dir, err := filepath.Abs(env)
		if err != nil {
			return "", fmt.Errorf("%s=%q: %v", EnvDir, env, err)
		}
		if !isFile(filepath.Join(dir, manifestRel)) {
			return "", fmt.Errorf("%s=%q does not hold %s", EnvDir, env, manifestRel)
		}
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return findDirFrom(wd)
}

// findDirFrom looks for shared/fixtures next to wd or one of its parents.
func findDirFrom(wd string) (string, error) {
	for d := wd; ; {
		candidate := filepath.Join(d, "shared", "fixtures")
		if isFile(filepath.Join(candidate, manifestRel)) {
			return candidate, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return "", errors.New("no Lance fixtures found: no folder shared/fixtures/" + filepath.ToSlash(manifestRel) +
		" next to " + wd + " or any of its parents; set " + EnvDir + " to the fixtures root (the folder holding lance/MANIFEST.json)")
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// Glob returns the paths under the fixtures root matching any of patterns
// (relative to the root, filepath.Glob syntax), in pattern order. It fails
// the test when nothing matches, so a moved fixture cannot make a test
// over "every fixture" pass vacuously.
func Glob(t testing.TB, patterns ...string) []string {
	t.Helper()
	root := Dir(t)
	var out []string
	for _, p := range patterns {
		m, err := filepath.Glob(filepath.Join(root, p))
		if err != nil {
			t.Fatalf("fixturetest: %v", err)
		}
		out = append(out, m...)
	}
	if len(out) == 0 {
		t.Fatalf("fixturetest: nothing in %s matches %v", root, patterns)
	}
	return out
}
