import { createHash, timingSafeEqual } from "node:crypto";
import { ConfigError } from "./config-error.ts";

/** The shortest bearer token accepted for the decision routes, in bytes (a 128-bit random value written as text). */
export const MIN_DECISIONS_TOKEN_BYTES = 32;

/** One named reader of the decision routes: its name (written to the access log) and the SHA-256 of its token. */
export interface DecisionsToken {
  readonly name: string;
  readonly digest: Buffer;
}

const NAME = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * Parses the decisions token file: one `name:token` a line; blank lines and lines starting with `#` are ignored. A name is 1 to
 * 64 letters, digits, '.', '-' or '_' and appears once; a token is at least 32 bytes without spaces. Only each token's SHA-256 is
 * kept, so comparisons take the same time whatever the token. Errors name the setting and the line number, never a token.
 */
export function parseDecisionsTokens(text: string, variable = "SERVICE_DECISIONS_TOKEN_FILE"): readonly DecisionsToken[] {
  const tokens: DecisionsToken[] = [];
  const names = new Set<string>();
  const lines = text.split(/\r?\n/);
  for (const [index, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const where = `line ${index + 1}`;
    const colon = line.indexOf(":");
    if (colon < 0) throw new ConfigError(variable, `${where} must be name:token`);
    const name = line.slice(0, colon).trim();
    const token = line.slice(colon + 1).trim();
    if (name === "") throw new ConfigError(variable, `${where} has an empty name`);
    if (!NAME.test(name)) throw new ConfigError(variable, `${where}: a name is 1 to 64 letters, digits, '.', '-' or '_'`);
    if (names.has(name)) throw new ConfigError(variable, `${where} repeats the name ${name}`);
    if (/\s/.test(token)) throw new ConfigError(variable, `${where}: a token has no spaces`);
    if (Buffer.byteLength(token, "utf8") < MIN_DECISIONS_TOKEN_BYTES) {
      throw new ConfigError(variable, `${where}: the token must be at least ${MIN_DECISIONS_TOKEN_BYTES} bytes`);
    }
    names.add(name);
    tokens.push({ name, digest: sha256(token) });
  }
  if (tokens.length === 0) throw new ConfigError(variable, "file names no token (one name:token a line)");
  const digests = new Set(tokens.map((t) => t.digest.toString("hex")));
  if (digests.size !== tokens.length) throw new ConfigError(variable, "two names share one token; give each reader its own");
  return tokens;
}

/** The reader a presented bearer token belongs to, or null. Every configured token is compared, each in constant time. */
export function matchDecisionsToken(tokens: readonly DecisionsToken[], presented: string): string | null {
  const digest = sha256(presented);
  let found: string | null = null;
  for (const t of tokens) if (timingSafeEqual(t.digest, digest) && found === null) found = t.name;
  return found;
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}
