// `spool replay <trace>`: rebuilds the traced actors in-process (no threads, fs or ports), feeds
// them their recorded inputs with the recorded time, query answers and seed, and compares every
// effect with the recorded one, reporting the first divergence (DESIGN 7). Replay is exact
// because an actor is a function of its initial state, its seed and its timed inputs.
import fs from 'node:fs';
import { TopicActor } from '../actors/topic/topicActor.js';
import { applyInput, ActorInput } from '../actors/topic/inputs.js';
import type { ActorCtx } from '../actors/topic/ctx.js';
import { publishSummary } from '../actors/topic/ctx.js';
import type { WatchEvent } from '../core/messages.js';
import { seededRng, Rng } from '../core/rng.js';
import { decodeTraceValue, encodeTraceValue, TraceHeader, TraceLine } from './traceCodec.js';

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
}

export interface ReplayOptions {
  topic?: string;
  until?: number;
}

class ReplayCtx implements ActorCtx {
  readonly out: unknown[] = [];
  private qi = 0;
  private nextTopicId = 1;
  constructor(
    readonly now: number,
    readonly rng: Rng,
    private readonly q: unknown[],
  ) {}
  private rec(name: string, ...args: unknown[]): void {
    this.out.push(JSON.parse(encodeTraceValue([name, ...args])));
  }
  private ask<T>(fallback: T): T {
    return this.qi < this.q.length ? (this.q[this.qi++] as T) : fallback;
  }
  reply = (reqId: number, result: unknown, frameNo?: number) => this.rec('reply', reqId, result, frameNo);
  submit = (frameNo: number, frame: Buffer, durable: boolean, segment?: unknown) => this.rec('submit', frameNo, frame, durable, segment);
  setTimer = (id: number, at: number) => this.rec('setTimer', id, at);
  cancelTimer = (id: number) => this.rec('cancelTimer', id);
  readCold = (token: number, topicId: number, ranges: unknown) => this.rec('readCold', token, topicId, ranges);
  textsLoaded = (topicId: number, from: number, to: number, bytes: number) => this.rec('textsLoaded', topicId, from, to, bytes);
  walCreditExhausted = () => this.ask(false);
  deferForCredit = (reqId: number) => this.rec('deferForCredit', reqId);
  rewriteSegment = (place: unknown, frame: Buffer) => this.rec('rewriteSegment', place, frame);
  newTopicId = () => this.ask(this.nextTopicId++);
  tryAcquireTopicSlot = () => this.ask(true);
  releaseTopicSlot = () => this.rec('releaseTopicSlot');
  topicCreated = (id: number) => this.rec('topicCreated', id);
  topicDeleted = (id: number) => this.rec('topicDeleted', id);
  watched = () => this.ask(false);
  publish = (ev: WatchEvent) => this.rec('publish', ...publishSummary(ev));
}

export function replayTrace(file: string, opts: ReplayOptions = {}): ReplayReport {
  const lines = fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.length > 0);
  if (lines.length === 0) throw new Error(`${file} is empty`);
  const header = JSON.parse(lines[0]!) as TraceHeader;
  if (header.kind !== 'spool-trace' || header.v !== 1) throw new Error(`${file} is not a spool trace (v1)`);
  const actors = new Map<string, TopicActor>();
  const rngs = new Map<string, Rng>();
  let seed = '';
  const report: ReplayReport = { steps: 0, actors: 0, compared: 0 };
  for (const raw of lines.slice(1)) {
    const rawLine = JSON.parse(raw) as TraceLine;
    if (opts.until !== undefined && rawLine.n > opts.until) break;
    if (opts.topic !== undefined && rawLine.a !== opts.topic) continue;
    const line = decodeTraceValue<TraceLine>(raw);
    if (line.seed !== undefined && line.seed !== seed) {
      seed = line.seed;
      rngs.clear();
    }
    let actor = actors.get(line.a);
    if (!actor) actors.set(line.a, (actor = new TopicActor(line.a, header.actor)));
    let rng = rngs.get(line.a);
    if (!rng) rngs.set(line.a, (rng = seededRng(`${seed}/${line.a}`)));
    const ctx = new ReplayCtx(line.at, rng, line.q ?? []);
    applyInput(actor, ctx, line.in as ActorInput, { segmentBytes: header.actor.segmentBytes });
    report.steps++;
    if (rawLine.out === undefined) continue;
    const expected = rawLine.out.map((o) => JSON.stringify(o));
    const actual = ctx.out.map((o) => JSON.stringify(o));
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
        report.actors = actors.size;
        return report;
      }
    }
  }
  report.actors = actors.size;
  return report;
}
