// lancedb-client.mjs: drive the official LanceDB client (@lancedb/lancedb,
// pinned in package.json here) against a lancer server through one
// scenario, and print what each step saw as one JSON object on stdout:
// {"steps": {"<step>": <result> | {"error": "..."}}}.
//
// LANCEDB_NODE_DIR names the folder whose node_modules holds the client;
// LANCER_URL is the server's base URL (hostOverride) and LANCER_API_KEY its
// key. The Go test (server_client_test.go) checks the results.
import { createRequire } from 'node:module';
import path from 'node:path';

const dir = process.env.LANCEDB_NODE_DIR;
if (!dir) { console.error('lancedb-client: set LANCEDB_NODE_DIR'); process.exit(2); }
const require = createRequire(path.join(dir, 'package.json'));
const lancedb = require('@lancedb/lancedb');

const url = process.env.LANCER_URL;
const apiKey = process.env.LANCER_API_KEY;
const steps = {};

// plain turns query results into JSON-friendly rows: vectors as arrays,
// floats rounded so that the Go side compares them exactly.
function plain(rows) {
  return rows.map((r) => {
    const o = {};
    for (const [k, v] of Object.entries(r)) {
      if (v && typeof v === 'object' && typeof v.length === 'number') o[k] = Array.from(v);
      else if (typeof v === 'bigint') o[k] = Number(v);
      else o[k] = v;
    }
    return o;
  });
}

async function step(name, fn) {
  try {
    steps[name] = (await fn()) ?? null;
  } catch (e) {
    steps[name] = { error: String(e && e.message ? e.message : e) };
  }
}

// vec is row i's vector: 8 floats, row i nearest to query vec(i).
const vec = (i) => Array.from({ length: 8 }, (_, d) => i + d / 10);

const clientConfig = { retryConfig: { retries: 2, backoffFactor: 0.05 } };
const db = await lancedb.connect('db://lancer-test', { apiKey, hostOverride: url, clientConfig });

await step('createTable', async () => {
  const rows = Array.from({ length: 10 }, (_, i) => ({ id: i, text: `row ${i}`, price: i * 1.5, vector: vec(i) }));
  const t = await db.createTable('items', rows);
  return { name: t.name };
});
await step('createTableAgain', async () => {
  await db.createTable('items', [{ id: 1, text: 'x', price: 1, vector: vec(1) }]);
  return 'created';
});
await step('createExistOk', async () => {
  const t = await db.createTable('items', [{ id: 1, text: 'x', price: 1, vector: vec(1) }], { existOk: true });
  return { rows: await t.countRows() };
});
await step('createSecond', async () => {
  await db.createTable('other', [{ id: 1, text: 'x', price: 1, vector: vec(1) }]);
  return 'ok';
});
await step('tableNames', async () => await db.tableNames());
await step('tableNamesPaged', async () => await db.tableNames({ limit: 1 }));

const t = await db.openTable('items');
await step('schema', async () => (await t.schema()).fields.map((f) => `${f.name}:${f.type}`));
await step('add', async () => {
  await t.add([{ id: 10, text: 'row 10', price: 15, vector: vec(10) }, { id: 11, text: 'row 11', price: 16.5, vector: vec(11) }]);
  return await t.countRows();
});
await step('countRowsFilter', async () => await t.countRows('price > 10'));
await step('query', async () =>
  plain(await t.query().where('id >= 3').select(['id', 'text']).limit(3).toArray()));
await step('queryOffset', async () =>
  plain(await t.query().select(['id']).offset(10).limit(5).toArray()));
await step('vectorSearch', async () =>
  plain(await t.vectorSearch(vec(4)).select(['id', 'text']).limit(3).toArray()));
await step('searchFiltered', async () =>
  plain(await t.search(vec(4)).where('id > 4').select(['id']).limit(2).toArray()));
await step('searchPostfilter', async () =>
  plain(await t.search(vec(0)).where('id > 0').postfilter().select(['id']).limit(2).toArray()));
await step('batchSearch', async () =>
  plain(await t.query().nearestTo(vec(1)).addQueryVector(vec(8)).select(['id']).limit(1).toArray()));
