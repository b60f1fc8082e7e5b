// Lease ids (docs/ARCHITECTURE.md "Queues"): `lease_` + 24 lowercase hex digits: the boot epoch (24 bits), a per-actor
// counter (40 bits) and 32 bits from the actor's seeded RNG. Uniqueness comes from the epoch and
// the counter (a restart always has a new epoch); the RNG only makes ids hard to guess. Pure.

export interface LeaseIdParts {
  epoch: number;
  no: number;
  rand: number;
}

const EPOCH_MASK = 0xff_ffff;
const NO_LIMIT = 2 ** 40;

function hex(v: number, digits: number): string {
  return v.toString(16).padStart(digits, '0');
}

export function leaseIdOf(epoch: number, no: number, rand: number): string {
  return `lease_${hex(epoch & EPOCH_MASK, 6)}${hex(no % NO_LIMIT, 10)}${hex(rand >>> 0, 8)}`;
}

/** The syntax docs/API.md "Queues" accepts in `lease_ids` ("" means no token, checked by the caller). */
export const LEASE_ID_SYNTAX = /^lease_[0-9a-f]+$/;
