package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sync"

	"github.com/lancerdb/lancer/internal/lanceref"
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
	LanceDB   string          `json:"lancedb"`
	Lance     string          `json:"lance"`
	ArrowJS   string          `json:"arrowJs"`
	Node      string          `json:"node"`
	Error     string          `json:"error"`
}

// lanceProc is one running lance-core.mjs, asked one request at a time.
type lanceProc struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr tailWriter
}

// tailWriter keeps the last 8 KiB written to it: node's stderr, which
// Lance's warnings can fill with megabytes over a run.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
}

func (w *tailWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	if len(w.buf) > 8<<10 {
		w.buf = append(w.buf[:0], w.buf[len(w.buf)-8<<10:]...)
	}
	return len(b), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

// startLance starts lance-core.mjs.
func startLance(ref lanceref.Ref) (*lanceProc, error) {
	p := &lanceProc{cmd: ref.Command(lanceCoreScript)}
	p.cmd.Stderr = &p.stderr
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.out = bufio.NewReaderSize(out, 1<<20)
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: starting node %s: %w", lanceCoreScript, err)
	}
	return p, nil
}

// ask sends req and waits for its reply; a reply carrying an error is
// returned as one.
func (p *lanceProc) ask(req lanceCoreRequest) (*lanceCoreReply, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("bench: Lance %s: writing the request: %w\n%s", req.Op, err, p.tail())
	}
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("bench: Lance %s: node stopped answering: %w\n%s", req.Op, err, p.tail())
	}
	var r lanceCoreReply
	if err := json.Unmarshal(line, &r); err != nil {
		return nil, fmt.Errorf("bench: Lance %s printed %.200q: %w", req.Op, line, err)
	}
	if r.Error != "" {
		return nil, fmt.Errorf("bench: Lance %s %s: %s", req.Op, req.Name, r.Error)
	}
	if len(r.RawIDs) > 0 && req.Op == "search" {
		if err := json.Unmarshal(r.RawIDs, &r.IDs); err != nil {
			return nil, fmt.Errorf("bench: Lance search ids: %w", err)
		}
	}
	return &r, nil
}

// tail is the end of node's stderr, for error messages.
func (p *lanceProc) tail() string {
	return p.stderr.String()
}

// close ends the process (closing its stdin ends its request loop).
func (p *lanceProc) close() error {
	p.in.Close()
	err := p.cmd.Wait()
	if err != nil {
		return fmt.Errorf("bench: node %s: %w\n%s", lanceCoreScript, err, p.tail())
	}
	return nil
}
