// Supervisor (main thread): starts the WAL thread and the topic workers (through a ThreadSpawner:
// real threads, or in-process ones in tests), wires their ports, places topics on workers, and
// runs the lifecycle recovering → ready → draining (docs/ARCHITECTURE.md "Startup and shutdown"). Crash-only: if any thread
// dies the process logs and exits; recovery is the repair path.
import { newGauges, totalLiveBytes } from '../core/gauges.js';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import crypto from 'node:crypto';
import type { Settings } from '../config.js';
import { release, transfer, wrap, Remote } from '../core/rpc.js';
import { RequestClient } from '../protocol/requestClient.js';
import { workerOf } from '../core/names.js';
import type { WorkerApi, WorkerThreadData } from '../topicThread/workerApi.js';
import type { RecoverReply, WalApi, WalThreadData } from '../wal/walApi.js';
import type { WalPosition } from '../protocol/messages/wal.js';
import { assertWritableLayout } from '../storage/writableLayout.js';
import { acquireLock } from '../storage/lock.js';
import { isDiskFull, nodeFs, type Fs } from '../storage/fs.js';
import { StorageState, storageStateOf } from '../storage/storageState.js';
import { newSharedCounters, PACK_NO_SLOT, STORAGE_STATE_SLOT, TOPICS_SLOT } from '../core/sharedCounters.js';
import type { WalStats } from '../wal/groupCommit.js';
import { isWorkEvent, type WatchEvent, type WorkerEvent, type WorkEvent } from '../protocol/messages/events.js';
import type { DrainResult } from '../protocol/messages/rpc.js';
import { readNewestSnapshot, type LoadedSnapshot } from '../storage/snapshot.js';
import type { TopicPart } from '../format/topicPart.js';
import { readSection, sectionTopicIds } from '../storage/snapshotSectionReader.js';
import { Checkpointer } from './checkpoint.js';
import { stageClock, stageOriginNs } from '../core/stageClock.js';
import { assertWalFromStart } from '../wal/scan.js';
import { freeBytes } from '../storage/freeSpace.js';
import { mib, sizeWal, type WalSizing } from '../wal/walSizing.js';
import { RecoveryProgressLog, recoveryFraction, type TopicsStatus } from './recoveryProgress.js';
import { removeStaleStaging, type BackupSource } from './backup.js';
import { clearPendingOrphans, keepOrphans, pendingOrphans, removeOrphanTopicDirs, type KeptOrphans } from './orphans.js';
import { listTopicDirs } from '../storage/segmentLoad.js';
import { listPackNamesSync } from '../storage/packScan.js';
import { parsePackFileName, quarantineDir } from '../format/layout.js';
import { CorruptionError } from '../core/corruption.js';
import { workerThreads, type SpawnedThread, type ThreadEvents, type ThreadSpawner } from './threads.js';
import { RouterRegistry } from './routerRegistry.js';
import { higherFloor, type RouterIdFloor } from '../protocol/messages/router.js';

export type Lifecycle = 'recovering' | 'ready' | 'draining';

/** The warn line of a start that kept orphans in quarantine/ (orphans.ts). */
function keptLine(k: KeptOrphans): string {
  const what = [
    k.topicDirs > 0 ? `${k.topicDirs} topic ${k.topicDirs === 1 ? 'directory' : 'directories'} moved to ${k.dir}/topics/` : '',
    k.packs > 0 ? `${k.packs} pack ${k.packs === 1 ? 'file' : 'files'} linked into ${k.dir}/packs/` : '',
  ].filter((x) => x !== '');
  return (
    `recovery dropped WAL frames, so it removed nothing that may hold records of topics only they created: ${what.join(', ')}; ` +
    `no topic serves those bytes (they are kept for a manual recovery; delete ${k.dir} once they are not needed)`
  );
}

export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** Recovery logs its progress (bytes, frames, topics, ETA) this often. */
const RECOVERY_LOG_INTERVAL_MS = 3000;

/**
 * Shutdown: how long the drain waits at most for the router requests out when the forwarders
 * stop (a copy batch is normally answered within one WAL write); past it, the final checkpoint
 * goes ahead and a late copy is the next start's to replay.
 */
export const ROUTERS_STOP_MS = 2000;

