// Workload catchup-diff: append 200k records (~256 B each, batches of 1000, `disk` topic), then one
// client reads them all with POST /diff in pages of limit 1000 (from_seq = next_from_seq each
// time). Reports records/s, per-page p50/p99 and server CPU per record read.
//
// Warm (default segment cache, records in memory): BENCH_CATCHUP_ROUNDS (5) measured passes after
// one unmeasured pass. When PostgreSQL is installed (bench/pg-peer.ts), the same rows are loaded
// into a private cluster, as `jsonb` and as `text`, and each round also reads them with keyset
// pagination (`WHERE seq > $1 ORDER BY seq LIMIT 1000`, a prepared statement over TCP on
// 127.0.0.1); the parties alternate within the run, so machine noise hits all of them. Targets
// (docs/PERFORMANCE.md "Catch-up reads"): spool ≥ 1.2× PostgreSQL (jsonb) records/s, server CPU ≤ 1.5 µs per record.
// Without PostgreSQL the peer is skipped with a message.
//
// Cold (SERVICE_SEGMENT_CACHE_BYTES=1048576): pages come from segment files; one pass per round.
// BENCH_CATCHUP_RECORDS overrides the count; BENCH_PARSE=1 makes the reader JSON.parse every page.
import net from 'node:net';
import {
  CpuSplitMeter,
  cpuNote,
  HttpClient,
  clientKindFrom,
  serialClient,
  type PostClient,
  appendMany,
  createTopic,
  envNumber,
  log,
  makeData,
  percentile,
  readCpuSeconds,
  readRchar,
  round,
  scanPage,
  startSpool,
  MB,
  type Row,
  type WorkloadResult,
  type ChildServer,
} from './lib.js';
import { PgConn, PgServer } from './pg-peer.js';

const PAGE = 1000;
const READ_DEADLINE_MS = 300_000;

/** One full read of the topic (or table) by one reader. */
interface Pass {
  records: number;
  seconds: number;
  /** Server CPU over the pass (all threads / all processes of the cluster). */
  cpuS: number;
  pageMs: number[];
  coldSegments: number;
  checked: number;
}

interface Party {
  name: string;
  read: () => Promise<Pass>;
  passes: Pass[];
}

/** The reader's client: a RawHttpConn (default), or node:http with BENCH_CATCHUP_CLIENT=http. */
type Reader = PostClient;

function makeReader(port: number): Reader {
  return serialClient(port, clientKindFrom('BENCH_CATCHUP_CLIENT'));
}

