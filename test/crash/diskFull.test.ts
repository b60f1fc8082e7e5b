// A full disk, for real (storage faults issue; docs/ARCHITECTURE.md "Storage faults"): the server
// runs on a small tmpfs in a private mount namespace (held by a `sleep` process, so the tmpfs
// outlives SIGKILL restarts; servers join it with nsenter); the test fills the tmpfs through
// /proc/<holder>/root and frees it again. Checked over HTTP:
// - writes (append, PUT create, queue ack) answer 429 throttled with Retry-After and
//   detail.limit "disk_space", and nothing of them is applied; a record delete, which gives
//   space back, is still answered (docs/ARCHITECTURE.md "Deleting on a full disk");
// - reads (diff, state, watch), health, readiness (storage "disk_full") and metrics keep working;
// - writes succeed again within 5 s of a file being deleted, with no restart;
// - a SIGKILL restart on the still full disk starts, serves every acknowledged record, refuses
//   writes with the same 429 once what recovery freed is taken too, and writes again once space
//   returns;
// - nothing acknowledged is lost, nothing refused appears.
// Needs root (mount, unshare, nsenter); skipped with a message elsewhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { client, killServersAfterFile, type Server } from '../helpers/server.js';
import { fill, fillUntilSettled, tmpfsServer as tmpfsServerOf, tmpfsSkip, type TmpfsServer } from '../helpers/tmpfs.js';
import { openStream } from '../helpers/sse.js';
import { walDir } from '../../src/format/layout.js';
import { WAL_HEADER_BYTES } from '../../src/format/constants.js';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

killServersAfterFile();

const TMPFS_BYTES = 40 * 1024 * 1024;
const WAL_FILE_BYTES = 4 * 1024 * 1024;
const RECORD_BYTES = 4000;

/** Deletes the WAL files at the log's end that hold no frame (prepared, pre-zeroed, unwritten). */
function removePreparedWalFiles(dataDir: string): void {
  const dir = walDir(dataDir);
  for (const name of fs.readdirSync(dir).sort().reverse()) {
    const buf = fs.readFileSync(path.join(dir, name));
    if (buf.subarray(WAL_HEADER_BYTES).some((b) => b !== 0)) return;
    fs.unlinkSync(path.join(dir, name));
  }
}

function rec(i: number) {
  return { data: { i, pad: 'p'.repeat(RECORD_BYTES) } };
}

function assertDiskFull(r: { status: number; headers: Headers; body: any }, what: string): void {
  assert.equal(r.status, 429, `${what}: ${JSON.stringify(r.body)}`);
  assert.equal(r.body.error.code, 'throttled', what);
  assert.deepEqual(r.body.error.detail, { limit: 'disk_space' }, what);
  assert.equal(r.headers.get('retry-after'), '1', what);
}

/** Every acknowledged record is there, in order and identical; nothing else is. */
async function assertAcked(c: ReturnType<typeof client>, topic: string, acked: number[], what: string): Promise<void> {
  const got: number[] = [];
  for (let from = 0; ;) {
    const d = await c.post(`/v0/topics/${topic}/diff`, { from_seq: from, limit: 1000 });
    assert.equal(d.status, 200, `${what}: diff ${JSON.stringify(d.body)}`);
    for (const r of d.body.records) {
      assert.equal(r.data.pad.length, RECORD_BYTES, `${what}: record ${r.$seq} intact`);
      got.push(r.data.i);
    }
    if (d.body.caught_up) break;
    from = d.body.next_from_seq;
  }
  assert.deepEqual(got, acked, `${what}: exactly the acknowledged records of ${topic}`);
}

const skip = tmpfsSkip;

/** A data dir on its own small tmpfs, and how to start a server on it (again and again). */
function tmpfsServer(env: Record<string, string> = {}): Promise<TmpfsServer> {
  return tmpfsServerOf(TMPFS_BYTES, { SERVICE_WAL_FILE_BYTES: String(WAL_FILE_BYTES), SERVICE_CHECKPOINT_MS: '1000', ...env });
}

