import { type BodyReservation, isLargeBody } from "./body-budget.ts";
import { BUSY_WAIT_MS, UNREAD_BODY_BUFFER_BYTES, WEBHOOK_BODY_DEADLINE_MS, WEBHOOK_BODY_MIN_BYTES_PER_SECOND, WEBHOOK_BODY_RATE_GRACE_MS } from "./limits.ts";

/**
 * Reads a request body as raw bytes while counting, and stops at limit + 1 byte: a larger body is refused without being held
 * in memory (spec: 413 "with or without Content-Length; enforced while streaming"). Every body streams, with or without
 * Content-Length, so that only bytes actually received are reserved in the unverified-body budget (a declared length is a
 * ceiling, not a reservation: issue 25 item 2), and so that a sender too slow for the rules below is cut off:
 * - before each read there must be room for the next step (so a body the budget cannot take is left unread), and each
 *   chunk is covered once it is in hand; without room, the read waits up to `busyWaitMs` in all for a give-back, then the
 *   body is refused "busy" (at once when the budget's waits already leave too much unread: body-budget.ts);
 * - the body must have arrived `deadlineMs` after the read began, and after `graceMs` at an average of at least
 *   `minBytesPerSecond` (time spent waiting for room is not held against the sender); otherwise the reader is aborted and
 *   the body refused "failed", as a body cut short by its client is.
 * Bun holds back what the client sends until the stream is read (its socket is paused), so a body left unread costs only
 * what the kernel buffers.
 */
export type BodyRead = { kind: "ok"; bytes: Uint8Array } | { kind: "too_large" } | { kind: "failed" } | { kind: "busy" };

export type BodyReadRules = {
  readonly deadlineMs: number;
  readonly minBytesPerSecond: number;
  readonly graceMs: number;
  readonly busyWaitMs: number;
};

export const BODY_READ_RULES: BodyReadRules = Object.freeze({
  deadlineMs: WEBHOOK_BODY_DEADLINE_MS,
  minBytesPerSecond: WEBHOOK_BODY_MIN_BYTES_PER_SECOND,
  graceMs: WEBHOOK_BODY_RATE_GRACE_MS,
  busyWaitMs: BUSY_WAIT_MS,
});

/** How far ahead of the bytes read so far the budget must have room before each read (nothing is reserved ahead). */
const READ_STEP = 64 * 1024;

export async function readBodyCapped(request: Request, declared: number | null, limit: number, reservation: BodyReservation, rules: BodyReadRules = BODY_READ_RULES): Promise<BodyRead> {
  const body = request.body;
  if (body === null) return { kind: "ok", bytes: new Uint8Array(0) };
  const started = performance.now();
  let waited = 0;
  let waitingSince: number | null = null;
  let total = 0;
  /** Milliseconds until the body is too late: the absolute deadline, or the moment the bytes so far fall below the rate. */
  const timeLeft = () => {
    const now = performance.now();
    const forgiven = waited + (waitingSince === null ? 0 : now - waitingSince);
    return Math.min(started + rules.deadlineMs - now, started + forgiven + rules.graceMs + (total * 1000) / rules.minBytesPerSecond - now);
  };
  /**
   * Waits for give-backs until `room()` holds, within what is left of the request's wait and of its deadline, pledging what
   * it leaves unread meanwhile: the chunk in hand, and what Bun may buffer of the rest of the body.
   */
  const roomWithin = async (room: () => boolean, inHand: number) => {
    if (room()) return true;
    const left = Math.min(rules.busyWaitMs - waited, started + rules.deadlineMs - performance.now());
    const unread = declared === null ? UNREAD_BODY_BUFFER_BYTES : Math.max(0, Math.min(declared - total, UNREAD_BODY_BUFFER_BYTES));
    waitingSince = performance.now();
    const found = await reservation.waitForRoom(room, left, inHand + unread);
    waited += performance.now() - waitingSince;
    waitingSince = null;
    return found;
  };

  const reader = body.getReader();
  // One timer per request rather than one per read (a race per read costs more than the read of a typical body): when it
  // fires early it is set again for what is left; when the body is late it cancels the reader, which ends a pending read.
  let late = false;
  const watch = () => {
    const left = timeLeft();
    if (left > 0) timer = setTimeout(watch, left);
    else {
      late = true;
      reader.cancel().catch(() => {});
    }
  };
  let timer = setTimeout(watch, Math.max(0, timeLeft()));
  const chunks: Uint8Array[] = [];
  try {
    for (;;) {
      // Never past the limit (or the declared length), so a maximal body fits the smallest budget.
      const ahead = Math.min(declared ?? limit, total + READ_STEP);
      const large = isLargeBody(declared, total);
      if (!(await roomWithin(() => reservation.fits(ahead, large), 0))) return await cancelled(reader, { kind: late ? "failed" : "busy" });
      const next = await reader.read();
      if (late) return { kind: "failed" };
      if (next.done) break;
      total += next.value.byteLength;
      if (total > limit) return await cancelled(reader, { kind: "too_large" });
      // A chunk may be larger than the step it was read under (Bun hands over what the socket had), or the room it found may
      // have been taken meanwhile: it is covered now, or the body refused.
      const nowLarge = isLargeBody(declared, total);
      if (!(await roomWithin(() => reservation.cover(total, nowLarge), next.value.byteLength))) return await cancelled(reader, { kind: late ? "failed" : "busy" });
      chunks.push(next.value);
    }
  } catch {
    return { kind: "failed" };
  } finally {
    clearTimeout(timer);
  }
  if (chunks.length === 1) return { kind: "ok", bytes: chunks[0]! };
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return { kind: "ok", bytes };
}

async function cancelled(reader: ReadableStreamDefaultReader<Uint8Array>, read: BodyRead): Promise<BodyRead> {
  await reader.cancel().catch(() => {});
  return read;
}

/** A Content-Length header, when present, must be a plain decimal integer. */
export function parseContentLength(value: string | null): number | null | "invalid" {
  if (value === null) return null;
  if (!/^\d{1,15}$/.test(value.trim())) return "invalid";
  return Number(value.trim());
}
