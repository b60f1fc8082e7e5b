// RouterRegistry (docs/ARCHITECTURE.md "Routers"), main thread: the router definitions. It checks a PUT against the
// graph (re-point, fan-in, cycle), the router cap (docs/API.md "Limits", before any auto-create) and the dest's
// existence, creates missing topics, has the source topic's actor install the forwarder (which
// starts at its head: no backfill), then stores the definition (meta/routers.json). It removes
// routers with a topic (cascade), reinstalls them after a restart, and walks the upstream chain
// for read-your-writes drains. Changes are serialized, and an online backup holds them while it
// takes the file (`hold`); per-record traffic never comes here. A save that fails (a full disk)
// leaves the file stale: it is written again, whole, by the next save and by a retry timer
// (docs/ARCHITECTURE.md "Deleting on a full disk").
import { fail, type ErrorResult } from '../protocol/errors.js';
import type { TopicRequest, TopicResult } from '../protocol/messages/rpc.js';
import type { RouterDef, RouterIdFloor, RouterStats } from '../protocol/messages/router.js';
import { defaultConfig } from '../protocol/topicConfig.js';
import type { Fs } from '../storage/fs.js';
import { cycleThrough, fanInConflict, longestChainThrough, upstreamOrder, type Edge } from './routerGraph.js';
import { ROUTER_HOPS_MAX } from '../protocol/limits.js';
import { loadRouters, recreatedEnds, routerFilePath, saveRouters, type StoredRouter } from '../storage/routerStore.js';

const ROUTERS_FILE = 'meta/routers.json';

/** How often a routers file a failed save left stale is written again, until that succeeds. */
export const ROUTERS_REWRITE_MS = 1000;

/** Where the registry logs (the supervisor's logger). */
export interface RouterLog {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

/**
 * What the registry needs of the supervisor: topic requests, and the instance id of each named
 * topic (null when it does not exist), which a router is stored with.
 */
export interface RouterHost {
  request(req: TopicRequest): Promise<TopicResult>;
  instances(topics: string[]): Promise<(number | null)[]>;
  /** Live topics and the max_topics cap (0: none), so a PUT refuses before it makes any topic. */
  topicCount(): { live: number; max: number };
}

/** A PUT body, validated and defaulted on the HTTP thread. */
export type RouterInput = Omit<RouterDef, 'name' | 'id'> & { createDest: boolean };

export type PutOutcome = { ok: true; created: boolean; def: RouterDef } | ErrorResult;

function sameDef(a: RouterDef, b: Omit<RouterDef, 'id'>): boolean {
  return (
    a.preserveNode === b.preserveNode &&
    a.preserveTag === b.preserveTag &&
    a.allowCycle === b.allowCycle &&
    a.guarantee === b.guarantee &&
    JSON.stringify(a.filter) === JSON.stringify(b.filter)
  );
}

export class RouterRegistry {
  private readonly routers = new Map<string, StoredRouter>();
  private readonly byDest = new Map<string, Set<string>>();
  private nextId = 1;
  private chain: Promise<unknown> = Promise.resolve();
  /** Topics named by a router PUT that waits or runs (deleteTopic), with how many name each. */
  private readonly putEnds = new Map<string, number>();
  /** A save failed since the last one that succeeded: the file is not the definitions in memory. */
  private stale = false;
  private rewriteTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly host: RouterHost,
    private readonly fsx: Fs,
    private readonly dataDir: string,
    private readonly maxRouters: number,
    private readonly log: RouterLog,
  ) {}

  get size(): number {
    return this.routers.size;
  }

  get(name: string): StoredRouter | undefined {
    return this.routers.get(name);
  }

