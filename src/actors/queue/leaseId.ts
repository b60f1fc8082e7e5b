// Lease ids (docs/ARCHITECTURE.md "Queues"): `lease_` + 24 lowercase hex digits: the boot epoch (24 bits), a per-actor
// counter (40 bits) and 32 bits from the actor's seeded RNG. Uniqueness comes from the epoch and
// the counter (a restart always has a new epoch); the RNG only makes ids hard to guess. Pure.

export interface LeaseIdParts {
  epoch: number;
  no: number;
  rand: number;
}

const TWO_32 = 2 ** 32;

/** Two hex digits of each byte value: an id is 12 lookups, not three toString(16) + padStart. */
const HEX2 = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));

/** The 8 hex digits of a 32-bit value. */
function hex32(v: number): string {
  return HEX2[v >>> 24]! + HEX2[(v >>> 16) & 0xff]! + HEX2[(v >>> 8) & 0xff]! + HEX2[v & 0xff]!;
}

export function leaseIdOf(epoch: number, no: number, rand: number): string {
  // epoch: its low 24 bits; counter: its low 40 bits (no mod 2^40), as a high byte and a low word.
  const noHigh = Math.floor(no / TWO_32) & 0xff;
  return (
    'lease_' +
    HEX2[(epoch >>> 16) & 0xff]! +
    HEX2[(epoch >>> 8) & 0xff]! +
    HEX2[epoch & 0xff]! +
    HEX2[noHigh]! +
    hex32(no >>> 0) +
    hex32(rand >>> 0)
  );
}
