// A router's forward-time filter (docs/API.md "Routers"): the tuple language of record delete (docs/API.md "Record delete"),
// `[tag, Eq, v]` or `[tag, Glob, prefix*]`, parsed on main by the same `parseMatch`. A record
// without a tag never matches; a null filter forwards everything. Pure.
import type { TagMatch } from '../../protocol/messages/router.js';

export function tagMatches(m: TagMatch, tag: string | undefined): boolean {
  if (tag === undefined) return false;
  return m.op === 'Eq' ? tag === m.value : tag.startsWith(m.value);
}

export function passesFilter(filter: TagMatch | null, tag: string | undefined): boolean {
  return filter === null || tagMatches(filter, tag);
}

/** The filter as the API shows it (the tuple form, Glob with its trailing `*`). */
export function filterTuple(filter: TagMatch | null): [string, string, string] | null {
  if (filter === null) return null;
  return ['tag', filter.op, filter.op === 'Glob' ? `${filter.value}*` : filter.value];
}
