// Argument rules of the release adapter (spec/release-adapter.md, "Resources and their fields" and "Limits").
// Each check throws ControllerError (reason "invalid-argument") naming the rule, never echoing the value.

import net from "node:net";
import tls from "node:tls";
import { invalidArgument } from "./errors.ts";
import { MAX_INT63 } from "./strict-json.ts";

export const MAX_TOKEN_BYTES = 4096;
export const MAX_REPOSITORY_COMPONENT_CHARS = 100;
export const DEFAULT_TIMEOUT_SECONDS = 30;
export const MAX_TIMEOUT_SECONDS = 120;
export const MAX_PAGE = 10;
export const MAX_PER_PAGE = 100;
/** Git allows longer names; the forge's ref and release tag fields are bounded well below this. */
export const MAX_TAG_BYTES = 255;
/** The forge's release asset names are file names (255 bytes on the file systems it stores them on). */
export const MAX_ASSET_NAME_BYTES = 255;
export const MAX_RELEASE_NAME_CHARS = 1024;
/** The forge rejects release bodies over 125,000 characters. */
export const MAX_MARKER_CHARS = 125_000;
const MAX_CA_BYTES = 1024 * 1024;

export type ReleaseId = number | bigint;

export function checkToken(token: unknown): string {
  if (typeof token !== "string" || token.length === 0) throw invalidArgument("token is required");
  if (token.length > MAX_TOKEN_BYTES) throw invalidArgument(`token exceeds ${MAX_TOKEN_BYTES} bytes`);
  if (!/^[\x21-\x7e]+$/.test(token)) throw invalidArgument("token must be printable ASCII without whitespace");
  return token;
}

export function checkRepository(repository: unknown): { owner: string; name: string; fullName: string } {
  if (typeof repository !== "string") throw invalidArgument("repository must be <owner>/<repository>");
  const parts = repository.split("/");
  if (parts.length !== 2) throw invalidArgument("repository must be <owner>/<repository>");
  for (const part of parts) {
    if (part.length === 0 || part.length > MAX_REPOSITORY_COMPONENT_CHARS) {
      throw invalidArgument(`repository components must be 1 to ${MAX_REPOSITORY_COMPONENT_CHARS} characters`);
    }
    if (part === "." || part === "..") throw invalidArgument("repository components must not be . or ..");
    // The forge allows only these characters in owner and repository names; anything else could alter the path.
    if (!/^[A-Za-z0-9._-]+$/.test(part)) throw invalidArgument("repository components allow only A-Z a-z 0-9 . _ -");
  }
  return { owner: parts[0] ?? "", name: parts[1] ?? "", fullName: repository };
}

export interface BaseUrl {
  /** The exact configured URL without a trailing slash; the upload template is built from it. */
  text: string;
  hostname: string;
  port: number;
  hostHeader: string;
  /** "" or a path starting with "/" and not ending with one. */
  path: string;
}

export function checkBaseUrl(value: unknown, what: string): BaseUrl {
  if (typeof value !== "string") throw invalidArgument(`${what} must be an HTTPS URL`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalidArgument(`${what} must be an HTTPS URL`);
  }
  if (url.protocol !== "https:") throw invalidArgument(`${what} must use HTTPS`);
  if (url.username !== "" || url.password !== "") throw invalidArgument(`${what} must not carry credentials`);
  if (url.search !== "" || url.hash !== "" || value.includes("?") || value.includes("#")) {
    throw invalidArgument(`${what} must not have a query or fragment`);
  }
  const path = url.pathname.replace(/\/$/, "");
  if (!/^(\/[A-Za-z0-9._~-]+)*$/.test(path) || path.split("/").some((s) => s === "." || s === "..")) {
    throw invalidArgument(`${what} has an unsupported path`);
  }
  const text = `${url.origin}${path}`;
  if (value !== text && value !== `${text}/`) throw invalidArgument(`${what} must be in canonical form`);
  const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  if (hostname === "" || (net.isIP(hostname) === 0 && !/^[a-z0-9.-]+$/.test(hostname))) {
    throw invalidArgument(`${what} has an unsupported host`);
  }
  return { text, hostname, port: url.port === "" ? 443 : Number(url.port), hostHeader: url.host, path };
}

/** Seconds, > 0 and at most 120; fractions are allowed (tests use sub-second timeouts). */
export function checkTimeout(value: unknown): number {
  if (value === undefined) return DEFAULT_TIMEOUT_SECONDS * 1000;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0 || value > MAX_TIMEOUT_SECONDS) {
    throw invalidArgument(`timeoutSeconds must be greater than 0 and at most ${MAX_TIMEOUT_SECONDS}`);
  }
  return Math.max(1, Math.round(value * 1000));
}

