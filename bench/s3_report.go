package bench

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// S3Report is what RunS3 measured. Its JSON form is report.json.
type S3Report struct {
	Suite    string       `json:"suite"`
	Started  time.Time    `json:"started"`
	Seconds  float64      `json:"seconds"`
	Machine  Machine      `json:"machine"`
	Versions CoreVersions `json:"versions"`
	// Server is the S3 server both engines used.
	Server   string     `json:"server"`
	Workload S3Workload `json:"workload"`
	// Steps are the medians; Ratio = LanceMS / LancerMS (above 1: lancer
	// faster), as in the core suite.
	Steps []StepRatio `json:"steps"`
	// StepDetails add every run, min and max, and the S3 traffic.
	StepDetails []S3StepDetail `json:"step_details"`
	Notes       []string       `json:"notes"`
}

// S3Workload is the table of the s3 suite: the core suite's rows.
type S3Workload struct {
	Rows      int    `json:"rows"`
	Dim       int    `json:"dim"`
	Centers   int    `json:"centers"`
	Seed      uint32 `json:"seed"`
	TextBytes int    `json:"text_bytes"`
	Fragments int    `json:"fragments"`
	Take      int    `json:"take"`
	Runs      int    `json:"runs"`
	RawBytes  int64  `json:"raw_bytes"`
	// LatencyMS is what the proxy added to every request.
	LatencyMS float64 `json:"latency_ms,omitempty"`
}

// S3StepDetail is one step in full.
type S3StepDetail struct {
	Name   string `json:"name"`
	What   string `json:"what"`
	Lancer Stats  `json:"lancer"`
	Lance  Stats  `json:"lance"`
	// LanceEngine is the root elapsed= of analyzePlan() (query steps).
	LanceEngine *Stats  `json:"lance_engine,omitempty"`
	Ratio       float64 `json:"ratio"`
	// LancerS3 and LanceS3 are each side's S3 traffic in the run with the
	// median request count; the Runs fields list every run's.
	LancerS3 S3Traffic `json:"lancer_s3"`
	LanceS3  S3Traffic `json:"lance_s3"`
	// RequestRatio = Lance's requests / lancer's (above 1: lancer makes
	// fewer); FetchedRatio the same for bytes fetched.
	RequestRatio float64 `json:"request_ratio"`
	FetchedRatio float64 `json:"fetched_ratio"`
}

// S3Traffic is one side's S3 traffic for a step.
type S3Traffic struct {
	S3Counts
	RunsRequests     []int64 `json:"runs_requests"`
	RunsBytesFetched []int64 `json:"runs_bytes_fetched"`
}

// s3StepSpec describes a step and what each side's time includes.
type s3StepSpec struct {
	Name, What, Lancer, Lance string
}

type s3Samples struct {
	lancer, lance, lanceEngine []float64
	lancerCounts, lanceCounts  []S3Counts
}

func newS3Report(o S3Options) *S3Report {
	r := &S3Report{
		Suite: "s3",
		Workload: S3Workload{Rows: o.Rows, Dim: o.Dim, Centers: o.Centers, Seed: o.Seed, TextBytes: CoreTextBytes,
			Fragments: o.Appends, Take: o.Take, Runs: o.Runs, LatencyMS: ms(o.Latency)},
	}
	r.Started, r.Machine, r.Versions = suiteStart()
	return r
}

// traffic summarizes one side's runs: the run with the median request
// count, and every run's totals.
func traffic(runs []S3Counts) S3Traffic {
	var t S3Traffic
	if len(runs) == 0 {
		return t
	}
	for _, c := range runs {
		t.RunsRequests = append(t.RunsRequests, c.Requests)
		t.RunsBytesFetched = append(t.RunsBytesFetched, c.BytesFetched)
	}
	sorted := slices.Clone(runs)
	slices.SortStableFunc(sorted, func(a, b S3Counts) int { return cmp.Compare(a.Requests, b.Requests) })
	t.S3Counts = sorted[(len(sorted)-1)/2]
	return t
}

func (r *S3Report) addStep(s s3StepSpec, got s3Samples) {
	d := S3StepDetail{Name: s.Name, What: s.What, Lancer: stats(got.lancer, s.Lancer), Lance: stats(got.lance, s.Lance),
		LancerS3: traffic(got.lancerCounts), LanceS3: traffic(got.lanceCounts)}
	if slices.ContainsFunc(got.lanceEngine, func(x float64) bool { return x > 0 }) {
		e := stats(got.lanceEngine, "the root node's elapsed= in analyzePlan()'s text: the engine's execution alone")
		d.LanceEngine = &e
	}
	d.Ratio = msRatio(d.Lancer.MedianMS, d.Lance.MedianMS)
	d.RequestRatio = byteRatio(d.LancerS3.Requests, d.LanceS3.Requests)
	d.FetchedRatio = byteRatio(d.LancerS3.BytesFetched, d.LanceS3.BytesFetched)
	r.StepDetails = append(r.StepDetails, d)
	r.Steps = append(r.Steps, StepRatio{Name: s.Name, LancerMS: d.Lancer.MedianMS, LanceMS: d.Lance.MedianMS, Ratio: d.Ratio})
}

