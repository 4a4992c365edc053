package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// BuildOptions configures RunBuild.
type BuildOptions struct {
	// Package is the command built. Default "./cmd/lancer", a new user's
	// first command (go run ./cmd/lancer demo).
	Package string
	// ColdModules also empties the module cache for the cold build, so
	// that it downloads every module from the proxy as a fresh machine
	// does. Default false: modules come from the machine's module cache and
	// only compilation is cold.
	ColdModules bool
	// Dir is the scratch folder (binaries, the empty caches). Default a
	// temporary folder, removed afterwards.
	Dir string
	// Log, if set, gets a line per step.
	Log io.Writer
}

// BuildReport is what RunBuild measured: how long a new user waits before
// the CLI runs and how large it is. Its JSON form is build.json.
type BuildReport struct {
	Started  time.Time    `json:"started"`
	Seconds  float64      `json:"seconds"`
	Machine  Machine      `json:"machine"`
	Versions CoreVersions `json:"versions"`
	Package  string       `json:"package"`
	// ColdS is the wall time of `go build` with an empty build cache (and
	// an empty module cache when ColdModules); ColdCPUS its user+system
	// CPU time over every process it started.
	ColdS       float64 `json:"cold_s"`
	ColdCPUS    float64 `json:"cold_cpu_s"`
	ColdModules bool    `json:"cold_modules"`
	// WarmS is a rebuild with the cache the cold build filled and one
	// file of the command touched: what an edit-and-run costs.
	WarmS float64 `json:"warm_s"`
	// Bytes is the binary's size as go build writes it; StrippedBytes
	// with -ldflags="-s -w" (no symbol table, no DWARF).
	Bytes         int64 `json:"bytes"`
	StrippedBytes int64 `json:"stripped_bytes"`
	// Modules are the modules linked in with their machine code's size
	// (text symbols), largest first; Packages how many packages each
	// module compiles into the binary.
	Modules []ModuleSize `json:"modules"`
	// TextBytes is the total of every text symbol.
	TextBytes int64 `json:"text_bytes"`
}

// ModuleSize is one module's share of the binary.
type ModuleSize struct {
	Path      string `json:"path"`
	Version   string `json:"version,omitempty"`
	TextBytes int64  `json:"text_bytes"`
}

// RunBuild measures issue #23's "fast to start": the cold build of the CLI
// (an empty build cache, and with ColdModules an empty module cache), a
// warm rebuild, the binary's size and which modules its machine code comes
// from. It runs the go command on PATH in the repository.
func RunBuild(ctx context.Context, o BuildOptions) (*BuildReport, error) {
	if o.Package == "" {
		o.Package = "./cmd/lancer"
	}
	logf := stepLogger(o.Log)
	began := time.Now()
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "lancer-bench-build-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		o.Dir = d
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("bench: the go command is needed to measure the build: %w", err)
	}
	r := &BuildReport{Package: o.Package, ColdModules: o.ColdModules}
	r.Started, r.Machine, r.Versions = suiteStart()
	root := repoRoot()
	cache := filepath.Join(o.Dir, "gocache")
	env := append(os.Environ(), "GOCACHE="+cache, "GOFLAGS=-modcacherw")
	if o.ColdModules {
		env = append(env, "GOMODCACHE="+filepath.Join(o.Dir, "gomod"), "GOPROXY="+goEnv(ctx, goBin, "GOPROXY"))
	}
	build := func(out string, extra ...string) (wall, cpu time.Duration, err error) {
		args := append([]string{"build", "-o", out}, extra...)
		cmd := exec.CommandContext(ctx, goBin, append(args, o.Package)...)
		cmd.Dir, cmd.Env = root, env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return 0, 0, fmt.Errorf("bench: go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
		}
		wall = time.Since(start)
		if st := cmd.ProcessState; st != nil {
			cpu = st.UserTime() + st.SystemTime()
		}
		return wall, cpu, nil
	}
	bin := filepath.Join(o.Dir, "lancer")
	logf("cold build of %s (empty build cache%s)", o.Package, map[bool]string{true: " and module cache", false: ""}[o.ColdModules])
	wall, cpu, err := build(bin)
	if err != nil {
		return nil, err
	}
	r.ColdS, r.ColdCPUS = seconds(wall), seconds(cpu)
	fi, err := os.Stat(bin)
	if err != nil {
		return nil, err
	}
	r.Bytes = fi.Size()

	// A warm rebuild after an edit: touching a file of the command makes
	// the go command recompile that package and relink.
	logf("warm rebuild")
	if err := touchGoFile(filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(o.Package, "./")))); err != nil {
		return nil, err
	}
	if wall, _, err = build(bin); err != nil {
		return nil, err
	}
	r.WarmS = seconds(wall)
	stripped := filepath.Join(o.Dir, "lancer-stripped")
	if _, _, err := build(stripped, "-ldflags=-s -w"); err != nil {
		return nil, err
	}
	if fi, err = os.Stat(stripped); err != nil {
		return nil, err
	}
	r.StrippedBytes = fi.Size()

	logf("sizes by module")
	if r.Modules, r.TextBytes, err = moduleSizes(ctx, goBin, bin); err != nil {
		return nil, err
	}
	if o.ColdModules {
		// The module cache's files are read-only without -modcacherw;
		// clean it with the go command, which knows.
		cmd := exec.CommandContext(ctx, goBin, "clean", "-modcache")
		cmd.Env = env
		_ = cmd.Run()
	}
	r.Seconds = suiteEnd(&r.Machine, began)
	return r, nil
}

