// A node:test reporter that names every failed test once more at the very end of the run, after
// TAP's totals, so a CI log that keeps only its tail still says which test failed and why.
export default async function* failures(source) {
  const failed = [];
  for await (const ev of source) {
    if (ev.type === 'test:fail' && ev.data.details?.type !== 'suite') failed.push(ev.data);
  }
  if (failed.length === 0) return;
  yield `\n# ${failed.length} failed:\n`;
  for (const f of failed) {
    const err = f.details?.error;
    const why = String(err?.cause?.message ?? err?.message ?? '').split('\n')[0];
    yield `#   ${f.file ?? '?'}: ${f.name}: ${why}\n`;
  }
}
