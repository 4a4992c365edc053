package branch

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// CreateBranchOptions configures CreateBranch.
type CreateBranchOptions struct {
	// Metadata is recorded in the branch file's "metadata" object.
	Metadata map[string]string

	// RowIDSource supplies the randomness that picks the branch's stable
	// row id range (see branchRowIDs). nil, the default, means
	// crypto/rand.Reader: ranges of independent writers then collide with
	// probability about n²/2^25 for n branches of one parent. Tests pass a
	// seeded source so that a seed fixes a run; a source that fails or runs
	// dry makes the branch allocate as Lance does (from the parent's next
	// id), which a merge handles by renumbering.
	RowIDSource io.Reader
}

// branchFile is a branch as Lance 12 writes it, keys in this order.
type branchFile struct {
	ParentBranch  *string           `json:"parentBranch"`
	Identifier    *branchIdentifier `json:"identifier,omitempty"`
	ParentVersion uint64            `json:"parentVersion"`
	CreateAt      int64             `json:"createAt"`
	ManifestSize  int64             `json:"manifestSize"`
	Metadata      map[string]string `json:"metadata"`
}

// branchIdentifier is a branch's lineage: for each branch from the first
// fork off main to this one, the version it forked at and a random id.
type branchIdentifier struct {
	VersionMapping []versionMapping `json:"version_mapping"`
}

// versionMapping is one [version, "hex id"] pair.
type versionMapping struct {
	Version uint64
	ID      string
}

func (v versionMapping) MarshalJSON() ([]byte, error) {
	return json.Marshal([]any{v.Version, v.ID})
}

func (v *versionMapping) UnmarshalJSON(b []byte) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(b, &pair); err != nil {
		return err
	}
	if len(pair) != 2 {
		return fmt.Errorf("version_mapping entry has %d items, want 2", len(pair))
	}
	if err := json.Unmarshal(pair[0], &v.Version); err != nil {
		return err
	}
	return json.Unmarshal(pair[1], &v.ID)
}

// branchKey is the key of branch name's ref file.
func branchKey(name string) string {
	return branchesDir + strings.ReplaceAll(name, "/", "%2F") + ".json"
}

