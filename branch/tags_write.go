package branch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// tagFile is a tag as Lance 12 writes it: pretty-printed, keys in this
// order, null branch for main, RFC 3339 times.
type tagFile struct {
	Branch       *string           `json:"branch"`
	Version      uint64            `json:"version"`
	CreatedAt    string            `json:"createdAt"`
	UpdatedAt    string            `json:"updatedAt"`
	ManifestSize int64             `json:"manifestSize"`
	Metadata     map[string]string `json:"metadata"`
}

// CreateTag makes tag name point at target: a version of main or of a
// branch (Ref{Branch, Version}; Version 0 is the branch's latest, resolved
// now) or the version another tag names. The version must exist. The tag
// file is created atomically: an existing tag is an error wrapping
// ErrTagExists (a lancer.ErrAlreadyExists), also when another writer
// creates it concurrently.
func CreateTag(ctx context.Context, root blob.Store, name string, target Ref) (Tag, error) {
	if err := CheckTagName(name); err != nil {
		return Tag{}, err
	}
	key := tagsDir + name + ".json"
	if _, err := root.Stat(ctx, key); err == nil {
		return Tag{}, fmt.Errorf("branch: tag %q: %w", name, ErrTagExists)
	} else if !errors.Is(err, lancer.ErrNotFound) {
		return Tag{}, fmt.Errorf("branch: tag %q: %w", name, err)
	}
	t, err := resolveTagTarget(ctx, root, name, target)
	if err != nil {
		return Tag{}, err
	}
	now := time.Now().UTC()
	t.CreatedAt, t.UpdatedAt, t.Metadata = now, now, map[string]string{}
	body, err := encodeTag(t)
	if err != nil {
		return Tag{}, err
	}
	if err := root.CreateIfAbsent(ctx, key, body); err != nil {
		if errors.Is(err, lancer.ErrConflict) {
			return Tag{}, fmt.Errorf("branch: tag %q was created concurrently: %w", name, ErrTagExists)
		}
		return Tag{}, fmt.Errorf("branch: create tag %q: %w", name, err)
	}
	return t, nil
}

// UpdateTag moves tag name to target (see CreateTag), as Lance's
// tags.update does: the file is rewritten with the new branch, version,
// manifest size and updatedAt; createdAt and the metadata are kept. A
// missing tag is an error wrapping ErrNoSuchTag.
func UpdateTag(ctx context.Context, root blob.Store, name string, target Ref) (Tag, error) {
	old, err := GetTag(ctx, root, name)
	if err != nil {
		return Tag{}, err
	}
	t, err := resolveTagTarget(ctx, root, name, target)
	if err != nil {
		return Tag{}, err
	}
	t.UpdatedAt = time.Now().UTC()
	t.CreatedAt = old.CreatedAt
	if t.CreatedAt.IsZero() {
		t.CreatedAt = t.UpdatedAt
	}
	t.Metadata = old.Metadata
	if t.Metadata == nil {
		t.Metadata = map[string]string{}
	}
	body, err := encodeTag(t)
	if err != nil {
		return Tag{}, err
	}
	if err := root.Write(ctx, tagsDir+name+".json", body); err != nil {
		return Tag{}, fmt.Errorf("branch: update tag %q: %w", name, err)
	}
	return t, nil
}

// DeleteTag removes tag name; the version it named stays. A missing tag is
// an error wrapping ErrNoSuchTag.
func DeleteTag(ctx context.Context, root blob.Store, name string) error {
	if err := checkStoredTagName(name); err != nil {
		return err
	}
	key := tagsDir + name + ".json"
	if _, err := root.Stat(ctx, key); err != nil {
		if errors.Is(err, lancer.ErrNotFound) {
			return fmt.Errorf("branch: tag %q: %w", name, ErrNoSuchTag)
		}
		return fmt.Errorf("branch: tag %q: %w", name, err)
	}
	if err := root.Delete(ctx, key); err != nil {
		return fmt.Errorf("branch: delete tag %q: %w", name, err)
	}
	return nil
}

// resolveTagTarget returns the tag name would be when pointing at target:
// its branch, version and that version's manifest size.
func resolveTagTarget(ctx context.Context, root blob.Store, name string, target Ref) (Tag, error) {
	br, ds, err := openTarget(ctx, root, target)
	if err != nil {
		return Tag{}, fmt.Errorf("branch: tag %q: %w", name, err)
	}
	size, err := manifestSize(ctx, ds)
	if err != nil {
		return Tag{}, err
	}
	return Tag{Name: name, Branch: br, Version: ds.Version(), ManifestSize: size}, nil
}

