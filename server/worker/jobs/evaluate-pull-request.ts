import { plain, publicationOf, type BreakGlassOverride } from "../../evaluation/index.ts";
import type { PullRequestDetails } from "../../forge/index.ts";
import { ensureRememberedCheckInProgress } from "../../ingress/index.ts";
import { type JobRow, readFences, readIndexedOnHead, readMergesAwaitingEnrollment, recordAudit, recordEvaluation, type RepositoryRef, requeueGroupsOfPull, supersedeAndQueue } from "../../store/index.ts";
import { settleEnrollments } from "../../records/enrollment.ts";
import { type JobOutcome, leaseOf, priorityOf, repositoryOf, type WorkerContext } from "../context.ts";
import { LeaseLost, RetryLater } from "../errors.ts";
import { inlineEvaluator } from "../evaluator.ts";
import { publishCompleted } from "../publish.ts";
import { APPLICATION_VERSION, BUILD_REVISION_VALUE } from "../../build-info.ts";
import { buildDecisionRecord } from "../../records/build.ts";

const SERVICE_IDENTITY = { version: APPLICATION_VERSION, revision: BUILD_REVISION_VALUE };
import { resultSubjects } from "../result-subjects.ts";

/**
 * Evaluation job: capture the fences, gather the evidence completely (bounded), evaluate (pure), publish only under the
 * publication rule. Transient gaps retry; permanent fail-closed outcomes publish failure; a shared head stays in_progress.
 * A decision that was published (or needs no check: repository not enabled) records what the evaluation saw of the pull
 * request and whom the result depends on, so the reconciler evaluates it again only when the forge shows a change (or its
 * full-sweep slot comes round) and an authority event only when it names one of them; a shared head records nothing, so
 * every scan and every authority event looks at it again.
 */
