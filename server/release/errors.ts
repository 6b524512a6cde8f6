// Errors of the release adapter (spec/release-adapter.md, "Errors").
//
// ControllerError: there is no evidence that a write was accepted.
// AmbiguousMutationError: a write may have succeeded; the controller must read back and must not retry.
//
// Messages carry only the method, a bounded path without its query, the status and a bounded forge request ID, plus a
// fixed phrase from this module's own vocabulary. Never the token, headers, bodies, transport exception text or asset
// bytes: no `cause` is ever attached. A forge may echo the Authorization value back (as its request ID, say), so the token,
// handed over as `RequestFailure.secret`, is removed from every field here, where every error is built, before the
// message (and so the stack) is rendered.

/** Why a request failed; a closed set so callers never classify by message text. */
export type FailureReason =
  | "invalid-argument"
  | "transport"
  | "timeout"
  | "informational"
  | "status"
  | "redirect"
  | "unexpected-success"
  | "invalid-response"
  | "early-response"
  | "upload-read";

const REASON_TEXT: Record<FailureReason, string> = {
  "invalid-argument": "invalid argument",
  transport: "transport failure",
  timeout: "socket timeout",
  informational: "unexpected informational response",
  status: "unexpected status",
  redirect: "redirect not followed",
  "unexpected-success": "unexpected success status",
  "invalid-response": "invalid successful response",
  "early-response": "response before the request body was sent",
  "upload-read": "asset descriptor read failure",
};

export const MAX_ERROR_PATH_CHARS = 200;
export const MAX_REQUEST_ID_CHARS = 64;

export interface RequestFailure {
  reason: FailureReason;
  method?: string;
  path?: string;
  status?: number;
  requestId?: string;
  /** Fixed text naming the violated rule; only ever a literal from this adapter, never external input. */
  detail?: string;
  /** The token of the request, so that no field can carry it; never stored on the error. */
  secret?: string;
}

/** What replaces the token, or a request ID that holds a piece of it. */
export const REDACTED = "REDACTED";
/** A request ID sharing a run this long with the token (a partial or reformatted echo of it) is replaced whole. */
const TOKEN_PIECE_CHARS = 8;

const REQUEST_ID_DROPPED = /[^A-Za-z0-9:._/-]/g;

/** Drops the query and fragment and bounds the length. */
export function boundedPath(path: string): string {
  let p = path;
  const q = p.search(/[?#]/);
  if (q >= 0) p = p.slice(0, q);
  p = p.replace(/[^\x21-\x7e]/g, "?");
  return p.length > MAX_ERROR_PATH_CHARS ? `${p.slice(0, MAX_ERROR_PATH_CHARS)}...` : p;
}

/**
 * Keeps only characters a forge request ID uses and bounds the length; anything else is dropped. With `secret`, a request
 * ID holding any run of TOKEN_PIECE_CHARS characters of the token, as sent or reduced to those characters (an echo with
 * separators inserted, cut short or prefixed with `Bearer `), becomes REDACTED.
 */
export function boundedRequestId(value: string | undefined, secret?: string): string | undefined {
  if (value === undefined) return undefined;
  const cleaned = value.replace(REQUEST_ID_DROPPED, "").slice(0, MAX_REQUEST_ID_CHARS);
  if (cleaned === "") return undefined;
  return secret !== undefined && sharesPiece(cleaned, secret) ? REDACTED : cleaned;
}

function sharesPiece(value: string, secret: string): boolean {
  const forms = [secret, secret.replace(REQUEST_ID_DROPPED, "")].filter((form) => form !== "");
  const size = Math.min(TOKEN_PIECE_CHARS, ...forms.map((form) => form.length));
  for (let i = 0; i + size <= value.length; i++) {
    const piece = value.slice(i, i + size);
    if (forms.some((form) => form.includes(piece))) return true;
  }
  return false;
}

/** `text` with every occurrence of the token, as sent or percent-encoded, replaced by REDACTED. */
function withoutSecret(text: string | undefined, secret: string | undefined): string | undefined {
  if (text === undefined || secret === undefined) return text;
  let out = text;
  for (const form of new Set([secret, encodeURIComponent(secret)])) out = out.split(form).join(REDACTED);
  return out;
}

/** The fields an error carries: the token removed from each, the path and request ID bounded. */
function carried(f: RequestFailure): Omit<RequestFailure, "secret"> {
  const path = withoutSecret(f.path, f.secret);
  return {
    reason: f.reason,
    method: withoutSecret(f.method, f.secret),
    path: path === undefined ? undefined : boundedPath(path),
    status: f.status,
    requestId: boundedRequestId(f.requestId, f.secret),
    detail: withoutSecret(f.detail, f.secret),
  };
}

function render(f: Omit<RequestFailure, "secret">): string {
  const parts: string[] = [];
  if (f.method !== undefined && f.path !== undefined) parts.push(`${f.method} ${f.path}`);
  let text = REASON_TEXT[f.reason];
  if (f.detail !== undefined) text += ` (${f.detail})`;
  if (f.status !== undefined) text += `: HTTP ${f.status}`;
  if (f.requestId !== undefined) text += `, request ID ${f.requestId}`;
  parts.push(text);
  return parts.join(": ");
}

abstract class ReleaseAdapterError extends Error {
  readonly reason: FailureReason;
  readonly method: string | undefined;
  readonly path: string | undefined;
  readonly status: number | undefined;
  readonly requestId: string | undefined;

  constructor(failure: RequestFailure) {
    const f = carried(failure);
    super(render(f));
    this.reason = f.reason;
    this.method = f.method;
    this.path = f.path;
    this.status = f.status;
    this.requestId = f.requestId;
  }
}

/** No evidence that a write was accepted (every read failure, and mutations refused or never started). */
export class ControllerError extends ReleaseAdapterError {
  override readonly name = "ControllerError";
}

/** A create, upload or publish may have been accepted: read back, never retry. */
export class AmbiguousMutationError extends ReleaseAdapterError {
  override readonly name = "AmbiguousMutationError";
}

export function invalidArgument(detail: string): ControllerError {
  return new ControllerError({ reason: "invalid-argument", detail });
}
