import type { Logger } from "../observability/logger.ts";
import type { Metrics } from "../observability/metrics.ts";
import { acceptAuthorityEvent, acceptBaseRefPush, acceptDirectTrigger, acceptMergeGroupDestroyed, acceptMergeGroupRequest, readDuplicateDelivery, type Store, StoreError } from "../store/index.ts";
import { type Mapping, type MappingContext, mapEvent, metricLabels } from "./event-mapping.ts";
import type { BodyBudget } from "./body-budget.ts";
import { type FastPathDeps, type FastPathInput, type FastPathResult, runFastPath } from "./fast-path.ts";
import { BUSY_RETRY_AFTER_SECONDS, FAST_PATH_FOLLOW_UP_MS, MAX_WEBHOOK_BODY_BYTES, MAX_WEBHOOK_HEADER_LENGTH, SIGNATURE_HEADER, WEBHOOK_ANSWER_DEADLINE_MS, type WEBHOOK_FAILURE_REASONS } from "./limits.ts";
import { parseContentLength, readBodyCapped } from "./read-body.ts";
import { releaseBatcherFor } from "./release-batcher.ts";
import { verifySignature } from "./verify-signature.ts";

/**
 * POST /webhooks/forge, in the strict order of DESIGN 3.6: event and delivery headers (X-Forge-Event / X-Forge-Delivery, or
 * GitHub's X-GitHub-Event / X-GitHub-Delivery when those are absent; DESIGN 3.13) (400) → secret configured (503) →
 * signature header form (401) → Content-Length (400/413) → raw body, counted, capped (413), each received byte reserved in
 * the process-wide budget of unverified body bytes (503 with Retry-After after a short wait for room; too slow: 400; see
 * read-body.ts) → HMAC over those exact bytes in constant time (401), after which the reservation is given back → JSON (400) → mapping → payload validation (400) → durable acceptance
 * (503 on database failure) → bounded fast path → 202 {accepted, queued}. Failure reasons are a fixed vocabulary; nothing from the request is logged
 * beyond the event name and action.
 *
 * One deadline, WEBHOOK_ANSWER_DEADLINE_MS from receipt, bounds everything after the body together (issue 25 item 10): the
 * acceptance (its connection, guard and statement waits and its retries: OpOptions.deadline), the fast path (only what is
 * left of it, and at most the invalidation timeout) and the fast path's follow-up. Past it the answer is what is durable:
 * 202 once the delivery's acceptance committed, 503 while it had not (an acceptance cut short commits nothing).
 */
export type WebhookReply = {
  readonly status: number;
  readonly body: { accepted: boolean; queued: boolean } | { error: string };
  readonly headers?: Readonly<Record<string, string>>;
};

export type FailureReason = (typeof WEBHOOK_FAILURE_REASONS)[number];

export type WebhookDeps = {
  readonly secret: Uint8Array | null;
  readonly store: Store;
  readonly metrics: Metrics;
  readonly log: Logger;
  readonly mapping: MappingContext;
  /** null: no evaluator (no forge client) is configured; direct triggers are stored and answered 503. */
  readonly fastPath: FastPathDeps | null;
  readonly invalidationTimeoutMs: number;
  /** Shared by every request of the process: bounds the body bytes held before their signature is verified. */
  readonly bodyBudget: BodyBudget;
  readonly now: () => number;
  /** Called after new work was stored (the in-process worker claims it at once instead of at its next poll). */
  readonly onQueued?: () => void;
};

