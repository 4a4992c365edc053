package lancer

import "errors"

// Error categories. Packages wrap them with fmt.Errorf("…: %w", lancer.ErrX)
// and never define parallel "not found" sentinels of their own; a package
// that needs a finer sentinel derives it from a category, e.g.
//
//	var ErrNoSuchVersion = fmt.Errorf("version %w", lancer.ErrNotFound)
var (
	// ErrNotFound: the named object (file, version, tag, branch, field, row)
	// does not exist.
	ErrNotFound = errors.New("lancer: not found")

	// ErrCorrupt: bytes read from storage or the network do not follow the
	// format they claim. The message names the file and what was wrong.
	ErrCorrupt = errors.New("lancer: corrupt data")

	// ErrConflict: a concurrent writer changed the state this operation was
	// based on (an object that must be created already exists, a commit lost
	// the race and cannot be rebased).
	ErrConflict = errors.New("lancer: conflict")

	// ErrInvalidArgument: the caller asked for something malformed (bad URI,
	// unknown column, negative limit).
	ErrInvalidArgument = errors.New("lancer: invalid argument")

	// ErrUnsupported: the data is well-formed but uses a feature lancer does
	// not implement (an unknown feature flag, file version 2.3 layouts). It
	// is returned instead of guessing, so nothing is ever misread.
	ErrUnsupported = errors.New("lancer: unsupported")

	// ErrAlreadyExists: creating something (tag, branch, dataset) whose name
	// is taken.
	ErrAlreadyExists = errors.New("lancer: already exists")

	// ErrClosed: the object was used after Close.
	ErrClosed = errors.New("lancer: closed")
)
