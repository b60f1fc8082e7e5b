// What a key with name prefixes sees of `GET /v0/metrics` (docs/API.md "Authentication"): the
// series labelled with a topic or a router it may not name are left out, as `GET /v0/topics` and
// `GET /v0/routers` leave those names out; server-wide series (totals, HTTP, WAL, pressure) stay.
// Pure; runs on the main thread, only for such keys.

/** A label carrying a name: `topic="…"` or `router="…"` (Prometheus escapes `\`, `"` and newline). */
const NAME_LABEL = /(?:^|[{,])(topic|router)="((?:[^"\\]|\\.)*)"/g;

function unescapeLabel(v: string): string {
  return v.replace(/\\(.)/g, (_m, c: string) => (c === 'n' ? '\n' : c));
}

export interface NameFilter {
  topic(name: string): boolean;
  router(name: string): boolean;
}

/** The Prometheus text without the samples naming a topic or router that `visible` refuses (HELP and TYPE lines stay). */
export function visiblePrometheus(text: string, visible: NameFilter): string {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || !line.includes('="')) {
      out.push(line);
      continue;
    }
    const brace = line.indexOf('{');
    const labels = brace < 0 ? '' : line.slice(brace, line.lastIndexOf('}') + 1);
    let keep = true;
    for (const m of labels.matchAll(NAME_LABEL)) {
      const name = unescapeLabel(m[2]!);
      if (m[1] === 'topic' ? !visible.topic(name) : !visible.router(name)) {
        keep = false;
        break;
      }
    }
    if (keep) out.push(line);
  }
  return out.join('\n');
}

/** The JSON form: `router_stats` keeps only the routers `visible` allows. */
export function visibleJson(body: Record<string, unknown>, visible: NameFilter): Record<string, unknown> {
  const stats = body.router_stats;
  if (!Array.isArray(stats)) return body;
  return { ...body, router_stats: stats.filter((r: { router?: unknown }) => typeof r.router === 'string' && visible.router(r.router)) };
}
