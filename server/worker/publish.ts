import type { CheckTarget, ManagedCheck } from "../forge/index.ts";
import type { CheckOutput } from "../evaluation/index.ts";
import { IN_PROGRESS_OUTPUT } from "../ingress/index.ts";
import { type Fences, type JobRow, readFences, recordAudit } from "../store/index.ts";
import { leaseOf, type WorkerContext } from "./context.ts";
import { LeaseLost, RetryLater } from "./errors.ts";

/**
 * Publication of a completed check on the exact evaluated head (spec "Managed check run", second and fourth rows; invariants
 * 7-10; DESIGN 4). Under the installation guard (shared) and the head publication guard (exclusive), the fences are compared
 * before the write and again after it. An error, cancellation or failed comparison during or after the write makes a
 * shielded reset of the check to in_progress BEFORE the guards are released, and the original error is rethrown so the
 * durable work stays retryable. Fences read without the lease throw LeaseLost instead of answering "superseded": the work was
 * not superseded, only this claim of it, and the next claim publishes.
 */
export type Captured = { readonly shared: number; readonly evaluation: number };

/**
 * `superseded`: a newer evaluation of the same pull request is queued (its E moved), so this one ends. `fenced`: the head or
 * the installation moved (S, I, A, a pending fan-out) but nothing newer is queued for this pull request itself: the work it
 * stands for is not done (a closed pull request, which no invalidation or fan-out re-queues, would keep a check in progress).
 */
export type PublishResult = "published" | "superseded" | "fenced";

const unpublished = (f: Fences, captured: Captured): PublishResult => (f.evaluation !== captured.evaluation ? "superseded" : "fenced");

export function publishable(f: Fences, captured: Captured, row: JobRow): boolean {
  return f.shared === captured.shared && f.invalidated === f.shared && f.evaluation === captured.evaluation && f.authorityEpoch === row.authority_epoch && !f.fanoutPending && f.leaseHeld;
}

export async function publishCompleted(
  ctx: WorkerContext,
  row: JobRow,
  target: CheckTarget & { repositoryId: number; pullNumber: number },
  captured: Captured,
  conclusion: "success" | "failure",
  output: CheckOutput,
  signal: AbortSignal,
): Promise<PublishResult> {
  const fences = () => ctx.store.execute(() => readFences({ jobId: row.id, owner: leaseOf(row), installationId: target.installationId, repositoryId: target.repositoryId, headSha: target.headSha, pullNumber: target.pullNumber, now: ctx.now() }));
  let release: () => Promise<void>;
  try {
    release = await ctx.store.acquirePublicationGuards(target.installationId, target.repositoryId, target.headSha, ctx.guardTimeoutMs);
  } catch {
    throw new RetryLater("publication_guard_timeout");
  }
  let check: ManagedCheck | null = null;
  try {
    const before = await fences();
    if (!before.leaseHeld) throw new LeaseLost();
    if (!publishable(before, captured, row)) return unpublished(before, captured);
    try {
      signal.throwIfAborted();
      check = await ctx.forge.findManagedCheck(target, { signal });
      check ??= await ctx.forge.createInProgressCheck(target, IN_PROGRESS_OUTPUT, { signal });
      signal.throwIfAborted();
      check = await ctx.forge.completeCheck(target, check, conclusion, output, new Date(ctx.now()), { signal });
    } catch (error) {
      // Uncertain write: it may have landed. Reset before the guard is released; keep the original error.
      await shieldedReset(ctx, target, check);
      throw error;
    }
    let after: Fences;
    try {
      after = await fences();
    } catch (error) {
      await shieldedReset(ctx, target, check);
      throw error;
    }
    if (!publishable(after, captured, row)) {
      await shieldedReset(ctx, target, check);
      if (!after.leaseHeld) throw new LeaseLost();
      return unpublished(after, captured);
    }
    ctx.metrics.evaluations.inc({ conclusion });
    await ctx.store.execute(() =>
      recordAudit({ kind: "conclusion", installationId: target.installationId, repositoryId: target.repositoryId, pullNumber: target.pullNumber, headSha: target.headSha, outcome: conclusion, detail: { check_run_id: check!.id, evaluation_generation: captured.evaluation }, now: ctx.now() }),
    ).catch((error) => ctx.log.warn({ code: (error as { code?: string }).code ?? "database" }, "audit row for a published conclusion could not be written"));
    ctx.onTransition?.({ pullNumber: target.pullNumber, headSha: target.headSha, status: "completed", conclusion, title: output.title });
    return "published";
  } finally {
    await release();
  }
}

/** Resets the managed check to in_progress, shielded from the job's cancellation, bounded by its own timeout. Never throws. */
export async function shieldedReset(ctx: WorkerContext, target: CheckTarget & { pullNumber?: number | null }, known: ManagedCheck | null): Promise<boolean> {
  const signal = AbortSignal.timeout(ctx.guardTimeoutMs);
  try {
    const check = known ?? (await ctx.forge.findManagedCheck(target, { signal }));
    if (check === null) return true;
    await ctx.forge.setCheckInProgress(target, check, IN_PROGRESS_OUTPUT, { signal });
    ctx.onTransition?.({ pullNumber: target.pullNumber ?? null, headSha: target.headSha, status: "in_progress", conclusion: null, title: IN_PROGRESS_OUTPUT.title });
    return true;
  } catch (error) {
    ctx.log.error({ kind: (error as { kind?: string }).kind ?? "unknown" }, "shielded reset of a managed check failed; the check may show a result that is no longer current until the retry");
    return false;
  }
}
