package branch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// Main is the name of the main line of a dataset. It is never a branch name.
const Main = "main"

const (
	tagsDir     = "_refs/tags/"
	branchesDir = "_refs/branches/"
	treeDir     = "tree/"
)

// Tag names one version of the main line or of a branch.
type Tag struct {
	Name string
	// Branch is the branch the version belongs to; "" for main.
	Branch       string
	Version      uint64
	ManifestSize int64
	CreatedAt    time.Time // zero when the tag file does not record it
	UpdatedAt    time.Time
	Metadata     map[string]string
}

// Branch describes one branch of a dataset.
type Branch struct {
	Name string
	// ParentBranch is the branch this one forked from; "" for main.
	ParentBranch  string
	ParentVersion uint64
	CreatedAt     time.Time
	ManifestSize  int64
	Metadata      map[string]string
}

type tagJSON struct {
	Branch       *string           `json:"branch"`
	Version      *uint64           `json:"version"`
	CreatedAt    *time.Time        `json:"createdAt"`
	UpdatedAt    *time.Time        `json:"updatedAt"`
	ManifestSize int64             `json:"manifestSize"`
	Metadata     map[string]string `json:"metadata"`
}

type branchJSON struct {
	ParentBranch  *string           `json:"parentBranch"`
	ParentVersion *uint64           `json:"parentVersion"`
	CreateAt      int64             `json:"createAt"`
	ManifestSize  int64             `json:"manifestSize"`
	Metadata      map[string]string `json:"metadata"`
}

// ListTags returns the tags of the dataset rooted at root, by name.
func ListTags(ctx context.Context, root blob.Store) ([]Tag, error) {
	var tags []Tag
	for info, err := range root.List(ctx, tagsDir) {
		if err != nil {
			return nil, fmt.Errorf("branch: list tags: %w", err)
		}
		name, ok := strings.CutSuffix(strings.TrimPrefix(info.Key, tagsDir), ".json")
		if !ok || strings.Contains(name, "/") {
			continue
		}
		t, err := GetTag(ctx, root, name)
		if err != nil {
			return nil, err
		}
		tags = append(tags, t)
	}
	slices.SortFunc(tags, func(a, b Tag) int { return strings.Compare(a.Name, b.Name) })
	return tags, nil
}

// GetTag reads one tag. A missing tag is an error wrapping ErrNoSuchTag.
func GetTag(ctx context.Context, root blob.Store, name string) (Tag, error) {
	if err := checkStoredTagName(name); err != nil {
		return Tag{}, err
	}
	key := tagsDir + name + ".json"
	var j tagJSON
	if err := readRefFile(ctx, root, "tag", name, key, &j); err != nil {
		return Tag{}, err
	}
	if j.Version == nil || *j.Version == 0 {
		// Versions start at 1; Open would take 0 for "the latest".
		return Tag{}, fmt.Errorf("branch: tag file %s has no version: %w", key, lancer.ErrCorrupt)
	}
	t := Tag{Name: name, Version: *j.Version, ManifestSize: j.ManifestSize, Metadata: j.Metadata}
	if j.Branch != nil && *j.Branch != Main {
		t.Branch = *j.Branch
	}
	if j.CreatedAt != nil {
		t.CreatedAt = *j.CreatedAt
	}
	if j.UpdatedAt != nil {
		t.UpdatedAt = *j.UpdatedAt
	}
	return t, nil
}

// ListBranches returns the branches of the dataset rooted at root, by name.
func ListBranches(ctx context.Context, root blob.Store) ([]Branch, error) {
	var branches []Branch
	for info, err := range root.List(ctx, branchesDir) {
		if err != nil {
			return nil, fmt.Errorf("branch: list branches: %w", err)
		}
		file, ok := strings.CutSuffix(strings.TrimPrefix(info.Key, branchesDir), ".json")
		if !ok || strings.Contains(file, "/") {
			continue
		}
		b, err := GetBranch(ctx, root, strings.ReplaceAll(file, "%2F", "/"))
		if err != nil {
			return nil, err
		}
		branches = append(branches, b)
	}
	slices.SortFunc(branches, func(a, b Branch) int { return strings.Compare(a.Name, b.Name) })
	return branches, nil
}

// GetBranch reads one branch's metadata. A missing branch is an error
// wrapping ErrNoSuchBranch.
func GetBranch(ctx context.Context, root blob.Store, name string) (Branch, error) {
	if err := checkStoredBranchName(name); err != nil {
		return Branch{}, err
	}
	key := branchKey(name)
	var j branchJSON
	if err := readRefFile(ctx, root, "branch", name, key, &j); err != nil {
		return Branch{}, err
	}
	if j.ParentVersion == nil {
		return Branch{}, fmt.Errorf("branch: branch file %s has no parentVersion: %w", key, lancer.ErrCorrupt)
	}
	br := Branch{Name: name, ParentVersion: *j.ParentVersion, ManifestSize: j.ManifestSize, Metadata: j.Metadata}
	if j.ParentBranch != nil && *j.ParentBranch != Main {
		br.ParentBranch = *j.ParentBranch
	}
	if j.CreateAt != 0 {
		br.CreatedAt = time.Unix(j.CreateAt, 0).UTC()
	}
	return br, nil
}

