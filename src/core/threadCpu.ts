// CPU time of the calling thread (the stage clock's per-thread CPU, docs/PERFORMANCE.md "Stage
// clock"): utime + stime of /proc/thread-self/stat, in µs. Node 20 has no per-thread CPU call;
// Linux keeps one per task. Debug tooling only, read on demand, never on a request's path.
import fs from 'node:fs';

/** Clock ticks per second of /proc's utime and stime (USER_HZ; 100 on Linux). */
const TICKS_PER_S = 100;

/** µs of CPU this thread has used, or undefined where /proc/thread-self is not there. */
export function threadCpuUs(): number | undefined {
  try {
    const stat = fs.readFileSync('/proc/thread-self/stat', 'latin1');
    // The command name is in parentheses and may hold spaces: fields count from after it.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1e6) / TICKS_PER_S;
  } catch {
    return undefined;
  }
}
