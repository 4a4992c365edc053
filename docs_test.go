package lancer_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// specCitation is a citation such as "docs/spec/lance-format.md §8.4"
	// (the section may follow on the comment's next line).
	specCitation = regexp.MustCompile(`docs/spec/([A-Za-z0-9._-]+\.md)(?:(?:\s|//)*§(\d+(?:\.\d+)*))?`)
	// moreSections continues a citation: ", §9.8", " / §10", "–§11".
	moreSections = regexp.MustCompile(`^(?:\s|//)*(?:,|–|/|and)(?:\s|//)*§(\d+(?:\.\d+)*)`)
	// bareSpec is a citation that names no file: "spec" and a section.
	bareSpec = regexp.MustCompile(`\bspec(?:\s|//)*§`)
	// specHeading is a numbered heading: "## 8. Title", "### 8.4 Title".
	specHeading = regexp.MustCompile(`^#+\s+(\d+(?:\.\d+)*)\.?\s`)
)

// TestSpecCitations: every docs/spec/<file> a comment cites is in the
// repository with the cited section, and no comment cites "the spec"
// without naming the file, so a reader can follow every citation.
func TestSpecCitations(t *testing.T) {
	sections := map[string]map[string]bool{} // file → its numbered sections
	headings := func(file string) map[string]bool {
		if s, ok := sections[file]; ok {
			return s
		}
		s := map[string]bool{}
		sections[file] = s
		f, err := os.Open(filepath.Join("docs", "spec", file))
		if err != nil {
			return nil
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if m := specHeading.FindStringSubmatch(sc.Text()); m != nil {
				s[m[1]] = true
			}
		}
		return s
	}
	cited := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, ".mjs") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := string(b)
		for _, loc := range bareSpec.FindAllStringIndex(text, -1) {
			t.Errorf("%s:%d cites the spec without its file: cite docs/spec/<file>.md §N", path, 1+strings.Count(text[:loc[0]], "\n"))
		}
		for _, m := range specCitation.FindAllStringSubmatchIndex(text, -1) {
			cited++
			line := 1 + strings.Count(text[:m[0]], "\n")
			file := text[m[2]:m[3]]
			s := headings(file)
			if s == nil {
				t.Errorf("%s:%d cites docs/spec/%s, which does not exist", path, line, file)
				continue
			}
			if m[4] < 0 {
				continue
			}
			secs := []string{text[m[4]:m[5]]}
			for rest := text[m[1]:]; ; {
				more := moreSections.FindStringSubmatchIndex(rest)
				if more == nil {
					break
				}
				secs = append(secs, rest[more[2]:more[3]])
				rest = rest[more[1]:]
			}
			for _, sec := range secs {
				if !s[sec] {
					t.Errorf("%s:%d cites docs/spec/%s §%s, which has no such section", path, line, file, sec)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if cited < 40 {
		t.Fatalf("found only %d citations of docs/spec: is the pattern still right?", cited)
	}
}
