package format

import (
	"fmt"

	"github.com/lancerdb/lancer"
)

// newStructuralFieldWriter returns the 2.1/2.2 encoder of field f, whose
// first column will be firstCol.
func newStructuralFieldWriter(w *Writer, f *Field, firstCol int) (fieldWriter, error) {
	return nil, fmt.Errorf("writing %s files: %w", w.version, lancer.ErrUnsupported)
}