async function spoolPass(reader: Reader, srv: ChildServer, topic: string, total: number, fullParse: boolean): Promise<Pass> {
  const diffPath = `/v0/topics/${topic}/diff`;
  const pageMs: number[] = [];
  let from = 0;
  let read = 0;
  let cold = 0;
  let checked = 0;
  let caughtUp = false;
  const maxPages = Math.ceil(total / PAGE) * 2 + 10;
  const stopAt = Date.now() + READ_DEADLINE_MS;
  const cpu0 = readCpuSeconds(srv.pid) ?? 0;
  const t0 = process.hrtime.bigint();
  while (pageMs.length < maxPages && Date.now() < stopAt) {
    const r = await reader.post(diffPath, JSON.stringify({ from_seq: from, limit: PAGE }));
    if (r.status !== 200) throw new Error(`diff from_seq=${from} -> ${r.status}: ${r.body.toString('utf8').slice(0, 500)}`);
    pageMs.push(Number(r.ns) / 1e6);
    const info = scanPage(r.body, fullParse);
    // Spot-check 1 page in 50 (and every page with BENCH_PARSE=1): records == seq advance.
    const n = info.records ?? (pageMs.length % 50 === 1 ? (JSON.parse(r.body.toString('utf8')).records.length as number) : undefined);
    if (n !== undefined) {
      checked++;
      if (n !== info.nextFromSeq - from)
        throw new Error(`diff from_seq=${from}: ${n} records but next_from_seq advanced by ${info.nextFromSeq - from}`);
    }
    read += info.nextFromSeq - from;
    from = info.nextFromSeq;
    cold += info.coldSegmentsRead;
    if (info.caughtUp) {
      caughtUp = true;
      break;
    }
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpuS = (readCpuSeconds(srv.pid) ?? 0) - cpu0;
  srv.assertAlive();
  if (!caughtUp)
    throw new Error(`catchup-diff: not caught up after ${pageMs.length} pages / ${seconds.toFixed(1)} s (read ${read} of ${total})`);
  if (read !== total) throw new Error(`catchup-diff: read ${read} records, appended ${total}`);
  return { records: read, seconds, cpuS, pageMs, coldSegments: cold, checked };
}

async function pgPass(conn: PgConn, pg: PgServer, stmt: string, total: number): Promise<Pass> {
  const pageMs: number[] = [];
  let from = '0';
  let read = 0;
  const cpu0 = pg.cpuSeconds();
  const t0 = process.hrtime.bigint();
  for (;;) {
    const p0 = process.hrtime.bigint();
    const r = await conn.execute(stmt, [from]);
    pageMs.push(Number(process.hrtime.bigint() - p0) / 1e6);
    read += r.rows;
    if (r.rows < PAGE || r.lastFirstCol === null) break;
    from = r.lastFirstCol;
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpuS = pg.cpuSeconds() - cpu0;
  if (read !== total) throw new Error(`catchup-diff: PostgreSQL ${stmt} read ${read} rows, loaded ${total}`);
  return { records: read, seconds, cpuS, pageMs, coldSegments: 0, checked: 0 };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** The same rows as spool's topic (seq, a ms timestamp, the same `data` text), as jsonb and text. */
async function loadPg(conn: PgConn, total: number): Promise<void> {
  const ts0 = Date.now();
  for (const [table, type] of [
    ['t_jsonb', 'jsonb'],
    ['t_text', 'text'],
  ] as const) {
    await conn.query(`CREATE TABLE ${table} (seq bigint PRIMARY KEY, ts bigint NOT NULL, data ${type} NOT NULL)`);
    for (let start = 1; start <= total; start += PAGE) {
      const rows: string[] = [];
      for (let s = start; s < start + PAGE && s <= total; s++) rows.push(`(${s},${ts0 + (s >> 10)},'${makeData(s - 1)}')`);
      await conn.query(`INSERT INTO ${table} VALUES ${rows.join(',')}`);
    }
    await conn.query(`VACUUM ANALYZE ${table}`);
    await conn.prepare(table, `SELECT seq, ts, data FROM ${table} WHERE seq > $1 ORDER BY seq LIMIT ${PAGE}`);
  }
}

function summarize(p: Party, peak: number | null, notes: string, extra: Record<string, unknown>): Row {
  const rates = p.passes.map((x) => x.records / x.seconds).sort((a, b) => a - b);
  const records = p.passes.reduce((a, x) => a + x.records, 0);
  const cpuS = p.passes.reduce((a, x) => a + x.cpuS, 0);
  const lat = Float64Array.from(p.passes.flatMap((x) => x.pageMs)).sort();
  const median = rates[Math.floor(rates.length / 2)]!;
  const cpuUs = (cpuS / records) * 1e6;
  return {
    name: p.name,
    recordsPerSec: round(median, 0),
    p50Ms: round(percentile(lat, 50), 3),
    p99Ms: round(percentile(lat, 99), 3),
    peakRssMB: peak === null ? null : round(peak / MB, 1),
    notes: `median of ${rates.length} passes (${rates.map((r) => Math.round(r / 1000)).join('/')}k); server CPU ${cpuUs.toFixed(2)} µs/record; ${notes}`,
    extra: { passes_records_per_s: rates.map((r) => round(r, 0)), server_cpu_us_per_record: round(cpuUs, 3), ...extra },
  };
}

async function warm(total: number, rounds: number, fullParse: boolean): Promise<Row[]> {
  const srv = await startSpool({ label: 'catchup' });
  const loader = new HttpClient(srv.port, 4);
  const reader = makeReader(srv.port);
  let pg: PgServer | null = null;
  let conn: PgConn | null = null;
  try {
    const topic = 'bench-catchup';
    await createTopic(loader, topic, { durability: 'disk' });
    log(`catchup-diff (warm): loading ${total} records`);
    const load = await appendMany({ client: loader, topic, total, batch: 1000, concurrency: 4, deadlineMs: 600_000, server: srv });
    log(`catchup-diff (warm): loaded in ${load.elapsedS.toFixed(1)} s (${Math.round(load.records / load.elapsedS)} records/s)`);
    const parties: Party[] = [
      { name: 'catchup-diff (default cache, warm)', read: () => spoolPass(reader, srv, topic, total, fullParse), passes: [] },
    ];
    if (process.env.BENCH_PG !== '0') pg = await PgServer.start(await freePort());
    if (pg) {
      conn = await PgConn.connect(pg.port);
      log(`catchup-diff (warm): loading ${total} rows into PostgreSQL (jsonb and text tables)`);
      await loadPg(conn, total);
      const c = conn;
      const p = pg;
      parties.push({ name: 'PostgreSQL keyset pages of 1000, jsonb (peer)', read: () => pgPass(c, p, 't_jsonb', total), passes: [] });
      parties.push({ name: 'PostgreSQL keyset pages of 1000, text (peer)', read: () => pgPass(c, p, 't_text', total), passes: [] });
    }
    for (const party of parties) await party.read(); // unmeasured: JIT, caches, buffers
    srv.rss.reset();
    const split = new CpuSplitMeter(srv.pid).start();
    for (let r = 0; r < rounds; r++) {
      // Alternate the order so a disturbance does not always hit the same party first.
      const order = r % 2 === 0 ? parties : [...parties].reverse();
      for (const party of order) {
        const pass = await party.read();
        party.passes.push(pass);
        log(
          `catchup-diff round ${r + 1}/${rounds}: ${party.name}: ${Math.round(pass.records / pass.seconds)} records/s, ${((pass.cpuS / pass.records) * 1e6).toFixed(2)} µs CPU/record`,
        );
      }
    }
    const cpu = split.stop();
    const peak = srv.rss.peakBytes();
    const spool = parties[0]!;
    const ratios = parties[1]
      ? spool.passes
          .map((x, i) => x.records / x.seconds / (parties[1]!.passes[i]!.records / parties[1]!.passes[i]!.seconds))
          .sort((a, b) => a - b)
      : [];
    const ratio = ratios.length ? ratios[Math.floor(ratios.length / 2)]! : null;
    const rows = [
      summarize(
        spool,
        peak,
        `${PAGE}-record pages, ${process.env.BENCH_CATCHUP_CLIENT === 'http' ? 'node:http' : 'raw-socket'} reader; ${ratio === null ? 'no PostgreSQL peer' : `${ratio.toFixed(2)}× PostgreSQL jsonb (median of per-round ratios)`}${fullParse ? '; client JSON.parse each page' : ''}; whole run: ${cpuNote(cpu)}`,
        {
          ratio_to_pg_jsonb: round(ratio, 3),
          pages_spot_checked: spool.passes.reduce((a, x) => a + x.checked, 0),
          full_parse: fullParse,
          load_records_per_s: round(load.records / load.elapsedS, 0),
        },
      ),
    ];
    for (const p of parties.slice(1))
      rows.push(summarize(p, null, 'same rows, same run; hand-written wire-protocol client, rows counted not parsed', {}));
    return rows;
  } finally {
    conn?.close();
    await pg?.stop();
    loader.close();
    reader.close();
    await srv.close();
  }
}

async function cold(total: number, rounds: number, fullParse: boolean): Promise<Row> {
  const env = { SERVICE_SEGMENT_CACHE_BYTES: '1048576' };
  const srv = await startSpool({ label: 'catchup-cold', env });
  const loader = new HttpClient(srv.port, 4);
  const reader = makeReader(srv.port);
  try {
    const topic = 'bench-catchup';
    await createTopic(loader, topic, { durability: 'disk' });
    log(`catchup-diff (cold): loading ${total} records`);
    await appendMany({ client: loader, topic, total, batch: 1000, concurrency: 4, deadlineMs: 600_000, server: srv });
    srv.rss.reset();
    const party: Party = {
      name: 'catchup-diff (1 MiB cache, cold segments)',
      read: () => spoolPass(reader, srv, topic, total, fullParse),
      passes: [],
    };
    const rchar0 = readRchar(srv.pid);
    const split = new CpuSplitMeter(srv.pid).start();
    for (let r = 0; r < rounds; r++) {
      const pass = await party.read();
      party.passes.push(pass);
      log(`catchup-diff (cold) round ${r + 1}/${rounds}: ${Math.round(pass.records / pass.seconds)} records/s`);
    }
    const cpu = split.stop();
    const rchar1 = readRchar(srv.pid);
    // Bytes the server read (segment files + the small diff requests) while serving the pages:
    // the evidence that pages came cold from segments.
    const serverReadMB = rchar0 !== undefined && rchar1 !== undefined ? (rchar1 - rchar0) / MB / rounds : null;
    const coldSegs = party.passes.reduce((a, x) => a + x.coldSegments, 0);
    return summarize(
      party,
      srv.rss.peakBytes(),
      `server read ${serverReadMB === null ? '?' : serverReadMB.toFixed(1)} MB from files per pass${coldSegs ? `, cold_segments_read=${coldSegs}` : ''}; ${cpuNote(cpu)}`,
      {
        server_read_mb_per_pass: round(serverReadMB, 1),
        env,
      },
    );
  } finally {
    loader.close();
    reader.close();
    await srv.close();
  }
}

export async function catchupDiff(): Promise<WorkloadResult> {
  const total = Math.max(PAGE, Math.floor(envNumber('BENCH_CATCHUP_RECORDS', 200_000)));
  const rounds = Math.max(1, Math.floor(envNumber('BENCH_CATCHUP_ROUNDS', 5)));
  const fullParse = process.env.BENCH_PARSE === '1';
  log(`catchup-diff: reader client ${process.env.BENCH_CATCHUP_CLIENT === 'http' ? 'node:http' : 'raw socket (RawHttpConn)'}`);
  const rows = await warm(total, rounds, fullParse);
  if (process.env.BENCH_CATCHUP_COLD !== '0') rows.push(await cold(total, Math.min(rounds, 3), fullParse));
  return { workload: 'catchup-diff', ok: true, rows };
}
