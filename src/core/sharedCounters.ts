// The counters every thread shares: one SharedArrayBuffer of Int32 cells, made by the supervisor
// and handed to the WAL thread and each topic worker at spawn, read and written with Atomics.
// Every slot is declared here, once; the module that owns a slot's meaning documents it.

/** Live topic count, checked against max_topics by the workers that create topics. */
export const TOPICS_SLOT = 0;
/** The storage state (storage/storageState.ts), written only by the WAL thread. */
export const STORAGE_STATE_SLOT = 1;
/** The next pack file number (format/layout.ts "packs"): one sequence for every worker. */
export const PACK_NO_SLOT = 2;
/** Topic workers whose segment or pack writes wait for disk space (storage/storageState.ts). */
export const SPACE_WAITS_SLOT = 3;
/** Bytes of frames the WAL can take without new disk space (wal/walRoom.ts), written by the WAL thread. */
export const WAL_ROOM_SLOT = 4;

const SLOTS = 5;

/** A fresh set of shared counters, all zero. */
export function newSharedCounters(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT));
}
