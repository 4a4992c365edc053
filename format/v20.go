package format

import (
	"fmt"

	"github.com/lancerdb/lancer"
)

// newV20Cursor reads files of version 2.0.
func newV20Cursor(r *Reader, proj Projection) (cursorImpl, error) {
	return nil, fmt.Errorf("format: %s: 2.0 files: %w", r.key, lancer.ErrUnsupported)
}