export class Supervisor {
  lifecycle: Lifecycle = 'recovering';
  private progress = 0;
  /** Snapshot topics loaded by the workers, of all the snapshot holds (0/0 until it is read). */
  private readonly snapshotTopics: TopicsStatus = { loaded: 0, total: 0 };
  /** Control calls to each worker (Comlink). */
  readonly workers: Remote<WorkerApi>[] = [];
  /** Topic requests to each worker, one message per turn each way (the hot path). */
  private readonly requestClients: RequestClient[] = [];
  private readonly threads: SpawnedThread[] = [];
  private wal!: Remote<WalApi>;
  /** Shared with every thread (core/sharedCounters.ts); the next pack number is set at recovery above every pack on disk. */
  readonly counters = newSharedCounters();
  /** Called once recovery completes and the server turns ready (whenReady adds to it). */
  private readonly onReady: (() => void)[] = [];
  /** Per-worker gauges (core/gauges.ts): live bytes, loop utilisation and delay, WAL queue. */
  readonly gauges: Float64Array;
  private releaseLock: (() => void) | undefined;
  private stopping = false;
  topicCount = 0;
  private checkpointer: Checkpointer | undefined;
  /** This run's WAL file size and WAL-size checkpoint trigger (smaller on a short volume). */
  walSize!: WalSizing;
  /** Polls the WAL thread's replay progress while recovering. */
  private progressPoll: NodeJS.Timeout | undefined;
  /** Receives every worker's watch events (set by the watch hub). */
  onWatchEvents: ((events: WatchEvent[]) => void) | undefined;
  /** Receives every worker's `/work` stream events (set by the work registry). */
  onWorkEvents: ((events: WorkEvent[]) => void) | undefined;
  /** Router definitions (docs/ARCHITECTURE.md "Routers"); loaded at the end of recovery. */
  readonly routers: RouterRegistry;

  constructor(
    readonly settings: Settings,
    private readonly log: Logger,
    /** The data directory's filesystem on this thread (threads build their own, docs/ARCHITECTURE.md "Code map"). */
    private readonly fsx: Fs = nodeFs,
    /** Starts the WAL thread and the workers: real threads, or in-process ones in tests. */
    private readonly spawner: ThreadSpawner = workerThreads,
    /** The boot seed of each recovery (actors seed their RNGs from it): random, or fixed in tests. */
    private readonly newBootSeed: () => string = () => crypto.randomBytes(16).toString('hex'),
  ) {
    this.routers = new RouterRegistry(
      {
        request: (req) => this.workerFor(req.topic).request(req),
        instances: async (names) => {
          const groups = this.namesByWorker(names);
          const ids = await Promise.all(
            this.workers.map((w, i) => (groups[i]!.length > 0 ? w.instanceIds(groups[i]!) : Promise.resolve([]))),
          );
          const found = new Map<string, number | null>();
          groups.forEach((g, i) => g.forEach((n, j) => found.set(n, ids[i]![j] ?? null)));
          return names.map((n) => found.get(n) ?? null);
        },
        topicCount: () => ({ live: this.liveTopics(), max: settings.maxTopics }),
      },
      fsx,
      settings.dataDir,
      settings.maxRouters,
      log,
    );
    this.gauges = newGauges(settings.workers);
  }

  /** Live bytes over all topics, as last sampled by the workers (at most ~100 ms old). */
  liveBytes(): number {
    return totalLiveBytes(this.gauges, this.settings.workers);
  }

  get replayProgress(): number {
    return this.lifecycle === 'recovering' ? this.progress : 1;
  }

  /** The `not_ready` detail: the fraction, and the snapshot topics loaded so far (docs/API.md "Health, readiness, metrics"). */
  get recoveryDetail(): { replay_progress: number; topics_loaded: number; topics_total: number } {
    return { replay_progress: this.replayProgress, topics_loaded: this.snapshotTopics.loaded, topics_total: this.snapshotTopics.total };
  }

  /**
   * A worker's events, as its request channel hands them on: watch events to the hub and `/work`
   * events to the work registry, in their order (a run of one kind goes as one array).
   */
  private handOnEvents(events: WorkerEvent[]): void {
    let from = 0;
    while (from < events.length) {
      const work = isWorkEvent(events[from]!);
      let to = from + 1;
      while (to < events.length && isWorkEvent(events[to]!) === work) to++;
      const run = from === 0 && to === events.length ? events : events.slice(from, to);
      if (work) this.onWorkEvents?.(run as WorkEvent[]);
      else this.onWatchEvents?.(run as WatchEvent[]);
      from = to;
    }
  }

