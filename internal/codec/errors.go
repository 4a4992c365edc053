package codec

import (
	"fmt"

	"github.com/lancerdb/lancer"
)

// corruptf reports bytes that do not follow the layout they claim. The
// message starts with the codec's name so a wrapped error still says which
// layer rejected the input.
func corruptf(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, lancer.ErrCorrupt)...)
}

// invalidf reports a caller mistake (an encoder asked to do the impossible,
// a destination that is too small), as opposed to bad stored bytes.
func invalidf(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, lancer.ErrInvalidArgument)...)
}

// unsupportedf reports well-formed input that uses something this package
// does not implement, such as an unknown compression scheme.
func unsupportedf(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, lancer.ErrUnsupported)...)
}
