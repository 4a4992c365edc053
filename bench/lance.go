package bench

import (
	"fmt"
	"path/filepath"
	"runtime"
	"time"

	"github.com/lancerdb/lancer/internal/lancereftest"
)

// lanceScript is the Node side of the benchmarks, in this folder.
const lanceScript = "lance-write.mjs"

// lanceRequest is one request to lance-write.mjs.
type lanceRequest struct {
	Op             string `json:"op"`
	IPC            string `json:"ipc,omitempty"`
	Dir            string `json:"dir"`
	Name           string `json:"name"`
	StorageVersion string `json:"storageVersion,omitempty"`
	Out            string `json:"out,omitempty"`
}

// lanceReply is its answer.
type lanceReply struct {
	MS    float64 `json:"ms"`
	CPUMS float64 `json:"cpuMs"`
	Rows  int64   `json:"rows"`
	Error string  `json:"error"`
}

func (r lanceReply) timing() Timing {
	return Timing{Wall: time.Duration(r.MS * float64(time.Millisecond)), CPU: time.Duration(r.CPUMS * float64(time.Millisecond))}
}

// repoRoot is the repository holding this source file: the harness runs
// from a checkout.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..")
}

// findRef locates node and the pinned Lance reference, with this folder's
// scripts.
func findRef() (lancereftest.Ref, error) {
	ref, err := lancereftest.Find()
	if err != nil {
		return ref, fmt.Errorf("bench: %w", err)
	}
	ref.Scripts = filepath.Join(repoRoot(), "bench")
	return ref, nil
}

// askLance runs lance-write.mjs over reqs in one node process; a request
// that failed fails the whole call.
func askLance(ref lancereftest.Ref, reqs []lanceRequest) ([]lanceReply, error) {
	replies, err := lancereftest.Ask[lanceRequest, lanceReply](ref, lanceScript, reqs)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	for i, r := range replies {
		if r.Error != "" {
			return nil, fmt.Errorf("bench: Lance %s %s/%s: %s", reqs[i].Op, reqs[i].Dir, reqs[i].Name, r.Error)
		}
	}
	return replies, nil
}
