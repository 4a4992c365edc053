package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// The branches/ endpoints: the client's table.branches() list, create,
// delete, diff and cherryPick, backed by package branch. LanceDB serves
// diff and cherry-pick only to its Enterprise tables; here cherry-pick
// merges the branch into main (branch.Merge: three-way, rows matched by
// stable row id), and diff compares the branch with main since the fork.

type branchBody struct {
	Name        string  `json:"name"`
	FromBranch  *string `json:"from_branch"`
	FromVersion *uint64 `json:"from_version"`
	DryRun      bool    `json:"dry_run"`
	// branches/merge/ only: the line merged into ("" or "main" for main)
	// and the conflict strategy (fail, ours, theirs).
	Into     string `json:"into"`
	Strategy string `json:"strategy"`
	// On names the key columns rows are matched by (default: the
	// table's primary key); see branch.MergeOptions.On.
	On []string `json:"on"`
	// Ours and Theirs name columns whose conflicting cells keep the
	// target's / take the source's value (branch.MergeOptions.Ours).
	Ours   []string `json:"ours"`
	Theirs []string `json:"theirs"`
}

// branchRoot decodes the body and returns the table's root store.
func (s *Server) branchRoot(r *http.Request) (blob.Store, branchBody, error) {
	var body branchBody
	name, err := tableName(r)
	if err != nil {
		return nil, body, err
	}
	if err := decodeJSON(r, &body); err != nil {
		return nil, body, err
	}
	ds, err := s.open(r.Context(), name, 0, "")
	if err != nil {
		return nil, body, err
	}
	return ds.Store(), body, nil
}

// listBranches answers branches/list/ with Lance's BranchContents.
func (s *Server) listBranches(w http.ResponseWriter, r *http.Request) error {
	root, _, err := s.branchRoot(r)
	if err != nil {
		return err
	}
	bs, err := branch.ListBranches(r.Context(), root)
	if err != nil {
		return err
	}
	out := map[string]any{}
	for _, b := range bs {
		c := map[string]any{"parentVersion": b.ParentVersion, "createAt": b.CreatedAt.Unix(), "manifestSize": b.ManifestSize}
		if b.ParentBranch != "" {
			c["parentBranch"] = b.ParentBranch
		}
		if len(b.Metadata) > 0 {
			c["metadata"] = b.Metadata
		}
		out[b.Name] = c
	}
	return writeJSON(w, map[string]any{"branches": out})
}

// createBranch answers branches/create/ {"name", "from_branch"?,
// "from_version"?}: 409 when the branch exists (the client maps it to
// AlreadyExists and does not retry), 404 when the source does not.
func (s *Server) createBranch(w http.ResponseWriter, r *http.Request) error {
	root, body, err := s.branchRoot(r)
	if err != nil {
		return err
	}
	if err := branch.CheckBranchName(body.Name); err != nil {
		return err
	}
	var from branch.Ref
	if body.FromBranch != nil && *body.FromBranch != branch.Main {
		from.Branch = *body.FromBranch
	}
	if body.FromVersion != nil {
		from.Version = *body.FromVersion
	}
	return s.write(w, r, r.PathValue("id"), func(ctx context.Context) (any, error) {
		_, err := branch.CreateBranch(ctx, root, body.Name, from, nil)
		switch {
		case errors.Is(err, branch.ErrBranchExists):
			return nil, &apiError{status: http.StatusConflict, code: codeAlreadyExists, msg: fmt.Sprintf("branch %q already exists", body.Name), err: err}
		case errors.Is(err, lancer.ErrNotFound):
			return nil, &apiError{status: http.StatusNotFound, code: codeNotFound, msg: fmt.Sprintf("source %s: %v", from, err), err: err}
		case err != nil:
			return nil, err
		}
		return struct{}{}, nil
	})
}

// deleteBranch answers branches/delete/ {"name"}, discarding the branch
// and the files only it used.
func (s *Server) deleteBranch(w http.ResponseWriter, r *http.Request) error {
	root, body, err := s.branchRoot(r)
	if err != nil {
		return err
	}
	return s.write(w, r, r.PathValue("id"), func(ctx context.Context) (any, error) {
		_, err := branch.DeleteBranch(ctx, root, body.Name, nil)
		if errors.Is(err, branch.ErrNoSuchBranch) {
			return nil, branchNotFound(body.Name, err)
		}
		if err != nil {
			return nil, err
		}
		return struct{}{}, nil
	})
}

