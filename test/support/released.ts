// Checks that code keeps no reference to a buffer after it returns: `use` gets a fresh
// ArrayBuffer of `bytes` to work on and must drop it; the buffer must then be collectable. Test
// code: it turns on --expose-gc for the test file's process.
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';

export async function assertBufferReleased(bytes: number, use: (ab: ArrayBuffer) => void, what: string): Promise<void> {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  let ref: WeakRef<ArrayBuffer> | undefined;
  (() => {
    const ab = new ArrayBuffer(bytes);
    ref = new WeakRef(ab);
    use(ab);
  })();
  await new Promise((r) => setImmediate(r)); // a WeakRef's target is kept until the job ends
  gc();
  gc();
  assert.equal(ref!.deref(), undefined, `${what}: the buffer is still referenced`);
}
