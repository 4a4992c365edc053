// lance-ops.mjs: perform operations with real Lance (LanceDB for Node) on an
// existing dataset, so that lancer's tests can interleave Lance's commits
// with their own.
//
// It reads requests, one JSON object per line on stdin, each on a freshly
// opened table:
//   {"uri": "/p/t.lance", "op": "append", "rows": [{"id": 1, ...}, ...]}
//   {"uri": "/p/t.lance", "op": "delete", "filter": "id % 3 = 0"}
//   {"uri": "/p/t.lance", "op": "query", "filter": "id % 3 = 0", "select": ["id", "_row_created_at_version"]}
//   {"uri": "/p/t.lance", "op": "create", "rows": [...], "storageOptions": {...}}
//   {"uri": "/p/t.lance", "op": "update", "filter": "id < 5", "valuesSql": {"v": "v + 1"}}
//   {"uri": "/p/t.lance", "op": "mergeInsert", "on": ["id"], "rows": [...], ...}
//   {"uri": "/p/t.lance", "op": "hold", "name": "a"}: keep this table open, at
//     its version, for later "heldDelete"/"heldUpdate" requests (same
//     fields as delete/update), which commit from it as a stale writer
//   {"uri": "/p/t.lance", "op": "restore", "version": 3}
//   {"uri": "/p/t.lance", "op": "listVersions"}
//   {"uri": "/p/t.lance", "op": "countRows", "version": 2}
//   {"uri": "/p/t.lance", "op": "schema", "version": 2}
//   {"uri": "/p/t.lance", "op": "search", "column": "vec", "vector": [...], "k": 5,
//    "filter": "id > 3", "distanceType": "l2"}: nearest rows, id/_rowid/_distance
//   {"uri": "/p/t.lance", "op": "listIndices"}
//   {"uri": "/p/t.lance", "op": "indexStats", "name": "vec_idx"}
//   {"uri": "/p/t.lance", "op": "createIndex", "column": "id", "type": "btree"} (or bitmap, labelList)
//   {"uri": "/p/t.lance", "op": "createIndex", "column": "vec", "type": "ivfPq", "indexOptions": {"numPartitions": 4}}
//   (search also takes "nprobes", "ef" and "refineFactor")
// and prints one JSON object per request on stdout: {"version": N} (the
// table's version after the operation), {"versions": [{"version", "metadata"}]},
// {"count": N}, {"fields": [...]}, or {"error": "..."}.
//
// Appended rows are JSON objects converted with the table's own schema:
// 64-bit integers may be given as numbers or decimal strings, lists and
// fixed-size lists as arrays, structs as objects, binaries as base64.
//
// LANCEDB_NODE_DIR names the folder whose node_modules holds the pinned
// @lancedb/lancedb (see package.json here).
import { createRequire } from 'node:module';
import path from 'node:path';
import readline from 'node:readline';

const dir = process.env.LANCEDB_NODE_DIR;
if (!dir) { console.error('lance-ops: set LANCEDB_NODE_DIR'); process.exit(2); }
const require = createRequire(path.join(dir, 'package.json'));
const lancedb = require('@lancedb/lancedb');
const arrow = require('apache-arrow');
const { Type, vectorFromArray, makeData, Struct, Table, RecordBatch } = arrow;

// jsValue converts a JSON value to what apache-arrow's vectorFromArray
// expects for type t.
function jsValue(v, t) {
  if (v === null || v === undefined) return null;
  switch (t.typeId) {
    case Type.Int:
      return t.bitWidth === 64 ? BigInt(v) : Number(v);
    case Type.Float:
      return Number(v);
    case Type.Binary: case Type.LargeBinary: case Type.FixedSizeBinary:
      return Uint8Array.from(Buffer.from(v, 'base64'));
    case Type.Timestamp: case Type.Date: case Type.Time: case Type.Duration:
      return typeof v === 'string' ? BigInt(v) : v;
    case Type.List: case Type.LargeList: case Type.FixedSizeList:
      return v.map((x) => jsValue(x, t.children[0].type));
    case Type.Struct: {
      const o = {};
      for (const f of t.children) o[f.name] = jsValue(v[f.name], f.type);
      return o;
    }
  }
  return v;
}

