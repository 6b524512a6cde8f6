/**
 * The process-wide budget of webhook body bytes held before their signature is verified (issue 16 item 5). Without it each
 * unauthenticated connection may make the service buffer a whole 10 MiB body, so memory grows with the number of
 * connections; with it, unverified bodies never hold more than `limitBytes` together. A request reserves bytes before it
 * reads them (its declared Content-Length up front, a chunked body step by step) and gives them back when its body is
 * verified or refused, on every path including a client that disconnects mid-body. A plain counter: the event loop is single
 * threaded, so no lock or library is needed.
 */
export type BodyBudget = {
  readonly limitBytes: number;
  /** Bytes currently reserved by requests whose bodies are being read or verified. */
  inUse(): number;
  open(): BodyReservation;
};

export type BodyReservation = {
  /** Grows this reservation to at least `bytes` in total; false, leaving it unchanged, when the budget cannot cover that. */
  cover(bytes: number): boolean;
  /** Gives every reserved byte back; a released reservation covers nothing more. Calling it again does nothing. */
  release(): void;
};

export function createBodyBudget(limitBytes: number): BodyBudget {
  let inUse = 0;
  return {
    limitBytes,
    inUse: () => inUse,
    open() {
      let held = 0;
      let released = false;
      return {
        cover(bytes) {
          if (released) return false;
          if (bytes <= held) return true;
          if (inUse - held + bytes > limitBytes) return false;
          inUse += bytes - held;
          held = bytes;
          return true;
        },
        release() {
          inUse -= held;
          held = 0;
          released = true;
        },
      };
    },
  };
}
