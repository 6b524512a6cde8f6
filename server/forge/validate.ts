// Narrowing helpers for forge JSON: anything not shaped as documented is a malformed body (retryable), never a guess.
import { invalidBody } from "./errors.ts";

export type Json = Record<string, unknown>;

export function object(value: unknown, what: string): Json {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalidBody(what);
  return value as Json;
}
export function str(o: Json, key: string, what: string): string {
  const v = o[key];
  if (typeof v !== "string") throw invalidBody(what);
  return v;
}
export function int(o: Json, key: string, what: string): number {
  const v = o[key];
  if (typeof v !== "number" || !Number.isSafeInteger(v)) throw invalidBody(what);
  return v;
}
export function bool(o: Json, key: string, what: string): boolean {
  const v = o[key];
  if (typeof v !== "boolean") throw invalidBody(what);
  return v;
}
export function optStr(o: Json, key: string, what: string): string | null {
  const v = o[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== "string") throw invalidBody(what);
  return v;
}
export const SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
export function sha(o: Json, key: string, what: string): string {
  const v = str(o, key, what);
  if (!SHA.test(v)) throw invalidBody(what);
  return v;
}

// Extended ISO 8601 date-time with a mandatory zone designator: Z, ±hh, ±hhmm or ±hh:mm; seconds and fraction optional.
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:[.,]\d{1,9})?)?(?:Z|[+-](\d{2})(?::?(\d{2}))?)$/;

/** A timezone-aware ISO 8601 timestamp naming a real calendar instant (a local time without zone is rejected). */
export function isZonedTimestamp(value: unknown): boolean {
  if (typeof value !== "string") return false;
  const m = TIMESTAMP.exec(value);
  if (!m) return false;
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [number, number, number, number, number];
  const second = m[6] === undefined ? 0 : Number(m[6]);
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth) return false;
  if (hour > 23 || minute > 59 || second > 59) return false;
  if (m[7] !== undefined && Number(m[7]) > 23) return false;
  if (m[8] !== undefined && Number(m[8]) > 59) return false;
  return true;
}

/**
 * A timezone-aware timestamp as epoch milliseconds, or null when it is not one (or names no instant the runtime can read):
 * used where a timestamp only tells whether something changed, so an unreadable one counts as changed, never as an error.
 */
export function zonedTimestampMs(value: unknown): number | null {
  if (!isZonedTimestamp(value)) return null;
  const ms = Date.parse(value as string);
  return Number.isFinite(ms) ? ms : null;
}