  /** Messages main received from the workers' request channels so far (the stage clock's report). */
  workerMessagesIn(): number {
    let n = 0;
    for (const c of this.requestClients) n += c.messagesIn;
    return n;
  }

  /** Where requests for `topic` go: the channel to the worker that owns it. */
  workerFor(topic: string): RequestClient {
    return this.requestClients[workerOf(topic, this.requestClients.length)]!;
  }

  /** The names split by the worker that owns them, indexed like `workers`. */
  namesByWorker(names: readonly string[]): string[][] {
    const groups = this.workers.map(() => [] as string[]);
    for (const name of names) groups[workerOf(name, this.workers.length)]!.push(name);
    return groups;
  }

  liveTopics(): number {
    return Atomics.load(this.counters, TOPICS_SLOT);
  }

  /** Crash-only: a thread that fails, or ends before shutdown, ends the process. */
  private watch(name: string): ThreadEvents {
    return {
      failed: (message) => this.die(`thread ${name} failed: ${message}`),
      exited: (code) => {
        if (!this.stopping) this.die(`thread ${name} exited with code ${code}`);
      },
    };
  }

  get storageState(): number {
    return storageStateOf(this.counters);
  }

  /** The WAL's own part of the storage state (FULL: it cannot make its next file). */
  get walStorageState(): number {
    return Atomics.load(this.counters, STORAGE_STATE_SLOT);
  }

  private lastCheckpointLogMs = 0;

  /**
   * A checkpoint failed. Nothing is lost (the WAL keeps everything the snapshot would have
   * covered; it is just not trimmed). Out of space: it is tried again later (logged at most once
   * a minute). Anything else: storage can no longer be trusted, writes stop (FAILED).
   */
  private checkpointFailed(err: Error): void {
    if (isDiskFull(err)) {
      const now = Date.now();
      if (now - this.lastCheckpointLogMs > 60_000)
        this.log.error(`spool: checkpoint postponed, the disk is full (${err.message}); the WAL is kept until it succeeds`);
      this.lastCheckpointLogMs = now;
      return;
    }
    if (Atomics.exchange(this.counters, STORAGE_STATE_SLOT, StorageState.FAILED) !== StorageState.FAILED) {
      this.log.error(`spool: checkpoint failed: ${err.message}; writes are refused until a restart (reads go on)`);
    }
  }

  private die(msg: string): void {
    this.log.error(msg);
    process.exit(1);
  }