// columnSummary and the types below are the client's BranchDiff JSON.
type columnSummary struct {
	Name     string `json:"name"`
	DataType string `json:"dataType"`
	Nullable bool   `json:"nullable"`
}

type columnChange struct {
	Name   string        `json:"name"`
	Main   columnSummary `json:"main"`
	Branch columnSummary `json:"branch"`
}

type branchIndexSummary struct {
	IndexName string   `json:"indexName"`
	Columns   []string `json:"columns"`
	IndexType string   `json:"indexType,omitempty"`
	Status    string   `json:"status"`
}

type rowSummary struct {
	Unchanged      uint64 `json:"unchanged"`
	NewOnBase      uint64 `json:"newOnBase"`
	NewOnBranch    uint64 `json:"newOnBranch"`
	StaleRecompute uint64 `json:"staleRecompute"`
	InputsChanged  uint64 `json:"inputsChanged"`
	DeltaAvailable bool   `json:"deltaAvailable"`
}

type pickError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type branchDiff struct {
	FromBranch      string               `json:"fromBranch"`
	ParentVersion   uint64               `json:"parentVersion"`
	MainVersion     uint64               `json:"mainVersion"`
	BranchVersion   uint64               `json:"branchVersion"`
	BaseMoved       bool                 `json:"baseMoved"`
	RowCountMain    uint64               `json:"rowCountMain"`
	RowCountBranch  uint64               `json:"rowCountBranch"`
	RowSummary      rowSummary           `json:"rowSummary"`
	AddedColumns    []columnSummary      `json:"addedColumns"`
	RemovedColumns  []columnSummary      `json:"removedColumns"`
	ChangedColumns  []columnChange       `json:"changedColumns"`
	AddedIndexes    []branchIndexSummary `json:"addedIndexes"`
	RemovedIndexes  []branchIndexSummary `json:"removedIndexes"`
	Errors          []pickError          `json:"errors"`
	mergeBase       branch.Ref
	branchAddedRows uint64
}

// diffBranch answers branches/diff/ {"from_branch"}.
func (s *Server) diffBranch(w http.ResponseWriter, r *http.Request) error {
	root, body, err := s.branchRoot(r)
	if err != nil {
		return err
	}
	d, err := branchVsMain(r.Context(), root, fromBranch(body))
	if err != nil {
		return err
	}
	return writeJSON(w, d)
}

func fromBranch(b branchBody) string {
	if b.FromBranch != nil {
		return *b.FromBranch
	}
	return b.Name
}