// tableOf builds an Arrow table of rows with the given schema.
function tableOf(schema, rows) {
  const children = schema.fields.map((f) => columnData(rows.map((r) => jsValue(r[f.name], f.type)), f.type));
  const data = makeData({ type: new Struct(schema.fields), length: rows.length, nullCount: 0, children });
  return new Table(schema, [new RecordBatch(schema, data)]);
}

// columnData builds one column. A fixed-size list with null entries is
// built by hand: apache-arrow's builder leaves no child slots for them,
// which Lance then rejects as a short values buffer.
function columnData(values, t) {
  if (t.typeId !== Type.FixedSizeList || !values.some((v) => v === null)) {
    return vectorFromArray(values, t).data[0];
  }
  const n = t.listSize;
  const filler = values.find((v) => v !== null)?.[0] ?? null;
  const flat = [];
  const valid = new Uint8Array(Math.ceil(values.length / 8));
  values.forEach((v, i) => {
    if (v === null) {
      for (let k = 0; k < n; k++) flat.push(filler);
    } else {
      valid[i >> 3] |= 1 << (i & 7);
      flat.push(...v);
    }
  });
  const child = vectorFromArray(flat, t.children[0].type).data[0];
  const nulls = values.filter((v) => v === null).length;
  return makeData({ type: t, length: values.length, nullCount: nulls, nullBitmap: valid, child });
}

function describe(f) {
  const d = { name: f.name, type: String(f.type), nullable: f.nullable };
  if (f.type.children && f.type.children.length) d.children = f.type.children.map(describe);
  return d;
}

// NaN and ±Inf print as the strings "NaN", "Infinity" and "-Infinity", as
// lancer's rowjson prints them (JSON.stringify would print null).
function nonFinite(x) {
  return typeof x === 'number' && !Number.isFinite(x) ? String(x) : x;
}

// JSON with BigInt printed as an exact integer literal.
function toJSON(v) {
  return JSON.stringify(v, (k, x) => (typeof x === 'bigint' ? `@@${x}@@` : nonFinite(x))).replace(/"@@(-?\d+)@@"/g, '$1');
}

// held are the tables "hold" keeps open, by name.
const held = new Map();

