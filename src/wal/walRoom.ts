// The WAL's room (docs/ARCHITECTURE.md "Deleting on a full disk"): how many bytes of frames the WAL
// thread can write now without new disk space. That is what is left of the current file's
// pre-allocated space plus its next file (the reserve) or, without one, the spare (walSpare.ts),
// and 0 while a submission waits for space or no file is open. One shared cell: the WAL thread
// writes it after every flush and whenever its files change; a topic worker takes from it when
// it lets a frame that gives space back through on a full disk, so a burst of such frames does
// not count the same room twice before the next flush writes them. The figure is advisory: a
// frame let through against room that frames still on their way then take waits for space like
// any other frame, unacknowledged (nothing applied is lost, its reply comes once space returns).
import { WAL_ROOM_SLOT } from '../core/sharedCounters.js';

const CELL_MAX = 0x7fff_ffff;

/** The WAL thread: the room it has now. */
export function publishWalRoom(counters: Int32Array, bytes: number): void {
  Atomics.store(counters, WAL_ROOM_SLOT, Math.max(0, Math.min(CELL_MAX, Math.floor(bytes))));
}

/** A topic worker: takes `bytes` of the room for a frame; false (nothing taken) when there is less. */
export function takeWalRoom(counters: Int32Array, bytes: number): boolean {
  for (;;) {
    const room = Atomics.load(counters, WAL_ROOM_SLOT);
    if (room < bytes) return false;
    if (Atomics.compareExchange(counters, WAL_ROOM_SLOT, room, room - bytes) === room) return true;
  }
}
