// PackReaders (src/storage/packReaders.ts): a read past a pack's end is damage, a CorruptionError
// naming the file and where it ends, so a start refuses it in one line (docs/ARCHITECTURE.md
// "Checkpoints and recovery") instead of failing with a bare error and its stack.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PackReaders } from '../../src/storage/packReaders.js';
import { nodeFs } from '../../src/storage/fs.js';
import { CorruptionError } from '../../src/core/corruption.js';

test('a read past the end of a pack cut short is a CorruptionError naming the file and its end', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-packreaders-'));
  const file = path.join(dir, 'pack-1.log');
  fs.writeFileSync(file, Buffer.alloc(100, 7));
  const readers = new PackReaders(nodeFs, () => file);
  const whole = Buffer.alloc(60);
  await readers.read(0, whole, 0, 60, 40);
  assert.ok(
    whole.every((b) => b === 7),
    'a read inside the file',
  );
  await assert.rejects(readers.read(0, Buffer.alloc(80), 0, 80, 40), (err: unknown) => {
    assert.ok(err instanceof CorruptionError, String(err));
    assert.equal(err.where, file);
    assert.equal(err.offset, 100, 'where the file ends');
    assert.match(err.detail, /cut short/);
    return true;
  });
  fs.rmSync(dir, { recursive: true, force: true });
});