async function serve(req) {
  const uri = req.uri.replace(/\/+$/, '');
  const db = await lancedb.connect(path.dirname(uri));
  if (req.op === 'create') {
    // {"op": "create", "rows": [{"id": 1, "val": "a"}], "storageOptions": {...}}:
    // a new table of int64 id and string val (Lance's storage options such
    // as new_table_enable_stable_row_ids).
    const schema = new arrow.Schema([new arrow.Field('id', new arrow.Int64(), false), new arrow.Field('val', new arrow.Utf8(), true)]);
    const t = await db.createTable(path.basename(uri).replace(/\.lance$/, ''), tableOf(schema, req.rows), { storageOptions: req.storageOptions || {} });
    return { version: await t.version() };
  }
  const table = await db.openTable(path.basename(uri).replace(/\.lance$/, ''));
  switch (req.op) {
    case 'append': {
      const schema = await table.schema();
      await table.add(tableOf(schema, req.rows));
      return { version: await table.version() };
    }
    case 'delete':
      await table.delete(req.filter);
      return { version: await table.version() };
    case 'query': {
      // {"op": "query", "filter": "id > 3", "version": 2}: the rows the
      // filter keeps, _rowid last, as Arrow's toJSON gives them: int64 as
      // exact integers, lists as arrays, structs as objects (the fixture
      // encoding for the numeric, string, boolean, list and struct columns
      // the callers use).
      // "select": the columns to return (Lance's system columns such as
      // _row_created_at_version may be named), _rowid added; "explain":
      // true returns {"plan": ...} (explainPlan(true)) instead.
      if (req.version) await table.checkout(req.version);
      let q = table.query();
      if (req.filter) q = q.where(req.filter);
      if (req.explain) return { plan: await q.explainPlan(true) };
      if (req.select) q = q.select(req.select);
      const rows = await q.withRowId().toArray();
      return { rows: rows.map((r) => r.toJSON()) };
    }
    case 'update': {
      // {"op": "update", "filter": "id < 5", "valuesSql": {"value": "value * 2"}}
      const r = await table.update({ where: req.filter || undefined, valuesSql: req.valuesSql });
      return { version: await table.version(), rowsUpdated: r.rowsUpdated };
    }
    case 'mergeInsert': {
      // {"op": "mergeInsert", "on": ["id"], "rows": [...], "whenMatchedUpdateAll": true,
      //  "matchedWhere": "...", "whenNotMatchedInsertAll": true,
      //  "whenNotMatchedBySourceDelete": false, "bySourceWhere": "...",
      //  "columns": ["id", "val"]}: "columns" gives the source only those
      //  columns of the table (a partial-schema upsert)
      let schema = await table.schema();
      if (req.columns) schema = new arrow.Schema(req.columns.map((c) => schema.fields.find((f) => f.name === c)));
      let b = table.mergeInsert(req.on);
      if (req.whenMatchedUpdateAll) b = b.whenMatchedUpdateAll(req.matchedWhere ? { where: req.matchedWhere } : undefined);
      if (req.whenNotMatchedInsertAll) b = b.whenNotMatchedInsertAll();
      if (req.whenNotMatchedBySourceDelete) b = b.whenNotMatchedBySourceDelete(req.bySourceWhere ? { where: req.bySourceWhere } : undefined);
      const r = await b.execute(tableOf(schema, req.rows));
      return { version: await table.version(), inserted: r.numInsertedRows, updated: r.numUpdatedRows, deleted: r.numDeletedRows };
    }
    case 'hold':
      held.set(req.name, table);
      return { version: await table.version() };
    case 'heldDelete': {
      const t = held.get(req.name);
      await t.delete(req.filter);
      return { version: await t.version() };
    }
    case 'heldUpdate': {
      const t = held.get(req.name);
      const r = await t.update({ where: req.filter || undefined, valuesSql: req.valuesSql });
      return { version: await t.version(), rowsUpdated: r.rowsUpdated };
    }
    case 'restore':
      await table.checkout(req.version);
      await table.restore();
      return { version: await table.version() };
    case 'optimize': {
      // {"op": "optimize", "cleanupOlderThanMs": 0, "deleteUnverified": true}:
      // compaction (Lance's defaults), index optimization, then cleanup of
      // the versions committed more than cleanupOlderThanMs before now
      // (Lance's default of 7 days when absent).
      const opts = {};
      if (req.cleanupOlderThanMs !== undefined) opts.cleanupOlderThan = new Date(Date.now() - req.cleanupOlderThanMs);
      if (req.deleteUnverified) opts.deleteUnverified = true;
      const stats = await table.optimize(opts);
      return { version: await table.version(), optimize: stats };
    }
    case 'search': {
      if (req.version) await table.checkout(req.version);
      let q = table.vectorSearch(req.vector).column(req.column).limit(req.k || 10);
      if (req.distanceType) q = q.distanceType(req.distanceType);
      if (req.filter) q = q.where(req.filter);
      if (req.nprobes) q = q.nprobes(req.nprobes);
      if (req.ef) q = q.ef(req.ef);
      if (req.refineFactor) q = q.refineFactor(req.refineFactor);
      q = q.withRowId();
      if (req.select) q = q.select(req.select);
      // explain: the query plan instead of the rows.
      if (req.explain) return { plan: await q.explainPlan(true) };
      const rows = await q.toArray();
      return { rows: rows.map((r) => r.toJSON()) };
    }
    case 'ftsSearch': {
      // {"op": "ftsSearch", "text": "...", "column": "text", "k": 10,
      //  "operator": "AND", "phrase": false, "slop": 0}: rows with _score.
      let fq = req.text;
      if (req.phrase) fq = new lancedb.PhraseQuery(req.text, req.column, { slop: req.slop || 0 });
      else if (req.operator) fq = new lancedb.MatchQuery(req.text, req.column, { operator: req.operator });
      let q = table.query().fullTextSearch(fq, req.phrase || req.operator ? undefined : { columns: [req.column] }).limit(req.k || 10).withRowId();
      if (req.select) q = q.select(req.select);
      const rows = await q.toArray();
      return { rows: rows.map((r) => r.toJSON()) };
    }
    case 'ftsQuery': {
      // {"op": "ftsQuery", "fts": <Lance's JSON query tree, or a string>,
      //  "k": 10, "filter": "...", "select": [...]}:
      // rows with _score, the query built with the client's query classes.
      const q0 = ftsQueryFrom(req.fts);
      let q = table.query().fullTextSearch(q0).limit(req.k || 10).withRowId();
      if (req.filter) q = q.where(req.filter);
      if (req.select) q = q.select(req.select);
      const rows = await q.toArray();
      return { rows: rows.map((r) => r.toJSON()) };
    }
    case 'hybridSearch': {
      // {"op": "hybridSearch", "fts": <query>, "vector": [...], "k": 10,
      //  "column": "vec"}: LanceDB's hybrid search with its default
      // reranker (RRF, k = 60): rows with _rowid and _relevance_score.
      let q = table.query().fullTextSearch(ftsQueryFrom(req.fts)).nearestTo(req.vector).limit(req.k || 10).withRowId();
      if (req.column) q = q.column(req.column);
      if (req.filter) q = q.where(req.filter);
      if (req.select) q = q.select(req.select);
      const rows = await q.toArray();
      return { rows: rows.map((r) => r.toJSON()) };
    }
    case 'listIndices': {
      // Each index with its stats (indexStats), for the rows it covers.
      const indices = await table.listIndices();
      for (const ix of indices) {
        try { ix.stats = await table.indexStats(ix.name); } catch (e) { ix.statsError = String(e && e.message ? e.message : e); }
      }
      return { indices };
    }
    case 'indexStats':
      // {"op": "indexStats", "name": "vec_idx"}: LanceDB's index statistics
      // (numIndexedRows, numUnindexedRows, numIndices, indexType, ...).
      return { stats: (await table.indexStats(req.name)) ?? null };
    case 'createIndex': {
      // type: btree, bitmap, labelList, fts, or a vector index (ivfPq, ivfRq,
      // ivfFlat, hnswPq, hnswSq) built with req.indexOptions (LanceDB's
      // options of that index); name: the index name (default Lance's).
      const vectorIndex = { ivfPq: 1, ivfFlat: 1, hnswPq: 1, hnswSq: 1, ivfRq: 1 };
      const scalarIndex = { btree: 1, bitmap: 1, labelList: 1 };
      const cfg = scalarIndex[req.type] ? lancedb.Index[req.type]()
        : req.type === 'fts' ? lancedb.Index.fts(req.indexOptions || {})
        : vectorIndex[req.type] ? lancedb.Index[req.type](req.indexOptions || {}) : undefined;
      const opts = cfg ? { config: cfg } : {};
      if (req.name) opts.name = req.name;
      await table.createIndex(req.column, opts);
      return { version: await table.version() };
    }
    case 'listVersions':
      return { versions: (await table.listVersions()).map((v) => ({ version: v.version, metadata: v.metadata })) };
    case 'countRows':
      if (req.version) await table.checkout(req.version);
      return { count: await table.countRows() };
    case 'schema':
      if (req.version) await table.checkout(req.version);
      return { fields: (await table.schema()).fields.map(describe) };
    // Tags and branches:
    //   {"op": "listBranches"} → {"branches": {name: {parentBranch, parentVersion, manifestSize}}}
    //   {"op": "listTags"} → {"tags": {name: {version, manifestSize}}}
    //   {"op": "checkoutBranch", "branch": "b", "version": 3} → {"version", "count", "currentBranch"}
    //   {"op": "checkoutTag", "tag": "t"} → {"version", "count"}
    //   {"op": "createBranch", "name": "b", "fromRef": "main", "fromVersion": 2} → {"version", "count"}
    //   {"op": "deleteBranch", "name": "b"}, {"op": "createTag", "tag": "t", "version": 2} → {}
    //   {"op": "branchAppend", "branch": "b", "rows": [...]}, {"op": "branchDelete", "branch": "b", "filter": "..."},
    //   {"op": "branchUpdate", "branch": "b", "filter": "...", "valuesSql": {...}} → {"version"}
    //   {"op": "branchOptimize", "branch": "b"} → {"version", "optimize"}: compaction with Lance's defaults (and index optimization) on the branch
    case 'listBranches': {
      const out = {};
      for (const [name, b] of Object.entries(await (await table.branches()).list())) {
        out[name] = { parentBranch: b.parentBranch ?? null, parentVersion: b.parentVersion, manifestSize: b.manifestSize };
      }
      return { branches: out };
    }
    case 'listTags': {
      const out = {};
      for (const [name, t] of Object.entries(await (await table.tags()).list())) {
        out[name] = { version: t.version, manifestSize: t.manifestSize };
      }
      return { tags: out };
    }
    case 'checkoutBranch': {
      const b = await (await table.branches()).checkout(req.branch, req.version || undefined);
      return { version: await b.version(), count: await b.countRows(), currentBranch: b.currentBranch() };
    }
    case 'checkoutTag':
      await table.checkout(req.tag);
      return { version: await table.version(), count: await table.countRows() };
    case 'createBranch': {
      const b = await (await table.branches()).create(req.name, req.fromRef || undefined, req.fromVersion || undefined);
      return { version: await b.version(), count: await b.countRows() };
    }
    case 'deleteBranch':
      await (await table.branches()).delete(req.name);
      return {};
    case 'createTag':
      await (await table.tags()).create(req.tag, req.version);
      return {};
    case 'branchAppend': {
      const b = await (await table.branches()).checkout(req.branch);
      await b.add(tableOf(await b.schema(), req.rows));
      return { version: await b.version() };
    }
    case 'branchDelete': {
      const b = await (await table.branches()).checkout(req.branch);
      await b.delete(req.filter);
      return { version: await b.version() };
    }
    case 'branchOptimize': {
      const b = await (await table.branches()).checkout(req.branch);
      const stats = await b.optimize({});
      return { version: await b.version(), optimize: stats };
    }
    case 'branchUpdate': {
      const b = await (await table.branches()).checkout(req.branch);
      const r = await b.update({ where: req.filter || undefined, valuesSql: req.valuesSql });
      return { version: await b.version(), rowsUpdated: r.rowsUpdated };
    }
  }
  throw new Error(`unknown op ${JSON.stringify(req.op)}`);
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  let reply;
  try {
    reply = await serve(JSON.parse(line));
  } catch (e) {
    reply = { error: String(e && e.message ? e.message : e) };
  }
  process.stdout.write(toJSON(reply) + '\n');
}