await step('update', async () => {
  await t.update({ where: 'id = 2', values: { text: 'two' } });
  await t.update({ where: 'id = 3', valuesSql: { price: 'price * 10' } });
  return plain(await t.query().where('id IN (2, 3)').select(['id', 'text', 'price']).toArray());
});
await step('delete', async () => {
  await t.delete('id = 0 OR id = 11');
  return await t.countRows();
});
await step('mergeInsert', async () => {
  const res = await t.mergeInsert('id').whenMatchedUpdateAll().whenNotMatchedInsertAll()
    .execute([{ id: 1, text: 'one', price: 1, vector: vec(1) }, { id: 20, text: 'row 20', price: 30, vector: vec(20) }]);
  const rows = plain(await t.query().where('id IN (1, 20)').select(['id', 'text']).toArray());
  return { inserted: Number(res.numInsertedRows), updated: Number(res.numUpdatedRows), rows, count: await t.countRows() };
});
await step('createIndex', async () => {
  await t.createIndex('vector', { config: lancedb.Index.ivfPq({ numPartitions: 2, numSubVectors: 2 }) });
  return 'ok';
});
await step('listIndices', async () => (await t.listIndices()).map((i) => ({ name: i.name, type: i.indexType, columns: i.columns })));
await step('indexStats', async () => {
  const s = await t.indexStats('vector_idx');
  return { indexed: s.numIndexedRows, unindexed: s.numUnindexedRows, type: s.indexType, distance: s.distanceType };
});
await step('indexedSearch', async () =>
  plain(await t.vectorSearch(vec(5)).select(['id']).refineFactor(5).limit(3).toArray()));
