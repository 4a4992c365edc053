package format

import (
	"context"
	"fmt"

	"github.com/lancerdb/lancer"
)

// legacyFile is the parsed metadata of a v1 file.
type legacyFile struct{}

func (l *legacyFile) numColumns() int { return 0 }

// openLegacy parses the footer and metadata of a v1 file; tail holds the
// last bytes of the file.
func (r *Reader) openLegacy(ctx context.Context, tail []byte) error {
	return fmt.Errorf("format: %s: legacy files: %w", r.key, lancer.ErrUnsupported)
}

func newLegacyCursor(r *Reader, proj Projection) (cursorImpl, error) {
	return nil, fmt.Errorf("format: %s: legacy files: %w", r.key, lancer.ErrUnsupported)
}
