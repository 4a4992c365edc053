// lance-s3.mjs: real Lance (LanceDB for Node) on a dataset in an S3 bucket,
// configured explicitly through LanceDB's storageOptions (Lance's
// storage_options: aws_endpoint, aws_access_key_id, allow_http, ...), the
// way a LanceDB user reaches MinIO, versitygw or another S3-compatible
// server. lancer's S3 interop tests (s3_interop_test.go) use it to have
// Lance write what lancer reads, and read what lancer wrote, in one bucket.
//
// It reads requests, one JSON object per line on stdin; every request
// carries "uri" (s3://bucket/path/name.lance) and "storageOptions", and
// opens the table afresh, so nothing a writer cached leaks into a read:
//   {"op": "create", "rows": [...]}  a new table of id int64 (not null),
//       text utf8, score float64, vec fixed_size_list<float32, 4>
//   {"op": "append", "rows": [...]}
//   {"op": "delete", "filter": "id % 5 = 0"}
//   {"op": "optimize"}               compaction (Lance's defaults), no cleanup
//   {"op": "versions"}               → {"versions": [1, 2, ...]}
//   {"op": "count", "version": 2}    → {"count": N}
//   {"op": "rows", "version": 2}     → {"rows": [...]}: every row with _rowid
//       last; int64 as exact integers, lists as arrays (the fixture
//       encoding, for the types above)
// Writes answer {"version": N}; failures {"error": "..."}.
//
// LANCEDB_NODE_DIR names the folder whose node_modules holds the pinned
// @lancedb/lancedb (see package.json here).
import { createRequire } from 'node:module';
import path from 'node:path';
import readline from 'node:readline';

const dir = process.env.LANCEDB_NODE_DIR;
if (!dir) { console.error('lance-s3: set LANCEDB_NODE_DIR'); process.exit(2); }
const require = createRequire(path.join(dir, 'package.json'));
const lancedb = require('@lancedb/lancedb');
const arrow = require('apache-arrow');

const schema = new arrow.Schema([
  new arrow.Field('id', new arrow.Int64(), false),
  new arrow.Field('text', new arrow.Utf8(), true),
  new arrow.Field('score', new arrow.Float64(), true),
  new arrow.Field('vec', new arrow.FixedSizeList(4, new arrow.Field('item', new arrow.Float32(), true)), true),
]);

function tableOf(rows) {
  const children = schema.fields.map((f) => arrow.vectorFromArray(rows.map((r) => {
    const v = r[f.name];
    if (v === undefined || v === null) return null;
    return f.name === 'id' ? BigInt(v) : v;
  }), f.type).data[0]);
  const data = arrow.makeData({ type: new arrow.Struct(schema.fields), length: rows.length, nullCount: 0, children });
  return new arrow.Table(schema, [new arrow.RecordBatch(schema, data)]);
}

// split cuts s3://bucket/path/name.lance into the database URI and the
// table name LanceDB wants.
function split(uri) {
  const u = uri.replace(/\/+$/, '');
  const i = u.lastIndexOf('/');
  return [u.slice(0, i), u.slice(i + 1).replace(/\.lance$/, '')];
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

async function serve(req) {
  const [dbURI, name] = split(req.uri);
  const db = await lancedb.connect(dbURI, { storageOptions: req.storageOptions });
  if (req.op === 'create') {
    const t = await db.createTable(name, tableOf(req.rows), { mode: 'create' });
    return { version: await t.version() };
  }
  const t = await db.openTable(name);
  if (req.version) await t.checkout(req.version);
  switch (req.op) {
    case 'append':
      await t.add(tableOf(req.rows));
      return { version: await t.version() };
    case 'delete':
      await t.delete(req.filter);
      return { version: await t.version() };
    case 'optimize':
      await t.optimize({ cleanupOlderThan: new Date(0) });
      return { version: await t.version() };
    case 'versions':
      return { versions: (await t.listVersions()).map((v) => v.version) };
    case 'count':
      return { count: await t.countRows() };
    case 'rows': {
      const rows = await t.query().withRowId().toArray();
      return { rows: rows.map((r) => r.toJSON()) };
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
