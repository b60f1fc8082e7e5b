// Watch sessions (docs/API.md "Watch"; docs/WATCH.md "Resume"): a subscription plus the authoritative per-topic
// cursor map, in memory only, on the main thread. The registry mints wids from crypto (they are
// bearer capabilities, never from the seeded RNG), enforces the session cap and collects idle
// sessions lazily, on every POST and every stream open.
import crypto from 'node:crypto';
import type { Clock } from '../../core/clock.js';
import { encodeCursor } from './cursor.js';

export interface WatchOptions {
  /** Records per record frame. */
  limit: number;
  /** Soft payload budget of one record frame (at least one record is always sent). */
  maxBatchBytes: number;
  heartbeatMs: number;
  includeMeta: boolean;
  includeTags: boolean;
  includeData: boolean;
  /** Node names whose records are skipped (on dedupe_node topics), or null. */
  nodes: string[] | null;
  /** `strong`: deliver only what is durable. */
  strong: boolean;
}

export class WatchSession {
  /** Open streams on this session (two GETs at once are allowed, docs/WATCH.md "Resume"). */
  streams = 0;
  /** Latest of creation, stream open and stream close (docs/WATCH.md "Resume"). */
  lastAccessMs: number;
  private idCache: string | undefined;

  constructor(
    readonly wid: string,
    readonly opts: WatchOptions,
    /** Topic names, ascending: the order of the cursor map. */
    readonly names: readonly string[],
    /** Per-topic cursor (last seq delivered or skipped past), parallel to `names`. */
    private readonly cursors: number[],
    nowMs: number,
    /**
     * The key that created the session (auth enabled): only it opens the stream (docs/API.md "Authentication"), and
     * the stream is charged to it. Its allowlist was checked against every topic at creation,
     * and the topic set never changes, so the stream cannot deliver a topic outside it.
     */
    readonly ownerKeyId?: number,
  ) {
    this.lastAccessMs = nowMs;
  }

  cursor(i: number): number {
    return this.cursors[i]!;
  }

  setCursor(i: number, seq: number): void {
    if (this.cursors[i] === seq) return;
    this.cursors[i] = seq;
    this.idCache = undefined;
  }

  /** Last-Event-ID may only rewind (docs/API.md "GET /v0/watch/:wid"): each named topic goes to min(stored, given). */
  rewind(given: Map<string, number>): void {
    for (let i = 0; i < this.names.length; i++) {
      const g = given.get(this.names[i]!);
      if (g !== undefined && g < this.cursors[i]!) this.setCursor(i, g);
    }
  }

  /** The composite cursor for a frame's `id:` line. */
  frameId(): string {
    return (this.idCache ??= encodeCursor(this.names, this.cursors));
  }
}

export class WatchRegistry {
  private readonly sessions = new Map<string, WatchSession>();

  constructor(
    private readonly clock: Clock,
    readonly ttlMs: number,
    /** SERVICE_MAX_WATCH_SESSIONS; 0 = no cap. */
    readonly maxSessions: number,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  /** Idle GC (docs/WATCH.md "Resume"): no stream open and idle longer than the ttl. */
  collect(): void {
    const now = this.clock.now();
    for (const [wid, s] of this.sessions) {
      if (s.streams === 0 && now - s.lastAccessMs > this.ttlMs) this.sessions.delete(wid);
    }
  }

  /** A new session, or undefined at the cap (after collecting). */
  create(opts: WatchOptions, start: Map<string, number>, ownerKeyId?: number): WatchSession | undefined {
    this.collect();
    if (this.maxSessions > 0 && this.sessions.size >= this.maxSessions) return undefined;
    const wid = `wid_${crypto.randomBytes(16).toString('base64url')}`;
    const names = [...start.keys()].sort();
    const s = new WatchSession(
      wid,
      opts,
      names,
      names.map((n) => start.get(n)!),
      this.clock.now(),
      ownerKeyId,
    );
    this.sessions.set(wid, s);
    return s;
  }

  get(wid: string): WatchSession | undefined {
    return this.sessions.get(wid);
  }

  /** Records a stream open (+1) or close (-1); both count as access. */
  touch(s: WatchSession, delta: 1 | -1): void {
    s.streams += delta;
    s.lastAccessMs = this.clock.now();
  }
}
