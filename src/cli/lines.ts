// NDJSON input for the CLI: the lines of stdin or of a file, split on LF (a CR before it is
// dropped). Files are read in 64 KiB chunks, as a pipe delivers them (1 MiB reads measured ~20%
// slower end to end). A missing or unreadable file is a usage error.
import fs from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { usageError } from './common.js';

const CHUNK_BYTES = 1 << 16;

export interface LineSource {
  /** Total bytes when known (a regular file), for a progress bar. */
  totalBytes: number | undefined;
  /** Bytes read so far. */
  readBytes(): number;
  /** Batches of lines, each as they come off one chunk, with the 1-based number of the first. */
  chunks(): AsyncGenerator<{ lines: string[]; firstLineNo: number }>;
}

/** Opens `file` (or stdin for undefined / '-'). */
export function openLines(file: string | undefined): LineSource {
  let fd = 0;
  let totalBytes: number | undefined;
  let stdinIsFile = false;
  try {
    stdinIsFile = fs.fstatSync(0).isFile();
  } catch {
    /* no stdin */
  }
  if (file === undefined || file === '-') {
    if (stdinIsFile) totalBytes = fs.fstatSync(0).size;
  } else {
    try {
      fd = fs.openSync(file, 'r');
      const st = fs.fstatSync(fd);
      if (st.isDirectory()) throw usageError(`${file}: is a directory`);
      if (st.isFile()) totalBytes = st.size;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw usageError(`${file}: no such file`);
      if ((e as NodeJS.ErrnoException).code === 'EACCES') throw usageError(`${file}: permission denied`);
      throw e;
    }
  }
  let read = 0;
  return {
    totalBytes,
    readBytes: () => read,
    async *chunks() {
      // A pipe or terminal on stdin is read through process.stdin, not fs: fs reads of a
      // non-blocking pipe fail with EAGAIN, which the stream handle of process.stdin waits out.
      const stream =
        fd === 0 && !stdinIsFile ? process.stdin : fs.createReadStream('', { fd, highWaterMark: CHUNK_BYTES, autoClose: fd !== 0 });
      const dec = new StringDecoder('utf8');
      let rest = '';
      let lineNo = 1;
      const split = (text: string, final: boolean) => {
        const parts = (rest + text).split('\n');
        rest = final ? '' : parts.pop()!;
        const firstLineNo = lineNo;
        lineNo += parts.length;
        const lines: string[] = [];
        // Blank lines are skipped but still counted, so messages name the line a user sees.
        for (let i = 0; i < parts.length; i++) {
          let l = parts[i]!;
          if (l.charCodeAt(l.length - 1) === 13) l = l.slice(0, -1);
          lines.push(l);
        }
        return { lines, firstLineNo };
      };
      for await (const buf of stream) {
        read += (buf as Buffer).length;
        yield split(dec.write(buf as Buffer), false);
      }
      const tail = dec.end() + rest;
      rest = '';
      if (tail.length) yield split(tail, true);
    },
  };
}

/** A blank (whitespace-only) line: skipped, not an error. */
export function isBlank(line: string): boolean {
  return line.length === 0 || /^\s*$/.test(line);
}