func seconds(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }

func goEnv(ctx context.Context, goBin, name string) string {
	out, err := exec.CommandContext(ctx, goBin, "env", name).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// touchGoFile sets the modification time of the first non-test Go file of
// dir to now.
func touchGoFile(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			now := time.Now()
			return os.Chtimes(f, now, now)
		}
	}
	return fmt.Errorf("bench: no Go file in %s", dir)
}

// moduleSizes attributes the binary's text symbols to the modules `go
// version -m` lists (the longest module path a symbol's package starts
// with; the standard library and the main module by name).
func moduleSizes(ctx context.Context, goBin, bin string) ([]ModuleSize, int64, error) {
	out, err := exec.CommandContext(ctx, goBin, "version", "-m", bin).Output()
	if err != nil {
		return nil, 0, fmt.Errorf("bench: go version -m: %w", err)
	}
	var mods []ModuleSize
	mainModule := -1
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && (f[0] == "dep" || f[0] == "mod") {
			if f[0] == "mod" {
				mainModule = len(mods)
			}
			mods = append(mods, ModuleSize{Path: f[1], Version: f[2]})
		}
	}
	var mainPath string
	if mainModule >= 0 {
		mainPath = mods[mainModule].Path
	}
	// Longest paths first, so that a module nested in another's path wins.
	slices.SortFunc(mods, func(a, b ModuleSize) int { return len(b.Path) - len(a.Path) })
	std := ModuleSize{Path: "std (the Go standard library and runtime)"}
	other := ModuleSize{Path: "other (generated, unattributed)"}
	cmd := exec.CommandContext(ctx, goBin, "tool", "nm", "-size", bin)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("bench: go tool nm: %w", err)
	}
	var total int64
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		// address size type name
		f := strings.Fields(sc.Text())
		if len(f) < 4 || (f[2] != "T" && f[2] != "t") {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		total += n
		name := strings.Join(f[3:], " ")
		// Method symbols start with the package path too; generic
		// instantiations carry brackets after it.
		name = strings.TrimPrefix(name, "type:.eq.")
		if mainPath != "" && strings.HasPrefix(name, "main.") {
			// The command's own package, named main in its symbols.
			name = mainPath + "/" + name
		}
		hit := false
		for i := range mods {
			if strings.HasPrefix(name, mods[i].Path+"/") || strings.HasPrefix(name, mods[i].Path+".") {
				mods[i].TextBytes += n
				hit = true
				break
			}
		}
		if hit {
			continue
		}
		first, _, _ := strings.Cut(name, ".")
		if first != "" && !strings.Contains(strings.SplitN(first, "/", 2)[0], ".") {
			std.TextBytes += n
		} else {
			other.TextBytes += n
		}
	}
	if err := sc.Err(); err != nil {
		return nil, 0, err
	}
	if err := cmd.Wait(); err != nil {
		return nil, 0, fmt.Errorf("bench: go tool nm: %w", err)
	}
	mods = append(mods, std, other)
	mods = slices.DeleteFunc(mods, func(m ModuleSize) bool { return m.TextBytes == 0 })
	slices.SortFunc(mods, func(a, b ModuleSize) int {
		if a.TextBytes != b.TextBytes {
			return int(b.TextBytes - a.TextBytes)
		}
		return strings.Compare(a.Path, b.Path)
	})
	return mods, total, nil
}

// WriteJSON writes the report, indented, to path.
func (r *BuildReport) WriteJSON(path string) error { return writeJSON(path, r) }

// Markdown renders the report: the header, the times and sizes, and the
// modules behind most of the machine code.
func (r *BuildReport) Markdown(top int) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# lancer: build suite\n\n")
	b.WriteString(suiteHeader(r.Started, r.Machine, r.Seconds, r.Versions))
	cold := "an empty build cache, modules from the machine's module cache"
	if r.ColdModules {
		cold = "an empty build cache and an empty module cache (every module downloaded from the proxy)"
	}
	p("| measure | value |\n|---|---:|\n")
	p("| cold `go build %s` (%s) | %.1f s wall, %.1f s CPU |\n", r.Package, cold, r.ColdS, r.ColdCPUS)
	p("| warm rebuild after an edit of the command | %.1f s |\n", r.WarmS)
	p("| binary | %s |\n", fmtBytes(r.Bytes))
	p("| binary with -ldflags=\"-s -w\" | %s |\n", fmtBytes(r.StrippedBytes))
	p("| machine code (text symbols) | %s |\n\n", fmtBytes(r.TextBytes))
	p("| module | version | machine code | share |\n|---|---|---:|---:|\n")
	for i, m := range r.Modules {
		if i == top {
			break
		}
		p("| %s | %s | %s | %.1f%% |\n", m.Path, m.Version, fmtBytes(m.TextBytes), 100*float64(m.TextBytes)/float64(max(1, r.TextBytes)))
	}
	return b.String()
}
