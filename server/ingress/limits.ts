/** Webhook bounds (spec "Limits"). */
export const MAX_WEBHOOK_BODY_BYTES = 10 * 1024 * 1024;
export const MAX_WEBHOOK_HEADER_LENGTH = 128;
/**
 * Retry-After of a delivery refused because the unverified-body budget is spent: a forge sends a maximal body in well under a
 * second, so reservations turn over within seconds unless slow senders hold them (then retrying sooner cannot help).
 */
export const BUSY_RETRY_AFTER_SECONDS = 5;
/**
 * How long a delivery waits for room in the unverified-body budget before it is answered 503 `busy`: room comes back as
 * soon as any body is verified, and a forge never retries a refused delivery, so a second of patience saves it whenever
 * the budget is merely full for a moment.
 */
export const BUSY_WAIT_MS = 1_000;
/**
 * What Bun keeps of a body that is not being read before it stops reading the socket: about 1.1 MiB per connection
 * (measured on Bun 1.4.4), more than the budget would ever let it reserve at once. A request waiting for room holds that much
 * outside the budget, so waits are bounded too: together they may leave at most BUSY_WAIT_BYTES unread (each counts the
 * chunk it holds and what Bun may buffer for it, at most its remaining declared length); past that a delivery is refused at once.
 */
export const UNREAD_BODY_BUFFER_BYTES = 1_200 * 1024;
export const BUSY_WAIT_BYTES = 16 * 1024 * 1024;
/**
 * A body at most this large (declared, or so far without Content-Length) is small: nearly every real delivery. Small bodies
 * have a lane of the budget that large ones never use (body-budget.ts).
 */
export const SMALL_WEBHOOK_BODY_BYTES = 256 * 1024;
/** The most of the budget kept for small bodies (64 small bodies of the largest size; thousands of typical ones). */
export const SMALL_BODY_LANE_BYTES = 16 * 1024 * 1024;
/**
 * Every body must have arrived this long after its request's headers, whatever its pace: half the forge's 10 s response
 * deadline, leaving the other half for acceptance and the fast path. A forge sends even a maximal body well within it
 * (10 MiB in 5 s is 2 MiB/s).
 */
export const WEBHOOK_BODY_DEADLINE_MS = 5_000;
/**
 * The minimum receive rate: after a grace period from the headers, a body that is still arriving must have come at least
 * this fast on average (time spent waiting for budget room is not counted against it). A byte now and then is cut after
 * about a second instead of holding a connection and its bytes until the deadline.
 */
export const WEBHOOK_BODY_MIN_BYTES_PER_SECOND = 64 * 1024;
export const WEBHOOK_BODY_RATE_GRACE_MS = 1_000;
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

/** The fixed vocabulary of `service_webhook_failures_total{reason}` (DESIGN 3.6); every reason's series exists from the first scrape. */
export const WEBHOOK_FAILURE_REASONS = ["headers", "signature", "content_length", "too_large", "busy", "json", "payload", "not_configured", "database", "authority_timeout"] as const;
