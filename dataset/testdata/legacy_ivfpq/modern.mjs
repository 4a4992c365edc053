// Lance 12 (@lancedb/lancedb 0.39.0) answers the queries of expected.json
// on the same legacy-indexed tables: expected_lance12.json. Run from a
// folder where @lancedb/lancedb 0.39.0 is installed.
import * as lancedb from '@lancedb/lancedb';
import fs from 'fs';
const dir = process.argv[2];
const exp = JSON.parse(fs.readFileSync(dir + '/expected.json'));
const db = await lancedb.connect(dir);
const out = { generator: '@lancedb/lancedb 0.39.0 (Lance 12), testdata/legacy_ivfpq/modern.mjs' };
for (const name of ['ivfpq_l2', 'ivfpq_cosine']) {
  const t = await db.openTable(name);
  const idx = await t.listIndices();
  const qs = [];
  for (const q of exp[name].queries) {
    let s = t.search(exp.queries[q.query_index]).limit(q.k).nprobes(q.nprobes);
    if (q.refine) s = s.refineFactor(q.refine);
    if (q.metric) s = s.distanceType(q.metric);
    if (q.filter) s = s.where(q.filter);
    const r = await s.toArray();
    qs.push({ ...q, results: r.map(x => ({ id: Number(x.id), _distance: x._distance })) });
  }
  out[name] = { indices: idx.map(i => ({ name: i.name, indexType: i.indexType, columns: i.columns })), queries: qs };
}
fs.writeFileSync(dir + '/expected_lance12.json', JSON.stringify(out));
