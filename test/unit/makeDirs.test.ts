// makeDirsSync / makeDirs (src/storage/fs.ts): `mkdir -p` that returns the first directory it made,
// and that fails, rather than retrying for ever as Node's recursive mkdir does, where a directory
// cannot be made although its parent exists (/proc/x).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { makeDirs, makeDirsSync } from '../../src/storage/fs.js';

for (const [name, make] of [
  ['makeDirsSync', async (d: string) => makeDirsSync(d)],
  ['makeDirs', makeDirs],
] as const) {
  test(`${name} makes missing parents and returns the first one it made`, async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'spool-mkdirs-'));
    try {
      assert.equal(await make(path.join(root, 'a', 'b', 'c')), path.join(root, 'a'));
      assert.ok(fs.statSync(path.join(root, 'a', 'b', 'c')).isDirectory());
      assert.equal(await make(path.join(root, 'a', 'b')), undefined, 'an existing directory');
      fs.writeFileSync(path.join(root, 'file'), 'x');
      await assert.rejects(async () => make(path.join(root, 'file')), { code: 'EEXIST' });
      await assert.rejects(async () => make(path.join(root, 'file', 'below')), { code: 'ENOTDIR' });
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  test(
    `${name} fails at once where a directory cannot be made under an existing parent`,
    { skip: !fs.existsSync('/proc/self') },
    async () => {
      await assert.rejects(async () => make('/proc/spool-no-such/x'), { code: 'ENOENT' });
    },
  );
}