  /** Takes the lock and spawns the threads; then recovery runs in the background. */
  async start(): Promise<void> {
    const s = this.settings;
    this.releaseLock = acquireLock(this.fsx, s.dataDir);
    if (this.fsx === nodeFs) {
      try {
        assertWritableLayout(s.dataDir);
      } catch (err) {
        this.releaseLock();
        throw err;
      }
    }
    this.walSize = sizeWal(s.walFileBytes, s.checkpointWalBytes, this.fsx === nodeFs ? freeBytes(s.dataDir) : undefined);
    if (this.walSize.shrunk) {
      this.log.warn(
        `spool: only ${mib(freeBytes(s.dataDir) ?? 0)} free in ${s.dataDir}: WAL files of ${mib(this.walSize.walFileBytes)} this run ` +
          `instead of ${mib(s.walFileBytes)} (SERVICE_WAL_FILE_BYTES), and a checkpoint every ${mib(this.walSize.checkpointWalBytes)} of WAL`,
      );
    }
    const walRpc = new MessageChannel();
    const walPorts: MessagePort[] = [];
    // A port between every pair of workers, for actor-to-actor requests (dead-letter appends).
    const peerPorts: (MessagePort | null)[][] = Array.from({ length: s.workers }, () =>
      new Array<MessagePort | null>(s.workers).fill(null),
    );
    for (let i = 0; i < s.workers; i++) {
      for (let j = i + 1; j < s.workers; j++) {
        const ch = new MessageChannel();
        peerPorts[i]![j] = ch.port1;
        peerPorts[j]![i] = ch.port2;
      }
    }
    this.spawner.heapFloor?.(s.workerHeapFloorMb);
    for (let i = 0; i < s.workers; i++) {
      const rpc = new MessageChannel();
      const requests = new MessageChannel();
      const wal = new MessageChannel();
      walPorts.push(wal.port2 as unknown as MessagePort);
      const data: WorkerThreadData = {
        workerIndex: i,
        workers: s.workers,
        dataDir: s.dataDir,
        rpcPort: rpc.port2,
        requestPort: requests.port2,
        walPort: wal.port1,
        peerPorts: peerPorts[i]!,
        counters: this.counters.buffer as SharedArrayBuffer,
        gauges: this.gauges.buffer as SharedArrayBuffer,
        sampleLiveBytes: s.maxTotalBytes > 0,
        maxTotalBytes: s.maxTotalBytes,
        maxLimit: s.maxLimit,
        maxTopics: s.maxTopics,
        segmentBytes: s.segmentBytes,
        segmentCacheBytes: s.segmentCacheBytes,
        segmentOpenFiles: s.segmentOpenFiles,
        segmentWriteDelayMs: s.segmentWriteDelayMs,
        packBytes: s.packBytes,
        packFileBytes: s.packFileBytes,
        compactLivePercent: s.compactLivePercent,
        compactBytesPerSec: s.compactBytesPerSec,
        topicSleepMs: s.topicSleepMs,
        topicsAwakeMax: s.topicsAwakeMax,
        walInflightBytes: s.walInflightBytes,
        walFileBytes: this.walSize.walFileBytes,
        traceDir: s.traceDir,
        traceOutputs: s.traceOutputs,
        ...(stageClock.on ? { stageClockOriginNs: stageOriginNs() } : {}),
        traceTopics: s.traceTopics,
      };
      const peers = peerPorts[i]!.filter((p): p is MessagePort => p !== null);
      this.threads.push(this.spawner.worker(data, [rpc.port2, requests.port2, wal.port1, ...peers], this.watch(`worker ${i}`)));
      this.workers.push(wrap<WorkerApi>(rpc.port1));
      this.requestClients.push(new RequestClient(requests.port1, (events) => this.handOnEvents(events)));
    }
    const walData: WalThreadData = {
      dataDir: s.dataDir,
      rpcPort: walRpc.port2,
      workerPorts: walPorts as never,
      walFileBytes: this.walSize.walFileBytes,
      syncIntervalMs: s.walSyncIntervalMs,
      preallocate: s.walPreallocate,
      counters: this.counters.buffer as SharedArrayBuffer,
    };
    this.threads.push(this.spawner.wal(walData, [walRpc.port2, ...walPorts], this.watch('wal')));
    this.wal = wrap<WalApi>(walRpc.port1);
    this.log.info(`spool: ${s.workers} topic worker(s), 1 WAL thread, data in ${s.dataDir}`);
  }

  /** Runs `f` once recovery is done: now, if it is (the HTTP server may be built after it). */
  whenReady(f: () => void): void {
    if (this.lifecycle === 'ready') f();
    else this.onReady.push(f);
  }

  /**
   * Recovery (docs/ARCHITECTURE.md "Checkpoints and recovery"): snapshot parts to the workers (who index their segments), then the WAL
   * from the snapshot's cut, then reservations padded, a new WAL file with a durable BOOT frame,
   * orphan topic directories removed (kept in quarantine/ when the scan dropped frames), and a
   * first checkpoint.
   */
  async recover(): Promise<void> {
    const started = Date.now();
    const loading = { now: true }; // the workers are indexing the snapshot's topics
    this.progressPoll = this.pollRecoveryProgress(started, loading);
    try {
      const { scan, epoch, walFileNo, cut, keep } = await this.replay(loading);
      const { topics, kept, routerIdFloor } = await this.finishRecovery(epoch, walFileNo, cut, keep);
      this.startCheckpoints(epoch, cut);
      this.topicCount = topics;
      await this.routers.load(routerIdFloor);
      // A drain that began during recovery stays one (its 503s and Connection: close go on).
      if (this.lifecycle === 'recovering') {
        this.lifecycle = 'ready';
        for (const f of this.onReady) f();
      }
      this.log.info(
        `recovered ${topics} topic(s), ${scan.frames} WAL frame(s), ${(scan.bytes / 1048576).toFixed(1)} MiB in ${Date.now() - started} ms` +
          (scan.tornBytes ? `; dropped a torn tail of ${scan.tornBytes} bytes` : '') +
          (scan.quarantinedBytes ? ` (${scan.quarantinedBytes} bytes quarantined)` : ''),
        { topics, frames: scan.frames, bytes: scan.bytes, ms: Date.now() - started },
      );
      // Not the clean end a crash leaves: whole frames followed the bad one, or whole files were
      // dropped. Loud, with where, so an operator can tell a power loss from damage.
      for (const d of scan.damage)
        this.log.warn(
          `WAL ${d.file} at offset ${d.offset}: a frame did not check (${d.reason}) and whole frames follow it in that file; ` +
            `taken as a torn tail (a power loss can leave one): the frames after it were dropped, their bytes kept in wal/quarantine/ ` +
            `(spool verify on a copy taken before the start reports it; unless the machine lost power, this is damage and acknowledged writes may be missing)`,
        );
      if (scan.droppedFileBytes)
        this.log.warn(
          `SERVICE_RECOVERY_TRUNCATE: ${scan.droppedFileBytes} bytes of whole WAL files after the damage were dropped (moved to wal/quarantine/); writes they held are gone`,
        );
      if (kept && kept.topicDirs + kept.packs > 0) this.log.warn(keptLine(kept));
    } finally {
      clearInterval(this.progressPoll);
    }
  }

