// WAL file naming, header and creation. Runs on the WAL thread (blocking calls are its job) and
// in recovery. Header (32 bytes): magic "SPOOLWAL", u32 version, u32 header length, u64 file
// number, u32 boot epoch, u32 crc32 of bytes [0, 28).
import path from 'node:path';
import { fsyncDirSync, mkdirDurableSync, type Fs } from '../storage/fs.js';
import { crc32 } from 'node:zlib';
import { walDir, walFileName, parseWalFileName } from '../format/layout.js';
import { WAL_FORMAT_VERSION, WAL_HEADER_BYTES, WAL_MAGIC } from '../format/constants.js';
import { readU64, writeU64 } from '../format/frame.js';

export function encodeWalHeader(fileNo: number, bootEpoch: number): Buffer {
  const b = Buffer.alloc(WAL_HEADER_BYTES);
  b.write(WAL_MAGIC, 0, 'latin1');
  b.writeUInt32LE(WAL_FORMAT_VERSION, 8);
  b.writeUInt32LE(WAL_HEADER_BYTES, 12);
  writeU64(b, 16, fileNo);
  b.writeUInt32LE(bootEpoch, 24);
  b.writeUInt32LE(crc32(b.subarray(0, 28)), 28);
  return b;
}

export function checkWalHeader(b: Buffer, fileNo: number): string | undefined {
  if (b.length < WAL_HEADER_BYTES) return 'short header';
  if (b.toString('latin1', 0, 8) !== WAL_MAGIC) return 'bad magic';
  if (b.readUInt32LE(28) !== crc32(b.subarray(0, 28))) return 'bad header crc';
  if (b.readUInt32LE(8) !== WAL_FORMAT_VERSION) return `unsupported WAL version ${b.readUInt32LE(8)}`;
  if (readU64(b, 16) !== fileNo) return 'file number mismatch';
  return undefined;
}

/** Existing WAL file numbers, ascending. */
export function listWalFiles(fsx: Fs, dataDir: string): number[] {
  const dir = walDir(dataDir);
  if (!fsx.existsSync(dir)) return [];
  return fsx
    .readdirSync(dir)
    .map(parseWalFileName)
    .filter((n): n is number => n !== undefined)
    .sort((a, b) => a - b);
}

/** Creates a new WAL file with its header, fsynced together with its directory entry. */
export function createWalFile(fsx: Fs, dataDir: string, fileNo: number, bootEpoch: number): number {
  const dir = walDir(dataDir);
  mkdirDurableSync(fsx, dir);
  const fd = fsx.openSync(path.join(dir, walFileName(fileNo)), 'wx');
  fsx.writeSync(fd, encodeWalHeader(fileNo, bootEpoch), 0);
  fsx.fdatasyncSync(fd);
  fsyncDirSync(fsx, dir);
  return fd;
}
