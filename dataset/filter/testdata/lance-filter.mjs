// lance-filter.mjs: evaluate filters with real Lance (LanceDB for Node) and
// print the ids of the matching rows, for filter_lance_test.go.
//
// It reads one JSON object on stdin:
//   {"uri": "/path/t.lance", "filters": ["id < 3", ...]}
// and prints one JSON object per filter on stdout, in order:
//   {"ids": [0, 1, 2]}   or   {"error": "..."}
// The ids are the values of the dataset's int64 column "id", in scan order.
//
// LANCEDB_NODE_DIR names the folder whose node_modules holds the pinned
// @lancedb/lancedb (interop/package.json).
import { createRequire } from 'node:module';
import path from 'node:path';

const dir = process.env.LANCEDB_NODE_DIR;
if (!dir) { console.error('lance-filter: set LANCEDB_NODE_DIR'); process.exit(2); }
const require = createRequire(path.join(dir, 'package.json'));
const lancedb = require('@lancedb/lancedb');

let input = '';
for await (const chunk of process.stdin) input += chunk;
const { uri, filters } = JSON.parse(input);

const db = await lancedb.connect(path.dirname(uri));
const table = await db.openTable(path.basename(uri).replace(/\.lance$/, ''));
for (const filter of filters) {
  try {
    const rows = await table.query().where(filter).select(['id']).toArray();
    console.log(JSON.stringify({ ids: rows.map((r) => Number(r.id)) }));
  } catch (e) {
    console.log(JSON.stringify({ error: String(e.message ?? e).split('\n')[0] }));
  }
}
