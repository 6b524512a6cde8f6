import { createHmac, timingSafeEqual } from "node:crypto";
import { SIGNATURE_HEADER } from "./limits.ts";

/**
 * HMAC-SHA256 of the exact raw body bytes, compared in constant time (DESIGN 3.6: never verify a decoded string: a BOM or
 * invalid UTF-8 would change the bytes). `header` must already match sha256=<64 lowercase hex>.
 */
export function verifySignature(secret: Uint8Array, body: Uint8Array, header: string): boolean {
  if (!SIGNATURE_HEADER.test(header)) return false;
  const expected = createHmac("sha256", secret).update(body).digest();
  const given = Buffer.from(header.slice("sha256=".length), "hex");
  return given.length === expected.length && timingSafeEqual(given, expected);
}
