// `spool replay <trace> [--topic T] [--until N]`: replays a recorded actor trace in-process and
// reports the first divergence (docs/ARCHITECTURE.md "Traces and replay"). Exit 0 when identical,
// 1 on a divergence, 4 when --topic names no actor of the trace. A trace whose last line was cut
// short (its server killed mid-write) replays up to that line, and says so.
import { replayTrace } from '../replay/replayer.js';
import { EXIT } from './common.js';

export function replay(file: string, opts: { topic?: string; until?: number }): number {
  const report = replayTrace(file, { topic: opts.topic, until: opts.until });
  if (report.cutLine !== undefined)
    process.stderr.write(`spool replay: line ${report.cutLine} of ${file} was cut short; replayed the lines before it\n`);
  if (report.divergence) {
    const d = report.divergence;
    process.stdout.write(
      `divergence at step ${d.step} (actor ${d.actor}, effect #${d.index}):\n  expected ${JSON.stringify(d.expected)}\n  actual   ${JSON.stringify(d.actual)}\n`,
    );
    return EXIT.failure;
  }
  if (opts.topic !== undefined && report.steps === 0) {
    process.stderr.write(`spool replay: no step of topic ${opts.topic} in ${file}\n`);
    return EXIT.notFound;
  }
  process.stdout.write(`replayed ${report.steps} steps of ${report.actors} actor(s); ${report.compared} effects identical\n`);
  return EXIT.ok;
}
