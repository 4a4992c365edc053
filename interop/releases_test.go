package interop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// release is one old release of LanceDB for Node (releases.json).
type release struct {
	Name    string `json:"name"`
	Package string `json:"package"`
	// CreateOptions are createTable's options, if any.
	CreateOptions json.RawMessage `json:"create_options"`
}

// releasesDir is where scripts/test.sh installs the releases:
// $LANCER_LANCE_RELEASES, default <repo>/.cache/lance-releases.
func releasesDir() string {
	if d := os.Getenv("LANCER_LANCE_RELEASES"); d != "" {
		return d
	}
	return filepath.Join("..", ".cache", "lance-releases")
}

// installedReleases returns the releases of releases.json, failing t when
// one is not installed.
func installedReleases(t *testing.T) (string, []release) {
	t.Helper()
	b, err := os.ReadFile("releases.json")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Releases []release `json:"releases"`
	}
	if err := json.Unmarshal(b, &list); err != nil || len(list.Releases) == 0 {
		t.Fatalf("releases.json: %v", err)
	}
	dir, err := filepath.Abs(releasesDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list.Releases {
		pkg := r.Package[:strings.LastIndex(r.Package, "@")]
		if _, err := os.Stat(filepath.Join(dir, r.Name, "node_modules", pkg, "package.json")); err != nil {
			t.Fatalf("release %s is not installed in %s: run scripts/test.sh (it installs releases.json there), or set LANCER_LANCE_RELEASES", r.Package, filepath.Join(dir, r.Name))
		}
	}
	return dir, list.Releases
}

// releaseHistory is what lance-release-history.mjs prints.
type releaseHistory struct {
	Release string        `json:"release"`
	URI     string        `json:"uri"`
	Steps   []releaseStep `json:"steps"`
	Skipped []string      `json:"skipped"`
	Reads   []struct {
		Version uint64            `json:"version"`
		Count   int               `json:"count"`
		IDs     []float64         `json:"ids"`
		Texts   map[string]string `json:"texts"`
	} `json:"reads"`
	Tags []struct {
		Name    string `json:"name"`
		Version uint64 `json:"version"`
	} `json:"tags"`
}

// releaseStep is one operation of a release's history and the version
// it made.
type releaseStep struct {
	Op      string `json:"op"`
	Version uint64 `json:"version"`
}

// writeHistory has release r write its history dataset under dir.
func writeHistory(t *testing.T, node, releases string, r release, dir string) releaseHistory {
	t.Helper()
	var h releaseHistory
	runHistoryScript(t, node, releases, r, "write its history", &h, dir)
	return h
}

// runHistoryScript runs lance-release-history.mjs with release r and args
// and decodes the JSON report it prints last into out; doing says what the
// release was asked to do, for the failure message.
func runHistoryScript(t *testing.T, node, releases string, r release, doing string, out any, args ...string) {
	t.Helper()
	cmd := exec.Command(node, append([]string{"lance-release-history.mjs"}, args...)...)
	cmd.Env = append(os.Environ(), "LANCE_RELEASE_DIR="+filepath.Join(releases, r.Name))
	if len(r.CreateOptions) > 0 {
		cmd.Env = append(cmd.Env, "LANCE_RELEASE_CREATE_OPTIONS="+string(r.CreateOptions))
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s failed to %s: %v\n%s", r.Package, doing, err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), out); err != nil {
		t.Fatalf("%s: reading its report: %v\n%s", r.Package, err, b)
	}
}

