package format

import (
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// FuzzV20File mutates 2.0 files — every data file of the 2.0 fixtures, the
// multi-page test file and the encoding cases — and reads them: no input may panic, leak Arrow
// memory, fail other than with ErrCorrupt, ErrUnsupported or
// ErrInvalidArgument, or make the reader allocate far more than the input's
// size.
//
//	go test ./format -run '^$' -fuzz FuzzV20File -fuzztime 60s
func FuzzV20File(f *testing.F) {
	for _, name := range v20Fixtures {
		for _, path := range fixturetest.DataFiles(f, name) {
			data, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	data, src, _, _ := v20MultiPage(f, 60, 60)
	src.Release()
	f.Add(data)
	for _, tc := range v20EncodingCases(f) {
		f.Add(tc.file(f))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzRead(t, data, v20ReadBounded, lancer.ErrCorrupt, lancer.ErrUnsupported, lancer.ErrInvalidArgument)
	})
}

// v20ReadBounded opens data and, if it is still a 2.0 file, reads it as
// readBounded does.
func v20ReadBounded(t *testing.T, data []byte, mem memory.Allocator) error {
	r, err := openBytes(t, "data/f.lance", data, mem)
	if err != nil {
		return err
	}
	if r.Version() != Version2_0 {
		return nil // the fuzzer changed the version; other readers' business
	}
	return readBounded(r)
}
