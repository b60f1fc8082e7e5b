// The composite watch cursor (docs/API.md "Watch frames"): base64url without padding of compact JSON mapping
// each topic of the session to its seq, keys ascending. Sent as every data-bearing frame's
// `id:`, accepted back as the POST `cursor` field (strict, docs/API.md "POST /v0/watch") and as `Last-Event-ID` (lenient).

/** Encodes a cursor map whose keys are already in ascending order. */
export function encodeCursor(sortedNames: readonly string[], seqs: readonly number[]): string {
  let json = '{';
  for (let i = 0; i < sortedNames.length; i++) {
    if (i > 0) json += ',';
    json += `${JSON.stringify(sortedNames[i])}:${seqs[i]}`;
  }
  json += '}';
  return Buffer.from(json, 'utf8').toString('base64url');
}

/** Decodes a cursor; undefined unless it is base64url (padding optional) of an object of u64s. */
export function decodeCursor(text: string): Map<string, number> | undefined {
  if (!/^[A-Za-z0-9_-]*={0,2}$/.test(text)) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const out = new Map<string, number>();
  for (const [k, seq] of Object.entries(v as Record<string, unknown>)) {
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) return undefined;
    out.set(k, seq);
  }
  return out;
}