// openTarget opens the version ref names and returns the branch it belongs
// to ("" for main).
func openTarget(ctx context.Context, root blob.Store, ref Ref) (string, *dataset.Dataset, error) {
	resolved, err := Resolve(ctx, root, ref)
	if err != nil {
		return "", nil, err
	}
	ds, err := Open(ctx, root, resolved, nil)
	if err != nil {
		return "", nil, err
	}
	return resolved.Branch, ds, nil
}

func encodeTag(t Tag) ([]byte, error) {
	f := tagFile{
		Version:      t.Version,
		CreatedAt:    formatRFC3339(t.CreatedAt),
		UpdatedAt:    formatRFC3339(t.UpdatedAt),
		ManifestSize: t.ManifestSize,
		Metadata:     t.Metadata,
	}
	if t.Branch != "" {
		b := t.Branch
		f.Branch = &b
	}
	body, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("branch: encode tag %q: %w", t.Name, err)
	}
	return body, nil
}

// formatRFC3339 formats t in UTC as Lance (chrono) does: fractional
// seconds in 0, 3, 6 or 9 digits, whichever is exact, and "Z".
func formatRFC3339(t time.Time) string {
	t = t.UTC()
	layout := "2006-01-02T15:04:05"
	switch ns := t.Nanosecond(); {
	case ns == 0:
	case ns%1_000_000 == 0:
		layout += ".000"
	case ns%1_000 == 0:
		layout += ".000000"
	default:
		layout += ".000000000"
	}
	return t.Format(layout) + "Z"
}

// ParseRef parses the ref syntax of lancer's command line:
//
//	main            the latest version of the main line
//	main@N, @N      version N of the main line
//	B               the latest version of branch B
//	B@N             version N of branch B
//	tag:T           the version tag T names
//	branch:B        branch B (B@N also accepts the prefix)
//
// ParseRef only reads the syntax: a bare name is taken for a branch.
// ResolveRef also looks the name up among the tags.
func ParseRef(s string) (Ref, error) {
	bad := func(why string) (Ref, error) {
		return Ref{}, fmt.Errorf("branch: ref %q: %s: %w", s, why, lancer.ErrInvalidArgument)
	}
	if s == "" {
		return bad("empty")
	}
	if t, ok := strings.CutPrefix(s, "tag:"); ok {
		if err := checkStoredTagName(t); err != nil {
			return Ref{}, err
		}
		return Ref{Tag: t}, nil
	}
	name, version, hasVersion := strings.Cut(strings.TrimPrefix(s, "branch:"), "@")
	var r Ref
	if hasVersion {
		v, err := strconv.ParseUint(version, 10, 64)
		if err != nil || v == 0 {
			return bad("the version after '@' must be a positive integer")
		}
		r.Version = v
	}
	if name == "" && !hasVersion {
		return bad("empty branch name")
	}
	if name != "" && name != Main {
		if err := checkStoredBranchName(name); err != nil {
			return Ref{}, err
		}
		r.Branch = name
	}
	return r, nil
}

// ResolveRef parses s as ParseRef does and looks a bare name up: a tag or
// a branch of that name. A name that is both is an error wrapping
// lancer.ErrInvalidArgument that asks for tag:NAME or branch:NAME; one that
// is neither wraps lancer.ErrNotFound.
func ResolveRef(ctx context.Context, root blob.Store, s string) (Ref, error) {
	if strings.HasPrefix(s, "tag:") || strings.HasPrefix(s, "branch:") || strings.Contains(s, "@") || s == Main {
		return ParseRef(s)
	}
	if checkStoredTagName(s) != nil {
		return ParseRef(s) // not a tag name: a branch or an error
	}
	_, tagErr := GetTag(ctx, root, s)
	if tagErr != nil && !errors.Is(tagErr, lancer.ErrNotFound) {
		return Ref{}, tagErr
	}
	_, branchErr := GetBranch(ctx, root, s)
	if branchErr != nil && !errors.Is(branchErr, lancer.ErrNotFound) {
		return Ref{}, branchErr
	}
	switch {
	case tagErr == nil && branchErr == nil:
		return Ref{}, fmt.Errorf("branch: %q is both a tag and a branch: write tag:%s or branch:%s: %w", s, s, s, lancer.ErrInvalidArgument)
	case tagErr == nil:
		return Ref{Tag: s}, nil
	case branchErr == nil:
		return Ref{Branch: s}, nil
	}
	return Ref{}, fmt.Errorf("branch: %q is neither a tag nor a branch: %w", s, lancer.ErrNotFound)
}

// manifestSize returns the size in bytes of the manifest file of ds's
// version, which Lance records in tags and branch refs.
func manifestSize(ctx context.Context, ds *dataset.Dataset) (int64, error) {
	info, err := ds.Store().Stat(ctx, ds.ManifestKey())
	if err != nil {
		return 0, fmt.Errorf("branch: manifest of version %d: %w", ds.Version(), err)
	}
	return info.Size, nil
}
