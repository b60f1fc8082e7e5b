// Benchmark runner (bench/README.md). Not a test: `npm test` never runs it.
//   npm run build && node dist/bench/run.js [workload ...]
// With no argument every workload runs in sequence. Progress goes to stderr; stdout gets one
// JSON line per workload (starting with `{`) and, at the end, a Markdown summary table.
import { appendBatch } from './append-batch.js';
import { appendSingle } from './append-single.js';
import { catchupDiff } from './catchup-diff.js';
import { recovery } from './recovery.js';
import { memory } from './memory.js';
import { retention } from './retention.js';
import { watchFanout } from './watch-fanout.js';
import { watchIdleMemory } from './watch-idle-memory.js';
import { queue } from './queue.js';
import { walPrealloc } from './wal-prealloc.js';
import { cliAppend } from './cli-append.js';
import { router } from './router.js';
import { manyTopics } from './many-topics.js';
import { auth } from './auth.js';
import { stages } from './stages.js';
import { compaction } from './compaction.js';
import { longpollWake } from './longpoll-wake.js';
import { cleanupAll, emitJson, installCleanupHandlers, log, machineInfo, markdownTable, type Row, type WorkloadResult } from './lib.js';

const WORKLOADS: Record<string, () => Promise<WorkloadResult>> = {
  'append-batch': appendBatch,
  'append-single': appendSingle,
  'catchup-diff': catchupDiff,
  recovery,
  memory,
  retention,
  'watch-fanout': () => watchFanout(),
  'watch-idle-memory': () => watchIdleMemory(),
  queue: () => queue(),
  'wal-prealloc': walPrealloc,
  'cli-append': cliAppend,
  router: () => router(),
  'many-topics': manyTopics,
  auth,
  stages,
  compaction,
  'longpoll-wake': longpollWake,
};

function usage(): never {
  process.stderr.write(`usage: node dist/bench/run.js [${Object.keys(WORKLOADS).join(' | ')} ...]\n`);
  process.exit(2);
}

async function main(): Promise<number> {
  installCleanupHandlers();
  const args = process.argv.slice(2);
  if (args.some((a) => a === '-h' || a === '--help')) usage();
  for (const a of args)
    if (!(a in WORKLOADS)) {
      process.stderr.write(`unknown workload ${JSON.stringify(a)}\n`);
      usage();
    }
  const names = args.length ? args : Object.keys(WORKLOADS);
  const m = machineInfo();
  log(`machine: ${m.nproc} cores, ${m.cpu}, ${m.mem_gib} GiB, node ${m.node}; workloads: ${names.join(', ')}`);

  const rows: Row[] = [];
  const failed: string[] = [];
  for (const name of names) {
    const t0 = Date.now();
    log(`=== ${name} ===`);
    let result: WorkloadResult;
    try {
      result = await WORKLOADS[name]!();
    } catch (err) {
      const msg = (err as Error).stack ?? String(err);
      log(`${name} FAILED: ${msg}`);
      result = { workload: name, ok: false, error: (err as Error).message, rows: [] };
    } finally {
      cleanupAll(); // belt and braces: nothing of this workload outlives it
    }
    if (!result.ok) failed.push(name);
    log(`=== ${name} done in ${((Date.now() - t0) / 1000).toFixed(1)} s${result.ok ? '' : ` (FAILED: ${result.error ?? 'see rows'})`} ===`);
    emitJson(result);
    rows.push(...result.rows);
    if (!result.ok)
      rows.push({
        name: `${name} FAILED`,
        recordsPerSec: null,
        p50Ms: null,
        p99Ms: null,
        peakRssMB: null,
        notes: (result.error ?? '').replace(/\s+/g, ' ').replace(/\|/g, '\\|').slice(0, 300),
      });
  }

  process.stdout.write(`\n${markdownTable(rows)}\n\n`);
  process.stdout.write(
    `Machine: ${m.nproc} cores (${m.cpu}), ${m.mem_gib} GiB RAM, Node ${m.node}; server and load generator share the machine.\n`,
  );
  if (failed.length) log(`failed: ${failed.join(', ')}`);
  return failed.length ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    log(`fatal: ${(err as Error).stack ?? String(err)}`);
    cleanupAll();
    process.exit(1);
  },
);