export async function evaluatePullRequest(ctx: WorkerContext, row: JobRow, signal: AbortSignal): Promise<JobOutcome> {
  const repository = repositoryOf(row);
  const evaluator = ctx.evaluator ?? inlineEvaluator(ctx.settings);
  const pullNumber = row.pull_number!;
  const rowHead = row.head_sha!;
  const fencesAt = (headSha: string, withMergeAwaiting = false) => ctx.store.execute(() => readFences({ jobId: row.id, owner: leaseOf(row), installationId: row.installation_id, repositoryId: repository.repositoryId, headSha, pullNumber, now: ctx.now(), withMergeAwaiting }));
  const before = await fencesAt(rowHead, true);
  // A merge of this pull request recorded by its `closed` delivery: its enrollment is read now, whatever this evaluation
  // comes to (server/records/enrollment.ts). The same first read says so: no statement added to an ordinary evaluation.
  if (before.mergeAwaitingEnrollment === true) await settleMergesOf(ctx, row, repository, pullNumber, signal);
  const captured = { shared: before.shared, evaluation: before.evaluation };
  // A queued merge group judged success that holds this pull request on another head, or on a head reset since, is judged
  // again (DESIGN 3.14): its work row is queued, and its check goes back to in_progress before it is judged.
  await ctx.store.execute(() => requeueGroupsOfPull({ ...repository, pullNumber, headSha: rowHead, now: ctx.now() }));
  // The fast path's read of this pull request, when it was made after the acceptance of the generation captured here.
  const handed = Number(row.evaluation_generation) === captured.evaluation
    ? ctx.pullHandoff?.take(repository.repositoryId, pullNumber, { headSha: rowHead, evaluationGeneration: captured.evaluation, nowMs: ctx.now() }) ?? null
    : null;

  const started = performance.now();
  const gathered = await ctx.forge.gatherEvidence(
    { installationId: repository.installationId, owner: repository.owner, repo: repository.name, number: pullNumber, policyPath: ctx.settings.policyPath, forgeDirectory: ctx.settings.forgeDirectory, organizationPolicyRepository: ctx.settings.organizationPolicyRepository },
    {
      planLookups: (evidence, known) => evaluator.plan(evidence, known, signal), signal, priority: priorityOf(row),
      organizationPolicyReuse: { authorityEpoch: before.authorityEpoch, nowMs: ctx.now() },
      ...(handed ? { knownPullRequest: handed } : {}),
      // The store's open-pull-request index, united with the forge's pull requests of the head (DESIGN 3.9).
      indexedOnHead: (headSha) => ctx.store.execute(() => readIndexedOnHead(repository.repositoryId, headSha)),
    },
  );
  if (gathered.kind === "unavailable") {
    if (gathered.error.kind === "not_found") return { kind: "done", note: "pull request not visible" };
    throw gathered.error;
  }
  const { evidence, pullRequest } = gathered;
  // A closed (or merged) pull request is still evaluated: its closing event reset the check on its head, and publishing the
  // decision again leaves that commit with a result instead of a check in progress forever. A head it shares with an open
  // pull request is still never completed (sharedHeadWith below).
  if (pullRequest.headSha !== rowHead) {
    // The pull request moved since this work was queued: evaluate its live head instead (a new generation).
    await ctx.store.execute(() => supersedeAndQueue(repository, [{ number: pullNumber, headSha: pullRequest.headSha }], ctx.now(), { background: row.background === 1 }));
    return { kind: "done", note: "head moved; live head queued" };
  }

  const { decision, output: checkOutput } = await evaluator.decide(evidence, signal);
  ctx.metrics.evaluationSeconds.observe((performance.now() - started) / 1000);
  const target = { installationId: repository.installationId, owner: repository.owner, repo: repository.name, headSha: rowHead, repositoryId: repository.repositoryId, pullNumber };

  // What the check becomes (publicationOf: the playground shows the same), and what else the worker does for it.
  const publication = publicationOf(decision, checkOutput, pullRequest.state);
  if (publication.kind === "none" && publication.why === "retry") {
    // The named reasons (route templates, statuses, page numbers and counts; never a payload) say what to look at.
    ctx.log.info({ job: row.id, reasons: decision.reasons.map((reason) => `${reason.code}: ${plain(reason.message)}`) }, "evidence incomplete; the evaluation will be retried");
    throw new RetryLater("evidence_incomplete", gathered.retryAfterMs);
  }
  if (publication.kind === "none" && publication.why === "not_enabled") {
    await audit(ctx, row, rowHead, "not_enabled");
    await recordSeen(ctx, repository, pullRequest, captured.evaluation, resultSubjects(decision, evidence));
    return { kind: "done", note: "repository not enabled" };
  }
  // A closed pull request leaves a head it shares with an open one alone: the open pull request's evaluation owns that check.
  if (publication.kind === "none") return { kind: "done", note: "closed; its head belongs to an open pull request" };
  if (publication.kind === "in_progress") {
    // Never completed on a shared head (DESIGN 3.6): in_progress, naming the other pull request(s).
    const { output } = publication;
    let release: () => Promise<void>;
    try {
      release = await ctx.store.acquirePublicationGuards(target.installationId, target.repositoryId, rowHead, ctx.guardTimeoutMs);
    } catch {
      throw new RetryLater("publication_guard_timeout");
    }
    let superseded: boolean;
    try {
      // Only while this evaluation is the pull request's newest: one that ran while this pull request closed (or moved) would
      // otherwise turn the open twin's result back to waiting. Whatever superseded it queued a newer evaluation, which
      // decides; every event that can end the sharing (this pull request closing or moving) supersedes it.
      const fences = await fencesAt(rowHead);
      if (!fences.leaseHeld) throw new LeaseLost();
      superseded = fences.evaluation !== captured.evaluation;
      if (!superseded) await ensureRememberedCheckInProgress(ctx.forge, { store: ctx.store, now: ctx.now }, target, output, { signal });
    } finally {
      await release();
    }
    if (superseded) return { kind: "done", note: "superseded; the newer evaluation decides the shared head" };
    ctx.onTransition?.({ pullNumber, headSha: rowHead, status: "in_progress", conclusion: null, title: output.title });
    await audit(ctx, row, rowHead, "shared_head");
    return { kind: "done", note: "shared head left in progress" };
  }
  const recordOf = (checkRunId: number) => buildDecisionRecord(decision, evidence, {
    installationId: repository.installationId, repository: { id: repository.repositoryId, full_name: `${repository.owner}/${repository.name}` }, checkRunId,
    title: checkOutput.title, publishedAtMs: ctx.now(), service: SERVICE_IDENTITY, settings: ctx.settings, organizationPolicyRepository: ctx.settings.organizationPolicyRepository,
  });
  const result = await publishCompleted(ctx, row, target, captured, publication.conclusion, publication.output, signal, recordOf);
  if (result === "fenced") return fenced(ctx, repository, row, pullNumber, rowHead);
  if (result === "published") {
    if (decision.conclusion === "success" && decision.breakGlass !== null) reportBreakGlass(ctx, target, decision.breakGlass);
    await recordSeen(ctx, repository, pullRequest, captured.evaluation, resultSubjects(decision, evidence));
  }
  return { kind: "done", note: result };
}

