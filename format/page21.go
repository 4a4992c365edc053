package format

import (
	"context"
	"fmt"

	"github.com/lancerdb/lancer"
)

// decodeLeafPage reads page p of physical column col of a 2.1+ file and
// decodes it into levels and values typed as leaf.ScanType().
func (r *Reader) decodeLeafPage(ctx context.Context, col, p int, leaf *Field) (*leafPage, error) {
	return nil, fmt.Errorf("format: %s: column %d page %d: %w", r.key, col, p, lancer.ErrUnsupported)
}
