package format

import (
	"fmt"

	"github.com/lancerdb/lancer"
)

// newStructuralCursor reads files of versions 2.1 and later.
func newStructuralCursor(r *Reader, proj Projection) (cursorImpl, error) {
	return nil, fmt.Errorf("format: %s: %s files: %w", r.key, r.version, lancer.ErrUnsupported)
}