// branchVsMain compares a branch's latest version with main's since their
// merge base.
func branchVsMain(ctx context.Context, root blob.Store, name string) (*branchDiff, error) {
	b, err := branch.GetBranch(ctx, root, name)
	if errors.Is(err, branch.ErrNoSuchBranch) {
		return nil, branchNotFound(name, err)
	}
	if err != nil {
		return nil, err
	}
	main, err := branch.Open(ctx, root, branch.Ref{}, nil)
	if err != nil {
		return nil, err
	}
	bd, err := branch.Open(ctx, root, branch.Ref{Branch: name}, nil)
	if err != nil {
		return nil, err
	}
	base, err := branch.MergeBase(ctx, root, branch.Ref{Branch: name, Version: bd.Version()}, branch.Ref{Version: main.Version()})
	if err != nil {
		return nil, err
	}
	out := &branchDiff{
		FromBranch: name, ParentVersion: b.ParentVersion, MainVersion: main.Version(), BranchVersion: bd.Version(),
		BaseMoved:      base != branch.Ref{Version: main.Version()},
		AddedColumns:   []columnSummary{},
		RemovedColumns: []columnSummary{},
		ChangedColumns: []columnChange{},
		AddedIndexes:   []branchIndexSummary{},
		RemovedIndexes: []branchIndexSummary{},
		Errors:         []pickError{},
		mergeBase:      base,
	}
	if out.RowCountMain, err = main.CountRows(ctx); err != nil {
		return nil, err
	}
	if out.RowCountBranch, err = bd.CountRows(ctx); err != nil {
		return nil, err
	}
	count := func(to branch.Ref) (dataset.DiffSummary, error) {
		r, err := branch.Diff(ctx, root, base, to, &dataset.DiffOptions{Columns: []string{}})
		if err != nil {
			return dataset.DiffSummary{}, err
		}
		return r.Summary(), nil
	}
	onBranch, err := count(branch.Ref{Branch: name})
	if err != nil {
		return nil, err
	}
	onMain, err := count(branch.Ref{})
	if err != nil {
		return nil, err
	}
	out.branchAddedRows = onBranch.Inserted
	out.RowSummary = rowSummary{
		NewOnBase:      onMain.Inserted,
		NewOnBranch:    onBranch.Inserted,
		InputsChanged:  onBranch.Updated + onBranch.Deleted,
		DeltaAvailable: true,
	}
	if baseRows := out.RowCountBranch + onBranch.Deleted - onBranch.Inserted; baseRows >= onBranch.Updated+onBranch.Deleted {
		out.RowSummary.Unchanged = baseRows - onBranch.Updated - onBranch.Deleted
	}
	summary := func(d *dataset.Dataset, col string) columnSummary {
		f := d.Schema().Field(col)
		return columnSummary{Name: col, DataType: f.Type.String(), Nullable: f.Nullable}
	}
	for _, f := range bd.Schema().Fields {
		mf := main.Schema().Field(f.Name)
		switch {
		case mf == nil:
			out.AddedColumns = append(out.AddedColumns, summary(bd, f.Name))
		case mf.Type.String() != f.Type.String() || mf.Nullable != f.Nullable:
			out.ChangedColumns = append(out.ChangedColumns, columnChange{Name: f.Name, Main: summary(main, f.Name), Branch: summary(bd, f.Name)})
		}
	}
	for _, f := range main.Schema().Fields {
		if bd.Schema().Field(f.Name) == nil {
			out.RemovedColumns = append(out.RemovedColumns, summary(main, f.Name))
		}
	}
	names := func(d *dataset.Dataset) map[string]manifest.IndexInfo {
		m := map[string]manifest.IndexInfo{}
		for _, ix := range d.Indices() {
			m[ix.Name] = ix
		}
		return m
	}
	mi, bi := names(main), names(bd)
	for n, ix := range bi {
		if _, ok := mi[n]; !ok {
			out.AddedIndexes = append(out.AddedIndexes, branchIndexSummary{IndexName: n, Columns: ix.Fields, IndexType: ix.Type, Status: "ready"})
		}
	}
	for n, ix := range mi {
		if _, ok := bi[n]; !ok {
			out.RemovedIndexes = append(out.RemovedIndexes, branchIndexSummary{IndexName: n, Columns: ix.Fields, IndexType: ix.Type, Status: "ready"})
		}
	}
	return out, nil
}

