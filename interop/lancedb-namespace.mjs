// lancedb-namespace.mjs: drive the official LanceDB client's namespace
// calls against a lancer server, three ways, and print what each step saw
// as one JSON object on stdout: {"steps": {"<step>": <result> | {"error": "..."}}}.
//
//   - connect("db://...") to the server: createNamespace, listNamespaces,
//     describeNamespace, dropNamespace and tables in namespaces;
//   - connectNamespace("rest") with the server as the REST catalog;
//   - connectNamespace("dir") on the server's data folder (LANCER_DIR):
//     real Lance's directory namespace reading what the server wrote, and
//     writing a namespace and table the server then serves.
//
// LANCEDB_NODE_DIR names the folder whose node_modules holds the client;
// LANCER_URL is the server's base URL, LANCER_API_KEY its key. The Go test
// (namespace_interop_test.go) checks the results.
import { createRequire } from 'node:module';
import path from 'node:path';

const dir = process.env.LANCEDB_NODE_DIR;
if (!dir) { console.error('lancedb-namespace: set LANCEDB_NODE_DIR'); process.exit(2); }
const require = createRequire(path.join(dir, 'package.json'));
const lancedb = require('@lancedb/lancedb');

const url = process.env.LANCER_URL;
const apiKey = process.env.LANCER_API_KEY;
const dataDir = process.env.LANCER_DIR;
const phase = process.env.LANCER_PHASE || 'all';
const steps = {};

async function step(name, fn) {
  try {
    steps[name] = (await fn()) ?? null;
  } catch (e) {
    steps[name] = { error: String(e && e.message ? e.message : e) };
  }
}
const ids = async (t) => (await t.query().toArray()).map((r) => Number(r.id)).sort((a, b) => a - b);

const clientConfig = { retryConfig: { retries: 0 } };
const db = await lancedb.connect('db://lancer-test', { apiKey, hostOverride: url, clientConfig });

if (phase === 'all' || phase === 'remote') {
  await step('createNamespace', async () => db.createNamespace(['ns1'], { properties: { owner: 'me' } }));
  await step('createNamespaceAgain', async () => db.createNamespace(['ns1']));
  await step('createNamespaceExistOk', async () => db.createNamespace(['ns1'], { mode: 'exist_ok' }));
  await step('createChild', async () => db.createNamespace(['ns1', 'child']));
  await step('createOrphan', async () => db.createNamespace(['nope', 'child']));
  await step('createBadName', async () => db.createNamespace(['a/b']));
  await step('createNs2', async () => db.createNamespace(['ns2']));
  await step('listRoot', async () => db.listNamespaces());
  await step('listRootPaged', async () => {
    const first = await db.listNamespaces([], { limit: 1 });
    const second = await db.listNamespaces([], { limit: 1, pageToken: first.pageToken });
    return { first, second };
  });
  await step('listChild', async () => db.listNamespaces(['ns1']));
  await step('listMissing', async () => db.listNamespaces(['nope']));
  await step('describe', async () => db.describeNamespace(['ns1']));
  await step('describeMissing', async () => db.describeNamespace(['nope']));
  await step('createTableInNs', async () => {
    const t = await db.createTable('t1', [{ id: 1 }, { id: 2 }], ['ns1']);
    await t.add([{ id: 3 }]);
    return { name: t.name, rows: await t.countRows() };
  });
  await step('createTableInMissingNs', async () => db.createTable('t1', [{ id: 1 }], ['nope']));
  await step('tableNamesInNs', async () => db.tableNames(['ns1']));
  await step('listTablesInNs', async () => db.listTables(['ns1']));
  await step('rootTableNames', async () => db.tableNames());
  await step('openTableInNs', async () => {
    const t = await db.openTable('t1', ['ns1']);
    await t.update({ where: 'id = 1', values: { id: 10 } });
    return await ids(t);
  });
  await step('openMissingInNs', async () => db.openTable('zz', ['ns1']));
  await step('dropNonEmpty', async () => db.dropNamespace(['ns1']));
  await step('dropMissing', async () => db.dropNamespace(['nope']));
  await step('dropMissingSkip', async () => db.dropNamespace(['nope'], { mode: 'skip' }));
  await step('dropNs2', async () => db.dropNamespace(['ns2']));
  await step('dropTableInNs', async () => {
    await db.createTable('t2', [{ id: 1 }], ['ns1', 'child']);
    await db.dropTable('t2', ['ns1', 'child']);
    return await db.tableNames(['ns1', 'child']);
  });
  await step('listAfterDrop', async () => db.listNamespaces());
}

if (phase === 'all' || phase === 'rest') {
  await step('restConnect', async () => {
    const rest = await lancedb.connectNamespace('rest', { uri: url, headers: { 'x-api-key': apiKey } });
    const out = {};
    out.namespaces = await rest.listNamespaces();
    out.tables = await rest.tableNames(['ns1']);
    const t = await rest.openTable('t1', ['ns1']);
    out.ids = await ids(t);
    await rest.createNamespace(['restns']);
    const t2 = await rest.createTable('rt', [{ id: 7 }, { id: 8 }], ['restns']);
    out.created = await t2.countRows();
    out.restTables = await rest.tableNames(['restns']);
    return out;
  });
}

if (phase === 'all' || phase === 'dir') {
  await step('dirReadsServer', async () => {
    const local = await lancedb.connectNamespace('dir', { root: dataDir });
    const out = {};
    out.namespaces = await local.listNamespaces();
    out.child = await local.listNamespaces(['ns1']);
    out.tables = await local.tableNames(['ns1']);
    out.ids = await ids(await local.openTable('t1', ['ns1']));
    out.props = await local.describeNamespace(['ns1']);
    await local.createNamespace(['lancens'], { properties: { by: 'lance' } });
    await local.createTable('lt', [{ id: 40 }, { id: 41 }], ['lancens']);
    return out;
  });
  await step('serverReadsDir', async () => {
    const out = {};
    out.namespaces = await db.listNamespaces();
    out.props = await db.describeNamespace(['lancens']);
    out.tables = await db.tableNames(['lancens']);
    out.ids = await ids(await db.openTable('lt', ['lancens']));
    return out;
  });
}

process.stdout.write(JSON.stringify({ steps }) + '\n');