  /** Every 50 ms while recovering: the progress `/v0/ready` reports, and a log line now and then. */
  private pollRecoveryProgress(started: number, loading: { now: boolean }): NodeJS.Timeout {
    const progressLog = new RecoveryProgressLog(started, RECOVERY_LOG_INTERVAL_MS);
    return setInterval(() => {
      const loaded = loading.now ? Promise.all(this.workers.map((w) => w.snapshotTopicsLoaded())) : Promise.resolve(undefined);
      Promise.all([this.wal.replayStatus(), loaded]).then(
        ([r, counts]) => {
          if (counts)
            this.snapshotTopics.loaded = Math.max(
              this.snapshotTopics.loaded,
              counts.reduce((a, b) => a + b, 0),
            );
          const fraction = recoveryFraction(this.snapshotTopics, r.fraction);
          if (fraction > this.progress) this.progress = Math.min(fraction, 0.99);
          const line = this.lifecycle === 'recovering' ? progressLog.observe(r, this.snapshotTopics, Date.now()) : undefined;
          if (line) this.log.info(line.msg, line.fields);
        },
        () => undefined,
      );
    }, 50);
  }

  /**
   * Recovery's reading half: the newest snapshot to the workers and, meanwhile, the WAL from its
   * cut; returns once every worker applied the replay, with the new boot epoch and WAL file
   * number (that file is zero-filled meanwhile).
   */
  private async replay(loading: {
    now: boolean;
  }): Promise<{ scan: RecoverReply; epoch: number; walFileNo: number; cut: WalPosition | undefined; keep: boolean }> {
    const loaded = await readNewestSnapshot(this.fsx, this.settings.dataDir, (m) => this.log.error(m));
    if (!loaded) assertWalFromStart(this.fsx, this.settings.dataDir);
    const snap = loaded && (loaded.version === 1 ? loaded.body : loaded.head);
    // Pack numbers continue above every pack on disk, one sequence for all workers.
    const packNames = listPackNamesSync(this.fsx, this.settings.dataDir);
    Atomics.store(this.counters, PACK_NO_SLOT, 1 + packNames.reduce((m, p) => Math.max(m, parsePackFileName(p)!.no), 0));
    // The WAL scan runs while the workers read the snapshot: a worker applies replayed frames
    // only once its snapshot topics are in (WorkerRecovery's replay chain starts there), and
    // the scan's flow control bounds what waits for it meanwhile.
    const { table, loadedAll } = this.loadSnapshot(loaded, packNames);
    loadedAll.catch(() => undefined); // awaited below; it may fail while the ids are read
    const ids = await table;
    const scanned = this.wal.recover(
      snap?.cut,
      transfer(
        ids,
        ids.map((x) => x.buffer as ArrayBuffer),
      ),
      this.snapshotTopics.total,
      this.settings.recoveryTruncate,
    );
    scanned.catch(() => undefined); // awaited below, after the load (whose error comes first)
    await loadedAll;
    loading.now = false;
    this.snapshotTopics.loaded = this.snapshotTopics.total;
    const scan = await scanned;
    // Frames dropped (now, or by a start that died before keeping its orphans): what only they
    // could claim is kept (finishRecovery), and no topic id of a boot they held (the boot epoch
    // of an orphan directory or of held packed frames) is handed out again.
    const keep = scan.framesDropped || pendingOrphans(this.fsx, this.settings.dataDir);
    const floor = keep ? await this.droppedEpochFloor() : 0;
    const epoch = Math.max(scan.maxEpoch, snap?.epoch ?? 0, floor) + 1;
    const walFileNo = Math.max(scan.lastFileNo, snap?.cut.fileNo ?? 0) + 1;
    void this.wal.prepareStart(walFileNo, epoch); // zero-filled while the replay applies
    await Promise.all(this.workers.map((w) => w.awaitReplay()));
    return { scan, epoch, walFileNo, cut: snap?.cut, keep };
  }