/** `receivedAt`: when the request arrived, as a `performance.now()` time; the answer's deadline runs from it. */
export async function handleWebhook(deps: WebhookDeps, request: Request, receivedAt = performance.now()): Promise<WebhookReply> {
  const deadline = receivedAt + WEBHOOK_ANSWER_DEADLINE_MS;
  const failure = (status: number, reason: FailureReason): WebhookReply => {
    deps.metrics.webhookFailures.inc({ reason });
    return { status, body: { error: reason } };
  };

  const event = deliveryHeader(request.headers, "x-forge-event", "x-github-event");
  const deliveryId = deliveryHeader(request.headers, "x-forge-delivery", "x-github-delivery");
  if (event === null || deliveryId === null) return failure(400, "headers");
  if (deps.secret === null) return failure(503, "not_configured");
  const signature = request.headers.get("x-hub-signature-256");
  if (signature === null || !SIGNATURE_HEADER.test(signature)) return failure(401, "signature");
  const declared = parseContentLength(request.headers.get("content-length"));
  if (declared === "invalid") return failure(400, "content_length");
  if (declared !== null && declared > MAX_WEBHOOK_BODY_BYTES) return failure(413, "too_large");
  const reservation = deps.bodyBudget.open();
  let body: Uint8Array;
  try {
    const read = await readBodyCapped(request, declared, MAX_WEBHOOK_BODY_BYTES, reservation);
    if (read.kind === "busy") return { ...failure(503, "busy"), headers: { "retry-after": String(BUSY_RETRY_AFTER_SECONDS) } };
    if (read.kind === "too_large") return failure(413, "too_large");
    if (read.kind === "failed" || (declared !== null && read.bytes.byteLength !== declared)) return failure(400, "content_length");
    if (!verifySignature(deps.secret, read.bytes, signature)) return failure(401, "signature");
    body = read.bytes;
  } finally {
    // Verified or refused, and also when the client went away mid-body (the read then fails): the bytes are given back.
    reservation.release();
  }

  let payload: unknown;
  try {
    payload = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
  } catch {
    return failure(400, "json");
  }
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return failure(400, "json");
  const rawAction = (payload as { action?: unknown }).action;
  if (rawAction !== undefined && typeof rawAction !== "string") return failure(400, "payload");
  const action = rawAction as string | undefined;
  deps.metrics.webhooks.inc(metricLabels(event, action));

  const mapping = mapEvent(event, action, payload as Record<string, unknown>, deps.mapping);
  if (mapping.kind === "invalid") {
    deps.log.warn({ event: metricLabels(event, action).event, problem: mapping.problem }, "webhook payload rejected");
    return failure(400, "payload");
  }
  if (mapping.kind === "unmapped") return { status: 202, body: { accepted: true, queued: false } };
  const reply = await accept(deps, mapping, { deliveryId, event, action: action ?? null }, failure, deadline);
  if (reply.status === 202 && "queued" in reply.body && reply.body.queued) deps.onQueued?.();
  return reply;
}

/**
 * The event name or delivery ID: the neutral header, or, when it is absent, GitHub's name for it. Both present and
 * different is ambiguous (which one did the signer mean?), so it is refused like a missing or overlong value: null.
 */
function deliveryHeader(headers: Headers, neutral: string, github: string): string | null {
  const ours = headers.get(neutral);
  const theirs = headers.get(github);
  if (ours !== null && theirs !== null && ours !== theirs) return null;
  const value = ours ?? theirs;
  return value && value.length <= MAX_WEBHOOK_HEADER_LENGTH ? value : null;
}

async function accept(
  deps: WebhookDeps,
  mapping: Exclude<Mapping, { kind: "unmapped" | "invalid" }>,
  delivery: { deliveryId: string; event: string; action: string | null },
  failure: (status: number, reason: FailureReason) => WebhookReply,
  deadline: number,
): Promise<WebhookReply> {
  const now = deps.now();
  const started = performance.now();
  try {
    if (mapping.kind === "authority") {
      const fresh = await deps.store.execute(() => acceptAuthorityEvent({ ...delivery, installationId: mapping.installationId, scope: mapping.scope, now }), {
        exclusiveGuard: { installationId: mapping.installationId, timeoutMs: deps.invalidationTimeoutMs },
        deadline,
      });
      return { status: 202, body: { accepted: fresh, queued: fresh } };
    }
    if (mapping.kind === "base_ref") {
      const outcome = await deps.store.execute(() => acceptBaseRefPush({ ...mapping.repository, deliveryId: delivery.deliveryId, action: delivery.action, baseRef: mapping.baseRef, now }), { deadline });
      const fresh = outcome !== "duplicate";
      return { status: 202, body: { accepted: fresh, queued: fresh } };
    }
    if (mapping.kind === "merge_group") {
      // No fast path: the group's own work row writes its check (server/worker/jobs/judge-merge-group.ts).
      const input = { ...mapping.repository, deliveryId: delivery.deliveryId, action: mapping.action, group: mapping.group, now };
      if (mapping.action === "destroyed") {
        const fresh = await deps.store.execute(() => acceptMergeGroupDestroyed({ ...input, reason: mapping.reason }), { deadline });
        return { status: 202, body: { accepted: fresh, queued: false } };
      }
      const outcome = await deps.store.execute(() => acceptMergeGroupRequest(input), { deadline });
      return { status: 202, body: { accepted: outcome.kind !== "duplicate", queued: outcome.kind === "queued" } };
    }
    // The fast path ends the invalidation timeout after the acceptance starts, or in time for its follow-up before the
    // answer's deadline, whichever comes first; with a fast path to follow, the delivery's work is held exactly that long
    // (heldUntil), so no worker takes it while the fast path may still be resetting or creating the check.
    const fastPathEnds = Math.min(started + deps.invalidationTimeoutMs, deadline - FAST_PATH_FOLLOW_UP_MS);
    const heldUntil = deps.fastPath === null ? now : now + Math.max(0, Math.ceil(fastPathEnds - started));
    const outcome = await deps.store.execute(() =>
      acceptDirectTrigger({
        ...mapping.repository, ...delivery, pullNumber: mapping.pullNumber, headSha: mapping.headSha, now, heldUntil,
        ...(mapping.index ? { index: mapping.index } : {}), ...(mapping.previousHead ? { previousHead: mapping.previousHead } : {}),
        ...(mapping.merge ? { merge: { ...mapping.merge, repositoryFullName: `${mapping.repository.owner}/${mapping.repository.name}` } } : {}),
      }),
      { deadline },
    );
    if (outcome.kind === "accepted") {
      // A merge recorded here is reported (if unapproved) once its enrollment is read: by the worker or the reconciler
      // (server/records/enrollment.ts), never here (no forge request in the acceptance).
      if (deps.fastPath === null) return failure(503, "not_configured");
      await attemptFastPath(deps, { repository: mapping.repository, pullNumber: mapping.pullNumber, headSha: mapping.headSha, sharedGeneration: outcome.sharedGeneration, evaluationGeneration: outcome.evaluationGeneration, rememberedCheckRunId: outcome.rememberedCheckRunId }, fastPathEnds, deadline, outcome.holdsWork);
      return { status: 202, body: { accepted: true, queued: true } };
    }
    // A retained duplicate: the fast path is retried only while its invalidation is still pending.
    const duplicate = await deps.store.execute(() => readDuplicateDelivery(delivery.deliveryId), { deadline });
    if (!duplicate.invalidationPending || duplicate.headSha === null || duplicate.sharedGeneration === null) return { status: 202, body: { accepted: false, queued: false } };
    if (deps.fastPath === null) return failure(503, "not_configured");
    const result = await attemptFastPath(deps, { repository: mapping.repository, pullNumber: duplicate.pullNumber, headSha: duplicate.headSha, sharedGeneration: duplicate.sharedGeneration, evaluationGeneration: null }, fastPathEnds, deadline);
    return { status: 202, body: { accepted: false, queued: result !== null && (result.reset || result.liveHeadQueued) } };
  } catch (error) {
    if (mapping.kind === "authority" && error instanceof StoreError && error.code === "guard_timeout") {
      deps.log.warn({ event: delivery.event }, "authority event not recorded: an in-flight check write held the installation guard past the bound; redeliver it from the forge");
      return failure(503, "authority_timeout");
    }
    deps.log.error({ event: delivery.event, error: error instanceof StoreError ? error.code : "database" }, "webhook not acknowledged: database failure while accepting work");
    return failure(503, "database");
  }
}

