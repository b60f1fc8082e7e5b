// The worker ↔ WAL thread port (raw, transferred buffers): submissions, marks and replay flow
// control in; cumulative acks, failures and replay chunks out.

export type WalIn =
  /** Whole encoded frames from one worker turn; `seq` increases by one per submission. */
  | { t: 'submit'; seq: number; buf: ArrayBuffer; durable: boolean; frames: number }
  /** Checkpoint mark: the WAL thread records the log position after everything before it. */
  | { t: 'mark'; id: number }
  /** Recovery flow control: a replay chunk of this many bytes has been applied. */
  | { t: 'replayAck'; bytes: number };

export type WalOut =
  | { t: 'ack'; writtenThrough: number; durableThrough: number }
  | { t: 'failed'; message: string }
  /** Recovery: frames for this worker, in log order (whole frames, concatenated). */
  | { t: 'replay'; buf: ArrayBuffer }
  | { t: 'replayDone' };

export interface WalPosition {
  fileNo: number;
  offset: number;
}
