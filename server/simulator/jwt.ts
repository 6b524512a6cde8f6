// App JWT verification as the forge does it: RS256 over header.payload with the App's public key, iss = App ID, exp ≤ iat + 10 min.
import { verify } from "node:crypto";
import type { ForgeApp, ForgeState } from "./model.ts";

export type JwtResult = { ok: true; app: ForgeApp } | { ok: false; message: string };

const b64url = (s: string) => Buffer.from(s.replace(/-/g, "+").replace(/_/g, "/"), "base64");

export function verifyAppJwt(state: ForgeState, jwt: string, nowSeconds: number): JwtResult {
  const parts = jwt.split(".");
  if (parts.length !== 3) return { ok: false, message: "A JSON web token could not be decoded" };
  const [h, p, s] = parts as [string, string, string];
  let header: { alg?: string }, payload: { iss?: unknown; iat?: unknown; exp?: unknown };
  try { header = JSON.parse(b64url(h).toString("utf8")); payload = JSON.parse(b64url(p).toString("utf8")); }
  catch { return { ok: false, message: "A JSON web token could not be decoded" }; }
  if (header.alg !== "RS256") return { ok: false, message: "'alg' must be RS256" };
  const app = state.apps.get(Number(payload.iss));
  if (!app) return { ok: false, message: "Integration not found" };
  if (!verify("RSA-SHA256", Buffer.from(`${h}.${p}`), app.publicKey, b64url(s))) return { ok: false, message: "A JSON web token could not be decoded" };
  if (typeof payload.iat !== "number" || payload.iat > nowSeconds + 60) return { ok: false, message: "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued" };
  if (typeof payload.exp !== "number" || payload.exp <= nowSeconds) return { ok: false, message: "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires" };
  if (payload.exp - payload.iat > 660) return { ok: false, message: "'Expiration time' claim ('exp') is too far in the future" };
  return { ok: true, app };
}
