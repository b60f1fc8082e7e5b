// The worker ↔ WAL thread port (raw, transferred buffers): submissions, marks and replay flow
// control in; cumulative acks, failures and replay chunks out.

export type WalIn =
  /**
   * Whole encoded frames from one worker turn; `seq` increases by one per submission. The frames
   * are the first `bytes` of `buf` (absent: all of it). `handBack`: once written, `buf` goes back
   * to the worker in an ack's `spare`, to be filled again (a fresh buffer per turn cost its
   * first-touch page faults every time).
   */
  | { t: 'submit'; seq: number; buf: ArrayBuffer; bytes?: number; durable: boolean; frames: number; handBack?: true }
  /** Checkpoint mark: the WAL thread records the log position after everything before it. */
  | { t: 'mark'; id: number }
  /**
   * Recovery flow control: a replay chunk of this many bytes has been applied. `buf` is the
   * chunk's buffer handed back (nothing in the worker keeps a view of it), for the next chunk.
   */
  | { t: 'replayAck'; bytes: number; buf?: ArrayBuffer };

export type WalOut =
  /** `spare`: written submissions' buffers handed back (transferred; nothing here keeps a view). */
  | { t: 'ack'; writtenThrough: number; durableThrough: number; spare?: ArrayBuffer[] }
  | { t: 'failed'; message: string }
  /** Recovery: frames for this worker, in log order (whole frames, concatenated), the first `bytes` of `buf`. */
  | { t: 'replay'; buf: ArrayBuffer; bytes: number }
  | { t: 'replayDone' };

export interface WalPosition {
  fileNo: number;
  offset: number;
}
