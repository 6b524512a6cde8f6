// One exchange of the one-use manifest code for the new App's credentials, as a value (STYLE 4). The result holds secrets: it is
// rendered once into the callback page and dropped; nothing here logs or keeps it.
import { type AppCredentials, convertAppManifest, ForgeError } from "../forge/index.ts";

/** Bound on the conversion request (the administrator is waiting in the browser). */
export const SETUP_EXCHANGE_TIMEOUT_MS = 10_000;
/** A forge code is short; anything longer, or with other characters, is refused without a request. */
const CODE = /^[A-Za-z0-9_-]{1,128}$/;

export type ExchangeResult =
  | { kind: "ok"; credentials: AppCredentials }
  /** The forge refused the code: unknown, already used or expired (or a malformed code we never sent). */
  | { kind: "rejected" }
  /** The forge answered without one of the credentials the service needs. */
  | { kind: "incomplete" }
  /** No answer in time, a connection failure or a forge error: nothing is known about the code. */
  | { kind: "unavailable" };

export interface ExchangeOptions { apiUrl: string; timeoutMs?: number; fetch?: typeof fetch }

export type ExchangeCode = (code: string) => Promise<ExchangeResult>;

export function isWellFormedCode(code: string): boolean {
  return CODE.test(code);
}

export function createExchange(options: ExchangeOptions): ExchangeCode {
  return async (code) => {
    if (!isWellFormedCode(code)) return { kind: "rejected" };
    try {
      const credentials = await convertAppManifest(
        { apiUrl: options.apiUrl, requestTimeoutMs: options.timeoutMs ?? SETUP_EXCHANGE_TIMEOUT_MS, ...(options.fetch ? { fetch: options.fetch } : {}) },
        code,
      );
      return { kind: "ok", credentials };
    } catch (error) {
      if (!(error instanceof ForgeError)) return { kind: "unavailable" };
      // convertAppManifest reports a missing credential as a permanent error without an HTTP status.
      if (error.kind === "permanent" && error.status === null) return { kind: "incomplete" };
      if (error.kind === "not_found" || error.kind === "permanent" || error.kind === "unauthorized") return { kind: "rejected" };
      return { kind: "unavailable" };
    }
  };
}
