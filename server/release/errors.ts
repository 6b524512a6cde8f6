// Errors of the release adapter (spec/release-adapter.md, "Errors").
//
// ControllerError: there is no evidence that a write was accepted.
// AmbiguousMutationError: a write may have succeeded; the controller must read back and must not retry.
//
// Messages carry only the method, a bounded path without its query, the status and a bounded forge request ID, plus a
// fixed phrase from this module's own vocabulary. Never the token, headers, bodies, transport exception text or asset
// bytes: no `cause` is ever attached.

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
}

/** Drops the query and fragment and bounds the length. */
export function boundedPath(path: string): string {
  let p = path;
  const q = p.search(/[?#]/);
  if (q >= 0) p = p.slice(0, q);
  p = p.replace(/[^\x21-\x7e]/g, "?");
  return p.length > MAX_ERROR_PATH_CHARS ? `${p.slice(0, MAX_ERROR_PATH_CHARS)}...` : p;
}

/** Keeps only characters a forge request ID uses and bounds the length; anything else is dropped. */
export function boundedRequestId(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const cleaned = value.replace(/[^A-Za-z0-9:._/-]/g, "").slice(0, MAX_REQUEST_ID_CHARS);
  return cleaned === "" ? undefined : cleaned;
}

function render(f: RequestFailure): string {
  const parts: string[] = [];
  if (f.method !== undefined && f.path !== undefined) parts.push(`${f.method} ${boundedPath(f.path)}`);
  let text = REASON_TEXT[f.reason];
  if (f.detail !== undefined) text += ` (${f.detail})`;
  if (f.status !== undefined) text += `: HTTP ${f.status}`;
  const requestId = boundedRequestId(f.requestId);
  if (requestId !== undefined) text += `, request ID ${requestId}`;
  parts.push(text);
  return parts.join(": ");
}

abstract class ReleaseAdapterError extends Error {
  readonly reason: FailureReason;
  readonly method: string | undefined;
  readonly path: string | undefined;
  readonly status: number | undefined;
  readonly requestId: string | undefined;

  constructor(f: RequestFailure) {
    super(render(f));
    this.reason = f.reason;
    this.method = f.method;
    this.path = f.path === undefined ? undefined : boundedPath(f.path);
    this.status = f.status;
    this.requestId = boundedRequestId(f.requestId);
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