  /**
   * The highest boot epoch in a topic id on disk that recovery may not know from the WAL it kept:
   * of an entry of topics/, or of the packed frames the workers hold for topics made after the
   * snapshot. A topic id is its creator's epoch × 2^24 + a counter (hostEffects.ts newTopicId).
   */
  private async droppedEpochFloor(): Promise<number> {
    let floor = 0;
    for (const d of await listTopicDirs(this.fsx, this.settings.dataDir))
      if (d.id !== undefined) floor = Math.max(floor, Math.floor(d.id / 0x100_0000));
    for (const e of await Promise.all(this.workers.map((w) => w.heldEpochMax()))) floor = Math.max(floor, e);
    return floor;
  }

  /**
   * Recovery's writing half: the workers pad reservations and report the topic directories they
   * hold, a new WAL file starts with a durable BOOT frame, the workers serve each other, and
   * topic directories no topic holds (and a backup's staging cut short by a crash) go. With
   * `keep` (the WAL scan dropped frames) those directories, and the packs holding frames no
   * topic claimed, are kept in quarantine/ instead (orphans.ts). Returns the count of topics,
   * what was kept, and the highest router id any topic holds progress of (the registry's id
   * floor, docs/ARCHITECTURE.md "Routers").
   */
  private async finishRecovery(
    epoch: number,
    walFileNo: number,
    cut: WalPosition | undefined,
    keep: boolean,
  ): Promise<{ topics: number; kept: KeptOrphans | undefined; routerIdFloor: RouterIdFloor | null }> {
    const seed = this.newBootSeed();
    const dirs = await listTopicDirs(this.fsx, this.settings.dataDir);
    const dirIds = dirs.flatMap((d) => (d.id === undefined ? [] : [d.id]));
    const liveDirs = new Set<number>();
    const unclaimedPacks = new Set<string>();
    let topics = 0;
    let routerIdFloor: RouterIdFloor | null = null;
    for (const w of this.workers) {
      const r = await w.finishRecovery(epoch, seed, dirIds);
      topics += r.topics;
      for (const id of r.liveDirIds) liveDirs.add(id);
      routerIdFloor = higherFloor(routerIdFloor, r.routerIdFloor);
      for (const p of r.unclaimedPacks) unclaimedPacks.add(p);
    }
    await this.wal.start(walFileNo, epoch, seed, cut);
    // Peer requests between workers wait until now (a queue's recovery may ask another
    // worker's dead-letter topic to delete what a redrive copied back).
    await Promise.all(this.workers.map((w) => w.serve()));
    let kept: KeptOrphans | undefined;
    if (keep) {
      // Before the first checkpoint, which may unlink those packs (nothing live is in them).
      try {
        kept = await keepOrphans(this.fsx, this.settings.dataDir, dirs, liveDirs, [...unclaimedPacks].sort(), `boot-${epoch}`);
      } catch (err) {
        if (!isDiskFull(err)) throw err;
        // Nothing was removed, and the marker (or the damage, left in place) has the next start keep them.
        throw new CorruptionError(
          quarantineDir(this.settings.dataDir),
          `the WAL scan dropped frames, and what only they knew of cannot be kept here while the disk is full (${(err as Error).message}); nothing was removed: free some space and start again`,
        );
      }
      await clearPendingOrphans(this.fsx, this.settings.dataDir);
    } else await removeOrphanTopicDirs(this.fsx, this.settings.dataDir, dirs, liveDirs);
    if (this.fsx === nodeFs) removeStaleStaging(this.settings.dataDir); // a backup cut short by a crash
    return { topics, kept, routerIdFloor };
  }

