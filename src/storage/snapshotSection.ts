// A topic worker's section of a v2 snapshot (docs/FORMAT.md "Snapshots"), one import for its
// three parts: the format's shared pieces (snapshotSectionFormat.ts), the writer a worker's
// checkpoint step uses (snapshotSectionWriter.ts) and the readers recovery uses
// (snapshotSectionReader.ts). Runs wherever those do (topic workers, main, offline tools).
export * from './snapshotSectionFormat.js';
export * from './snapshotSectionWriter.js';
export * from './snapshotSectionReader.js';
