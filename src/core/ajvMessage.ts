// One wording for ajv's errors in 400 replies: an enum error lists the allowed values
// ("must be one of: eventual, strong"), which ajv's own message leaves out.
import type { ErrorObject } from 'ajv';

export function describeAjvError(err: ErrorObject | undefined): string {
  if (!err) return 'bad value';
  if (err.keyword === 'enum') {
    const allowed = (err.params as { allowedValues?: unknown[] }).allowedValues ?? [];
    return `must be one of: ${allowed.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ')}`;
  }
  return err.message ?? 'bad value';
}
