package table

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/ftsindex"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/vector"
)

// Scan plans a scan of the handle's version (dataset.Dataset.Scan); its
// Batches(ctx) streams the rows.
func (t *Table) Scan(opts *dataset.ScanOptions) (*dataset.Scanner, error) {
	ds, err := t.current()
	if err != nil {
		return nil, err
	}
	return ds.Scan(opts)
}

// Take returns the rows at offsets (dataset.Dataset.Take). The caller
// releases the batch.
func (t *Table) Take(ctx context.Context, offsets []uint64, opts *dataset.TakeOptions) (arrow.RecordBatch, error) {
	ds, err := t.current()
	if err != nil {
		return nil, err
	}
	return ds.Take(ctx, offsets, opts)
}

// TakeRowIDs returns the rows of the given row ids
// (dataset.Dataset.TakeRowIDs). The caller releases the batch.
func (t *Table) TakeRowIDs(ctx context.Context, ids []uint64, opts *dataset.TakeOptions) (arrow.RecordBatch, error) {
	ds, err := t.current()
	if err != nil {
		return nil, err
	}
	return ds.TakeRowIDs(ctx, ids, opts)
}

// Search returns the nearest neighbours of query in vector column column
// (dataset.Dataset.Search). The caller releases the batch.
func (t *Table) Search(ctx context.Context, column string, query []float32, opts *dataset.SearchOptions) (arrow.RecordBatch, error) {
	ds, err := t.current()
	if err != nil {
		return nil, err
	}
	return ds.Search(ctx, column, query, opts)
}

// SearchRowIDs is Search returning row ids and distances only
// (dataset.Dataset.SearchRowIDs).
func (t *Table) SearchRowIDs(ctx context.Context, column string, query []float32, opts *dataset.SearchOptions) ([]vector.Neighbor, error) {
	ds, err := t.current()
	if err != nil {
		return nil, err
	}
	return ds.SearchRowIDs(ctx, column, query, opts)
}

// Count returns the number of rows matching predicate; "" counts every
// row (dataset.Dataset.Count, CountRows).
func (t *Table) Count(ctx context.Context, predicate string) (uint64, error) {
	ds, err := t.current()
	if err != nil {
		return 0, err
	}
	if predicate == "" {
		return ds.CountRows(ctx)
	}
	return ds.Count(ctx, predicate)
}

// Versions lists the versions of the handle's line
// (dataset.Dataset.Versions).
func (t *Table) Versions(ctx context.Context) ([]dataset.VersionInfo, error) {
	ds, err := t.current()
	if err != nil {
		return nil, err
	}
	return ds.Versions(ctx)
}

// Indices returns the indices of the handle's version.
func (t *Table) Indices() []manifest.IndexInfo {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.ds.Indices()
}

// FullTextSearch answers a full-text query over a column's Lance FTS index
// (dataset.Dataset.FullTextSearch): row ids with Lance's BM25 _score, best
// first.
func (t *Table) FullTextSearch(ctx context.Context, text string, opts *dataset.FullTextSearchOptions) ([]dataset.FTSHit, error) {
	ds, err := t.current()
	if err != nil {
		return nil, err
	}
	return ds.FullTextSearch(ctx, text, opts)
}

// FullTextQuery answers a structured full-text query (match, phrase,
// boolean, boost, multi-match; dataset.Dataset.FullTextQuery) with
// Lance's rows and _score, best first.
func (t *Table) FullTextQuery(ctx context.Context, q *ftsindex.FTSQuery, opts *dataset.FullTextQueryOptions) ([]dataset.FTSHit, error) {
	ds, err := t.current()
	if err != nil {
		return nil, err
	}
	return ds.FullTextQuery(ctx, q, opts)
}

// HybridSearch fuses a vector search and a full-text search of the
// handle's version, by reciprocal-rank fusion (LanceDB's RRFReranker) or
// a linear combination (dataset.Dataset.HybridSearch).
func (t *Table) HybridSearch(ctx context.Context, opts *dataset.HybridSearchOptions) ([]dataset.HybridHit, error) {
	ds, err := t.current()
	if err != nil {
		return nil, err
	}
	return ds.HybridSearch(ctx, opts)
}

// ChangeFeed returns the row changes of the handle's line after
// opts.Since up to opts.Until (default: the handle's version), Delta
// change-data-feed style (dataset.Dataset.ChangeFeed): each row with
// _change_type, _commit_version and _commit_timestamp; compactions are no
// changes; no stable row ids needed.
func (t *Table) ChangeFeed(ctx context.Context, opts *dataset.ChangeFeedOptions) (*dataset.ChangeFeed, error) {
	ds, err := t.current()
	if err != nil {
		return nil, err
	}
	return ds.ChangeFeed(ctx, opts)
}

// ExplainSearch returns the plan Search would follow, without searching
// (dataset.Dataset.ExplainSearch). Set opts.Plan to get the plan of a
// search as it runs.
func (t *Table) ExplainSearch(ctx context.Context, column string, query []float32, opts *dataset.SearchOptions) (*dataset.SearchPlan, error) {
	ds, err := t.current()
	if err != nil {
		return nil, err
	}
	return ds.ExplainSearch(ctx, column, query, opts)
}
