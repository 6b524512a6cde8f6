/** Webhook bounds (spec "Limits"). */
export const MAX_WEBHOOK_BODY_BYTES = 10 * 1024 * 1024;
export const MAX_WEBHOOK_HEADER_LENGTH = 128;
/**
 * Retry-After of a delivery refused because the unverified-body budget is spent: a forge sends a maximal body in well under a
 * second, so reservations turn over within seconds unless slow senders hold them (then retrying sooner cannot help).
 */
export const BUSY_RETRY_AFTER_SECONDS = 5;
/** A head commit ID: 40 (SHA-1) or 64 (SHA-256) lowercase hexadecimal characters. */
export const HEAD_SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
export const SIGNATURE_HEADER = /^sha256=[0-9a-f]{64}$/;
/**
 * Every webhook is answered within this long of its receipt (spec "Limits": the forge's response deadline is 10 s; a slower
 * answer is recorded as failed and never retried, rule 10). One second is left for the answer's way back and for what
 * happens before the handler starts its clock. Acceptance, the fast path and its follow-up share it (handle-webhook.ts).
 */
export const WEBHOOK_ANSWER_DEADLINE_MS = 9_000;
/** Of that deadline, what the fast path leaves for its follow-up transaction (releaseFastPathWork: one short statement batch). */
export const FAST_PATH_FOLLOW_UP_MS = 250;