await step('plans', async () => {
  // explain_plan / analyze_plan: lancer's own plan text, checked by the Go
  // test for what it must mention.
  const explain = await t.vectorSearch(vec(5)).where('id > 2').select(['id']).nprobes(4).refineFactor(5).limit(3).explainPlan(true);
  const postfilter = await t.vectorSearch(vec(5)).where('id > 2').postfilter().bypassVectorIndex().limit(3).explainPlan();
  const scan = await t.query().where('id >= 3').select(['id', 'text']).limit(2).explainPlan();
  const analyze = await t.query().where('id >= 3').select(['id']).limit(2).analyzePlan();
  const analyzeSearch = await t.vectorSearch(vec(5)).select(['id']).limit(3).analyzePlan();
  return { explain, postfilter, scan, analyze, analyzeSearch };
});
await step('fullTextSearch', async () => await t.query().fullTextSearch('row').select(['id']).limit(2).toArray());
await step('scalarIndices', async () => {
  // BTREE, BITMAP and LABEL_LIST through the client, on the server and on
  // an embedded LanceDB with the same rows: the same listing, stats and
  // filtered rows.
  const rows = Array.from({ length: 3000 }, (_, i) => ({
    id: i, cat: i % 11 === 0 ? null : `c${i % 7}`, price: (i % 97) / 4,
    tags: i % 13 === 0 ? null : [`t${i % 5}`, `t${(i * 7) % 9}`], vector: vec(i % 50),
  }));
  const os = require('node:os');
  const fs = require('node:fs');
  const local = await lancedb.connect(fs.mkdtempSync(path.join(os.tmpdir(), 'lancer-scalar-')));
  const filters = ['id = 1234', 'id >= 2990', 'id < 5 OR id IN (100, 2999)', "cat = 'c3' AND id < 100", 'cat IS NULL AND id < 60',
    "cat IN ('c1', 'c6') AND price > 20", "array_has_any(tags, ['t4']) AND id < 80", "array_has_all(tags, ['t1', 't7'])"];
  const run = async (db) => {
    const s = await db.createTable('scalars', rows);
    await s.createIndex('id', { config: lancedb.Index.btree() });
    await s.createIndex('cat', { config: lancedb.Index.bitmap() });
    await s.createIndex('tags', { config: lancedb.Index.labelList() });
    await s.add(rows.slice(0, 10).map((r) => ({ ...r, id: r.id + 5000 })));
    const out = {
      list: (await s.listIndices()).map((i) => ({ name: i.name, type: i.indexType, columns: i.columns })).sort((a, b) => a.name.localeCompare(b.name)),
      stats: {},
      rows: {},
      counts: {},
    };
    for (const n of ['id_idx', 'cat_idx', 'tags_idx']) {
      const st = await s.indexStats(n);
      out.stats[n] = { indexed: st.numIndexedRows, unindexed: st.numUnindexedRows, type: st.indexType };
    }
    for (const f of filters) {
      out.rows[f] = plain(await s.query().where(f).select(['id']).toArray()).map((r) => r.id).sort((a, b) => a - b);
      out.counts[f] = await s.countRows(f);
    }
    await s.update({ where: 'id = 7', values: { cat: 'c0' } });
    out.afterUpdate = await s.countRows("cat = 'c0' AND id < 10");
    await s.delete("cat = 'c2' AND id < 100");
    out.afterDelete = await s.countRows('id < 100');
    out.searched = plain(await s.vectorSearch(vec(3)).where("cat = 'c3' AND id < 50").select(['id']).limit(3).toArray()).map((r) => r.id);
    await s.dropIndex('cat_idx');
    out.afterDrop = (await s.listIndices()).length;
    await db.dropTable('scalars');
    return out;
  };
  return { server: await run(db), embedded: await run(local) };
});
await step('dropIndex', async () => {
  await t.dropIndex('vector_idx');
  return (await t.listIndices()).length;
});
let versionBeforeTag = 0;
await step('versions', async () => {
  const v = await t.version();
  versionBeforeTag = v;
  const list = await t.listVersions();
  return { version: v, listed: list.map((x) => x.version), hasTimestamps: list.every((x) => x.timestamp instanceof Date && !isNaN(x.timestamp)) };
});
await step('tags', async () => {
  const tags = await t.tags();
  await tags.create('v2', 2);
  await tags.create('v3', 3);
  await tags.update('v3', 4);
  await tags.delete('v2');
  const list = await tags.list();
  return { list: Object.fromEntries(Object.entries(list).map(([k, v]) => [k, v.version])), v3: await tags.getVersion('v3') };
});
await step('checkout', async () => {
  const old = await db.openTable('items');
  await old.checkout(1);
  const count = await old.countRows();
  const rows = plain(await old.query().where('id = 2').select(['id', 'text']).toArray());
  let writeError = null;
  try { await old.add([{ id: 99, text: 'x', price: 1, vector: vec(1) }]); } catch (e) { writeError = String(e.message); }
  await old.restore();
  return { count, rows, writeRefused: writeError !== null, afterRestore: await old.countRows(), version: await old.version() };
});
await step('missingVersion', async () => {
  const h = await db.openTable('items');
  await h.checkout(999);
  return 'checked out';
});
await step('missingTable', async () => {
  const m = await db.openTable('nope');
  return await m.countRows();
});
await step('badFilter', async () => await t.query().where('no_such_column > 1').toArray());
await step('badSyntax', async () => await t.countRows('id >>> 1'));
await step('badKey', async () => {
  const bad = await lancedb.connect('db://lancer-test', { apiKey: 'wrong-key', hostOverride: url, clientConfig });
  return await bad.tableNames();
});
await step('extras', async () => {
  const out = {};
  const arrow = require('apache-arrow');
  const schema = new arrow.Schema([
    new arrow.Field('id', new arrow.Int64(), false),
    new arrow.Field('label', new arrow.Utf8(), true),
    new arrow.Field('vector', new arrow.FixedSizeList(8, new arrow.Field('item', new arrow.Float32(), true)), true),
  ]);
  const e = await db.createEmptyTable('empty', schema);
  out.emptyCount = await e.countRows();
  out.emptySchema = (await e.schema()).fields.map((f) => `${f.name}:${f.type}:${f.nullable}`);
  await e.add(Array.from({ length: 6 }, (_, i) => ({ id: i, label: i % 2 ? 'odd' : 'even', vector: vec(i) })));
  out.withRowId = plain(await e.query().select(['id']).withRowId().limit(2).toArray());
  out.alias = plain(await e.query().select({ ident: 'id' }).limit(2).toArray());
  out.takeOffsets = plain(await e.takeOffsets([4, 1]).select(['id']).toArray());
  out.takeRowIds = plain(await e.takeRowIds([4n, 1n]).select(['id']).toArray());
  out.takeRowIdsWithId = plain(await e.takeRowIds([2, 5]).select(['id']).withRowId().toArray());
  out.cosine = plain(await e.vectorSearch(vec(3)).distanceType('cosine').select(['id']).limit(1).toArray())
    .map((r) => ({ id: r.id, near0: Math.abs(r._distance) < 1e-6 }));
  out.exact = plain(await e.vectorSearch(vec(2)).bypassVectorIndex().nprobes(3).select(['id']).limit(1).toArray());
  const mi = await e.mergeInsert('id').whenMatchedUpdateAll().whenNotMatchedBySourceDelete({ where: "label = 'odd'" })
    .execute([{ id: 1, label: 'one', vector: vec(1) }, { id: 2, label: 'two', vector: vec(2) }]);
  out.mergeDelete = { updated: Number(mi.numUpdatedRows), deleted: Number(mi.numDeletedRows),
    ids: plain(await e.query().select(['id']).toArray()).map((r) => r.id).sort() };
  const v = await e.version();
  await e.add([{ id: 50, label: 'x', vector: vec(50) }], { mode: 'overwrite' });
  out.overwrite = await e.countRows();
  const tags = await e.tags();
  await tags.create('before', v);
  const old = await db.openTable('empty');
  await old.checkout('before');
  out.checkoutTag = await old.countRows();
  try { await e.dropIndex('nope_idx'); out.dropMissingIndex = 'dropped'; } catch (err) { out.dropMissingIndex = String(err.message); }
  const st = await e.stats();
  out.stats = { rows: st.numRows, indices: st.numIndices, fragments: st.fragmentStats.numFragments, bytes: st.totalBytes > 0 };
  await db.renameTable('empty', 'renamed');
  out.renamed = (await db.listTables()).tables;
  const r = await db.openTable('renamed');
  out.renamedCount = await r.countRows();
  await db.dropTable('renamed');
  return out;
});
await step('bulk', async () => {
  // Big enough that the client LZ4-compresses the Arrow buffers it sends.
  const rows = Array.from({ length: 3000 }, (_, i) => ({ id: i, text: 'repeated text '.repeat(4), price: 1, vector: vec(i % 7) }));
  const b = await db.createTable('bulk', rows);
  await b.add(rows.slice(0, 1000));
  const n = await b.countRows("text LIKE 'repeated%'");
  const top = plain(await b.vectorSearch(vec(3)).where('id < 20').select(['id']).limit(3).toArray()).map((r) => r.id);
  await db.dropTable('bulk');
  return { n, top };
});
await step('multipart', async () => {
  // More than a million rows (with LANCE_CPU_THREADS > 1) makes add() a
  // multipart write against a 0.4.0 server: create, parts, one complete.
  const arrow = require('apache-arrow');
  const big = await db.createTable('big', [{ id: -1 }]);
  const v0 = await big.version();
  const batches = [];
  const per = 300_000;
  for (let b = 0; b < 4; b++) {
    const ids = new Float64Array(per);
    for (let i = 0; i < per; i++) ids[i] = b * per + i;
    batches.push(...arrow.tableFromArrays({ id: ids }).batches);
  }
  const res = await big.add(new arrow.Table(batches));
  const out = {
    versionStep: res.version - v0,
    count: await big.countRows(),
    max: await big.countRows('id = 1199999'),
    versions: (await big.listVersions()).length,
  };
  await db.dropTable('big');
  return out;
});
await step('branches', async () => {
  // Branches through the protocol's own endpoints; diff and cherry-pick
  // are Enterprise-only in LanceDB.
  const rows = Array.from({ length: 6 }, (_, i) => ({ id: i, text: `b${i}`, price: 1, vector: vec(i) }));
  const t = await db.createTable('br', rows);
  const br = await t.branches();
  const dev = await br.create('dev');
  await dev.add([{ id: 100, text: 'dev', price: 2, vector: vec(100) }]);
  await dev.delete('id = 0');
  let again;
  try {
    await br.create('dev');
    again = 'created twice';
  } catch (e) {
    again = /exist/i.test(String(e.message)) ? 'exists' : String(e.message);
  }
  const out = { again, list: Object.keys(await br.list()), devCount: await dev.countRows(), mainCount: await t.countRows() };
  const diff = await br.diff('dev');
  out.diff = { newOnBranch: diff.rowSummary.newOnBranch, newOnBase: diff.rowSummary.newOnBase, baseMoved: diff.baseMoved, errors: diff.errors.length };
  out.dry = (await br.cherryPick('dev', true)).status;
  out.afterDry = await t.countRows();
  const pick = await br.cherryPick('dev');
  out.pick = pick.status;
  out.afterPick = await t.countRows();
  out.has100 = await t.countRows('id = 100');
  out.has0 = await t.countRows('id = 0');
  await br.delete('dev');
  out.listAfter = Object.keys(await br.list());
  await db.dropTable('br');
  return out;
});
await step('columns', async () => {
  // Schema evolution: addColumns (SQL), alterColumns (rename; a type
  // float64 to int32 is refused, as Lance refuses it; a nullability the
  // column has already makes a version, as in Lance),
  // dropColumns; then schema() and queries see the new columns.
  const rows = Array.from({ length: 4 }, (_, i) => ({ id: i, text: `c${i}`, price: i * 2, vector: vec(i) }));
  const c = await db.createTable('cols', rows);
  const v0 = await c.version();
  const out = {};
  out.added = (await c.addColumns([{ name: 'double_price', valueSql: 'price * 2' }, { name: 'note', valueSql: 'CAST(NULL AS string)' }])).version - v0;
  out.renamed = (await c.alterColumns([{ path: 'text', rename: 'label' }])).version - v0;
  try {
    await c.alterColumns([{ path: 'price', dataType: 'int32' }]);
    out.cast = 'altered';
  } catch (e) {
    out.cast = /400/.test(e.message) && /cannot cast column \W*price\W* from float64 to int32/.test(e.message) ? 'refused' : String(e.message);
  }
  out.sameNullable = (await c.alterColumns([{ path: 'price', nullable: true }])).version - v0;
  out.dropped = (await c.dropColumns(['note'])).version - v0;
  out.schema = (await c.schema()).fields.map((f) => `${f.name}:${f.type}`);
  out.rows = plain(await c.query().where('double_price > 5').select(['id', 'label', 'double_price']).toArray());
  out.search = plain(await c.vectorSearch(vec(3)).select(['label', 'double_price']).limit(1).toArray());
  try {
    await c.query().select(['text']).toArray();
    out.oldName = 'still there';
  } catch (e) {
    out.oldName = /400/.test(e.message) ? 'gone' : String(e.message);
  }
  await db.dropTable('cols');
  return out;
});
await step('blobs', async () => {
  // Blob v2 values through the client's blob API, which it calls only on a
  // 0.5.0 server: fetchBlobs (fetch_blobs/), and fetchBlobFiles handles,
  // which probe each value's size with "bytes=0-0" and read ranges of it
  // (blob/{col}/{row}/bytes). thumb is a plain binary column.
  const arrow = require('apache-arrow');
  const big = Buffer.alloc(3 << 20);
  for (let i = 0; i < big.length; i++) big[i] = (i * 31 + (i >> 9)) & 255;
  const small = Buffer.from('hello blob');
  const schema = new arrow.Schema([
    new arrow.Field('id', new arrow.Int64(), false),
    lancedb.blob('video'),
    new arrow.Field('thumb', new arrow.Binary(), true),
  ]);
  const m = await db.createTable('media', [
    { id: 0n, video: small, thumb: Buffer.from('t0') },
    { id: 1n, video: big, thumb: null },
    { id: 2n, video: Buffer.alloc(0), thumb: Buffer.alloc(0) },
    { id: 3n, video: null, thumb: Buffer.from('t3') },
  ], { schema });
  const out = { columns: await m.blobColumns() };
  const rows = await m.query().select(['id']).withRowId().toArray();
  const rid = {};
  for (const r of rows) rid[Number(r.id)] = r._rowid;
  const want = [small, big, Buffer.alloc(0), null];
  // what describes a fetched value against the value written.
  const what = (b, w) => (b === null ? null : { len: b.length, same: w !== null && Buffer.compare(b, w) === 0 });
  const order = [1, 0, 3, 2, 0];
  out.fetch = (await m.fetchBlobs('video', order.map((i) => rid[i]))).map((b, k) => what(b, want[order[k]]));
  out.thumbs = (await m.fetchBlobs('thumb', [0, 1, 2, 3].map((i) => rid[i]))).map((b) => (b === null ? null : b.toString()));
  const files = await m.fetchBlobFiles('video', [0, 1, 2, 3].map((i) => rid[i]));
  out.sizes = files.map((f) => (f === null ? null : Number(f.size())));
  const head = await files[1].readRange(1000n, 1000n + 65536n);
  out.range = what(head, big.subarray(1000, 1000 + 65536));
  out.whole = what(await files[1].read(), big);
  out.again = (await files[1].read()).length;
  out.small = (await files[0].read()).toString();
  out.empty = (await files[2].read()).length;
  try {
    await m.fetchBlobs('id', [rid[0]]);
    out.notBlob = 'fetched';
  } catch (e) {
    out.notBlob = /400/.test(e.message) && /blob and binary columns only/.test(e.message) ? 'refused' : String(e.message);
  }
  try {
    await m.fetchBlobs('video', [rid[0] + 1000n]);
    out.missingRow = 'fetched';
  } catch (e) {
    out.missingRow = /400/.test(e.message) && /no live row/.test(e.message) ? 'refused' : String(e.message);
  }
  await db.dropTable('media');
  return out;
});
await step('dropTable', async () => {
  await db.dropTable('other');
  return await db.tableNames();
});

console.log(JSON.stringify({ steps }));
