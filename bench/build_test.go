package bench

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestModuleSizes attributes a small binary's machine code to its modules:
// lancer's own, arrow-go and the standard library each get a share, and
// the shares add up to the whole. (A test binary has no symbol table to
// read: go test links with -s.)
func TestModuleSizes(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "buildprobe")
	cmd := exec.Command(goBin, "build", "-o", bin, "./testdata/buildprobe")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	mods, total, err := moduleSizes(context.Background(), goBin, bin)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	got := map[string]int64{}
	for _, m := range mods {
		sum += m.TextBytes
		switch {
		case m.Path == "github.com/lancerdb/lancer", strings.HasPrefix(m.Path, "github.com/apache/arrow-go/"), strings.HasPrefix(m.Path, "std "):
			got[strings.Fields(m.Path)[0]] = m.TextBytes
		}
	}
	if sum != total || total == 0 {
		t.Errorf("module shares add up to %d of %d bytes", sum, total)
	}
	for _, want := range []string{"github.com/lancerdb/lancer", "github.com/apache/arrow-go/v18", "std"} {
		if got[want] <= 0 {
			t.Errorf("%s has no machine code attributed (modules: %v)", want, mods[:min(8, len(mods))])
		}
	}
	for i := 1; i < len(mods); i++ {
		if mods[i].TextBytes > mods[i-1].TextBytes {
			t.Fatalf("modules not largest first at %d: %v", i, mods)
		}
	}
}
