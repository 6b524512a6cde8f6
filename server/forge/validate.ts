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