// cherryPick answers branches/cherry_pick/ {"from_branch", "dry_run"}:
// the branch is merged into main (a dry run computes the merge and
// commits nothing). A merge that conflicts is a 409 with status "failed"
// and an error per conflicting row, as the client expects.
func (s *Server) cherryPick(w http.ResponseWriter, r *http.Request) error {
	root, body, err := s.branchRoot(r)
	if err != nil {
		return err
	}
	name := fromBranch(body)
	diff, err := branchVsMain(r.Context(), root, name)
	if err != nil {
		return err
	}
	result := map[string]any{"diff": diff, "preview": map[string]any{"promotedColumns": columnNames(diff.AddedColumns)}}
	var (
		res  *branch.MergeResult
		fail *dataset.MergeConflictError
	)
	// The client never retries a cherry-pick: no de-duplication, only the
	// table's write lock.
	t := s.table(r.PathValue("id"))
	t.mu.Lock()
	res, err = branch.Merge(r.Context(), root, branch.Ref{Branch: name}, &branch.MergeOptions{DryRun: body.DryRun})
	t.mu.Unlock()
	switch {
	case errors.As(err, &fail):
		for i, c := range fail.Report.Conflicts {
			if i == 100 {
				diff.Errors = append(diff.Errors, pickError{Code: "rowsChanged", Message: fmt.Sprintf("and %d more conflicting rows", len(fail.Report.Conflicts)-100)})
				break
			}
			diff.Errors = append(diff.Errors, pickError{Code: "rowsChanged", Message: fmt.Sprintf("row %d %s%s", c.RowID, c.Kind, columnsOf(c.Columns))})
		}
		if len(fail.Report.Conflicts) == 0 {
			diff.Errors = append(diff.Errors, pickError{Code: "columnChanged", Message: fail.Error()})
		}
		result["status"] = "failed"
		b, err := marshal(result)
		if err != nil {
			return err
		}
		w.Header().Set("content-type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_, err = w.Write(b)
		return err
	case err != nil:
		return err
	}
	if res.UpToDate {
		diff.Errors = append(diff.Errors, pickError{Code: "nothingToApply", Message: fmt.Sprintf("main already holds every change of %s", name)})
	}
	if body.DryRun {
		result["status"] = "ready"
	} else {
		result["status"] = "cherryPicked"
		result["mainVersionAfter"] = res.Version
	}
	return writeJSON(w, result)
}

func columnNames(cs []columnSummary) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func columnsOf(cols []string) string {
	if len(cols) == 0 {
		return ""
	}
	return fmt.Sprintf(" (columns %v)", cols)
}

// mergeBranch answers lancer's own branches/merge/ {"from_branch",
// "into"?, "strategy"?: "fail"|"ours"|"theirs", "on"?: [key columns],
// "ours"?, "theirs"?: [columns whose conflicting cells keep the target's /
// take the source's value], "dry_run"?} with what
// branch.Merge did: {"status": "merged"|"fastForward"|"upToDate"|"ready",
// "source", "target", "base", "version", "rowsAdded", "rowsUpdated",
// "rowsDeleted", "columnsAdded", "columnsDropped", "conflicts": [{"row_id",
// "kind", "columns", "cells", "resolution"}]}. Conflicts under "fail" are a 409 with status
// "failed" and the same body, as cherry_pick answers them.
func (s *Server) mergeBranch(w http.ResponseWriter, r *http.Request) error {
	root, body, err := s.branchRoot(r)
	if err != nil {
		return err
	}
	strategy, err := dataset.ParseMergeStrategy(body.Strategy)
	if err != nil {
		return err
	}
	from := fromBranch(body)
	t := s.table(r.PathValue("id"))
	t.mu.Lock()
	res, err := branch.Merge(r.Context(), root, branch.Ref{Branch: from}, &branch.MergeOptions{Into: body.Into, Strategy: strategy, DryRun: body.DryRun, On: body.On,
		Ours: body.Ours, Theirs: body.Theirs})
	t.mu.Unlock()
	var fail *dataset.MergeConflictError
	status := http.StatusOK
	out := map[string]any{"source": from, "conflicts": []dataset.RowConflict{}}
	switch {
	case errors.As(err, &fail):
		status = http.StatusConflict
		out["status"] = "failed"
		out["message"] = fail.Error()
		if fail.Report != nil && fail.Report.Conflicts != nil {
			out["conflicts"] = fail.Report.Conflicts
		}
	case errors.Is(err, branch.ErrNoSuchBranch):
		return branchNotFound(from, err)
	case err != nil:
		return err
	default:
		rep := res.Report
		out["status"] = "merged"
		switch {
		case res.UpToDate:
			out["status"] = "upToDate"
		case body.DryRun:
			out["status"] = "ready"
		case res.FastForward:
			out["status"] = "fastForward"
		}
		out["source"], out["target"], out["base"] = res.Source.String(), res.Target.String(), res.Base.String()
		out["version"] = res.Version
		out["rowsAdded"], out["rowsUpdated"], out["rowsDeleted"] = rep.RowsAdded, rep.RowsUpdated, rep.RowsDeleted
		out["columnsAdded"], out["columnsDropped"] = nonNil(rep.ColumnsAdded), nonNil(rep.ColumnsDropped)
		if rep.Conflicts != nil {
			out["conflicts"] = rep.Conflicts
		}
	}
	b, err := marshal(out)
	if err != nil {
		return err
	}
	w.Header().Set("content-type", "application/json")
	w.WriteHeader(status)
	_, err = w.Write(b)
	return err
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}
