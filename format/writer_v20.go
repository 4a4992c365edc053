package format

import (
	"fmt"

	"github.com/lancerdb/lancer"
)

// newV20FieldWriter returns the 2.0 encoder of field f, whose first column
// will be firstCol.
func newV20FieldWriter(w *Writer, f *Field, firstCol int) (fieldWriter, error) {
	return nil, fmt.Errorf("writing 2.0 files: %w", lancer.ErrUnsupported)
}
