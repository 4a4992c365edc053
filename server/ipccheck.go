package server

import (
	"bytes"
	"io"

	"github.com/lancerdb/lancer/internal/ipcwalk"
)

// arrow-go's IPC reader trusts the lengths in a stream's schema message:
// a field vector that claims 2^31 entries makes it allocate that many
// fields before it reads one (found by FuzzServerBodies). ipcwalk reads
// the stream's messages itself and checks, before arrow-go sees them,
// that every vector the schema holds fits in its message.

// checkedStream reads the whole body of size bytes (-1: unknown; see
// readAll; http.MaxBytesReader bounds it) and
// walks its IPC messages before arrow-go does: every message's metadata
// and declared body must lie within the bytes received, and the first
// message's schema vectors must fit in it. arrow-go would otherwise
// allocate what a message claims (a field vector of 2^31 entries, a body
// of a terabyte) before it finds the bytes missing.
func checkedStream(body io.Reader, size int64) (io.Reader, error) {
	buf, err := readAll(body, size)
	if err != nil {
		return nil, invalidf("reading the Arrow IPC stream body: %v", err)
	}
	if err := ipcwalk.CheckStream(buf); err != nil {
		return nil, invalidf("the Arrow IPC stream body is malformed: %v", err)
	}
	return bytes.NewReader(buf), nil
}