  /**
   * The checkpointer, and its first checkpoint in the background, as every later one runs: the
   * server is consistent without it (the replayed WAL stays until a snapshot covers it), and at
   * many topics it was a large share of the time to ready (docs/ARCHITECTURE.md "Many topics":
   * writing every topic's part). On a disk too full for the first WAL file its marks wait for
   * that file and it completes once space returns.
   */
  private startCheckpoints(epoch: number, cut: WalPosition | undefined): void {
    this.checkpointer = new Checkpointer(
      this.fsx,
      this.settings.dataDir,
      this.workers,
      this.wal,
      epoch,
      cut ?? null,
      this.settings.checkpointMs,
      this.walSize.checkpointWalBytes,
      (err) => this.checkpointFailed(err),
      () => this.storageState,
    );
    void this.checkpointer.run().catch((err: Error) => this.checkpointFailed(err));
    if (!this.stopping) this.checkpointer.start(); // an abandoned supervisor arms no timer
  }

  /**
   * Recovery step 3: the snapshot's topics to the workers (`loadedAll` settles when every worker
   * has them in), and meanwhile the topic ids each worker holds, for the WAL thread's replay
   * routing (one worker needs none: every frame goes to it). A v2 snapshot written under the same
   * worker count goes as sections, each to the worker that wrote it, which parses it and keeps its
   * quiet topics asleep (docs/ARCHITECTURE.md "Lazy recovery"); here only each part line's id is
   * read. A v1 snapshot, or a v2 one written under another worker count, is parsed here and
   * placed part by part, and every topic loads.
   */
  private loadSnapshot(
    loaded: LoadedSnapshot | undefined,
    packNames: string[],
  ): { table: Promise<Float64Array[]>; loadedAll: Promise<unknown> } {
    const n = this.workers.length;
    const epoch = loaded ? (loaded.version === 1 ? loaded.body.epoch : loaded.head.epoch) : 0;
    // The segment files it lists must be there, unless a newer snapshot was skipped (damaged).
    const filesTrusted = !loaded?.olderThanNewest;
    if (loaded?.version === 2 && loaded.head.workers === n && this.settings.lazyRecovery) {
      this.snapshotTopics.total = loaded.head.sections.reduce((t, x) => t + x.topics, 0);
      // Each section moves to its worker in a buffer of its own. One worker's is the file's own
      // buffer when that is not Node's shared pool (100+ ms of copying less at a million topics);
      // with more, each gets a copy and main reads the ids off the originals meanwhile.
      const sec = loaded.sections;
      const own =
        n === 1 && sec[0]!.buffer.byteLength > Buffer.poolSize
          ? [new Uint8Array(sec[0]!.buffer, sec[0]!.byteOffset, sec[0]!.length)]
          : sec.map((x) => new Uint8Array(x));
      const loadedAll = Promise.all(
        this.workers.map((w, i) => w.loadSection(transfer(own[i]!, [own[i]!.buffer as ArrayBuffer]), packNames, epoch, filesTrusted)),
      );
      const table =
        n === 1
          ? Promise.resolve([new Float64Array(0)])
          : Promise.all(sec.map((x, i) => sectionTopicIds(x, loaded.head.sections[i]!.topics)));
      return { table, loadedAll };
    }
    let parts: TopicPart[] = [];
    // What the sections record as fsynced of each pack being written at the cut: every pack is
    // scanned whole now, and its torn tail is cut only past those bytes.
    const fsynced: [string, number][] = [];
    if (loaded?.version === 1) parts = loaded.body.topics;
    else if (loaded)
      for (const sec of loaded.sections) {
        const tail = readSection(sec, (p) => parts.push(p.part())).packs.tail;
        if (tail?.[2] !== undefined) fsynced.push([tail[0], tail[2]]);
      }
    const byWorker: TopicPart[][] = this.workers.map(() => []);
    for (const part of parts) byWorker[workerOf(part.name, n)]!.push(part);
    this.snapshotTopics.total = parts.length;
    const table = Promise.resolve(byWorker.map((ps) => Float64Array.from(ps, (p) => p.id)));
    return {
      table,
      loadedAll: Promise.all(this.workers.map((w, i) => w.loadSnapshot(byWorker[i]!, packNames, epoch, fsynced, filesTrusted))),
    };
  }

  /**
   * Compacts now (tests and tools): every worker copies its sealed segments whose live share is
   * below `livePercent`, then a checkpoint swaps the copies in. Returns how many were copied.
   */
  async compact(livePercent: number): Promise<number> {
    if (!this.checkpointer) throw new Error('compaction before recovery finished');
    const copied = (await Promise.all(this.workers.map((w) => w.compactNow(livePercent)))).reduce((a, b) => a + b, 0);
    await this.checkpointer.run();
    return copied;
  }