// CreateBranch creates branch name from the version from names (a version
// of main or of a branch, Version 0 meaning its latest, or a tag), as Lance
// 12's branches().create does, without copying data:
//
//   - tree/<name>/ gets one manifest, of the source version's number,
//     committed by a Clone transaction (dataset.Clone): manifest.branch is
//     name, and a new base path (a dataset root) records the absolute
//     location of the parent's root, the main root or, for a branch of a
//     branch, the parent's tree/<parent> (a base path named after the
//     parent); the inherited files point at it, base paths the parent had
//     are kept;
//   - _refs/branches/<name>.json records the parent, its version, the size
//     of its manifest and the branch's lineage.
//
// One difference from Lance: with stable row ids the branch's next row id
// starts a random range of its own (see branchRowIDs; the randomness comes
// from opts.RowIDSource, crypto/rand by default), so rows the branch
// and its parent add never share an id and a merge matches rows exactly.
//
// The ref file is created atomically. When two writers create the same
// name, exactly one succeeds; the other gets an error wrapping
// ErrBranchExists (a lancer.ErrAlreadyExists) and removes what it wrote (a clone of another
// version may be visible under tree/<name>/ for that moment). A name
// already taken, or a tree/<name>/ that holds a dataset without a ref (the
// leftover of an interrupted creation, which must be removed first), is an
// error wrapping ErrBranchExists. It returns the branch at its first
// version.
func CreateBranch(ctx context.Context, root blob.Store, name string, from Ref, opts *CreateBranchOptions) (*dataset.Dataset, error) {
	if err := CheckBranchName(name); err != nil {
		return nil, err
	}
	switch _, err := GetBranch(ctx, root, name); {
	case err == nil:
		return nil, fmt.Errorf("branch: branch %q: %w", name, ErrBranchExists)
	case !errors.Is(err, lancer.ErrNotFound):
		return nil, err
	}
	parent, src, err := openTarget(ctx, root, from)
	if err != nil {
		return nil, fmt.Errorf("branch: create %q from %s: %w", name, from, err)
	}
	var lineage []versionMapping
	if parent != "" {
		if lineage, err = readLineage(ctx, root, parent); err != nil {
			return nil, err
		}
	}
	size, err := manifestSize(ctx, src)
	if err != nil {
		return nil, err
	}

	source := strings.TrimSuffix(manifest.RootPath(root), "/")
	if parent != "" {
		source += "/" + treeDir + parent
	}
	dst := blob.Sub(root, treeDir+name)
	ds, err := dataset.Clone(ctx, src, dst, &dataset.CloneOptions{SourcePath: source, BaseName: parent, Branch: name,
		NextRowID: branchRowIDs(src.Manifest(), opts.rowIDSource())})
	if err != nil {
		if errors.Is(err, lancer.ErrAlreadyExists) {
			return nil, fmt.Errorf("branch: create %q: it exists, is being created, or %s%s holds the leftover of an interrupted creation: %v: %w", name, treeDir, name, err, ErrBranchExists)
		}
		return nil, fmt.Errorf("branch: create %q: %w", name, err)
	}

	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	f := branchFile{
		ParentVersion: src.Version(),
		CreateAt:      time.Now().Unix(),
		ManifestSize:  size,
		Metadata:      map[string]string{},
		Identifier: &branchIdentifier{VersionMapping: append(lineage,
			versionMapping{Version: src.Version(), ID: hex.EncodeToString(id[:])})},
	}
	if parent != "" {
		f.ParentBranch = &parent
	}
	if opts != nil {
		for k, v := range opts.Metadata {
			f.Metadata[k] = v
		}
	}
	body, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("branch: encode branch %q: %w", name, err)
	}
	if err := root.CreateIfAbsent(ctx, branchKey(name), body); err != nil {
		// Another writer's branch won: remove this clone.
		bg := context.WithoutCancel(ctx)
		_ = dst.Delete(bg, ds.ManifestKey())
		if tf := ds.Manifest().TransactionFile; tf != "" {
			_ = dst.Delete(bg, "_transactions/"+tf)
		}
		if errors.Is(err, lancer.ErrConflict) {
			return nil, fmt.Errorf("branch: branch %q was created concurrently: %w", name, ErrBranchExists)
		}
		return nil, fmt.Errorf("branch: create %q: %w", name, err)
	}
	out, err := Open(ctx, root, Ref{Branch: name, Version: ds.Version()}, nil)
	if err != nil {
		return nil, fmt.Errorf("branch: open the new branch: %w", err)
	}
	return out, nil
}

// readLineage returns the version mapping branch name's file records; none
// for a branch written before Lance recorded lineages.
func readLineage(ctx context.Context, root blob.Store, name string) ([]versionMapping, error) {
	var f branchFile
	if err := readRefFile(ctx, root, "branch", name, branchKey(name), &f); err != nil {
		return nil, err
	}
	if f.Identifier == nil {
		return nil, nil
	}
	return f.Identifier.VersionMapping, nil
}

// rowIDSource is o's RowIDSource, crypto/rand.Reader by default.
func (o *CreateBranchOptions) rowIDSource() io.Reader {
	if o == nil || o.RowIDSource == nil {
		return rand.Reader
	}
	return o.RowIDSource
}

// rowIDSpan is the size of the stable row id range each branch lancer
// creates allocates from: 2^40 ids (a trillion rows), 2^24 ranges.
const rowIDSpan = 1 << 40

// branchRowIDs returns the next stable row id of a new branch of m: the
// start of a random range of its own above m's ids, so that rows the branch
// and its parent add later never share an id and a merge needs no
// renumbering (Lance's branches continue from the parent's next id; lancer
// renumbers their rows when it merges them). 0 without stable row ids.
func branchRowIDs(m *manifest.Manifest, random io.Reader) uint64 {
	if !m.StableRowIDs() {
		return 0
	}
	first := m.NextRowID/rowIDSpan + 1 // ranges above the parent's ids
	if first >= 1<<24 {
		return 0 // no room: allocate as Lance does
	}
	var b [4]byte
	if _, err := io.ReadFull(random, b[:]); err != nil {
		return 0
	}
	slot := first + uint64(binary.LittleEndian.Uint32(b[:]))%((1<<24)-first)
	return slot * rowIDSpan
}
