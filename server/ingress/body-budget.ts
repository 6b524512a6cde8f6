import { BUSY_WAIT_BYTES, MAX_WEBHOOK_BODY_BYTES, SMALL_BODY_LANE_BYTES, SMALL_WEBHOOK_BODY_BYTES } from "./limits.ts";

/**
 * The process-wide budget of webhook body bytes held before their signature is verified (issue 16 item 5, issue 25 item 2).
 * Without it each unauthenticated connection may make the service buffer a whole 10 MiB body, so memory grows with the number
 * of connections; with it, unverified bodies never hold more than `limitBytes` together.
 *
 * Rules:
 * - A request reserves only bytes it has received (read-body.ts): a declared Content-Length is a ceiling, never a
 *   reservation, so a connection that declares 10 MiB and trickles a byte now and then holds next to nothing.
 * - Small bodies (declared, or so far, ≤ SMALL_WEBHOOK_BODY_BYTES: nearly every real delivery) have a lane of `laneBytes` that
 *   large ones never use: large bodies share `limitBytes - laneBytes`, small ones the whole budget. A reservation that grows
 *   past the small size (a body without Content-Length) becomes large and stays large.
 * - Every reservation is given back when its body is verified or refused, on every path including a client that disconnects
 *   mid-body; each give-back wakes the requests waiting for room (`waitForRoom`).
 * - A request waiting for room leaves bytes unread that Bun buffers outside the budget, so waits pledge those bytes against
 *   `waitLimitBytes`; a wait that does not fit there is not begun.
 * - Bytes given back are garbage that the JavaScript heap frees only at its next collection, which its own heuristics put
 *   off under a flood of bodies until the garbage is several budgets large. So once large bodies have given back
 *   `collectEveryBytes` since the last one, a collection runs at once (`npm run bench -- bodies`, 300 connections sending 10 MiB bodies against
 *   the default budget: peak RSS 266 MiB without these collections, 140 MiB with them). Each pauses the process for 10 to
 *   30 ms (measured in `serve` on 2 busy cores); at the default budget that is once per 16 MiB of large bodies. Small bodies
 *   (nearly every real delivery) never count: their garbage is young and the heap's own collections keep up with it, so the
 *   ordinary delivery path pays no forced pause.
 * A plain counter: the event loop is single threaded, so no lock or library is needed.
 */
export type BodyBudget = {
  readonly limitBytes: number;
  /** Bytes only small bodies may use. */
  readonly laneBytes: number;
  /** Bytes currently reserved by requests whose bodies are being read or verified. */
  inUse(): number;
  /** The part of inUse() reserved by large bodies. */
  inUseLarge(): number;
  /** Bytes pledged by the requests waiting for room now. */
  waiting(): number;
  open(): BodyReservation;
};

export type BodyReservation = {
  /** Whether cover(bytes, large) would succeed now (nothing is reserved). */
  fits(bytes: number, large: boolean): boolean;
  /**
   * Grows this reservation to at least `bytes` in total, in the large bodies' share when `large` (or when it was large before);
   * false, leaving it unchanged, when the budget cannot cover that.
   */
  cover(bytes: number, large: boolean): boolean;
  /**
   * Resolves true once `room()` holds, checked now and at each give-back of any reservation of the budget; false once `ms`
   * have passed, or at once when the waits already pledge so much that `pledgeBytes` more would pass the wait limit.
   */
  waitForRoom(room: () => boolean, ms: number, pledgeBytes: number): Promise<boolean>;
  /** Gives every reserved byte back; a released reservation covers nothing more. Calling it again does nothing. */
  release(): void;
};

/**
 * The lane: 16 MiB (64 small bodies of the largest small size, thousands of typical ones) when the budget has that much room
 * beyond one maximal body, else whatever it has beyond one maximal body, so the smallest budget the settings allow (10 MiB)
 * still holds one delivery of the largest body.
 */
export function defaultLaneBytes(limitBytes: number): number {
  return Math.min(SMALL_BODY_LANE_BYTES, Math.max(0, limitBytes - MAX_WEBHOOK_BODY_BYTES));
}

/** Whether a body belongs to the large bodies' share: by its declared length, or without one by what has arrived so far. */
export function isLargeBody(declared: number | null, received: number): boolean {
  return (declared ?? received) > SMALL_WEBHOOK_BODY_BYTES;
}

export type BodyBudgetOptions = {
  /** Default: defaultLaneBytes(limitBytes). */
  readonly laneBytes?: number;
  /** Default: BUSY_WAIT_BYTES. */
  readonly waitLimitBytes?: number;
  /** Bytes given back by large bodies between forced collections. Default: a quarter of the budget. */
  readonly collectEveryBytes?: number;
  /** Default: a synchronous full collection of the heap (Bun.gc(true)). */
  readonly collect?: () => void;
};

export function createBodyBudget(limitBytes: number, options: BodyBudgetOptions = {}): BodyBudget {
  const laneBytes = options.laneBytes ?? defaultLaneBytes(limitBytes);
  const waitLimitBytes = options.waitLimitBytes ?? BUSY_WAIT_BYTES;
  const collectEveryBytes = options.collectEveryBytes ?? Math.floor(limitBytes / 4);
  const collect = options.collect ?? (() => Bun.gc(true));
  if (!(laneBytes >= 0 && laneBytes <= limitBytes)) throw new RangeError("the small-body lane must lie within the budget");
  const largeLimit = limitBytes - laneBytes;
  let givenBack = 0;
  let inUse = 0;
  let inUseLarge = 0;
  let waiting = 0;
  let waiters = new Set<() => void>();
  const freed = () => {
    const woken = waiters;
    waiters = new Set();
    for (const wake of woken) wake();
  };
  /** Resolves true at the next give-back, false once `ms` have passed without one. */
  const nextGiveBack = (ms: number) =>
    new Promise<boolean>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        waiters.delete(wake);
        resolve(false);
      }, Math.max(0, ms));
      waiters.add(wake);
    });
  return {
    limitBytes,
    laneBytes,
    inUse: () => inUse,
    inUseLarge: () => inUseLarge,
    waiting: () => waiting,
    open() {
      let held = 0;
      let heldLarge = false;
      let released = false;
      const fits = (bytes: number, large: boolean) => {
        if (released) return false;
        const asLarge = large || heldLarge;
        const next = Math.max(bytes, held);
        if (inUse - held + next > limitBytes) return false;
        return !asLarge || inUseLarge - (heldLarge ? held : 0) + next <= largeLimit;
      };
      return {
        fits,
        cover(bytes, large) {
          if (!fits(bytes, large)) return false;
          const asLarge = large || heldLarge;
          const next = Math.max(bytes, held);
          inUse += next - held;
          inUseLarge += (asLarge ? next : 0) - (heldLarge ? held : 0);
          held = next;
          heldLarge = asLarge;
          return true;
        },
        async waitForRoom(room, ms, pledgeBytes) {
          if (room()) return true;
          if (ms <= 0 || waiting + pledgeBytes > waitLimitBytes) return false;
          waiting += pledgeBytes;
          try {
            const until = performance.now() + ms;
            while (!room()) {
              const left = until - performance.now();
              if (left <= 0 || !(await nextGiveBack(left))) return room();
            }
            return true;
          } finally {
            waiting -= pledgeBytes;
          }
        },
        release() {
          if (released) return;
          released = true;
          inUse -= held;
          if (heldLarge) inUseLarge -= held;
          if (heldLarge) givenBack += held;
          held = 0;
          if (waiters.size > 0) freed();
          if (givenBack >= collectEveryBytes) {
            givenBack = 0;
            collect();
          }
        },
      };
    },
  };
}