// TestReleasesWriteLancerReads: datasets that old releases of LanceDB
// (vectordb 0.1 to @lancedb/lancedb 0.31: legacy and 2.0 files, manifests
// from before and after writer versions, every operation the release has)
// wrote, read by lancer at every version: the same rows as Lance 12 reads
// there, and the same rows as the release itself read back.
func TestReleasesWriteLancerReads(t *testing.T) {
	node, ref := lanceRef(t)
	releases, list := installedReleases(t)
	ctx := context.Background()
	tmp := t.TempDir()
	for _, r := range list {
		t.Run(r.Name, func(t *testing.T) {
			h := writeHistory(t, node, releases, r, filepath.Join(tmp, r.Name))
			t.Logf("%s wrote %d steps; has no %v", h.Release, len(h.Steps), h.Skipped)
			root, err := openDirAt(ctx, h.URI, branch.Ref{}, nil)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			versions, err := root.Versions(ctx)
			if err != nil {
				t.Fatalf("versions: %v", err)
			}
			var reqs []request
			for _, v := range versions {
				reqs = append(reqs, request{URI: h.URI, Version: v.Version})
			}
			replies := lanceRows(t, node, ref, reqs)
			// lance12 holds the versions Lance 12 read as lancer did.
			lance12 := map[uint64]bool{}
			for i, req := range reqs {
				name := fmt.Sprintf("%s@%d", r.Name, req.Version)
				got := lancerReadsVersion(t, ctx, h.URI, req.Version)
				if replies[i].Error != "" {
					// Some releases wrote states Lance 12 refuses (data
					// files of two versions in one table); the release's
					// own read is then the reference.
					t.Logf("%s: Lance 12 refuses it: %s", name, replies[i].Error)
					continue
				}
				if fixturetest.CompareRows(t, name+" (lancer vs Lance 12)", got.rows, replies[i].Rows, fixturetest.CompareOptions{IgnoreKeys: []string{"_rowid"}}) {
					lance12[req.Version] = true
				}
			}
			// releaseDiffers reports a difference from what the release
			// read: an error, unless Lance 12 read that version as lancer
			// did (some early 2.0 releases miscount their own deletions).
			releaseDiffers := func(version uint64, format string, args ...any) {
				t.Helper()
				if lance12[version] {
					t.Logf("%s (a bug of %s: Lance 12 reads it as lancer does)", fmt.Sprintf(format, args...), r.Package)
					return
				}
				t.Errorf(format, args...)
			}
			// The release's tags name the versions it tagged, and lancer
			// reads a tag as the version it names.
			lancerTags, err := branch.ListTags(ctx, root.Store())
			if err != nil {
				t.Fatalf("tags: %v", err)
			}
			for _, tag := range h.Tags {
				i := slices.IndexFunc(lancerTags, func(lt branch.Tag) bool { return lt.Name == tag.Name })
				if i < 0 || lancerTags[i].Version != tag.Version {
					t.Errorf("%s: the release tagged %s at version %d; lancer lists %+v", r.Name, tag.Name, tag.Version, lancerTags)
					continue
				}
				d, err := openDirAt(ctx, h.URI, branch.Ref{Tag: tag.Name}, nil)
				if err != nil || d.Version() != tag.Version {
					t.Errorf("%s: opening tag %s: %v (version %v)", r.Name, tag.Name, err, d)
				}
			}
			if !slices.ContainsFunc(h.Steps, func(s releaseStep) bool { return s.Op == "overwrite" }) {
				t.Errorf("%s did not overwrite (skipped %v)", r.Package, h.Skipped)
			}
			// What the release itself read back (at the latest version
			// only when it cannot check out).
			for _, rd := range h.Reads {
				v := rd.Version
				if v == 0 {
					v = versions[len(versions)-1].Version
				}
				name := fmt.Sprintf("%s@%d", r.Name, v)
				got := lancerReadsVersion(t, ctx, h.URI, v)
				if len(got.ids) != rd.Count {
					releaseDiffers(v, "%s: lancer reads %d rows, the release %d", name, len(got.ids), rd.Count)
					continue
				}
				ids := slices.Clone(got.ids)
				slices.Sort(ids)
				if !slices.Equal(ids, rd.IDs) {
					releaseDiffers(v, "%s: lancer reads ids %v…, the release %v…", name, ids[:min(5, len(ids))], rd.IDs[:min(5, len(rd.IDs))])
					continue
				}
				if msg := textsDiffer(got.texts, rd.Texts); msg != "" {
					releaseDiffers(v, "%s: %s", name, msg)
				}
			}

			// lancer writes on it, in the dataset's own storage version
			// (legacy datasets get legacy files with the footer version
			// of their newest file); Lance 12 and the release read what
			// it wrote, and the release keeps writing on it.
			legacyMinor := newestFooterMinor(t, ctx, h.URI)
			addsColumns := !slices.ContainsFunc(h.Skipped, func(s string) bool { return strings.HasPrefix(s, "add_column:") })
			before := root.Manifest()
			latest := lancerWrites(t, ctx, h.URI, addsColumns)
			introducesNothingNewer(t, ctx, r.Name, h.URI, before)
			if legacyMinor != 0 {
				if got := newestFooterMinor(t, ctx, h.URI); got != legacyMinor {
					t.Errorf("%s: lancer's legacy files have footer version 0.%d, the release's 0.%d", r.Name, got, legacyMinor)
				}
			}
			want := lancerReadsVersion(t, ctx, h.URI, latest)
			reply := lanceRows(t, node, ref, []request{{URI: h.URI, Version: latest}})[0]
			if reply.Error != "" {
				t.Fatalf("%s@%d (lancer's writes): Lance 12 cannot read it: %s", r.Name, latest, reply.Error)
			}
			if fixturetest.CompareRows(t, fmt.Sprintf("%s@%d lancer's writes (lancer vs Lance 12)", r.Name, latest), want.rows, reply.Rows, fixturetest.CompareOptions{IgnoreKeys: []string{"_rowid"}}) {
				lance12[latest] = true
			}
			rr := rereadHistory(t, node, releases, r, filepath.Join(tmp, r.Name))
			name := fmt.Sprintf("%s@%d lancer's writes (lancer vs %s)", r.Name, latest, r.Package)
			if ids := sortedIDs(want.ids); !slices.Equal(ids, rr.Before.IDs) {
				releaseDiffers(latest, "%s: lancer reads %d rows %v…, the release %d %v…", name, len(ids), ids[:min(5, len(ids))], rr.Before.Count, rr.Before.IDs[:min(5, len(rr.Before.IDs))])
			} else if msg := textsDiffer(want.texts, rr.Before.Texts); msg != "" {
				releaseDiffers(latest, "%s: %s", name, msg)
			}
			if !slices.Contains(rr.After.IDs, 5000) {
				t.Errorf("%s: after the release's own append it does not read the row it appended", name)
			}
			after := lancerReadsVersion(t, ctx, h.URI, 0)
			if !slices.Contains(after.ids, 5000) || len(after.ids) != len(want.ids)+1 {
				t.Errorf("%s: after the release's append lancer reads %d rows, want %d with id 5000", name, len(after.ids), len(want.ids)+1)
			}
			if reply := lanceRows(t, node, ref, []request{{URI: h.URI}})[0]; reply.Error != "" {
				t.Errorf("%s: after the release's append Lance 12 cannot read it: %s", name, reply.Error)
			} else {
				fixturetest.CompareRows(t, name+" after the release's append (lancer vs Lance 12)", after.rows, reply.Rows, fixturetest.CompareOptions{IgnoreKeys: []string{"_rowid"}})
			}
		})
	}
}

