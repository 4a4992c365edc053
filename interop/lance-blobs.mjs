// lance-blobs.mjs: fetch the bytes of a blob v2 column with real Lance
// (LanceDB for Node's fetchBlobs) and print them as base64.
//
// It reads requests, one JSON object per line on stdin:
//   {"uri": "/path/t.lance", "column": "blob"}
// and prints one JSON object per request on stdout: {"blobs": [base64 | null,
// ...]} with one entry per row in row order, or {"error": "..."}. Each
// request opens the table afresh.
//
// LANCEDB_NODE_DIR names the folder whose node_modules holds the pinned
// @lancedb/lancedb (see package.json here).
import { createRequire } from 'node:module';
import path from 'node:path';
import readline from 'node:readline';

const dir = process.env.LANCEDB_NODE_DIR;
if (!dir) { console.error('lance-blobs: set LANCEDB_NODE_DIR'); process.exit(2); }
const require = createRequire(path.join(dir, 'package.json'));
const lancedb = require('@lancedb/lancedb');

const base64 = (u8) => Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength).toString('base64');

async function serve(req) {
  const uri = req.uri.replace(/\/+$/, '');
  const db = await lancedb.connect(path.dirname(uri));
  const table = await db.openTable(path.basename(uri).replace(/\.lance$/, ''));
  const rows = await table.query().select([]).withRowId().toArray();
  const ids = rows.map((r) => r._rowid);
  const got = await table.fetchBlobs(req.column, ids);
  return { blobs: got.map((b) => (b == null ? null : base64(b))) };
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
  process.stdout.write(JSON.stringify(reply) + '\n');
}
