import type { ManagedCheck } from "../forge/index.ts";
import type { CheckOutput } from "../evaluation/index.ts";
import { checkDigest, checkHandle, createCheck, type HeadCheckTarget, IN_PROGRESS_OUTPUT, rememberedCheck, writeCheck, writeUnlessGone } from "../ingress/index.ts";
import type { DecisionRecordBody } from "../records/codec.ts";
import { confirmDecision, type Fences, type JobRow, lone, type PendingDecision, readFences, readHeadCheckState, recordAudit, recordPendingDecision } from "../store/index.ts";
import { leaseOf, type WorkerContext } from "./context.ts";
import { LeaseLost, RetryLater } from "./errors.ts";

/**
 * Publication of a completed check on the exact evaluated head (spec "Managed check run", second and fourth rows; invariants
 * 7-10; DESIGN 4). Under the installation guard (shared) and the head publication guard (exclusive), the fences are compared
 * before the write and again after it. An error, cancellation or failed comparison during or after the write makes a
 * shielded reset of the check to in_progress BEFORE the guards are released, and the original error is rethrown so the
 * durable work stays retryable. Fences read without the lease throw LeaseLost instead of answering "superseded": the work was
 * not superseded, only this claim of it, and the next claim publishes.
 *
 * No write that changes nothing (issue 18): when the head's remembered digest (store ops/published-ops.ts) says the check
 * already shows this status, conclusion and output, written with certainty at the head's current shared generation, nothing
 * is sent. Otherwise the digest is first replaced by this write's pending token, the check is written by its remembered ID
 * (listed only when none is remembered or the forge says it is gone, then remembered under the guards), and after the fence
 * check the digest is settled, unless a reset cleared the token meanwhile. An uncertain write leaves the token: no digest.
 *
 * Decision records (DESIGN 3.10): the statement that writes the pending token also writes the decision's record, carrying
 * that token (beginCheckWrite's when a check is remembered, else the remembering of the check found or created), so no
 * completing write is sent without its record; the statement that settles the digest confirms it. A record left unconfirmed
 * says the write may not have reached the forge (it failed, was uncertain, or was reset by a failed fence comparison). No
 * statement and no forge request is added, and the no-write path above writes no record.
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
  target: HeadCheckTarget & { pullNumber: number },
  captured: Captured,
  conclusion: "success" | "failure",
  output: CheckOutput,
  signal: AbortSignal,
  /** The decision record's body for the check run about to be written (server/records/build.ts). */
  recordOf: (checkRunId: number) => DecisionRecordBody,
): Promise<PublishResult> {
  const fences = () => ctx.store.execute(() => readFences({ jobId: row.id, owner: leaseOf(row), installationId: target.installationId, repositoryId: target.repositoryId, headSha: target.headSha, pullNumber: target.pullNumber, now: ctx.now() }));
  let release: () => Promise<void>;
  try {
    release = await ctx.store.acquirePublicationGuards(target.installationId, target.repositoryId, target.headSha, ctx.guardTimeoutMs);
  } catch {
    throw new RetryLater("publication_guard_timeout");
  }
  const memory = { store: ctx.store, now: ctx.now };
  let check: ManagedCheck | null = null;
  try {
    const before = await fences();
    if (!before.leaseHeld) throw new LeaseLost();
    if (!publishable(before, captured, row)) return unpublished(before, captured);
    const digest = checkDigest(conclusion, output);
    const state = await ctx.store.execute(() => readHeadCheckState(target.repositoryId, target.headSha));
    const known = state.check;
    if (known !== null && known.digest === digest && known.digest_generation !== null && Number(known.digest_generation) === captured.shared) {
      // The check shows exactly this already (written with certainty at this head's generation, no reset since): no write.
      return published(ctx, target, captured, conclusion, output, Number(known.check_run_id), false);
    }
    // From here until it settles, the digest claims nothing: a failure anywhere below leaves no digest behind.
    const token = `pending:${crypto.randomUUID()}`;
    const record = (checkRunId: number): PendingDecision => ({ body: recordOf(checkRunId), sharedGeneration: captured.shared, digest, token });
    if (known !== null) await ctx.store.execute(() => recordPendingDecision(record(Number(known.check_run_id)), { kind: "begin", now: ctx.now() }));
    const complete = (found: ManagedCheck) => ctx.forge.completeCheck(target, found, conclusion, output, new Date(ctx.now()), { signal });
    try {
      signal.throwIfAborted();
      check = known === null ? null : checkHandle(Number(known.check_run_id), target.headSha);
      let completed = check === null ? null : await writeUnlessGone(memory, target, check, complete);
      if (completed === null) {
        // Nothing remembered, or the forge says the remembered run is gone (nothing was written): look it up (unless no
        // creation was ever tried for the head), or create it.
        check = null;
        if (known !== null || state.untried !== true) check = await ctx.forge.findManagedCheck(target, { signal });
        check ??= await createCheck(ctx.forge, memory, target, IN_PROGRESS_OUTPUT, { signal });
        // Not best effort as rememberCheck is: without its record, the completing write is not sent.
        const id = check.id;
        await ctx.store.execute(() => recordPendingDecision(record(id), { kind: "remember", checkRunId: id, now: ctx.now() }));
        signal.throwIfAborted();
        completed = await complete(check);
      }
      check = completed;
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
    const settled = { repositoryId: target.repositoryId, headSha: target.headSha, token, now: ctx.now(), settle: { digest, generation: captured.shared } };
    // Best effort: without a settled digest the next evaluation with this result writes it again, nothing worse (and that
    // write confirms the same record: it adopts the next token while unconfirmed, record-ops.ts).
    await ctx.store.execute(() => confirmDecision(settled)).catch(() => false);
    return published(ctx, target, captured, conclusion, output, check.id, true);
  } finally {
    await release();
  }
}

/** Counts, audits and reports a published conclusion (`written: false`: the check showed it already, no write was sent). */
async function published(ctx: WorkerContext, target: HeadCheckTarget & { pullNumber: number }, captured: Captured, conclusion: "success" | "failure", output: CheckOutput, checkRunId: number, written: boolean): Promise<PublishResult> {
  ctx.metrics.evaluations.inc({ conclusion });
  // Under the guards: one statement alone (op.ts `lone`).
  await ctx.store.execute(() =>
    lone(recordAudit({ kind: "conclusion", installationId: target.installationId, repositoryId: target.repositoryId, pullNumber: target.pullNumber, headSha: target.headSha, outcome: conclusion, detail: { check_run_id: checkRunId, evaluation_generation: captured.evaluation, written }, now: ctx.now() })),
  ).catch((error) => ctx.log.warn({ code: (error as { code?: string }).code ?? "database" }, "audit row for a published conclusion could not be written"));
  ctx.onTransition?.({ pullNumber: target.pullNumber, headSha: target.headSha, status: "completed", conclusion, title: output.title });
  return "published";
}

/**
 * Resets the managed check to in_progress, shielded from the job's cancellation, bounded by its own timeout. Never throws.
 * The check is the one just written, else the remembered one, else the one listed (a remembered run that is gone is forgotten).
 */
export async function shieldedReset(ctx: WorkerContext, target: HeadCheckTarget & { pullNumber?: number | null }, known: ManagedCheck | null): Promise<boolean> {
  const signal = AbortSignal.timeout(ctx.guardTimeoutMs);
  const memory = { store: ctx.store, now: ctx.now };
  const reset = (check: ManagedCheck) => ctx.forge.setCheckInProgress(target, check, IN_PROGRESS_OUTPUT, { signal });
  try {
    const { written } = await writeCheck(ctx.forge, memory, target, known ?? (await rememberedCheck(memory, target)), reset, { signal });
    if (!written) return true;
    ctx.onTransition?.({ pullNumber: target.pullNumber ?? null, headSha: target.headSha, status: "in_progress", conclusion: null, title: IN_PROGRESS_OUTPUT.title });
    return true;
  } catch (error) {
    ctx.log.error({ kind: (error as { kind?: string }).kind ?? "unknown" }, "shielded reset of a managed check failed; the check may show a result that is no longer current until the retry");
    return false;
  }
}