func (r *S3Report) finish(began time.Time) {
	r.Seconds = suiteEnd(&r.Machine, began)
	r.Notes = []string{
		"ratio = Lance / lancer for times, requests and bytes: above 1 means lancer is faster (makes fewer requests, fetches fewer bytes).",
		"both engines reach one local versitygw through one counting HTTP proxy with the same storage options; a step's requests and bytes are what the proxy saw between the start and the end of one side's call (the sides never overlap). Bytes are HTTP bodies: fetched = response bodies, sent = request bodies.",
		"the S3 figures are those of the run with the median request count; every run's totals are in report.json. Later runs of a read step can need fewer requests than the first where an engine caches metadata.",
		fmt.Sprintf("each step ran %d times per side, alternating lancer and Lance; times are medians with min and max. Before the runs of a query step, each side ran the query once, untimed and uncounted, to check the rows it returns (analyzePlan() does not give Lance's exactly): the runs are warm on both sides.", r.Workload.Runs),
		"lancer runs in the benchmark's Go process; Lance in one node process (lance-s3.mjs, the pinned @lancedb/lancedb) timing itself with performance.now(). Lance's query times are analyzePlan() wall times (the query run to the end in Rust, no Arrow data into JavaScript), as in the core suite.",
	}
	if r.Workload.LatencyMS > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("the proxy holds every request %g ms before forwarding it, as an object store's round trip would: requests that go out one round after another add up, parallel ones overlap. The server still runs on the same machine and shares its CPUs.", r.Workload.LatencyMS))
	} else {
		r.Notes = append(r.Notes, "the server runs on the same machine, so the times are dominated by per-request costs and CPU, not by network latency: a real object store adds tens of milliseconds per round trip, which makes request counts matter more than they do here (-latency adds such a delay).")
	}
}

// WriteJSON writes the report, indented, to path.
func (r *S3Report) WriteJSON(path string) error { return writeJSON(path, r) }

// Write writes report.json and report.md to dir.
func (r *S3Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := r.WriteJSON(filepath.Join(dir, "report.json")); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(r.Markdown()), 0o644)
}

// Markdown renders the report: header, the step table with times and S3
// traffic, the traffic by request kind, what each figure includes, notes.
func (r *S3Report) Markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w := r.Workload
	p("# lancer vs Lance: s3 suite\n\n")
	b.WriteString(suiteHeader(r.Started, r.Machine, r.Seconds, r.Versions))
	p("Server: %s.\n\n", r.Server)
	p("Workload (the core suite's): %d rows of id int64, vector float32[%d], text utf8 (%d B), seed %d, %.1f MB raw; "+
		"read steps use the table written as %d fragments; takes of %d rows. %d runs per side, alternating; medians.\n\n",
		w.Rows, w.Dim, w.TextBytes, w.Seed, float64(w.RawBytes)/1e6, w.Fragments, w.Take, w.Runs)
	p("Ratio = Lance / lancer: above 1, lancer is faster, or makes fewer requests, or fetches fewer bytes.\n\n")
	p("| step | lancer ms (min–max) | Lance ms (min–max) | ratio | lancer requests | Lance requests | ratio | lancer fetched | Lance fetched | lancer sent | Lance sent |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.StepDetails {
		p("| %s | %s (%s–%s) | %s (%s–%s) | %s | %d | %d | %s | %s | %s | %s | %s |\n", s.Name,
			fmtMS(s.Lancer.MedianMS), fmtMS(s.Lancer.MinMS), fmtMS(s.Lancer.MaxMS),
			fmtMS(s.Lance.MedianMS), fmtMS(s.Lance.MinMS), fmtMS(s.Lance.MaxMS), fmtRatio(s.Ratio),
			s.LancerS3.Requests, s.LanceS3.Requests, fmtRatio(s.RequestRatio),
			fmtBytes(s.LancerS3.BytesFetched), fmtBytes(s.LanceS3.BytesFetched),
			fmtBytes(s.LancerS3.BytesSent), fmtBytes(s.LanceS3.BytesSent))
	}
	p("\nRequests by kind (GET of objects, of which ranged; LIST; HEAD; PUT incl. multipart parts; POST: multipart create/complete; DELETE; answers ≥ 400):\n\n")
	p("| step | side | GET | ranged | LIST | HEAD | PUT | POST | DELETE | failed |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.StepDetails {
		for _, side := range []struct {
			name string
			c    S3Counts
		}{{"lancer", s.LancerS3.S3Counts}, {"Lance", s.LanceS3.S3Counts}} {
			c := side.c
			p("| %s | %s | %d | %d | %d | %d | %d | %d | %d | %d |\n", s.Name, side.name, c.Get, c.Ranged, c.List, c.Head, c.Put, c.Post, c.Delete, c.Failed)
		}
	}
	p("\n## What each figure includes\n\n")
	for _, s := range r.StepDetails {
		p("- **%s**: %s. lancer: %s. Lance: %s.\n", s.Name, s.What, s.Lancer.Includes, s.Lance.Includes)
	}
	p("\n")
	for _, n := range r.Notes {
		p("- %s\n", n)
	}
	return b.String()
}