/** Best effort: a merge left pending is settled by the next evaluation of the pull request or by the reconciler. */
async function settleMergesOf(ctx: WorkerContext, row: JobRow, repository: RepositoryRef, pullNumber: number, signal: AbortSignal): Promise<void> {
  try {
    const pending = await ctx.store.execute(() => readMergesAwaitingEnrollment({ repositoryId: repository.repositoryId, pullNumber }));
    await settleEnrollments({ store: ctx.store, forge: ctx.forge, policyPath: ctx.settings.policyPath, metrics: ctx.metrics, log: ctx.log, now: ctx.now }, pending, { signal, priority: priorityOf(row) });
  } catch (error) {
    ctx.log.warn({ code: (error as { code?: string }).code ?? "unknown" }, "the enrollment of a merge could not be read; the reconciler reads it");
  }
}

/**
 * A published break-glass override (DESIGN 3.11): counted, and a warn line for the operator's alert with identifiers only
 * (the reviewer's login, the team and the reason stay in the check and the decision record, out of logs).
 */
function reportBreakGlass(ctx: WorkerContext, target: { installationId: number; repositoryId: number; pullNumber: number; headSha: string }, override: BreakGlassOverride): void {
  ctx.metrics.breakGlass.inc();
  ctx.log.warn(
    { installation_id: target.installationId, repository_id: target.repositoryId, pull_number: target.pullNumber, head_sha: target.headSha, review_id: override.reviewId, reviewer_id: override.reviewerId, unsatisfied_owner_sets: override.unsatisfiedOwnerSets.length },
    "check approved by a break-glass override",
  );
}

/**
 * A write the fences refused. Outside the guards (a worker holding them writes no rows: store.ts lock order): a fresh
 * generation at the current authority epoch, then a retry after backoff, by when the head's invalidation or the fan-out has
 * finished.
 */
async function fenced(ctx: WorkerContext, repository: RepositoryRef, row: JobRow, pullNumber: number, headSha: string): Promise<never> {
  await ctx.store.execute(() => supersedeAndQueue(repository, [{ number: pullNumber, headSha }], ctx.now(), { background: row.background === 1 }));
  throw new RetryLater("publication_fenced");
}

/** Records what this evaluation saw (outside the guards). Best effort: without the record the next scan evaluates it again. */
async function recordSeen(ctx: WorkerContext, repository: RepositoryRef, pull: PullRequestDetails, generation: number, authoritySubjects: string | null): Promise<void> {
  const seen = { ...repository, pullNumber: pull.number, headSha: pull.headSha, baseSha: pull.baseSha, updatedAtMs: pull.updatedAtMs, evaluationGeneration: generation, authoritySubjects, now: ctx.now() };
  await ctx.store.execute(() => recordEvaluation(seen)).catch((error) => ctx.log.warn({ code: (error as { code?: string }).code ?? "database" }, "what an evaluation saw could not be recorded; the next scan evaluates it again"));
}

async function audit(ctx: WorkerContext, row: JobRow, headSha: string, outcome: string) {
  await ctx.store.execute(() => recordAudit({ kind: "conclusion", installationId: row.installation_id, repositoryId: row.repository_id, pullNumber: row.pull_number, headSha, outcome, detail: {}, now: ctx.now() }));
}
