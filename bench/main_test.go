package bench

import (
	"os"
	"testing"
)

// TestMain lets the core suite's tests start this test binary as the
// lancer half of the fresh-process index build (MaybeBuildChild).
func TestMain(m *testing.M) {
	MaybeBuildChild()
	os.Exit(m.Run())
}
