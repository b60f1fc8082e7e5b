// `spool replay <trace> [--topic T] [--until N]`: replays a recorded actor trace in-process and
// reports the first divergence (docs/ARCHITECTURE.md "Traces and replay"). Exit 0 when identical,
// 1 on a divergence.
import { replayTrace } from '../replay/replayer.js';

export function replay(file: string, opts: { topic?: string; until?: number }): number {
  const report = replayTrace(file, { topic: opts.topic, until: opts.until });
  if (report.divergence) {
    const d = report.divergence;
    process.stdout.write(
      `divergence at step ${d.step} (actor ${d.actor}, effect #${d.index}):\n  expected ${JSON.stringify(d.expected)}\n  actual   ${JSON.stringify(d.actual)}\n`,
    );
    return 1;
  }
  process.stdout.write(`replayed ${report.steps} steps of ${report.actors} actor(s); ${report.compared} effects identical\n`);
  return 0;
}