// readRefFile decodes the JSON file of the tag or branch (what) name, at key,
// into v. A missing file is an error wrapping ErrNoSuchTag or
// ErrNoSuchBranch, bad JSON one wrapping lancer.ErrCorrupt.
func readRefFile(ctx context.Context, root blob.Store, what, name, key string, v any) error {
	b, err := root.ReadAll(ctx, key)
	if err != nil {
		if errors.Is(err, lancer.ErrNotFound) {
			missing := ErrNoSuchBranch
			if what == "tag" {
				missing = ErrNoSuchTag
			}
			return fmt.Errorf("branch: %s %q: %w", what, name, missing)
		}
		return fmt.Errorf("branch: %s %q: %w", what, name, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("branch: %s file %s: %v: %w", what, key, err, lancer.ErrCorrupt)
	}
	return nil
}

// CheckTagName enforces Lance's tag name rules: non-empty; letters, digits,
// '.', '-', '_'; no leading or trailing '.'; no ".."; not ending in ".lock".
func CheckTagName(name string) error {
	return checkTagName(name, MaxRefNameLength)
}

// checkStoredTagName is CheckTagName for a tag that may already exist
// (read, resolved or deleted): one that another engine wrote on an object
// store may be longer than MaxRefNameLength.
func checkStoredTagName(name string) error {
	return checkTagName(name, maxStoredRefNameLength)
}

func checkTagName(name string, maxLength int) error {
	if err := checkRefLength("tag", len(name), maxLength); err != nil {
		return err
	}
	if err := checkSegment(name); err != nil {
		return fmt.Errorf("branch: tag name %q: %w", name, err)
	}
	return nil
}

// CheckBranchName enforces Lance's branch name rules: '/'-separated
// segments each following the tag rules, and not "main"; and lancer's
// own: no segment is named like an entry of a dataset root
// (manifest.IsRootEntry: _versions, data, _indices, tree, ...). A branch
// lives at tree/<name>/, a dataset root nested in its parent's, so
// branch a/_versions would keep its files inside a's _versions/ folder
// (and branch a/data inside a's data/). Such an error also wraps
// errReservedSegment.
func CheckBranchName(name string) error {
	return checkBranchName(name, MaxRefNameLength)
}

func checkBranchName(name string, maxLength int) error {
	if err := checkRefLength("branch", len(name)+2*strings.Count(name, "/"), maxLength); err != nil {
		return err
	}
	if name == Main {
		return fmt.Errorf("branch: %q is the main line, not a branch name: %w", name, lancer.ErrInvalidArgument)
	}
	if name == "" || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") {
		return fmt.Errorf("branch: branch name %q: empty or with a leading or trailing '/': %w", name, lancer.ErrInvalidArgument)
	}
	for seg := range strings.SplitSeq(name, "/") {
		if err := checkSegment(seg); err != nil {
			return fmt.Errorf("branch: branch name %q: %w", name, err)
		}
		// Whatever its case: on a case-insensitive file system (APFS,
		// NTFS) a/Data is the same folder as a/data.
		if manifest.IsRootEntry(strings.ToLower(seg)) {
			return fmt.Errorf("branch: branch name %q: segment %q is %w: %w", name, seg, errReservedSegment, lancer.ErrInvalidArgument)
		}
	}
	return nil
}

// errReservedSegment marks CheckBranchName's refusal of a segment named
// like a dataset root's entry.
var errReservedSegment = errors.New("a reserved name: every dataset root, the branch's parent too, may hold a folder or file of that name")

// checkStoredBranchName is CheckBranchName for a branch that may already
// exist: a reserved segment is accepted, so that a branch made before the
// rule (by an older lancer, or by Lance, which has no such rule) can still
// be listed, opened and deleted, and its files are protected from the
// cleanup of its parent.
func checkStoredBranchName(name string) error {
	if err := checkBranchName(name, maxStoredRefNameLength); err != nil && !errors.Is(err, errReservedSegment) {
		return err
	}
	return nil
}

// MaxRefNameLength bounds tag and branch names, in bytes of the name their
// ref file is given (without ".json"): the name itself, where a branch
// name's '/' counts three, since the file spells it "%2F". The file,
// _refs/tags/<name>.json or _refs/branches/<name>.json, must fit the 255
// bytes local filesystems allow a file name (ext4, APFS, NTFS); a longer
// name would fail as an I/O error rather than as a bad name. CheckTagName
// and CheckBranchName enforce it.
const MaxRefNameLength = 250

// maxStoredRefNameLength bounds the names of refs that may already exist
// when they are read, resolved or deleted: an object store allows longer
// keys than a file system (S3 and GCS 1,024 bytes), and a ref Lance wrote
// there must stay readable; a name longer than any store holds is refused
// before it reaches one.
const maxStoredRefNameLength = 1024

// checkRefLength checks the ref file name length n of a tag or branch
// name. The error gives the length, not the name, which may be huge.
func checkRefLength(what string, n, maxLength int) error {
	if n > maxLength {
		counting := ""
		if what == "branch" {
			counting = " (each '/' counting 3)"
		}
		return fmt.Errorf("branch: %s name of %d bytes%s, at most %d: %w", what, n, counting, maxLength, lancer.ErrInvalidArgument)
	}
	return nil
}

func checkSegment(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty name or segment: %w", lancer.ErrInvalidArgument)
	case strings.HasPrefix(s, ".") || strings.HasSuffix(s, "."):
		return fmt.Errorf("starts or ends with '.': %w", lancer.ErrInvalidArgument)
	case strings.Contains(s, ".."):
		return fmt.Errorf("contains '..': %w", lancer.ErrInvalidArgument)
	case strings.HasSuffix(s, ".lock"):
		return fmt.Errorf("ends with .lock: %w", lancer.ErrInvalidArgument)
	}
	for _, r := range s {
		ok := r == '.' || r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
		if !ok {
			return fmt.Errorf("character %q not allowed: %w", r, lancer.ErrInvalidArgument)
		}
	}
	return nil
}