// introducesNothingNewer checks that lancer's writes on the dataset at uri,
// whose latest version was before, used no file version and no feature
// flag the release had not used itself: every data file is in the
// release's own file version and the reader and writer flags are the
// release's, save deletion files (lancer deletes where the release had
// not yet), which every release of the matrix reads.
func introducesNothingNewer(t *testing.T, ctx context.Context, name, uri string, before *manifest.Manifest) {
	t.Helper()
	d, err := openDirAt(ctx, uri, branch.Ref{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	after := d.Manifest()
	versions := map[format.Version]bool{}
	for _, f := range before.Fragments {
		for _, df := range f.Files {
			if v, err := df.Version(); err == nil {
				versions[v] = true
			}
		}
	}
	for _, f := range after.Fragments {
		for _, df := range f.Files {
			if v, err := df.Version(); err != nil || !versions[v] {
				t.Errorf("%s: lancer wrote data file %s of version %v (%v); the release wrote only %v", name, df.Path, v, err, slices.Collect(maps.Keys(versions)))
			}
		}
	}
	allowed := before.ReaderFeatureFlags | manifest.FlagDeletionFiles
	if extra := after.ReaderFeatureFlags &^ allowed; extra != 0 {
		t.Errorf("%s: lancer's writes set reader flags %v the release never set", name, extra)
	}
	if extra := after.WriterFeatureFlags &^ (before.WriterFeatureFlags | manifest.FlagDeletionFiles); extra != 0 {
		t.Errorf("%s: lancer's writes set writer flags %v the release never set", name, extra)
	}
}

// newestFooterMinor returns the footer minor version of the first data
// file of the newest fragment of the dataset at uri when its files are
// legacy (1 or 2), else 0.
func newestFooterMinor(t *testing.T, ctx context.Context, uri string) uint16 {
	t.Helper()
	d, err := openDirAt(ctx, uri, branch.Ref{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := d.Manifest()
	if !m.DataFormat.IsLegacy() || len(m.Fragments) == 0 {
		return 0
	}
	f := m.Fragments[len(m.Fragments)-1]
	r, err := format.Open(ctx, d.Store(), "data/"+f.Files[0].Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, minor := r.FooterVersion()
	return minor
}

// releaseRead is what one release read of one version.
type releaseRead struct {
	Count int               `json:"count"`
	IDs   []float64         `json:"ids"`
	Texts map[string]string `json:"texts"`
}

// rereadHistory has release r read the history dataset in dir after
// lancer wrote on it, append a row and read it again.
func rereadHistory(t *testing.T, node, releases string, r release, dir string) (out struct{ Before, After releaseRead }) {
	t.Helper()
	runHistoryScript(t, node, releases, r, "read and write on lancer's writes", &out, dir, "reread")
	return out
}

func sortedIDs(ids []float64) []float64 {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return ids
}

// textsDiffer describes the first difference between the texts lancer
// read (got) and the release read (want), or returns "".
func textsDiffer(got, want map[string]string) string {
	if len(got) != len(want) {
		return fmt.Sprintf("lancer reads %d texts, the release %d", len(got), len(want))
	}
	for id, text := range want {
		if got[id] != text {
			return fmt.Sprintf("row %s: lancer reads text %q, the release %q", id, got[id], text)
		}
	}
	return ""
}

// lancerWrites appends five rows (ids 1000..1004), deletes id 20, updates
// the text of id 30, adds a column "tripled" (id * 3) when addColumn, and
// compacts, each a commit on the latest version of
// the dataset at uri, and returns the version it ends at.
func lancerWrites(t *testing.T, ctx context.Context, uri string, addColumn bool) uint64 {
	t.Helper()
	d, err := openDirAt(ctx, uri, branch.Ref{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rr := readerLike(t, d.Schema().Arrow(), 1000, 5)
	d, err = d.Append(ctx, rr, nil)
	rr.Release()
	if err != nil {
		t.Fatalf("lancer append: %v", err)
	}
	if d, err = d.Delete(ctx, "id = 20", nil); err != nil {
		t.Fatalf("lancer delete: %v", err)
	}
	text := "s"
	if d.Schema().Field("text") != nil {
		text = "text"
	}
	if d, _, err = d.Update(ctx, map[string]string{text: "'written by lancer'"}, "id = 30", nil); err != nil {
		t.Fatalf("lancer update: %v", err)
	}
	// A column added: a second data file in every fragment (on legacy
	// datasets a legacy file of the new field alone, as Lance's
	// add_columns wrote them), which the compaction then folds. Only
	// where the release adds columns itself: the oldest (vectordb 0.1)
	// infers every appended column as non-nullable and so cannot append
	// to a table with a nullable column, which an added column is.
	if addColumn {
		if d, err = d.AddColumns(ctx, []dataset.NewColumn{{Name: "tripled", Expr: "id * 3"}}, nil); err != nil {
			t.Fatalf("lancer add columns: %v", err)
		}
		if m := d.Manifest(); m.DataFormat.IsLegacy() {
			for _, f := range m.Fragments {
				if v, err := f.Files[len(f.Files)-1].Version(); err != nil || !v.IsLegacy() || len(f.Files) < 2 {
					t.Fatalf("lancer's add columns on a legacy dataset: fragment %d's %d files end with a file of version %v (%v)", f.ID, len(f.Files), v, err)
				}
			}
			t.Logf("lancer added a column to a legacy dataset: %d fragments of several legacy files", len(m.Fragments))
		}
	}
	if d, _, err = d.Compact(ctx, nil); err != nil {
		t.Fatalf("lancer compact: %v", err)
	}
	return d.Version()
}

// readerLike returns rowsLike's rows as a reader; the caller releases it.
func readerLike(t *testing.T, schema *arrow.Schema, first, n int) array.RecordReader {
	t.Helper()
	rec := rowsLike(t, schema, first, n)
	defer rec.Release()
	rr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	return rr
}

// rowsLike builds n rows of schema (the history's columns: id, s or text,
// vector, doubled) with ids from first.
func rowsLike(t *testing.T, schema *arrow.Schema, first, n int) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i, f := range schema.Fields() {
		for k := range n {
			id := first + k
			switch fb := b.Field(i).(type) {
			case *array.Float64Builder:
				fb.Append(float64(id))
			case *array.Int64Builder:
				fb.Append(int64(id))
			case *array.StringBuilder:
				fb.Append(fmt.Sprintf("lancer row %d", id))
			case *array.LargeStringBuilder:
				fb.Append(fmt.Sprintf("lancer row %d", id))
			case *array.FixedSizeListBuilder:
				fb.Append(true)
				vb := fb.ValueBuilder().(*array.Float32Builder)
				for j := range f.Type.(*arrow.FixedSizeListType).Len() {
					vb.Append(float32(j) / 10)
				}
			default:
				t.Fatalf("rowsLike: column %s of type %s", f.Name, f.Type)
			}
		}
	}
	return b.NewRecordBatch()
}

// lancedRead is one version as lancer reads it.
type lancedRead struct {
	rows  [][]byte          // every row, encoded as the fixtures are
	ids   []float64         // the id column, in scan order
	texts map[string]string // the text column ("s" or, renamed, "text") by id
}

func lancerReadsVersion(t *testing.T, ctx context.Context, uri string, version uint64) lancedRead {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ds, err := openDirAt(ctx, uri, branch.Ref{Version: version}, &dataset.OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatalf("%s@%d: open: %v", uri, version, err)
	}
	sc, err := ds.Scan(nil)
	if err != nil {
		t.Fatalf("%s@%d: scan: %v", uri, version, err)
	}
	out := lancedRead{texts: map[string]string{}}
	for rec, err := range sc.Batches(ctx) {
		if err != nil {
			t.Fatalf("%s@%d: scan: %v", uri, version, err)
		}
		out.rows = append(out.rows, fixturetest.EncodeRows(t, rec)...)
		ids := columnFloat64s(t, rec, "id")
		text := textColumn(rec)
		for i, id := range ids {
			out.ids = append(out.ids, id)
			if text != nil && text.IsValid(i) {
				out.texts[fmt.Sprint(id)] = text.Value(i)
			}
		}
	}
	return out
}

func columnFloat64s(t *testing.T, rec arrow.RecordBatch, name string) []float64 {
	t.Helper()
	idx := rec.Schema().FieldIndices(name)
	if len(idx) != 1 {
		t.Fatalf("no column %q in %s", name, rec.Schema())
	}
	out := make([]float64, rec.NumRows())
	switch c := rec.Column(idx[0]).(type) {
	case *array.Float64:
		copy(out, c.Float64Values())
	case *array.Int64:
		for i, v := range c.Int64Values() {
			out[i] = float64(v)
		}
	default:
		t.Fatalf("column %q is %s", name, c.DataType())
	}
	return out
}

func textColumn(rec arrow.RecordBatch) interface {
	IsValid(int) bool
	Value(int) string
} {
	for _, name := range []string{"text", "s"} {
		if idx := rec.Schema().FieldIndices(name); len(idx) == 1 {
			switch c := rec.Column(idx[0]).(type) {
			case *array.String:
				return c
			case *array.LargeString:
				return c
			}
		}
	}
	return nil
}

// TestRestorePastDamagedManifest: on a history an old release wrote whose
// latest manifest is then damaged, lancer still lists the history (the
// damaged version marked), logs it, and restores an older version past
// it, as Lance tells users to; Lance 12 and the release read the restored
// version as lancer read it before.
func TestRestorePastDamagedManifest(t *testing.T) {
	node, ref := lanceRef(t)
	releases, list := installedReleases(t)
	r := list[len(list)-1]
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), r.Name)
	h := writeHistory(t, node, releases, r, dir)
	d, err := openDirAt(ctx, h.URI, branch.Ref{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	latest := d.Version()
	const restored = 3
	want := lancerReadsVersion(t, ctx, h.URI, restored)

	// Damage the latest manifest: keep its first 100 bytes.
	key := filepath.Join(h.URI, "_versions", fmt.Sprintf("%d.manifest", ^uint64(0)-latest))
	b, err := os.ReadFile(key)
	if err != nil {
		t.Fatalf("the latest manifest (V2 naming expected): %v", err)
	}
	if err := os.WriteFile(key, b[:100], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openDirAt(ctx, h.URI, branch.Ref{}, nil); !errors.Is(err, lancer.ErrCorrupt) {
		t.Fatalf("opening the damaged latest: %v, want lancer.ErrCorrupt", err)
	}
	hist, err := dataset.History(ctx, d.Store())
	if err != nil {
		t.Fatalf("history past a damaged manifest: %v", err)
	}
	if len(hist) != int(latest) || !errors.Is(hist[len(hist)-1].Err, lancer.ErrCorrupt) || hist[len(hist)-2].Err != nil {
		t.Fatalf("history: %d versions, last %+v; want %d with only the last damaged", len(hist), hist[len(hist)-1], latest)
	}
	log, err := branch.Log(ctx, d.Store())
	if err != nil || len(log) != int(latest) {
		t.Fatalf("log past a damaged manifest: %d commits, %v", len(log), err)
	}

	old, err := openDirAt(ctx, h.URI, branch.Ref{Version: restored}, nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err := old.Restore(ctx, nil)
	if err != nil {
		t.Fatalf("restore past a damaged manifest: %v", err)
	}
	if back.Version() != latest+1 {
		t.Fatalf("restore committed version %d, want %d", back.Version(), latest+1)
	}
	got := lancerReadsVersion(t, ctx, h.URI, 0)
	fixturetest.CompareRows(t, "restored (lancer now vs lancer at v3)", got.rows, want.rows, fixturetest.CompareOptions{})
	reply := lanceRows(t, node, ref, []request{{URI: h.URI}})[0]
	if reply.Error != "" {
		t.Fatalf("Lance 12 cannot read the restored version: %s", reply.Error)
	}
	fixturetest.CompareRows(t, "restored (lancer vs Lance 12)", got.rows, reply.Rows, fixturetest.CompareOptions{IgnoreKeys: []string{"_rowid"}})
	rr := rereadHistory(t, node, releases, r, dir)
	if ids := sortedIDs(got.ids); !slices.Equal(ids, rr.Before.IDs) {
		t.Fatalf("restored: lancer reads %d rows, %s %d", len(ids), r.Package, rr.Before.Count)
	}
}
