// lance-build.mjs DIR NAME PARTITIONS: build Lance's IVF_HNSW_SQ on table NAME of
// the LanceDB folder DIR in this fresh process, as a user's one-off build
// would, and print {ms, rssBefore, peakRss} (bytes; Linux VmRSS/VmHWM). It is
// the Lance half of the fresh-process build measurement; the lancer half is
// `lancer index create` in its own process, so neither side holds the
// suite's input while it builds.
import { lancedb, procStatus, resetPeakRss } from './lance-common.mjs';

const [dir, name, partitions] = process.argv.slice(2);
const t = await (await lancedb.connect(dir)).openTable(name);
const rssBefore = procStatus('VmRSS');
if (!resetPeakRss()) throw new Error('cannot reset VmHWM (/proc/self/clear_refs)');
const t0 = performance.now();
await t.createIndex('vector', {
  config: lancedb.Index.hnswSq({ numPartitions: Number(partitions), distanceType: 'l2' }),
  replace: true, name: 'vector_idx',
});
const ms = performance.now() - t0;
console.log(JSON.stringify({ ms, rssBefore, peakRss: procStatus('VmHWM') }));
