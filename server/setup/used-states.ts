// Single use of a setup state (issue 16): the callback claims the state's identity (the hash of its nonce) before it exchanges
// the code, so a state (even with its cookie) is never accepted twice.
//
// Kept in the process, not the database: setup has no table of its own, and a state is only worth remembering until it
// expires (at most SETUP_STATE_LIFETIME_SECONDS). What a restart (or a second replica) forgets is bounded by that expiry, and
// a replay within it still needs the nonce cookie, which the browser was told to drop at first use; the forge's code is one-use
// on its own, so a replay can never show the same App's credentials twice.
//
// Bounded: at most `capacity` states are remembered; when that many unexpired states were used, further callbacks are refused
// (fail closed) until some expire. Entries are dropped from the oldest once past their expiry.

/** More concurrent setups than any administrator runs; an attacker who opens /setup in a loop fills it and is refused. */
export const MAX_REMEMBERED_SETUP_STATES = 10_000;

export type StateClaim = "claimed" | "replayed" | "full";

export interface UsedStates {
  /** Whether `id` was claimed (and not released). */
  has(id: string): boolean;
  /** Claims `id` (valid until `expiresAtMs`) for one use. */
  claim(id: string, expiresAtMs: number, nowMs: number): StateClaim;
  /** Gives a claimed state back (the forge did not answer: the administrator may retry with the same state). */
  release(id: string): void;
}

export function createUsedStates(capacity = MAX_REMEMBERED_SETUP_STATES): UsedStates {
  const until = new Map<string, number>(); // id → expiry, in claim order
  const dropExpired = (nowMs: number) => {
    for (const [id, expiresAtMs] of until) {
      // Claim order is nearly expiry order: an entry held behind an unexpired one stays at most one state lifetime longer.
      if (expiresAtMs > nowMs) break;
      until.delete(id);
    }
  };
  return {
    has: (id) => until.has(id),
    claim(id, expiresAtMs, nowMs) {
      dropExpired(nowMs);
      if (until.has(id)) return "replayed";
      if (until.size >= capacity) return "full";
      until.set(id, expiresAtMs);
      return "claimed";
    },
    release(id) {
      until.delete(id);
    },
  };
}
