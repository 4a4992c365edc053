package branch

import (
	"fmt"

	"github.com/lancerdb/lancer"
)

// Finer sentinels, derived from the root categories so that a caller who
// only asks errors.Is(err, lancer.ErrNotFound) still sees the category.
// Every lookup of this package returns them: a caller tells a missing tag
// from a missing branch (or from a missing version, dataset.ErrNoSuchVersion)
// by errors.Is, without looking the ref up again.
var (
	// ErrNoSuchBranch: the named branch has no ref file.
	ErrNoSuchBranch = fmt.Errorf("no such branch: %w", lancer.ErrNotFound)
	// ErrNoSuchTag: the named tag has no ref file.
	ErrNoSuchTag = fmt.Errorf("no such tag: %w", lancer.ErrNotFound)
	// ErrBranchExists: a branch of that name exists (or is being created).
	ErrBranchExists = fmt.Errorf("branch exists: %w", lancer.ErrAlreadyExists)
	// ErrTagExists: a tag of that name exists (or is being created).
	ErrTagExists = fmt.Errorf("tag exists: %w", lancer.ErrAlreadyExists)
)