  /** Runs a checkpoint now (tests and tools; the timer runs them otherwise). Needs a recovered server. */
  async checkpoint(): Promise<void> {
    if (!this.checkpointer) throw new Error('checkpoint before recovery finished');
    await this.checkpointer.run();
  }

  /**
   * Clears the supervisor's timers (checkpoint trigger, replay progress poll) and gives up its
   * rpc proxies and request channels (pending calls never settle), no I/O: for an in-process world abandoned after a
   * simulated crash, whose threads the spawner stops. A real process is simply killed.
   */
  abandon(): void {
    this.stopping = true;
    this.checkpointer?.stop();
    this.routers.stop();
    clearInterval(this.progressPoll);
    for (const w of this.workers) release(w);
    for (const c of this.requestClients) c.abandon();
    if (this.wal !== undefined) release(this.wal); // set once start() spawned the WAL thread
  }

  /** What an online backup needs (src/supervisor/backup.ts); only once recovered. */
  backupSource(): BackupSource {
    const cp = this.checkpointer;
    if (!cp) throw new Error('backup before recovery finished');
    return {
      withFreshCheckpoint: (fn) => cp.withFreshCheckpoint(fn),
      withRoutersHeld: (fn) => this.routers.hold(fn),
      walPosition: async () => {
        const s = await this.wal.stats();
        if (!s) throw new Error('the WAL writer is not running');
        return { fileNo: s.fileNo, offset: s.offset };
      },
    };
  }

  walStats(): Promise<WalStats | undefined> {
    return this.wal.stats();
  }

  /** The WAL thread's CPU time in µs (stage clock; debug). */
  walThreadCpuUs(): Promise<number | undefined> {
    return this.wal.threadCpuUs();
  }

  /** Shutdown: long-polls answer at once instead of holding the drain. */
  async releaseLongPolls(): Promise<void> {
    if (this.threads.length > 0) await Promise.all(this.workers.map((w) => w.releaseLongPolls()));
  }

  /** Why a final checkpoint cannot follow this drain, if it cannot. */
  private finalCheckpointBlocked(drained: DrainResult[]): string | undefined {
    for (const d of drained) if (!d.complete) return d.why;
    if (this.storageState === StorageState.FULL) return 'the disk is full';
    if (this.storageState === StorageState.FAILED) return 'storage failed';
    return undefined;
  }

  /**
   * Drain (docs/ARCHITECTURE.md "Startup and shutdown" step 4): the router forwarders stopped
   * and their requests answered, every frame durable, segments flushed, the final checkpoint,
   * threads stopped. `graceLeftMs`: what is left of the drain's grace; the wait for the routers
   * takes at most that (and at most ROUTERS_STOP_MS).
   */
  async shutdown(graceLeftMs = ROUTERS_STOP_MS): Promise<void> {
    this.lifecycle = 'draining';
    this.checkpointer?.stop();
    await this.routers.close();
    // Only a recovered server has a WAL writer and state worth a final checkpoint.
    if (this.checkpointer) {
      // First every forwarder stops, on every worker at once (a worker still serves the others'
      // forwards until they are answered): no copy may reach a dest after the final checkpoint's
      // mark, or the next start would replay it and pad the dest's seqs to its reservation.
      const waitMs = Math.max(0, Math.min(ROUTERS_STOP_MS, graceLeftMs));
      const out = await Promise.all(this.workers.map((w) => w.stopRouters(waitMs)));
      const late = out.reduce((a, b) => a + b, 0);
      if (late > 0)
        this.log.warn(`spool: ${late} router request(s) still unanswered after ${waitMs} ms; the next start replays what they wrote`);
      const drained = await Promise.all(this.workers.map((w) => w.drain()));
      await this.wal.drain();
      // Without a final checkpoint (a full disk, a failed write) the next start replays the WAL,
      // which holds every acknowledged frame: nothing is lost, the restart only takes longer.
      const why = this.finalCheckpointBlocked(drained);
      if (why) this.log.error(`spool: final checkpoint skipped: ${why}; the next start replays the WAL`);
      else await this.checkpointer.run(true).catch((err: Error) => this.checkpointFailed(err));
    }
    this.stopping = true;
    await Promise.all(this.threads.map((t) => t.stop()));
    this.releaseLock?.();
  }
}
