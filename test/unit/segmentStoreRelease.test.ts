// A sleeping topic's entry in the segment store (src/storage/segmentStore.ts `release`): once its
// topic went to sleep with every frame written, its descriptor closes and the store forgets it
// when nothing is left to sync (at once, or after the next flushAll); appends after a wake go on
// in the same file, and every frame is durable after the next flushAll.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { SegmentStore } from '../../src/storage/segmentStore.js';
import { segmentFileName, topicDir, topicsDir } from '../../src/format/layout.js';
import { encodeJsonFrame } from '../../src/format/frame.js';
import { FrameType } from '../../src/format/constants.js';
import { SimDisk } from '../support/simDisk.js';
import { sleep } from '../support/walRig.js';

const DATA = '/srv/spool';
const A = 0x01_000001;
const file = path.join(topicDir(DATA, A), segmentFileName(1));

test('a released topic is forgotten once synced, and appends after it go on in its file', async () => {
  const disk = new SimDisk({ durableMkdir: true });
  disk.fs().mkdirSync(topicsDir(DATA));
  disk.syncAll();
  const store = new SegmentStore(disk.fs(), DATA);
  const frames: Buffer[] = [];
  let written = 0;
  const append = (i: number) => {
    const f = encodeJsonFrame(FrameType.APPEND, A, { i, pad: 'z'.repeat(30) });
    store.append({ topicId: A, segFirstSeq: 1, offset: frames.reduce((n, b) => n + b.length, 0) }, f, () => written++);
    frames.push(f);
  };
  const settle = async () => {
    for (let i = 0; i < 100 && !(store.allWritten(A) && written === frames.length); i++) await sleep(1);
  };
  append(0);
  append(1);
  await settle();
  store.release(A);
  await sleep(5);
  assert.equal(store.openCount, 0, 'its descriptor closed');
  assert.equal(store.topicCount, 1, 'kept while its writes are not synced');
  await store.flushAll();
  assert.equal(store.topicCount, 0, 'forgotten once synced');

  // A wake and an append: a fresh entry reopens the same file at the topic's offset.
  append(2);
  await settle();
  assert.equal(store.topicCount, 1);
  store.release(A);
  append(3); // appended to before the release ran: kept
  await settle();
  await store.flushAll();
  assert.equal(store.topicCount, 1, 'an append after the release keeps the entry');
  await store.close();
  disk.crash('durable-only');
  assert.deepEqual(disk.fs().readFileSync(file), Buffer.concat(frames), 'every frame durable, in order, in one file');
});
