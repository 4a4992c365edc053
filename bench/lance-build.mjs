// lance-build.mjs DIR NAME PARTITIONS: build Lance's IVF_HNSW_SQ on table NAME of
// the LanceDB folder DIR in this fresh process, as a user's one-off build
// would, and print {ms, cpuMs, rssBefore, peakRss} (bytes; Linux VmRSS/VmHWM).
// It is the Lance half of the core suite's index_build_fresh step; the lancer
// half is a child process of the bench binary (bench/core_fresh.go), so
// neither side holds the suite's input while it builds.
import { lancedb, procStatus, resetPeakRss } from './lance-common.mjs';

const [dir, name, partitions] = process.argv.slice(2);
const t = await (await lancedb.connect(dir)).openTable(name);
const rssBefore = procStatus('VmRSS');
if (!resetPeakRss()) throw new Error('cannot reset VmHWM (/proc/self/clear_refs)');
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await t.createIndex('vector', {
  config: lancedb.Index.hnswSq({ numPartitions: Number(partitions), distanceType: 'l2' }),
  replace: true, name: 'vector_idx',
});
const ms = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
console.log(JSON.stringify({ ms, cpuMs: (cpu.user + cpu.system) / 1000, rssBefore, peakRss: procStatus('VmHWM') }));
