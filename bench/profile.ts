// Profiling aid (issue "hot paths"): runs spool under `--cpu-prof` with one workload and prints,
// per thread profile written, the top self-time frames. Profiles land in PROFILE_DIR (./prof).
// PROFILE_WORKLOAD=append (default): single-record appends, PROFILE_CLIENTS clients (64), to a
//   PROFILE_CLASS topic (disk), for BENCH_SECONDS (5);
// PROFILE_WORKLOAD=diff: 200k records of ~256 B loaded first, then one reader pages through them
//   with diff, limit 1000, PROFILE_ROUNDS times (3);
// PROFILE_WORKLOAD=create: PROFILE_TOPICS (5000) new topics, each made by one append of 10
//   records from 32 writers (the many-topics creation path);
// PROFILE_WORKLOAD=diffs: those topics made first, then PROFILE_DIFFS (20000) single-topic diffs
//   of random topics at 16 readers (the per-request cost of a small read);
// PROFILE_WORKLOAD=restart: the same topics made by an unprofiled server, which is SIGKILLed;
//   the profile is of the restart on the same data dir, up to /v0/ready (recovery).
import fs from 'node:fs';
import path from 'node:path';
import {
  HttpClient,
  appendBody,
  appendMany,
  benchMs,
  createTopic,
  log,
  runLoad,
  removeDir,
  scanPage,
  startSpool,
  tempDir,
  type ChildServer,
} from './lib.js';

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
function topFrames(file: string, n = 15): string[] {
  const p = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((x) => [x.id, x]));
  const self = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const node = byId.get(p.samples[i]!)!;
    // timeDeltas[i] is the time before sample i: a sample lasts until the next one.
    const dt = p.timeDeltas[i + 1] ?? 0;
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
  for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, n))
    lines.push(`  ${((100 * v) / busy).toFixed(1).padStart(5)}%  ${k}`);
  return lines;
}

async function appendLoad(srv: ChildServer): Promise<void> {
  const clients = Number(process.env.PROFILE_CLIENTS ?? 64);
  const cls = process.env.PROFILE_CLASS ?? 'disk';
  const client = new HttpClient(srv.port, clients);
  try {
    await createTopic(client, 'p', { durability: cls });
    const bodies = Array.from({ length: 16 }, (_, k) => appendBody(1, k));
    const r = await runLoad({
      client,
      concurrency: clients,
      path: '/v0/topics/p',
      bodies,
      recordsPerRequest: 1,
      server: srv,
      durationMs: benchMs(5),
    });
    log(`profile: append ${cls} ${clients}c ${Math.round(r.reqPerSec)} req/s`);
  } finally {
    client.close();
  }
}

async function diffLoad(srv: ChildServer): Promise<void> {
  const total = 200_000;
  const client = new HttpClient(srv.port, 4);
  try {
    await createTopic(client, 'p', { durability: 'disk' });
    await appendMany({ client, topic: 'p', total, batch: 1000, concurrency: 4, deadlineMs: 600_000, server: srv });
    const t0 = process.hrtime.bigint();
    const rounds = Number(process.env.PROFILE_ROUNDS ?? 3);
    for (let round = 0; round < rounds; round++) {
      for (let from = 0; ;) {
        const r = await client.post('/v0/topics/p/diff', JSON.stringify({ from_seq: from, limit: 1000 }));
        const info = scanPage(r.body, false);
        from = info.nextFromSeq;
        if (info.caughtUp) break;
      }
    }
    const s = Number(process.hrtime.bigint() - t0) / 1e9;
    log(`profile: diff ${Math.round((rounds * total) / s)} records/s`);
  } finally {
    client.close();
  }
}

async function createLoad(srv: ChildServer): Promise<void> {
  const topics = Number(process.env.PROFILE_TOPICS ?? 5000);
  const client = new HttpClient(srv.port, 32);
  try {
    const body = appendBody(10);
    let next = 0;
    const t0 = process.hrtime.bigint();
    const loop = async () => {
      while (next < topics) {
        const r = await client.post(`/v0/topics/c.${next++}`, body);
        if (r.status > 299) throw new Error(`append: ${r.status} ${r.body.toString('utf8').slice(0, 200)}`);
      }
    };
    await Promise.all(Array.from({ length: 32 }, loop));
    log(`profile: created ${Math.round(topics / (Number(process.hrtime.bigint() - t0) / 1e9))} topics/s`);
  } finally {
    client.close();
  }
}

async function randomDiffs(srv: ChildServer): Promise<void> {
  await createLoad(srv);
  const topics = Number(process.env.PROFILE_TOPICS ?? 5000);
  const total = Number(process.env.PROFILE_DIFFS ?? 20000);
  const client = new HttpClient(srv.port, 16);
  try {
    const body = Buffer.from('{"from_seq":0}');
    let done = 0;
    let seed = 7;
    const t0 = process.hrtime.bigint();
    const loop = async () => {
      while (done < total) {
        done++;
        seed = (seed * 1103515245 + 12345) >>> 0;
        const r = await client.post(`/v0/topics/c.${seed % topics}/diff`, body);
        if (r.status !== 200) throw new Error(`diff: ${r.status} ${r.body.toString('utf8').slice(0, 200)}`);
      }
    };
    await Promise.all(Array.from({ length: 16 }, loop));
    log(`profile: ${Math.round(total / (Number(process.hrtime.bigint() - t0) / 1e9))} diffs/s`);
  } finally {
    client.close();
  }
}

const LOADS: Record<string, (srv: ChildServer) => Promise<void>> = {
  append: appendLoad,
  diff: diffLoad,
  create: createLoad,
  diffs: randomDiffs,
};

async function main(): Promise<void> {
  const dir = path.resolve(process.env.PROFILE_DIR ?? 'prof');
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const workload = process.env.PROFILE_WORKLOAD ?? 'append';
  let dataDir: string | undefined;
  if (workload === 'restart') {
    dataDir = tempDir('spool-profile-restart-');
    const first = await startSpool({ label: 'profile-load', dataDir, keepDir: true });
    await createLoad(first);
    await first.kill();
  }
  const srv = await startSpool({ label: 'profile', dataDir, nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`], readyTimeoutMs: 600_000 });
  try {
    if (workload === 'restart') log(`profile: ready ${Math.round(srv.readyMs)} ms after spawn`);
    else {
      const load = LOADS[workload];
      if (!load) throw new Error(`PROFILE_WORKLOAD must be one of restart, ${Object.keys(LOADS).join(', ')}`);
      await load(srv);
    }
  } finally {
    await srv.terminate(); // profiles are written at a clean exit
    await srv.close();
    if (dataDir) removeDir(dataDir);
  }
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) console.log(topFrames(path.join(dir, f)).join('\n'));
}

await main();
