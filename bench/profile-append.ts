// Profiling aid (issue "hot paths"): runs spool under `--cpu-prof` with single-record appends
// (PROFILE_CLIENTS clients, PROFILE_CLASS durability, BENCH_SECONDS) and prints, per thread
// profile written, the top self-time frames. Profiles land in PROFILE_DIR (default ./prof).
import fs from 'node:fs';
import path from 'node:path';
import { HttpClient, appendBody, benchMs, createTopic, log, runLoad, startSpool } from './lib.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Top self-time frames of one .cpuprofile, as share of the busy (non-idle) samples. */
export function topFrames(file: string, n = 15): string[] {
  const p = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((x) => [x.id, x]));
  const self = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const node = byId.get(p.samples[i]!)!;
    const dt = p.timeDeltas[i] ?? 0;
    const name = node.callFrame.functionName || '(anonymous)';
    if (name === '(idle)') {
      idle += dt;
      continue;
    }
    busy += dt;
    const key = `${name} ${path.basename(node.callFrame.url)}:${node.callFrame.lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + dt);
  }
  const total = busy + idle;
  const lines = [`${path.basename(file)}: busy ${(busy / 1000).toFixed(0)} ms of ${(total / 1000).toFixed(0)} ms`];
  for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, n)) lines.push(`  ${((100 * v) / busy).toFixed(1).padStart(5)}%  ${k}`);
  return lines;
}

async function main(): Promise<void> {
  const dir = path.resolve(process.env.PROFILE_DIR ?? 'prof');
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const clients = Number(process.env.PROFILE_CLIENTS ?? 64);
  const cls = process.env.PROFILE_CLASS ?? 'disk';
  const srv = await startSpool({ label: 'profile', nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`] });
  const client = new HttpClient(srv.port, clients);
  try {
    await createTopic(client, 'p', { durability: cls });
    const bodies = Array.from({ length: 16 }, (_, k) => appendBody(1, k));
    const r = await runLoad({ client, concurrency: clients, path: '/v0/topics/p', bodies, recordsPerRequest: 1, server: srv, durationMs: benchMs(5) });
    log(`profile: ${cls} ${clients}c ${Math.round(r.reqPerSec)} req/s`);
  } finally {
    client.close();
    await srv.terminate(); // profiles are written at a clean exit
    await srv.close();
  }
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) console.log(topFrames(path.join(dir, f)).join('\n'));
}

await main();