// ftsQueryFrom builds the client's query object from Lance's JSON form of
// a full-text query ({"match": {...}}, {"phrase": ...}, {"boost": ...},
// {"multi_match": ...}, {"boolean": ...}); a string stays a string.
function ftsQueryFrom(j) {
  if (typeof j === 'string') return j;
  const [kind, b] = Object.entries(j)[0];
  const opts = (o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
  switch (kind) {
    case 'match':
      return new lancedb.MatchQuery(b.terms, b.column, opts({ boost: b.boost, fuzziness: b.fuzziness, maxExpansions: b.max_expansions,
        operator: b.operator && b.operator.toUpperCase(), prefixLength: b.prefix_length }));
    case 'phrase':
      return new lancedb.PhraseQuery(b.terms, b.column, opts({ slop: b.slop }));
    case 'boost':
      return new lancedb.BoostQuery(ftsQueryFrom(b.positive), ftsQueryFrom(b.negative), opts({ negativeBoost: b.negative_boost }));
    case 'multi_match':
      return new lancedb.MultiMatchQuery(b.query, b.columns, opts({ boosts: b.boost, operator: b.operator && b.operator.toUpperCase() }));
    case 'boolean':
      return new lancedb.BooleanQuery([
        ...(b.must || []).map((q) => [lancedb.Occur.Must, ftsQueryFrom(q)]),
        ...(b.should || []).map((q) => [lancedb.Occur.Should, ftsQueryFrom(q)]),
        ...(b.must_not || []).map((q) => [lancedb.Occur.MustNot, ftsQueryFrom(q)]),
      ]);
  }
  throw new Error('unknown full-text query kind ' + kind);
}
