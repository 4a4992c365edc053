// lance-write.mjs: the real-Lance side of lancer's benchmarks (package
// bench). It writes an Arrow IPC file as a new Lance dataset, scans
// datasets and counts their rows, timing only the Lance calls.
//
// It reads requests, one JSON object per line on stdin:
//   {"op": "write", "ipc": "/p/w.arrow", "dir": "/p/db", "name": "t", "storageVersion": "2.1"}
//   {"op": "scan", "dir": "/p/db", "name": "t"}
//   {"op": "count", "dir": "/p/db", "name": "t"}
//   {"op": "export", "dir": "/p/db", "name": "t", "out": "/p/rows.arrow"}
// and prints one JSON object per request on stdout:
//   {"ms": 812.4, "cpuMs": 1020.7, "rows": 100000} (write: ms of the write;
//   scan: ms of a full scan of every column; count: ms of countRows; cpuMs:
//   the CPU time, user and system, of the whole process, all threads, over
//   the same span; export: writes every row Lance reads, as an Arrow IPC
//   file at out), or {"error": "..."}.
// The dataset is <dir>/<name>.lance.
//
// The write hands the IPC file's bytes to the native createTable, exactly
// what LanceDB's Connection.createTable does after its JavaScript side has
// serialized the table (arrow.js fromTableToBuffer) and merged the storage
// options (connection.js _createTableImpl); reading the file and that
// JavaScript serialization are outside the timing. The scan streams the
// table's batches into JavaScript (table.query() async iteration), so it
// includes the cost of the Node binding.
//
// LANCEDB_NODE_DIR names the folder whose node_modules holds the pinned
// @lancedb/lancedb (interop/package.json).
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';

import { lancedb, requireRef, serve } from './lance-common.mjs';

const arrow = requireRef('apache-arrow');

// cpuSince is the process's CPU time, in ms, since the process.cpuUsage()
// reading c0.
function cpuSince(c0) {
  const d = process.cpuUsage(c0);
  return (d.user + d.system) / 1000;
}

async function write(req) {
  const buf = fs.readFileSync(req.ipc);
  const db = await lancedb.connect(req.dir);
  const storageOptions = {};
  if (req.storageVersion) storageOptions.new_table_data_storage_version = req.storageVersion;
  if (typeof db.inner?.createTable !== 'function') throw new Error('lancedb Connection has no native createTable (inner): update lance-write.mjs for this LanceDB version');
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const inner = await db.inner.createTable(req.name, buf, 'create', [], storageOptions);
  const ms = performance.now() - t0;
  const cpuMs = cpuSince(c0);
  const rows = await inner.countRows();
  inner.close?.();
  return { ms, cpuMs, rows };
}

async function scan(req) {
  const db = await lancedb.connect(req.dir);
  const t = await db.openTable(req.name);
  let rows = 0;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for await (const batch of t.query()) rows += batch.numRows;
  const ms = performance.now() - t0;
  const cpuMs = cpuSince(c0);
  t.close();
  return { ms, cpuMs, rows };
}

async function count(req) {
  const db = await lancedb.connect(req.dir);
  const t = await db.openTable(req.name);
  const t0 = performance.now();
  const rows = await t.countRows();
  const ms = performance.now() - t0;
  t.close();
  return { ms, rows };
}

async function exportRows(req) {
  const db = await lancedb.connect(req.dir);
  const t = await db.openTable(req.name);
  const table = await t.query().toArrow();
  fs.writeFileSync(req.out, arrow.tableToIPC(table, 'file'));
  t.close();
  return { rows: table.numRows };
}

await serve({ write, scan, count, export: exportRows });