export function checkCa(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !value.includes("-----BEGIN CERTIFICATE-----") || value.length > MAX_CA_BYTES) {
    throw invalidArgument("ca must be PEM certificate text");
  }
  try {
    tls.createSecureContext({ ca: value });
  } catch {
    throw invalidArgument("ca must be PEM certificate text");
  }
  return value;
}

/** A positive integer at most 2^63 - 1, as a safe number or a bigint. Returns its decimal text. */
export function checkReleaseId(id: unknown, what = "release ID"): string {
  if (typeof id === "number" && Number.isSafeInteger(id) && id > 0) return String(id);
  if (typeof id === "bigint" && id > 0n && id <= MAX_INT63) return id.toString();
  throw invalidArgument(`${what} must be a positive integer at most 2^63 - 1`);
}

export function checkPage(page: unknown, perPage: unknown): { page: number; perPage: number } {
  if (typeof page !== "number" || !Number.isInteger(page) || page < 1 || page > MAX_PAGE) {
    throw invalidArgument(`page must be an integer from 1 to ${MAX_PAGE}`);
  }
  if (typeof perPage !== "number" || !Number.isInteger(perPage) || perPage < 1 || perPage > MAX_PER_PAGE) {
    throw invalidArgument(`perPage must be an integer from 1 to ${MAX_PER_PAGE}`);
  }
  return { page, perPage };
}

/** Git's check-ref-format rules for the part after `refs/tags/`, limited to printable ASCII (fail closed). */
export function isValidTagName(tag: unknown): tag is string {
  if (typeof tag !== "string" || tag.length === 0 || tag.length > MAX_TAG_BYTES) return false;
  if (!/^[\x21-\x7e]+$/.test(tag)) return false;
  if (/[~^:?*[\\]/.test(tag) || tag.includes("..") || tag.includes("@{") || tag === "@") return false;
  if (tag.endsWith(".") || tag.endsWith("/") || tag.startsWith("/") || tag.startsWith("-")) return false;
  return tag.split("/").every((c) => c.length > 0 && !c.startsWith(".") && !c.endsWith(".lock"));
}

export function checkTag(tag: unknown): string {
  if (!isValidTagName(tag)) throw invalidArgument("tag is not a valid tag name");
  return tag;
}

export function isObjectId(value: unknown): value is string {
  return typeof value === "string" && /^[0-9a-f]{40}$/.test(value);
}

export function checkCommit(value: unknown): string {
  if (!isObjectId(value)) throw invalidArgument("targetCommit must be a full 40-character lowercase commit ID");
  return value;
}

function isWellFormed(s: string): boolean {
  return !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);
}

export function checkReleaseName(value: unknown): string {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_RELEASE_NAME_CHARS) {
    throw invalidArgument(`name must be 1 to ${MAX_RELEASE_NAME_CHARS} characters`);
  }
  if (/[\x00-\x1f\x7f-\x9f]/.test(value) || !isWellFormed(value)) throw invalidArgument("name has control characters");
  return value;
}

export function checkMarker(value: unknown): string {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_MARKER_CHARS) {
    throw invalidArgument(`marker must be 1 to ${MAX_MARKER_CHARS} characters`);
  }
  if (!isWellFormed(value)) throw invalidArgument("marker is not well-formed Unicode");
  return value;
}

export function checkAssetName(value: unknown): string {
  if (typeof value !== "string" || value.length === 0) throw invalidArgument("asset name is required");
  if (Buffer.byteLength(value, "utf8") > MAX_ASSET_NAME_BYTES) {
    throw invalidArgument(`asset name exceeds ${MAX_ASSET_NAME_BYTES} bytes`);
  }
  if (/[\x00-\x1f\x7f-\x9f/\\]/.test(value) || value === "." || value === ".." || !isWellFormed(value)) {
    throw invalidArgument("asset name must be a plain file name");
  }
  return value;
}

/** RFC 3986 percent-encoding of everything but unreserved characters. */
export function percentEncode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export function checkAsset(asset: unknown): { name: string; size: number; fd: number } {
  if (typeof asset !== "object" || asset === null) throw invalidArgument("asset must be { name, size, fd }");
  const { name, size, fd } = asset as Record<string, unknown>;
  const checkedName = checkAssetName(name);
  if (typeof size !== "number" || !Number.isSafeInteger(size) || size < 0) {
    throw invalidArgument("asset size must be a non-negative integer");
  }
  if (typeof fd !== "number" || !Number.isInteger(fd) || fd < 0 || fd > 0x7fffffff) {
    throw invalidArgument("asset fd must be an open file descriptor");
  }
  return { name: checkedName, size, fd };
}

/** A positive JSON integer at most 2^63 - 1; number when safe, else bigint. */
export function positiveId(value: unknown): ReleaseId | undefined {
  if (typeof value === "number" && Number.isSafeInteger(value) && value > 0) return value;
  if (typeof value === "bigint" && value > 0n && value <= MAX_INT63) {
    return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
  }
  return undefined;
}