test(
  'a full disk refuses writes with 429 disk_space, serves reads, and recovers when space returns, across a SIGKILL restart',
  { skip, timeout: 120_000 },
  async () => {
    const { inside, start } = await tmpfsServer();
    let srv: Server = await start();
    let c = client(srv.url);
    assert.equal((await c.put('/v0/topics/dur', { durability: 'fsync' })).status, 201);
    assert.equal((await c.put('/v0/topics/jobs', { type: 'queue', durability: 'fsync' })).status, 201);
    assert.equal((await c.post('/v0/topics/jobs', { records: [{ data: 'j1' }, { data: 'j2' }] })).status, 200);
    // A lease far longer than the test: on a loaded machine the test has taken over 30 s (the default lease).
    const claimed = (await c.post('/v0/topics/jobs/claim', { node: 'w', max: 2, lease_ms: 600_000 })).body.claimed.map((j: any) => j.$seq);
    const acked: number[] = [];

    // Fill: a filler takes most of the space, then appends run until the disk is full.
    const filler = fill(inside, 'filler-1');
    fs.truncateSync(filler, fs.statSync(filler).size - 12 * 1024 * 1024); // leave 12 MiB for spool
    // The filler had the disk full for a moment: a checkpoint or WAL file made then met ENOSPC
    // and refuses writes until the server sees the space back (within a second or so).
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(100)) {
      if (/^spool_storage_writable 1$/m.test((await c.get('/v0/metrics')).text)) break;
    }
    let refused: Awaited<ReturnType<typeof c.post>> | undefined;
    for (let i = 0; i < 20_000 && !refused; i++) {
      const r = await c.post('/v0/topics/dur', { records: [rec(acked.length)] });
      if (r.status === 200) acked.push(acked.length);
      else refused = r;
    }
    assert.ok(refused, 'the disk filled up');
    assertDiskFull(refused, 'append on a full disk');
    assert.ok(acked.length > 100, `some records were acknowledged first (${acked.length})`);
    // What the server then frees on its own (segment writes catching up, checkpoints trimming the
    // WAL) is taken too, until nothing more comes back: the disk stays full.
    const settled = await fillUntilSettled(inside, 'settle');
    // On a loaded machine a checkpoint can still free a WAL file after that, and the WAL takes
    // the room for its reserve (the server is then rightly writable again, and stays so while it
    // writes into what it holds): take what comes back and use up what the server holds with
    // appends, until it says it is full twice in a row.
    let full = 0;
    for (let k = 0; full < 2 && k < 40; k++) {
      settled.push(fill(inside, `late-${k}`));
      if ((await c.get('/v0/ready')).body.writable === false) full++;
      else {
        full = 0;
        for (let i = 0; i < 20_000; i++) {
          const r = await c.post('/v0/topics/dur', { records: [rec(acked.length)] });
          if (r.status !== 200) break;
          acked.push(acked.length);
        }
      }
      await new Promise((res) => setTimeout(res, 250));
    }
    assert.equal(full, 2, 'the disk stays full once what came back is used up');

    // Every other write is refused too, with nothing applied.
    assertDiskFull(await c.put('/v0/topics/new-topic', {}), 'PUT create');
    const rd = await c.post('/v0/topics/dur/delete', { match: ['tag', 'Eq', 'no-such-tag'] });
    assert.equal(rd.status, 200, `a record delete gives space back, so it is answered: ${JSON.stringify(rd.body)}`);
    assert.equal(rd.body.deleted, 0);
    assertDiskFull(await c.post('/v0/topics/jobs/ack', { node: 'w', seqs: claimed }), 'queue ack');
    assertDiskFull(await c.post('/v0/topics/auto-created', { records: [{ data: 1 }] }), 'append that would create a topic');
    assert.equal((await c.get('/v0/topics/new-topic')).status, 404, 'the refused PUT created nothing');
    assert.equal((await c.get('/v0/topics/jobs?touch=false')).body.queue.in_flight, 2, 'the refused ack left its leases');

    // Reads, watches, probes and metrics go on.
    await assertAcked(c, 'dur', acked, 'while full');
    const ready = await c.get('/v0/ready');
    assert.equal(ready.status, 200);
    assert.equal(ready.body.storage, 'disk_full');
    assert.equal(ready.body.writable, false);
    assert.equal((await c.get('/v0/health')).status, 200);
    assert.match((await c.get('/v0/metrics')).text, /^spool_storage_state 1$/m);
    const session = await c.post('/v0/watch', { topics: { dur: { from_seq: 0 } } });
    assert.equal(session.status, 200, 'a watch session while the disk is full');
    const w = await openStream(srv.url, session.body.wid);
    try {
      const first = await w.nextEvent('record', 10_000);
      assert.equal(first.data.records[0].data.i, 0);
    } finally {
      await w.close();
    }

    // Space returns: writes succeed again within 5 s, without a restart.
    fs.unlinkSync(filler);
    for (const f of settled) fs.unlinkSync(f);
    const freedAt = Date.now();
    for (;;) {
      const r = await c.post('/v0/topics/dur', { records: [rec(acked.length)] });
      if (r.status === 200) {
        acked.push(acked.length);
        break;
      }
      assertDiskFull(r, 'refused until space returns');
      assert.ok(Date.now() - freedAt < 5000, 'writes resumed within 5 s of space returning');
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal((await c.get('/v0/ready')).body.storage, 'ok');

    // Full again, then SIGKILL and a restart on the full disk.
    const filler2 = fill(inside, 'filler-2');
    for (let i = 0; i < 5000; i++) {
      const r = await c.post('/v0/topics/dur', { records: [rec(acked.length)] });
      if (r.status !== 200) {
        assertDiskFull(r, `full again (server log: ${srv.stderr().slice(-1500)})`);
        break;
      }
      acked.push(acked.length);
    }
    await srv.kill();
    // Whatever the killed server left free goes too, and so does a WAL file it had prepared but not
    // written (recovery would delete it and free its space): the restart cannot even create its
    // first WAL file, and must still recover and serve reads.
    // Recovery then gives back what it can (the zeros after the log's end, WAL files its snapshot
    // covers), so it may start writable; whatever it frees is taken again, and the restarted
    // server must refuse writes as cleanly.
    removePreparedWalFiles(inside('data'));
    const filler3 = fill(inside, 'filler-3');
    srv = await start();
    c = client(srv.url);
    assert.equal((await c.get('/v0/ready')).status, 200, 'recovered on a full disk');
    await assertAcked(c, 'dur', acked, 'after a SIGKILL restart on a full disk');
    const settled2 = await fillUntilSettled(inside, 'settle-2');
    for (let i = 0; i < 5000; i++) {
      const r = await c.post('/v0/topics/dur', { records: [rec(acked.length)] });
      if (r.status !== 200) {
        assertDiskFull(r, 'append after the restart');
        break;
      }
      acked.push(acked.length);
    }
    assert.equal((await c.get('/v0/ready')).body.storage, 'disk_full', 'full after the restart');

    // Space returns once more: writes again within 5 s, everything acknowledged still there.
    fs.unlinkSync(filler2);
    fs.unlinkSync(filler3);
    for (const f of settled2) fs.unlinkSync(f);
    const freed2 = Date.now();
    for (;;) {
      const r = await c.post('/v0/topics/dur', { records: [rec(acked.length)] });
      if (r.status === 200) {
        acked.push(acked.length);
        break;
      }
      assertDiskFull(r, 'refused until space returns (after the restart)');
      assert.ok(Date.now() - freed2 < 5000, 'writes resumed within 5 s after the restart too');
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal((await c.post('/v0/topics/jobs/ack', { node: 'w', seqs: claimed })).body.acked, 2, 'the queue acks now');
    await assertAcked(c, 'dur', acked, 'at the end');
    assert.equal(await srv.stop(), 0, 'a clean exit');
  },
);

test(
  'SIGTERM on a full disk exits promptly and cleanly, and a restart serves every acknowledged record',
  { skip, timeout: 120_000 },
  async () => {
    const { inside, start } = await tmpfsServer({ SERVICE_SHUTDOWN_GRACE_MS: '20000' });
    let srv: Server = await start();
    let c = client(srv.url);
    assert.equal((await c.put('/v0/topics/dur', { durability: 'fsync' })).status, 201);
    assert.equal((await c.put('/v0/topics/dsk', { durability: 'disk' })).status, 201);
    const acked: Record<string, number[]> = { dur: [], dsk: [] };
    const filler = fill(inside, 'filler-1');
    fs.truncateSync(filler, fs.statSync(filler).size - 12 * 1024 * 1024);
    let full = false;
    for (let i = 0; i < 20_000 && !full; i++) {
      const topic = i % 2 === 0 ? 'dur' : 'dsk';
      const r = await c.post(`/v0/topics/${topic}`, { records: [rec(acked[topic]!.length)] });
      if (r.status === 200) acked[topic]!.push(acked[topic]!.length);
      else {
        assertDiskFull(r, 'append on a full disk');
        full = true;
      }
    }
    assert.ok(full, 'the disk filled up');
    const t0 = Date.now();
    srv.proc.kill('SIGTERM');
    const code = await srv.stop();
    const tookMs = Date.now() - t0;
    assert.equal(code, 0, `a clean exit on a full disk (log: ${srv.stderr().slice(-2000)})`);
    assert.ok(tookMs < 5000, `SIGTERM on a full disk took ${tookMs} ms (grace 20000)`);
    assert.match(srv.stderr(), /final checkpoint skipped/, 'the log says why there was no final checkpoint');

    fs.unlinkSync(filler);
    srv = await start();
    c = client(srv.url);
    await assertAcked(c, 'dur', acked.dur!, 'fsync topic after the restart');
    await assertAcked(c, 'dsk', acked.dsk!, 'disk topic after the restart');
    assert.equal(await srv.stop(), 0);
  },
);

test(
  'SIGTERM on a full disk under concurrent appends: requests stuck behind the WAL are answered, the drain ends, nothing acknowledged is lost',
  { skip, timeout: 120_000 },
  async () => {
    const { inside, start } = await tmpfsServer({ SERVICE_SHUTDOWN_GRACE_MS: '20000' });
    let srv: Server = await start();
    let c = client(srv.url);
    assert.equal((await c.put('/v0/topics/dsk', { durability: 'disk' })).status, 201);
    const filler = fill(inside, 'filler-1');
    fs.truncateSync(filler, fs.statSync(filler).size - 12 * 1024 * 1024);
    const acked: number[] = [];
    const answers = new Map<number, number>();
    let next = 0;
    let refused = 0;
    let stop = false;
    // Sixteen appenders keep going through the fill and the SIGTERM: some requests are in flight
    // while the WAL cannot take their frames.
    const writer = async () => {
      while (!stop) {
        const i = next++;
        let status: number;
        try {
          const r = await c.post('/v0/topics/dsk', { records: [rec(i)] });
          status = r.status;
        } catch {
          return; // the server closed the connection: this request's outcome is unknown
        }
        answers.set(status, (answers.get(status) ?? 0) + 1);
        if (status === 200) acked.push(i);
        else if (status === 429) refused++;
        else assert.equal(status, 503, `an append answers 200, 429 or 503 while full or draining, got ${status}`);
      }
    };
    const writers = Array.from({ length: 16 }, writer);
    const deadline = Date.now() + 60_000;
    while (refused < 20) {
      assert.ok(Date.now() < deadline, 'the disk filled up');
      await new Promise((r) => setTimeout(r, 50));
    }
    const t0 = Date.now();
    srv.proc.kill('SIGTERM');
    const code = await srv.stop();
    const tookMs = Date.now() - t0;
    stop = true;
    await Promise.all(writers);
    assert.equal(code, 0, `a clean exit on a full disk (answers ${JSON.stringify([...answers])}; log: ${srv.stderr().slice(-2000)})`);
    assert.ok(tookMs < 5000, `SIGTERM on a full disk took ${tookMs} ms (grace 20000)`);

    fs.unlinkSync(filler);
    srv = await start();
    c = client(srv.url);
    // Every acknowledged record is there (others may be too: a request cut off by the exit).
    const got = new Set<number>();
    for (let from = 0; ;) {
      const d = await c.post('/v0/topics/dsk/diff', { from_seq: from, limit: 1000 });
      for (const r of d.body.records) got.add(r.data.i);
      if (d.body.caught_up) break;
      from = d.body.next_from_seq;
    }
    for (const i of acked) assert.ok(got.has(i), `acknowledged record ${i} survived`);
    assert.equal(await srv.stop(), 0);
  },
);
