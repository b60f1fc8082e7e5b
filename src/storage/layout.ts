// Paths inside SERVICE_DATA_DIR (docs/FORMAT.md): wal/, meta/, topics/<id hex>/seg-<first>.log.
import path from 'node:path';

export function walDir(dataDir: string): string {
  return path.join(dataDir, 'wal');
}

export function walFileName(fileNo: number): string {
  return `${String(fileNo).padStart(20, '0')}.wal`;
}

export function parseWalFileName(name: string): number | undefined {
  const m = /^(\d{20})\.wal$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

export function metaDir(dataDir: string): string {
  return path.join(dataDir, 'meta');
}

export function topicsDir(dataDir: string): string {
  return path.join(dataDir, 'topics');
}

export function topicDir(dataDir: string, topicId: number): string {
  return path.join(topicsDir(dataDir), topicId.toString(16).padStart(12, '0'));
}

export function segmentFileName(firstSeq: number): string {
  return `seg-${String(firstSeq).padStart(20, '0')}.log`;
}

export function parseSegmentFileName(name: string): number | undefined {
  const m = /^seg-(\d{20})\.log$/.exec(name);
  return m ? Number(m[1]) : undefined;
}
