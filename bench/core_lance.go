package bench

import (
	"encoding/json"
	"fmt"

	"github.com/lancerdb/lancer/internal/lancereftest"
)

// lanceCoreScript is the Node side of the core suite, in this folder.
const lanceCoreScript = "lance-core.mjs"

// lanceCoreRequest is one request to lance-core.mjs (see its header).
type lanceCoreRequest struct {
	Op         string   `json:"op"`
	Dir        string   `json:"dir,omitempty"`
	Whole      string   `json:"whole,omitempty"`
	Chunks     []string `json:"chunks,omitempty"`
	Queries    string   `json:"queries,omitempty"`
	Dim        int      `json:"dim,omitempty"`
	Name       string   `json:"name,omitempty"`
	Columns    []string `json:"columns,omitempty"`
	Filter     string   `json:"filter,omitempty"`
	Offsets    []uint64 `json:"offsets,omitempty"`
	RowIDs     []uint64 `json:"rowIds,omitempty"`
	WantIDs    bool     `json:"wantIds,omitempty"`
	K          int      `json:"k,omitempty"`
	Flat       bool     `json:"flat,omitempty"`
	NProbes    int      `json:"nprobes,omitempty"`
	Ef         int      `json:"ef,omitempty"`
	Partitions int      `json:"partitions,omitempty"`
}

// lanceCoreReply is its answer; which fields are set depends on the op.
type lanceCoreReply struct {
	nodeReply
	MS        float64         `json:"ms"`
	EngineMS  float64         `json:"engineMs"`
	JSMS      float64         `json:"jsMs"`
	CPUMS     float64         `json:"cpuMs"`
	Rows      int64           `json:"rows"`
	IDs       [][]int64       `json:"-"`
	RawIDs    json.RawMessage `json:"ids"`
	RSS       int64           `json:"rss"`
	HWM       int64           `json:"hwm"`
	RSSBefore int64           `json:"rssBefore"`
	PeakRSS   int64           `json:"peakRss"`
}

// lanceProc is one running lance-core.mjs, asked one request at a time.
type lanceProc struct{ *nodeProc }

// startLance starts lance-core.mjs.
func startLance(ref lancereftest.Ref) (*lanceProc, error) {
	p, err := startNode(ref, lanceCoreScript)
	if err != nil {
		return nil, err
	}
	return &lanceProc{p}, nil
}

// ask sends req and waits for its reply; a reply carrying an error is
// returned as one.
func (p *lanceProc) ask(req lanceCoreRequest) (*lanceCoreReply, error) {
	var r lanceCoreReply
	if err := p.call(req.Op, req.Name, req, &r); err != nil {
		return nil, err
	}
	if len(r.RawIDs) > 0 && req.Op == "search" {
		if err := json.Unmarshal(r.RawIDs, &r.IDs); err != nil {
			return nil, fmt.Errorf("bench: Lance search ids: %w", err)
		}
	}
	return &r, nil
}
