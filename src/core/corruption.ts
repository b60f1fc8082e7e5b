// CorruptionError: stored bytes that do not decode or do not agree with what the rest of the data
// says (a WAL file, a segment, a pack, a snapshot, a frame read back). One class for all of them,
// with where the damage was found, so that start-up refuses with one line naming the file and
// offset, and callers tell damage from other failures by type. Any thread.

export class CorruptionError extends Error {
  override readonly name = 'CorruptionError';

  /**
   * @param where the file (or the stored thing: "topic 1a packed segment") holding the damage
   * @param detail what is wrong there
   * @param offset the byte offset in `where`, when known
   */
  constructor(
    readonly where: string,
    readonly detail: string,
    readonly offset?: number,
  ) {
    super(`${where}${offset === undefined ? '' : ` at offset ${offset}`}: ${detail}`);
  }
}
