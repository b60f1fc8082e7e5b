// Shared by SegmentStore and PackStore: frames may wait a few ms (SERVICE_SEGMENT_WRITE_DELAY_MS)
// so that one write carries many, but never past this many pending bytes.

/** Pending bytes past which frames are written at once, even with a write delay. */
export const DELAYED_DRAIN_BYTES = 256 * 1024;