/**
 * One attempt, ending by `endsAt` (a `performance.now()` time); a forge error or running out of time leaves the invalidation
 * pending (the 202 stands). As it ends, the work its delivery was accepted with is released, by the answer's deadline: the
 * evaluation, and the invalidation when the fast path did not settle it; unless `holdsWork` says the acceptance found both
 * already claimable (a duplicate's retry does not know, and releases).
 */
async function attemptFastPath(deps: WebhookDeps, input: FastPathInput, endsAt: number, deadline: number, holdsWork = true) {
  const budgetMs = Math.floor(endsAt - performance.now());
  let result: FastPathResult | null = null;
  if (budgetMs <= 0) {
    deps.log.info({ reason: "deadline" }, "fast-path invalidation left pending for the worker: no time was left for it");
  } else {
    const signal = AbortSignal.timeout(budgetMs);
    // Its guard wait too ends with the time it has.
    const fastPath = { ...deps.fastPath!, guardTimeoutMs: Math.min(deps.fastPath!.guardTimeoutMs, budgetMs) };
    try {
      result = await Promise.race([
        runFastPath(fastPath, input, signal),
        new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(new Error("fast path deadline")), { once: true })),
      ]);
    } catch (error) {
      deps.log.info({ reason: error instanceof Error && error.name === "ForgeError" ? (error as { kind?: string }).kind : "deadline_or_error" }, "fast-path invalidation left pending for the worker");
    }
  }
  // A fast path that settled its head released its evaluation as it did (markHeadInvalidated); with nothing held (the
  // delivery merged into rows already claimable), there is nothing to release.
  if (result?.settling || !holdsWork) return result;
  // Best effort, and only while the answer's deadline allows: without it the rows still run at the time they were held
  // until, which is when the fast path ended (so with no time left, they are claimable already). Sent together with the
  // releases of other fast paths ending at the same time (release-batcher.ts). The answer does not wait for it (issue 26
  // item 8: a round trip less per answer; nothing in the answer depends on it): the in-process worker is woken again once
  // the rows are claimable.
  void releaseBatcherFor(deps.store, deps.now).release({ repositoryId: input.repository.repositoryId, headSha: input.headSha, pullNumber: input.pullNumber }, deadline).then(() => deps.onQueued?.());
  return result;
}
