// lance-text.mjs: the real-Lance side of lancer's text suite (package
// bench, text.go): full-text (FTS) index builds and queries. One node
// process serves the whole run, so the suite can alternate lancer and
// Lance run by run; it reads requests, one JSON object per line on stdin,
// and answers each with one JSON object on stdout before reading the next.
//
//   {"op": "init", "dir": "/p/lance", "ipc": "/p/text.arrow", "name": "t"}
//      connects to dir and creates table name from the Arrow IPC file
//      (untimed), answering its rows.
//   {"op": "versions"}          the versions of LanceDB, the lance crate, arrow JS, node
//   {"op": "build", "name": "t", "withPosition": true}
//      createIndex(fts({withPosition})) on text, named text_idx, replacing
//   {"op": "search", "name": "t", "k": 10, "queries": [{"kind": "term", "text": "..."}, ...]}
//      one pass over the queries, one after another
//   {"op": "mem"}
// Replies: {"ms": …, "engineMs": …, "jsMs": …, …} or {"error": "…"}.
//
// What the times include (wall clock, performance.now(), inside node):
//   - build: createIndex until it returns, with the CPU time of the whole
//     process and the peak resident set during it (VmHWM, reset before).
//   - search: "ms" sums the queries' analyzePlan() wall times: Lance plans
//     each query, runs it to the end in Rust and returns only the plan
//     text, so no Arrow data crosses into JavaScript (one napi call per
//     query is included); "engineMs" sums the root node's elapsed=;
//     "jsMs" is a second pass through toArrow(), whose ids and _score
//     values ("ids", "scores") the suite compares with lancer's.
// Queries: term and or are MatchQuery (operator OR), and MatchQuery with
// operator AND, phrase PhraseQuery (slop 0), all on column text, each
// fullTextSearch(q).select(['id']).limit(k).
//
// lance-common.mjs holds what this script shares with the other suites',
// and reads LANCEDB_NODE_DIR, the folder whose node_modules holds the
// pinned @lancedb/lancedb (interop/package.json).
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';

import { cpuSince, elapsedMs, hwm, lancedb, procStatus, resetPeakRss, serve, table, versions } from './lance-common.mjs';


const S = { db: null, tables: new Map() };

function ftsQuery(q) {
  switch (q.kind) {
    case 'term':
    case 'or':
      return new lancedb.MatchQuery(q.text, 'text', { operator: lancedb.Operator.Or });
    case 'and':
      return new lancedb.MatchQuery(q.text, 'text', { operator: lancedb.Operator.And });
    case 'phrase':
      return new lancedb.PhraseQuery(q.text, 'text', { slop: 0 });
    default:
      throw new Error(`unknown query kind ${JSON.stringify(q.kind)}`);
  }
}

const ops = {
  async init(req) {
    fs.mkdirSync(req.dir, { recursive: true });
    S.db = await lancedb.connect(req.dir);
    if (typeof S.db.inner?.createTable !== 'function') throw new Error('lancedb Connection has no native createTable (inner): update lance-text.mjs for this LanceDB version');
    const inner = await S.db.inner.createTable(req.name, fs.readFileSync(req.ipc), 'create', [], {});
    const rows = await inner.countRows();
    inner.close?.();
    return { rows, rss: process.memoryUsage().rss, hwm: hwm() };
  },

  versions,

  async build(req) {
    const t = await table(S, req.name);
    const rssBefore = process.memoryUsage().rss;
    const reset = resetPeakRss();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await t.createIndex('text', {
      config: lancedb.Index.fts({ withPosition: !!req.withPosition }),
      replace: true, name: 'text_idx',
    });
    const ms = performance.now() - t0;
    const cpuMs = cpuSince(c0);
    const peakRss = reset ? procStatus('VmHWM') : 0;
    hwm();
    return { ms, cpuMs, rssBefore, peakRss };
  },

  async search(req) {
    const t = await table(S, req.name);
    const build = (q) => t.query().fullTextSearch(ftsQuery(q)).select(['id']).limit(req.k);
    let ms = 0; let engineMs = 0;
    for (const q of req.queries) {
      const t0 = performance.now();
      const plan = await build(q).analyzePlan();
      ms += performance.now() - t0;
      engineMs += elapsedMs(plan);
    }
    const ids = []; const scores = [];
    const t0 = performance.now();
    for (const q of req.queries) {
      const res = await build(q).toArrow();
      const id = res.getChild('id'); const sc = res.getChild('_score');
      ids.push(id ? Array.from(id.toArray(), Number) : []);
      scores.push(sc ? Array.from(sc.toArray(), Number) : []);
    }
    const jsMs = performance.now() - t0;
    return { ms, engineMs, jsMs, rows: ids.length, ids, scores };
  },

  async mem() {
    return { rss: process.memoryUsage().rss, hwm: hwm() };
  },
};

await serve(ops);
