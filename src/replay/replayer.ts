// `spool replay <trace>`: rebuilds the traced actors in-process (no threads, fs or ports), feeds
// them their recorded inputs with the recorded time, query answers and seed, and compares every
// effect with the recorded one, reporting the first divergence (docs/ARCHITECTURE.md "Traces and replay"). Replay is exact
// because an actor is a function of its initial state, its seed and its timed inputs.
import fs from 'node:fs';
import { TopicActor } from '../actors/topic/topicActor.js';
import { applyInput, ActorInput } from '../actors/topic/inputs.js';
import { StepCtx, type EffectSink, type Queries } from '../actors/ctx.js';
import { seededRng, Rng } from '../core/rng.js';
import { decodeTraceValue, TraceHeader, TraceLine } from '../core/traceCodec.js';

export interface Divergence {
  step: number;
  actor: string;
  index: number;
  expected: unknown;
  actual: unknown;
}

export interface ReplayReport {
  steps: number;
  actors: number;
  compared: number;
  divergence?: Divergence;
  /** The trace's last line was cut short (a process killed mid-write): its number; the lines before it were replayed. */
  cutLine?: number;
}

export interface ReplayOptions {
  topic?: string;
  until?: number;
}

/**
 * Answers the actor's queries with the answers recorded for the step, in call order (with a
 * fallback when a trace predates a query).
 */
class RecordedQueries implements Queries {
  private qi = 0;
  private nextTopicId = 1;
  q: unknown[] = [];

  reset(q: unknown[]): void {
    this.q = q;
    this.qi = 0;
  }
  private next<T>(fallback: T): T {
    return this.qi < this.q.length ? (this.q[this.qi++] as T) : fallback;
  }
  walCreditExhausted = () => this.next(false);
  newTopicId = () => this.next(this.nextTopicId++);
  tryAcquireTopicSlot = () => this.next(true);
  watched = () => this.next(false);
  bootEpoch = () => this.next(0);
  storageState = () => this.next(0);
  volumeHas = () => this.next(true);
  // A trace from before this query refused every write on a full disk.
  walRoomFor = () => this.next(false);
}

/** Replay carries nothing out: effects are only recorded (by StepCtx) and compared. */
const DISCARD: EffectSink = { run: () => undefined };

export function replayTrace(file: string, opts: ReplayOptions = {}): ReplayReport {
  const text = fs.readFileSync(file, 'utf8');
  const lines = text.split('\n').filter((l) => l.length > 0);
  if (lines.length === 0) throw new Error(`${file} is empty`);
  // A trace's writer dies with its process: a last line without its newline was cut short, and
  // the lines before it are still a trace to replay.
  const cut = !text.endsWith('\n');
  const header = JSON.parse(lines[0]!) as TraceHeader;
  if (header.kind !== 'spool-trace' || header.v !== 2) throw new Error(`${file} is not a spool trace (v2)`);
  const actors = new Map<string, TopicActor>();
  const rngs = new Map<string, Rng>();
  let seed = '';
  const queries = new RecordedQueries();
  const report: ReplayReport = { steps: 0, actors: 0, compared: 0 };
  const names = new Set<string>();
  for (let li = 1; li < lines.length; li++) {
    const raw = lines[li]!;
    let rawLine: TraceLine;
    try {
      rawLine = JSON.parse(raw) as TraceLine;
    } catch (err) {
      if (cut && li === lines.length - 1) {
        report.cutLine = li + 1;
        break;
      }
      throw new Error(`${file} line ${li + 1}: not a trace line: ${(err as Error).message}`);
    }
    if (opts.until !== undefined && rawLine.n > opts.until) break;
    if (opts.topic !== undefined && rawLine.a !== opts.topic) continue;
    const line = decodeTraceValue<TraceLine>(raw);
    if (line.seed !== undefined && line.seed !== seed) {
      seed = line.seed;
      rngs.clear();
    }
    let actor = actors.get(line.a);
    if (!actor) actors.set(line.a, (actor = new TopicActor(line.a, header.actor)));
    names.add(line.a);
    let rng = rngs.get(line.a);
    if (!rng) rngs.set(line.a, (rng = seededRng(`${seed}/${line.a}`)));
    queries.reset(line.q ?? []);
    const out: unknown[] = [];
    const ctx = new StepCtx(DISCARD, queries).begin(line.at, rng, { q: undefined, out });
    applyInput(actor, ctx, line.in as ActorInput, {
      segmentBytes: header.actor.segmentBytes,
      packBytes: header.actor.packBytes ?? 0,
      packFramesMax: header.actor.packFramesMax,
      packFramesFromBytes: header.actor.packFramesFromBytes,
    });
    report.steps++;
    // The host dropped an idle actor after this step (ActorHost.drop): so does the replay, RNG too.
    if (actor.idle()) {
      actors.delete(line.a);
      rngs.delete(line.a);
    }
    if (rawLine.out === undefined) continue;
    const expected = rawLine.out.map((o) => JSON.stringify(o));
    const actual = out.map((o) => JSON.stringify(o));
    for (let i = 0; i < Math.max(expected.length, actual.length); i++) {
      report.compared++;
      if (expected[i] !== actual[i]) {
        report.divergence = {
          step: line.n,
          actor: line.a,
          index: i,
          expected: expected[i] === undefined ? undefined : JSON.parse(expected[i]!),
          actual: actual[i] === undefined ? undefined : JSON.parse(actual[i]!),
        };
        report.actors = names.size;
        return report;
      }
    }
  }
  report.actors = names.size;
  return report;
}
