// `spool stats`: health, readiness and per-topic counts (docs/API.md "Health, readiness, metrics"). The per-topic figures come
// from the Prometheus text of /v0/metrics (the JSON form has totals only); a server that is not
// ready is reported, not an error, as long as it answers.
import { Command } from 'commander';
import { EXIT, clientFor, printJson, withClientOptions, type ClientOpts, type Outcome } from './common.js';
import { SpoolError } from '../client/errors.js';

export interface TopicStats {
  topic: string;
  head_seq?: number;
  earliest_seq?: number;
  records?: number;
  bytes?: number;
  queue_ready?: number;
  queue_in_flight?: number;
}

const FIELDS: Record<string, keyof Omit<TopicStats, 'topic'>> = {
  spool_topic_head_seq: 'head_seq',
  spool_topic_earliest_seq: 'earliest_seq',
  spool_topic_records_live: 'records',
  spool_topic_bytes_live: 'bytes',
  spool_topic_queue_ready: 'queue_ready',
  spool_topic_queue_in_flight: 'queue_in_flight',
};

const SAMPLE = /^(spool_topic_[a-z_]+)\{topic="((?:[^"\\]|\\.)*)"\} (\S+)$/;

/** The per-topic gauges of a Prometheus exposition, by topic, in name order. */
export function topicStats(prometheus: string): { topics: TopicStats[]; truncated: boolean } {
  const by = new Map<string, TopicStats>();
  for (const line of prometheus.split('\n')) {
    const m = SAMPLE.exec(line);
    const field = m && FIELDS[m[1]!];
    if (!m || !field) continue;
    const topic = m[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    const t = by.get(topic) ?? { topic };
    t[field] = Number(m[3]);
    by.set(topic, t);
  }
  const truncated = /^spool_topic_metrics_truncated 1$/m.test(prometheus);
  return { topics: [...by.values()].sort((a, b) => (a.topic < b.topic ? -1 : 1)), truncated };
}

function duration(ms: number): string {
  const s = Math.floor(ms / 1000);
  return s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m${s % 60}s` : `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

export function statsCommand(outcome: Outcome): Command {
  return withClientOptions(new Command('stats'))
    .description('server health, readiness and per-topic counts')
    .action(async (o: ClientOpts) => {
      const spool = clientFor(o);
      const health = await spool.health();
      let ready: Record<string, unknown>;
      try {
        ready = { ...(await spool.ready({ retries: 0 })) };
      } catch (e) {
        if (!(e instanceof SpoolError) || e.status !== 503) throw e;
        ready = { status: e.code, ...(e.detail ? { detail: e.detail } : {}) };
      }
      const { topics, truncated } = topicStats(await spool.metrics());
      delete ready.performance;
      if (o.json) {
        const { performance: _p, ...h } = health;
        printJson({ url: o.url, health: h, ready, topics, topics_truncated: truncated });
        outcome.code = EXIT.ok;
        return;
      }
      const storage = ready.storage ? `, storage ${String(ready.storage)}` : '';
      const state = ready.status === 'ready' ? `ready (${String(ready.topics)} topics${storage})` : String(ready.status);
      let text = `${o.url}  spool ${health.version}  up ${duration(health.uptime_ms)}  ${state}\n`;
      if (topics.length) {
        const rows = [['TOPIC', 'HEAD', 'EARLIEST', 'RECORDS', 'BYTES', 'READY', 'IN_FLIGHT']];
        for (const t of topics)
          rows.push(
            [t.topic, t.head_seq, t.earliest_seq, t.records, t.bytes, t.queue_ready, t.queue_in_flight].map((v) =>
              v === undefined ? '-' : String(v),
            ),
          );
        const w = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
        text += rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(w[i]!) : c.padStart(w[i]!))).join('  ')).join('\n') + '\n';
        if (truncated) text += '(per-topic figures stop at the first 1000 topics)\n';
      }
      process.stdout.write(text);
      outcome.code = EXIT.ok;
    });
}
