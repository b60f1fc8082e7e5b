// The writer of a topic worker's snapshot section (format: snapshotSectionFormat.ts,
// docs/FORMAT.md "Snapshots"): a worker's checkpoint step adds its parts, sleepingLines.ts encodes
// the lines of sleeping topics ahead. Parts are written as bytes into chunks: never one string of
// a million parts (V8 caps a string near 512 MB), nor a string per part; lines of sleeping topics
// kept from an earlier checkpoint join by reference (addLines). Runs in topic workers.
import type { TopicConfig } from '../protocol/topicConfig.js';
import type { TopicPart } from '../format/topicPart.js';
import { writeUint } from '../core/decimal.js';
import { crc32 } from 'node:zlib';
import { invariant } from '../core/invariant.js';
import {
  KEY_C,
  KEY_CREATED,
  KEY_ID,
  KEY_NAME,
  KEY_OWN,
  KEY_FILES,
  KEY_RESERVED,
  KEY_RUNS,
  KEY_WM,
  withFirstTs,
  type SectionPacks,
  type SectionWatermarks,
  type SleepingRow,
} from './snapshotSectionFormat.js';

/** Bytes per chunk of a section being written. */
const CHUNK_BYTES = 1 << 20;

export interface EncodedSection {
  bytes: Uint8Array;
  topics: number;
}

/** Builds a section part by part (a worker's checkpoint step). */
export class SectionWriter {
  private readonly configIdx = new Map<TopicConfig, number>();
  private readonly configs: TopicConfig[] = [];
  /**
   * The part lines, written straight into chunks of bytes (no string per part), in order:
   * `chunks`, then buf[start, at) (the bytes of `buf` before `start` are in `chunks` already).
   */
  private readonly chunks: Uint8Array[] = [];
  private buf = Buffer.allocUnsafeSlow(CHUNK_BYTES);
  /** The buffers this writer allocated (not pooled, not shared): what pieces() lets a caller transfer. */
  private readonly own: ArrayBuffer[] = [this.buf.buffer as ArrayBuffer];
  private start = 0;
  private at = 0;
  private topics = 0;
  /** Where a capture began (beginCapture): chunks.length, start and at then. */
  private capture: { chunk: number; start: number; at: number } | undefined;

  /**
   * `configs` take the indices 0..n-1, in order, whether or not a part names them: lines encoded
   * for another section seeded with the same list (sleepingLines.ts) name the same configs.
   */
  constructor(configs: readonly TopicConfig[] = []) {
    for (const c of configs) {
      this.configIdx.set(c, this.configs.length);
      this.configs.push(c);
    }
  }

  /** Parts added so far. */
  get topicCount(): number {
    return this.topics;
  }

  /**
   * Appends `lines` whole part lines encoded earlier (by a writer seeded with the same configs),
   * by reference: `bytes` must not change while this writer is in use.
   */
  addLines(bytes: Uint8Array, lines: number): void {
    invariant(!this.capture, 'addLines during a capture');
    if (this.at > this.start) this.chunks.push(this.buf.subarray(this.start, this.at));
    this.start = this.at;
    if (bytes.length > 0) this.chunks.push(bytes);
    this.topics += lines;
  }

  /** Starts collecting the bytes of the parts added from now on (endCapture returns a copy). */
  beginCapture(): void {
    this.capture = { chunk: this.chunks.length, start: this.start, at: this.at };
  }

  /** A copy of the bytes added since beginCapture. */
  endCapture(): Buffer {
    const c = this.capture;
    invariant(c, 'endCapture without beginCapture');
    this.capture = undefined;
    if (c.chunk === this.chunks.length) return Buffer.from(this.buf.subarray(c.at, this.at));
    // chunks[c.chunk] is the buffer current at the capture, from its `start` on.
    const parts = [
      this.chunks[c.chunk]!.subarray(c.at - c.start),
      ...this.chunks.slice(c.chunk + 1),
      this.buf.subarray(this.start, this.at),
    ];
    return Buffer.concat(parts);
  }

  /**
   * A part; `wm` when the topic is quiet (its own file, if any, in `wm`), else `own`: the first
   * seq and the fsynced bytes of its newest own segment file, when any are (docs/FORMAT.md "Snapshots").
   */
  add(part: TopicPart, runs?: readonly number[], wm?: SectionWatermarks, own?: readonly [number, number], files?: readonly number[]): void {
    this.head(part.id, part.name, part.config, part.created_ms, part.reserved, part);
    if (part.queue !== undefined) this.ascii(`,"queue":${JSON.stringify(part.queue)}`);
    if (part.routers_applied !== undefined) this.ascii(`,"routers_applied":${JSON.stringify(part.routers_applied)}`);
    if (part.trim_markers !== undefined) this.ascii(`,"trim_markers":${JSON.stringify(part.trim_markers)}`);
    this.end(runs, runs?.length ?? 0, wm, withFirstTs(part.config), own, files);
  }

  /**
   * A sleeping topic's part and watermarks straight from its table row (checkpoints of a million
   * sleeping topics make no record object each), `reserved` as the checkpoint records it.
   * `unsynced`: its own file is not durable whole yet, only [first seq, bytes] of it: the part is
   * written as a busy topic's, no watermarks (recovery loads it).
   */
  addRow(d: SleepingRow, reserved: number, runs: readonly number[], runsLen: number, unsynced?: readonly [number, number]): void {
    this.head(d.id, d.name, d.config, d.created_ms, reserved, d.retention);
    if (d.queue !== undefined) this.ascii(`,"queue":${JSON.stringify(d.queue)}`);
    if (unsynced) this.end(runs, runsLen, undefined, false, unsynced);
    else this.end(runs, runsLen, d, withFirstTs(d.config));
  }