  /** All routers in name order. */
  all(): StoredRouter[] {
    return [...this.routers.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Routers naming `topic` as source or dest, ascending. */
  naming(topic: string): string[] {
    return this.all()
      .filter((r) => r.source === topic || r.dest === topic)
      .map((r) => r.name);
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => undefined);
    return run;
  }

  private index(r: StoredRouter): void {
    this.routers.set(r.name, r);
    let s = this.byDest.get(r.dest);
    if (!s) this.byDest.set(r.dest, (s = new Set()));
    s.add(r.name);
  }

  private unindex(name: string): StoredRouter | undefined {
    const r = this.routers.get(name);
    if (!r) return undefined;
    this.routers.delete(name);
    const s = this.byDest.get(r.dest);
    s?.delete(name);
    if (s?.size === 0) this.byDest.delete(r.dest);
    return r;
  }

  /** Stores the definitions as they are in memory (every save writes them whole). */
  private save(): Promise<void> {
    return this.write();
  }

  /**
   * Writes the file: this.nextId with `routers`, or, when absent, every router the registry
   * holds (only such a write makes a stale file current). A failure leaves the file stale and
   * is thrown; the next whole save, or the retry timer, writes it again (docs/ARCHITECTURE.md
   * "Deleting on a full disk").
   */
  private async write(routers?: StoredRouter[]): Promise<void> {
    try {
      await saveRouters(this.fsx, this.dataDir, { version: 1, nextId: this.nextId, routers: routers ?? this.all() });
    } catch (err) {
      this.stale = true;
      this.armRewrite();
      throw err;
    }
    if (routers === undefined) this.stale = false;
  }

  /** Every ROUTERS_REWRITE_MS while the file is stale, in the serialization, until a save succeeds. */
  private armRewrite(): void {
    if (this.rewriteTimer !== undefined || this.stopped) return;
    const t = setTimeout(() => {
      void this.serial(() => this.rewriteStale()).then(() => {
        if (this.rewriteTimer === t) this.rewriteTimer = undefined;
        if (this.stale) this.armRewrite();
      });
    }, ROUTERS_REWRITE_MS);
    t.unref();
    this.rewriteTimer = t;
  }

  /** Writes the file again if a failed save left it stale; never throws (it stays stale, and is retried). */
  private async rewriteStale(): Promise<void> {
    if (!this.stale) return;
    try {
      await this.save();
      this.log.info(`spool: ${ROUTERS_FILE} written again after a failed save; it holds the ${this.routers.size} router(s) there are`);
    } catch {
      // Still stale: the timer tries again (the failure that made it stale was logged).
    }
  }

  /**
   * Shutdown: one last rewrite of a stale file (never throws), then no more. A clean restart then
   * finds the file as the registry was, not one that still lists routers of deleted topics.
   */
  async close(): Promise<void> {
    this.stop();
    await this.serial(() => this.rewriteStale());
  }

  /** An abandoned supervisor (or after close): no more rewrites; a stale file is the next start's (load). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.rewriteTimer);
    this.rewriteTimer = undefined;
  }

  /**
   * A new router id, stored (as the file's nextId, with `routers` as they are) before any copy
   * batch can carry it: every router id in a topic's progress is below the stored nextId, which
   * `spool verify` checks (a routers file missing or older than the data). `routers`: those to
   * store with it when not the registry's own (load, while it rebuilds them).
   */
  private async newId(routers?: StoredRouter[]): Promise<number> {
    const id = this.nextId++;
    await this.write(routers);
    return id;
  }

  /**
   * Runs `fn` while no definition changes: an online backup reads its WAL position and takes
   * the routers file inside, so the file it holds is the one as of that position
   * (src/supervisor/backup.ts). A stale file is written again first (if it still cannot be,
   * the backup holds it stale, as a restart would find it).
   */
  hold<T>(fn: () => Promise<T>): Promise<T> {
    return this.serial(async () => {
      await this.rewriteStale();
      return fn();
    });
  }

  /**
   * Startup, after recovery: reinstall every router whose topics survived; drop the rest.
   * `floor`: the highest router id any topic holds progress of, gathered by recovery. No id at or
   * below it (nor at or below a stored router's) is handed out again, whatever the file's nextId
   * says: a dest keys its progress by router id alone, so a new router given the id of one that
   * fed it would find its first records "already applied" and skip them (docs/ARCHITECTURE.md
   * "Routers", the id floor). A file that is missing or older than the data is logged at warn level:
   * the routers it does not list are not reinstalled.
   */
  async load(floor: RouterIdFloor | null = null): Promise<void> {
    const present = this.fsx.existsSync(routerFilePath(this.dataDir));
    const file = loadRouters(this.fsx, this.dataDir);
    this.nextId = file.routers.reduce((n, r) => Math.max(n, r.id + 1), Math.max(file.nextId, (floor?.id ?? 0) + 1));
    if (floor !== null && floor.id >= file.nextId) {
      const why = present
        ? `${ROUTERS_FILE} is older than the data (its nextId is ${file.nextId}, but topic ${floor.topic} holds the progress of router id ${floor.id}): ` +
          'routers created after it was written are not reinstalled'
        : `${ROUTERS_FILE} is missing, but topic ${floor.topic} holds the progress of router id ${floor.id}: ` +
          'the router definitions were lost and no router is reinstalled';
      this.log.warn(
        `spool: ${why}; create the routers again (PUT /v0/routers/...); new router ids start at ${this.nextId}, ` +
          'so none resumes the progress of an old one',
      );
    }
    let changed = false;
    let filled = false;
    for (const stored of file.routers) {
      const [src, dst] = await this.host.instances([stored.source, stored.dest]);
      // A topic deleted before the cascade was stored (a crash in between, or a file a failed
      // save left stale: deleteTopic) is missing, or, its name created again meanwhile, another
      // instance than the one the router was stored with: either way the router went with it
      // (docs/ARCHITECTURE.md "Deleting on a full disk"). No stored id (an older build's file): not checked.
      const now = new Map([
        [stored.source, src],
        [stored.dest, dst],
      ]);
      const recreated = recreatedEnds(
        stored,
        (t) => now.get(t) != null,
        (t, id) => now.get(t) === id,
      );
      if (recreated.length > 0) {
        this.log.warn(
          `spool: router ${stored.name} dropped: ${recreated.join(' and ')} was deleted and created again since it was stored ` +
            `(${ROUTERS_FILE} still listed it)`,
        );
        changed = true;
        continue;
      }
      const missing = [src === null ? stored.source : undefined, dst === null ? stored.dest : undefined].filter((t) => t !== undefined);
      if (missing.length > 0) {
        this.log.warn(`spool: router ${stored.name} dropped: ${missing.join(' and ')} does not exist (${ROUTERS_FILE} still listed it)`);
        changed = true;
        continue;
      }
      let res = await this.host.request({ op: 'routerSet', topic: stored.source, def: defOf(stored), start: stored.start });
      if (!res.ok) {
        this.log.warn(`spool: router ${stored.name} dropped: its source ${stored.source} refused it (${res.code}: ${res.message})`);
        changed = true;
        continue;
      }
      // A router of an older build's file takes the ids now (stored by the save below).
      const r: StoredRouter = { ...stored, sourceInstance: src!, destInstance: dst! };
      if (stored.sourceInstance === undefined || stored.destInstance === undefined) filled = true;
      const at = startOf(res.json);
      if (at.head < r.start) {
        // The source's seqs went back (an ephemeral source after a restart): its old seqs mean
        // nothing to the dest's dedupe, so the router continues under a new id from the head.
        const fresh: StoredRouter = { ...r, id: await this.newId(file.routers) };
        res = await this.host.request({ op: 'routerSet', topic: r.source, def: defOf(fresh), start: null });
        if (!res.ok) continue;
        fresh.start = startOf(res.json).start;
        this.index(fresh);
        changed = true;
        continue;
      }
      this.index(r);
    }
    if (changed) await this.save();
    else if (filled) {
      // Only ids to add: a file that cannot take them now (a full disk) is stale, not a failed
      // start; the retry timer writes it (write), and until then its routers are not checked.
      await this.save().catch((err: Error) =>
        this.log.warn(`spool: ${ROUTERS_FILE} could not be written with its routers' topic instance ids (${err.message}); retrying`),
      );
    }
  }

  put(name: string, input: RouterInput): Promise<PutOutcome> {
    // Its ends are named from now on, for deleteTopic: a delete of either while this PUT waits or
    // runs (its topics made, its router not indexed yet) waits for it and takes the router along.
    const ends = [input.source, input.dest];
    for (const t of ends) this.putEnds.set(t, (this.putEnds.get(t) ?? 0) + 1);
    return this.serial(() => this.putNow(name, input)).finally(() => {
      for (const t of ends) {
        const n = this.putEnds.get(t)! - 1;
        if (n > 0) this.putEnds.set(t, n);
        else this.putEnds.delete(t);
      }
    });
  }

  private async putNow(name: string, input: RouterInput): Promise<PutOutcome> {
    const { createDest, ...rest } = input;
    const wanted: Omit<RouterDef, 'id'> = { name, ...rest };
    const had = this.routers.get(name);
    if (had && (had.source !== input.source || had.dest !== input.dest)) {
      return fail('topic_exists_incompatible', `router ${name} cannot be re-pointed; delete and recreate it`, {
        router: name,
        reason: 'router_repoint_forbidden',
        existing_source: had.source,
        existing_dest: had.dest,
      });
    }
    if (had && sameDef(had, wanted)) {
      // A retry of a PUT whose definition could not be stored (the router runs, the file is
      // stale): answered only once the file holds it, so a 2xx always means stored.
      if (this.stale) await this.save();
      return { ok: true, created: false, def: defOf(had) };
    }
    const edges = this.routers.values();
    if (!had && !createDest && (await this.host.instances([input.dest]))[0] === null) {
      return fail('topic_not_found', `topic ${input.dest} does not exist`, { topic: input.dest });
    }
    if (!had) {
      const other = fanInConflict(edges, input.source, input.dest);
      if (other)
        return fail('topic_exists_incompatible', `${input.dest} is already the dest of router ${other.name} from ${other.source}`, {
          topic: input.dest,
          reason: 'router_dest_fan_in',
        });
    }
    // A re-PUT keeps its edge: it makes no chain longer, and closes a cycle only as far as it
    // turns allow_cycle off (a router inside a cycle that never had it may still be changed).
    if (!input.allowCycle && (!had || had.allowCycle)) {
      const cycle = cycleThrough(this.routers.values(), input.source, input.dest, name);
      if (cycle) return fail('router_cycle', `router ${name} would close the cycle ${cycle.join(' -> ')}`, { cycle });
    }
    if (!had) {
      const chain = longestChainThrough(this.routers.values(), input.source, input.dest, ROUTER_HOPS_MAX);
      if (chain.length - 1 > ROUTER_HOPS_MAX)
        return fail(
          'topic_exists_incompatible',
          `router ${name} would make a chain of more than ${ROUTER_HOPS_MAX} routers (${chain[0]} -> ... -> ${chain.at(-1)}); a copy travels at most ${ROUTER_HOPS_MAX}`,
          { topic: input.dest, reason: 'router_chain_too_long', max: ROUTER_HOPS_MAX, chain },
        );
    }
    if (!had && this.maxRouters > 0 && this.routers.size >= this.maxRouters) {
      return fail('throttled', 'too many routers', { limit: 'max_routers', max: this.maxRouters });
    }
    // Topics first (the source always, the dest with create_dest), then the forwarder.
    const ends = had ? [] : createDest ? [input.source, input.dest] : [input.source];
    const refused = await this.topicRoomFor(ends);
    if (refused) return refused;
    const made: string[] = [];
    for (const topic of ends) {
      const r = await this.host.request({ op: 'put', topic, config: defaultConfig(), ensure: true });
      if (!r.ok) {
        // A topic created meanwhile took the last slot: the PUT is refused whole, so what it made
        // goes again (only while empty: a writer may already have found it).
        for (const t of made) await this.host.request({ op: 'deleteTopic', topic: t, ifEmpty: true });
        return r;
      }
      if (r.status === 201) made.push(topic);
    }
    const [destInstance] = await this.host.instances([input.dest]);
    if (destInstance === null) return fail('topic_not_found', `topic ${input.dest} does not exist`, { topic: input.dest });
    const def: RouterDef = { ...wanted, id: had ? had.id : await this.newId() };
    const res = await this.host.request({ op: 'routerSet', topic: input.source, def, start: had ? had.start : null });
    if (!res.ok) return res;
    const at = startOf(res.json);
    this.index({ ...def, start: had ? had.start : at.start, sourceInstance: at.instance, destInstance });
    await this.save();
    return { ok: true, created: !had, def };
  }

  /** The max_topics refusal when the topics a PUT would make do not all fit (docs/API.md "Limits"). */
  private async topicRoomFor(ends: string[]): Promise<ErrorResult | undefined> {
    const { live, max } = this.host.topicCount();
    if (max === 0 || ends.length === 0) return undefined;
    const absent = (await this.host.instances(ends)).filter((id) => id === null).length;
    if (live + absent <= max) return undefined;
    return fail('throttled', 'too many topics', { limit: 'max_topics', max });
  }

  /**
   * DELETE /v0/routers/:router: true when it existed. Forwarding stops at once. The file is the
   * delete's only durable record: when it cannot be written (a full disk) the router stays, as
   * the file still has it, and the error goes to the caller (429 disk_space over HTTP).
   */
  delete(name: string): Promise<boolean> {
    return this.serial(async () => {
      const r = this.unindex(name);
      if (!r) return false;
      try {
        await this.save();
      } catch (err) {
        this.index(r);
        throw err;
      }
      await this.host.request({ op: 'routerRemove', topic: r.source, router: name });
      return true;
    });
  }

  /**
   * DELETE /v0/topics/:topic with its cascade (docs/API.md): `del` deletes the topic, told the
   * names of the routers naming it (its actor drops its own forwarders and echoes them); on
   * success they leave the file and the other ends' actors. A topic some router names is deleted
   * inside the registry's serialization, so no backup (nor router change) falls between the
   * topic's durable delete and the file update: a backup never holds routers naming a topic that
   * was deleted and, meanwhile, recreated. So is a topic a router PUT names while it waits or
   * runs (`putEnds`): it has made the topics and installed the forwarder before it indexes the
   * router, and a delete between those steps left a router with a deleted end (still listed,
   * forwarding into the recreated dest or from nothing). Other topics are deleted at once,
   * concurrently.
   */
  deleteTopic(topic: string, del: (routers: string[]) => Promise<TopicResult>): Promise<TopicResult> {
    if (this.naming(topic).length === 0 && !this.putEnds.has(topic)) return del([]);
    return this.serial(async () => {
      const names = this.naming(topic);
      const res = await del(names);
      if (!res.ok || names.length === 0) return res;
      const gone = names.map((n) => this.unindex(n)!);
      try {
        await this.save();
      } catch (err) {
        // The delete is durable, so its cascade goes on and the reply is its own: the routers
        // are gone here and from the other ends' actors, and the file is written again later
        // (write). Until then it still lists them: a restart drops them with the missing topic,
        // or, a topic of that name created meanwhile, by its other instance id (load;
        // docs/ARCHITECTURE.md "Deleting on a full disk").
        this.log.error(
          `spool: topic ${topic} deleted with router(s) ${names.join(', ')}, but ${ROUTERS_FILE} could not be written ` +
            `(${(err as Error).message}); it still lists them and is written again every ${ROUTERS_REWRITE_MS} ms until that succeeds`,
        );
      }
      for (const r of gone) if (r.source !== topic) await this.host.request({ op: 'routerRemove', topic: r.source, router: r.name });
      return res;
    });
  }

  /** Read-your-writes (docs/API.md "Routers"): applies pending forwards into `topic`, upstream first. */
  async drainInto(topic: string): Promise<void> {
    if (!this.byDest.has(topic)) return;
    await this.drainEdges(upstreamOrder((t) => this.edgesInto(t), topic));
  }

  /** A router's figures, after draining it (and what feeds its source) when `wait`. */
  async stats(r: StoredRouter, wait: boolean): Promise<RouterStats | undefined> {
    if (wait) await this.drainInto(r.source);
    const res = await this.host.request({ op: 'routerDrain', topic: r.source, routers: [r.name], wait });
    return res.ok ? res.routers?.[0] : undefined;
  }

  private edgesInto(topic: string): Edge[] {
    return [...(this.byDest.get(topic) ?? [])].map((n) => this.routers.get(n)!);
  }

  private async drainEdges(edges: Edge[]): Promise<void> {
    for (let i = 0; i < edges.length;) {
      const source = edges[i]!.source;
      const names: string[] = [];
      for (; i < edges.length && edges[i]!.source === source; i++) names.push(edges[i]!.name);
      await this.host.request({ op: 'routerDrain', topic: source, routers: names, wait: true });
    }
  }
}

/** A routerSet reply: where the forwarder starts, the source head, and the source's instance id. */
function startOf(json: Uint8Array): { start: number; head: number; instance: number } {
  return JSON.parse(Buffer.from(json).toString('utf8') + '}') as { start: number; head: number; instance: number };
}

export function defOf(r: StoredRouter): RouterDef {
  const { start: _start, sourceInstance: _src, destInstance: _dst, ...def } = r;
  return def;
}