  private head(
    id: number,
    name: string,
    config: TopicConfig,
    createdMs: number,
    reserved: number,
    retention: Partial<TopicPart> | undefined,
  ): void {
    let c = this.configIdx.get(config);
    if (c === undefined) {
      c = this.configs.length;
      this.configs.push(config);
      this.configIdx.set(config, c);
    }
    // Names are [A-Za-z0-9._:-] (docs/API.md "Conventions"): no escaping. The rare fields go through JSON.stringify.
    this.ascii(KEY_ID);
    this.int(id);
    this.ascii(KEY_NAME);
    this.ascii(name);
    this.ascii(KEY_C);
    this.int(c);
    this.ascii(KEY_CREATED);
    this.int(createdMs);
    this.ascii(KEY_RESERVED);
    this.int(reserved);
    if (retention?.evict_floor !== undefined)
      this.ascii(
        `,"evict_floor":${retention.evict_floor},"ledger":${JSON.stringify(retention.ledger ?? [])},"dead_below":${retention.dead_below ?? 0},"deleted":${JSON.stringify(retention.deleted ?? [])}`,
      );
  }

  private end(
    runs: readonly number[] | undefined,
    runsLen: number,
    wm: SectionWatermarks | undefined,
    firstTs: boolean,
    own?: readonly [number, number],
    files?: readonly number[],
  ): void {
    if (runs && runsLen > 0) {
      this.ascii(KEY_RUNS);
      for (let i = 0; i < runsLen; i++) {
        if (i > 0) this.byte(0x2c);
        this.int(runs[i]!);
      }
      this.byte(0x5d);
    }
    if (wm) {
      // WM_FIELDS order.
      this.ascii(KEY_WM);
      this.int(wm.head);
      this.byte(0x2c);
      this.int(wm.count);
      this.byte(0x2c);
      this.int(wm.bytes);
      this.byte(0x2c);
      this.int(wm.earliest);
      this.byte(0x2c);
      this.int(wm.last_ts_ms);
      this.byte(0x2c);
      this.int(wm.packed_bytes);
      if (firstTs) {
        this.byte(0x2c);
        this.int(wm.first_ts_ms);
      }
      this.byte(0x5d);
      if (wm.own_first_seq) own = [wm.own_first_seq, wm.own_bytes ?? 0];
    } else if (own?.[1] === 0) own = undefined; // nothing of it fsynced: nothing to record
    if (own) {
      this.ascii(KEY_OWN);
      this.int(own[0]);
      this.byte(0x2c);
      this.int(own[1]);
      this.byte(0x5d);
    }
    if (files && files.length > 0) {
      this.ascii(KEY_FILES);
      for (let i = 0; i < files.length; i++) {
        if (i > 0) this.byte(0x2c);
        this.int(files[i]!);
      }
      this.byte(0x5d);
    }
    this.byte(0x7d);
    this.byte(0x0a);
    this.topics++;
  }

  /** Room for `n` more bytes in the current chunk (a fresh chunk when it is full; pieces lists them). */
  private room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    this.chunks.push(this.buf.subarray(this.start, this.at));
    this.buf = Buffer.allocUnsafeSlow(Math.max(CHUNK_BYTES, n));
    this.own.push(this.buf.buffer as ArrayBuffer);
    this.start = 0;
    this.at = 0;
  }

  private byte(b: number): void {
    this.room(1);
    this.buf[this.at++] = b;
  }

  /**
   * A string of ASCII characters: names and keys char by char (a call into C++ per short string
   * cost more than the copy), longer JSON (rare queue and retention fields) through Buffer.write.
   */
  private ascii(s: string): void {
    if (s.length > 64) {
      this.room(s.length * 3);
      this.at += this.buf.write(s, this.at, 'utf8');
      return;
    }
    this.room(s.length);
    const b = this.buf;
    let at = this.at;
    for (let i = 0; i < s.length; i++) b[at++] = s.charCodeAt(i);
    this.at = at;
  }

  /** A non-negative integer below 2^53, in decimal, without making a string (anything else as JSON). */
  private int(v: number): void {
    if (!(v >= 0 && v <= Number.MAX_SAFE_INTEGER && Math.floor(v) === v)) return this.ascii(JSON.stringify(v));
    this.room(16);
    this.at = writeUint(this.buf, this.at, v);
  }

  /**
   * The section as its pieces in order (the first line, then the chunks: no copy of lines joined
   * by reference), their CRC-32, the topic count, and the buffers the writer allocated (a caller
   * may transfer them: the writer is done with).
   */
  pieces(packs: SectionPacks): { pieces: Uint8Array[]; crc: number; topics: number; own: ArrayBuffer[] } {
    const head = Buffer.from(`${JSON.stringify({ configs: this.configs, packs })}\n`, 'utf8');
    const pieces = [head, ...this.chunks, this.buf.subarray(this.start, this.at)].filter((p) => p.byteLength > 0);
    let crc = 0;
    for (const p of pieces) crc = crc32(p, crc);
    return { pieces, crc, topics: this.topics, own: this.own };
  }

  /** The section's bytes in one buffer and its topic count (tests and tools; a checkpoint takes pieces). */
  finish(packs: SectionPacks): EncodedSection {
    const { pieces, topics } = this.pieces(packs);
    return { bytes: Buffer.concat(pieces), topics };
  }
}
