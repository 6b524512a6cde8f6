import type { FileRead } from "../../evaluation/index.ts";
import { type CheckOutput, ForgeError, type ManagedCheck } from "../../forge/index.ts";
import { MAX_POLICY_FILE_BYTES } from "../../policy/bounds.ts";
import { ensureRememberedCheckInProgress, type HeadCheckTarget, rememberCheck, writeUnlessGone } from "../../ingress/index.ts";
import { checkDigest, createCompletedCheck, knownCheck, noCheckCanExist } from "../../ingress/check-memory.ts";
import { APPLICATION_VERSION, BUILD_REVISION_VALUE } from "../../build-info.ts";
import { groupCheckText, groupMembers, judgeGroup, needsReevaluation, reevaluationEvidence, rulesOfReads, rulesOfRecord } from "../../merge-queue/judge.ts";
import type { GroupMember, GroupVerdict, HeadDecision, JudgedMember, MemberEvidence, QueueAnswer, Reevaluation } from "../../merge-queue/shapes.ts";
import { decodeRecordBody, type DecisionRecordBody, type MergeGroupRecordBody } from "../../records/codec.ts";
import { RECORD_SCHEMA_VERSION } from "../../records/schema.ts";
import { clearGroupReset, type GroupFences, type JobRow, lone, recordGroupJudgement, type MemberDecisionRow, type MergeGroupRow, readGroupFences, readMemberDecisions, readMergeGroup, recordAudit, type RepositoryRef } from "../../store/index.ts";
import { type JobOutcome, leaseOf, priorityOf, repositoryOf, type WorkerContext } from "../context.ts";
import { LeaseLost, RetryLater } from "../errors.ts";
import { inlineEvaluator } from "../evaluator.ts";
import { shieldedReset } from "../publish.ts";

/**
 * Merge-group job (DESIGN 3.14): the group's verdict on its head commit, published as the managed check there (same name and
 * App as on pull requests), so a repository that requires the check can merge through its merge queue.
 *
 * The evidence: the queue's entries for the group's base branch (one GraphQL request), the store's newest decision on each
 * member's head with whether a reset followed it, and the rules at each commit a member merges onto (read once per commit,
 * cached); a member whose decision was made under other rules is re-evaluated from its record's inputs under them. The rules
 * are server/merge-queue/judge.ts. Incomplete evidence is retried (the work row backs off) until MERGE_GROUP_RETRY_WINDOW_MS
 * after the group was requested, then published as failure; it is never success.
 *
 * Publication as for a pull request's head (publish.ts), under the installation and head publication guards: the group
 * head's S captured before judging must equal S and I before and after the write, the claim must hold its row, no authority
 * fan-out may be pending for the installation, and the group must not be destroyed; a failed comparison after the write, or
 * an uncertain write, resets the check to in_progress before the guards are released. A destroyed group ends the job.
 */
export const MERGE_GROUP_RETRY_WINDOW_MS = 10 * 60_000;

export async function judgeMergeGroup(ctx: WorkerContext, row: JobRow, signal: AbortSignal): Promise<JobOutcome> {
  const repository = repositoryOf(row);
  const headSha = row.head_sha!;
  const group = await ctx.store.execute(() => readMergeGroup(repository.repositoryId, headSha));
  if (group === null || group.state === "destroyed") return { kind: "done", note: "merge group destroyed" };
  const fences = () => ctx.store.execute(() => readGroupFences({ jobId: row.id, owner: leaseOf(row), installationId: repository.installationId, repositoryId: repository.repositoryId, headSha, now: ctx.now() }));
  const before = await fences();
  if (!before.leaseHeld) throw new LeaseLost();
  const captured = before.shared;
  const target = { installationId: repository.installationId, owner: repository.owner, repo: repository.name, headSha, repositoryId: repository.repositoryId };
  const windowOpen = ctx.now() - group.requestedAtMs < MERGE_GROUP_RETRY_WINDOW_MS;
  const verdict = await judge(ctx, row, repository, group, signal, windowOpen);
  if (group.resetPending) {
    // A pull request of the group was reset after the group was judged success: unless the group has left the queue (merged
    // with that pull request, whose closing reset it), its check goes back to in_progress before anything else is written.
    if (verdict.kind === "incomplete" && verdict.reason === "group_not_found") {
      await ctx.store.execute(() => clearGroupReset(repository.repositoryId, headSha, ctx.now()));
      return { kind: "done", note: "merge group no longer queued" };
    }
    await resetGroupCheck(ctx, target, signal);
    await ctx.store.execute(() => clearGroupReset(repository.repositoryId, headSha, ctx.now()));
  }
  if (verdict.kind === "incomplete" && windowOpen) {
    ctx.log.info({ job: row.id, reason: verdict.reason, pull_request: verdict.pullNumber }, "merge group not verified yet; it will be judged again");
    throw new RetryLater(`merge_group_${verdict.reason}`);
  }
  const conclusion = verdict.kind === "success" ? "success" : "failure";
  const output = groupCheckText(verdict);
  const result = await publishGroup(ctx, target, captured, conclusion, output, fences, signal);
  if (result.kind === "fenced") {
    // A newer request for the group merged into this row (it runs again), or the group was destroyed (nothing to publish).
    return { kind: "done", note: "merge group fenced" };
  }
  const members = verdict.members.map((member) => ({ pullNumber: member.pullNumber, headSha: member.headSha }));
  const now = ctx.now();
  const record = {
    body: groupRecordBody(repository, group, result.checkRunId, conclusion, output.title, verdict.members, now),
    sharedGeneration: captured,
    digest: checkDigest(conclusion, output),
  };
  await ctx.store.execute(() => recordGroupJudgement({ ...repository, headSha, success: conclusion === "success", members, now, record }));
  ctx.log.info({ job: row.id, conclusion, members: verdict.members.length, reason: verdict.kind === "failure" ? verdict.refused.reason : verdict.kind === "incomplete" ? verdict.reason : null }, "merge group judged");
  return { kind: "done", note: `merge group ${conclusion}` };
}

/** The group's record (kind merge_group): the verdict with each pull request's decision and why it passed or was refused. */
export function groupRecordBody(
  repository: RepositoryRef, group: MergeGroupRow, checkRunId: number | null, conclusion: "success" | "failure", title: string,
  members: readonly JudgedMember[], now: number,
): MergeGroupRecordBody {
  return {
    schema_version: RECORD_SCHEMA_VERSION,
    kind: "merge_group",
    installation_id: repository.installationId,
    repository: { id: repository.repositoryId, full_name: `${repository.owner}/${repository.name}` },
    head_sha: group.headSha,
    base_ref: group.baseRef,
    base_sha: group.baseSha,
    check_run_id: checkRunId,
    conclusion,
    title,
    published_at: new Date(now).toISOString(),
    service: { version: APPLICATION_VERSION, revision: BUILD_REVISION_VALUE },
    members: members.map((member) => ({
      pull_request: member.pullNumber,
      head_sha: member.headSha,
      decision_id: member.recordId === null ? null : `d${member.recordId}`,
      rule_source: member.ruleSource,
      outcome: member.outcome,
      reason: member.reason,
      changed_by: member.changedBy,
    })),
  };
}

/** Gathers the evidence and judges. A forge failure while the window is open is thrown (the row retries, rate limits by their delay). */
async function judge(ctx: WorkerContext, row: JobRow, repository: RepositoryRef, group: MergeGroupRow, signal: AbortSignal, windowOpen: boolean): Promise<GroupVerdict> {
  const call = { signal, priority: priorityOf(row) };
  const at = { installationId: repository.installationId, owner: repository.owner, repo: repository.name };
  const unavailable = (error: unknown): null => {
    if (windowOpen && error instanceof ForgeError) throw error;
    if (!(error instanceof ForgeError)) throw error;
    return null;
  };
  const answer: QueueAnswer | null = await ctx.forge.readMergeQueue({ ...at, branch: group.baseRef }, call).catch(unavailable);
  const membership = groupMembers(answer, group);
  if (membership.kind === "incomplete") return { kind: "incomplete", reason: membership.reason, pullNumber: null, members: [] };
  const { members } = membership;
  const rows = await ctx.store.execute(() => readMemberDecisions(repository.repositoryId, members.map((m) => ({ pullNumber: m.pullNumber, headSha: m.headSha }))));
  const decided = rows.map(headDecisionOf);
  // The rules at every commit a member merges onto, each commit's once (they also tell which entry ahead changed them).
  const commits = [...new Set(members.map((m) => m.mergesOnto))];
  const reads = new Map(await Promise.all(commits.map(async (commit) => [commit, await ctx.forge.readRulesAt({ ...at, ref: commit, policyPath: ctx.settings.policyPath, forgeDirectory: ctx.settings.forgeDirectory }, call).catch(unavailable)] as const)));
  const evidence: MemberEvidence[] = [];
  for (const [index, member] of members.entries()) {
    const { decision, record } = decided[index]!;
    const read = reads.get(member.mergesOnto) ?? null;
    const item: MemberEvidence = { member, decision, rulesOnto: read === null ? null : rulesOfReads(read.codeowners, read.repositoryPolicy, ctx.settings.forgeDirectory) };
    evidence.push(needsReevaluation(item) && read !== null && record !== null ? { ...item, reevaluation: await reevaluate(ctx, repository, record, read, member, signal) } : item);
  }
  return judgeGroup(evidence);
}

/** The member's head decision as the judge takes it, with the record's body when it approved. */
function headDecisionOf(row: MemberDecisionRow): { decision: HeadDecision; record: DecisionRecordBody | null } {
  const record = row.record;
  const approved = record !== null && record.confirmed && record.conclusion === "success" && !row.resetAfter;
  if (approved) {
    const body = decodeRecordBody(record.body);
    return { decision: { kind: "approved", recordId: record.id, rules: rulesOfRecord(body) }, record: body };
  }
  // Work that decides the head again is live: its outcome is what counts (an unconfirmed write is retried by it too).
  if (row.workLive) return { decision: { kind: "pending" }, record: null };
  if (record === null || !record.confirmed) return { decision: { kind: "none" }, record: null };
  if (record.conclusion === "failure") return { decision: { kind: "refused", recordId: record.id }, record: null };
  return { decision: { kind: "revoked", recordId: record.id }, record: null };
}

/** The member's recorded inputs evaluated under the rules of the commit it merges onto, with the organization policy as it is now. */
async function reevaluate(
  ctx: WorkerContext, repository: RepositoryRef, record: DecisionRecordBody, onto: NonNullable<Awaited<ReturnType<WorkerContext["forge"]["readRulesAt"]>>>,
  member: GroupMember, signal: AbortSignal,
): Promise<Reevaluation> {
  let organizationPolicy: FileRead;
  try {
    // As the decision read it: none where it had none (a repository of a user has no organization policy), else as it is now.
    organizationPolicy = record.inputs?.organizationPolicy.kind === "missing"
      ? { kind: "missing" }
      : await ctx.forge.readFile({ installationId: repository.installationId, owner: repository.owner, repo: ctx.settings.organizationPolicyRepository, path: ctx.settings.policyPath }, MAX_POLICY_FILE_BYTES, { signal });
  } catch (error) {
    return { kind: "incomplete", detail: error instanceof ForgeError ? `organization policy: ${error.kind}` : "organization policy could not be read" };
  }
  const evidence = reevaluationEvidence(record, onto, organizationPolicy);
  if (evidence === null) return { kind: "incomplete", detail: `the decision on #${member.pullNumber} kept no inputs to re-evaluate` };
  const { decision } = await (ctx.evaluator ?? inlineEvaluator(ctx.settings)).decide(evidence, signal);
  if (decision.kind === "retry") return { kind: "incomplete", detail: "evidence incomplete" };
  return decision.kind === "conclusive" && decision.conclusion === "success" ? { kind: "success" } : { kind: "failure" };
}

/** Under the publication guards: the group's check back to in_progress (written by its remembered ID, or the one listed). */
async function resetGroupCheck(ctx: WorkerContext, target: HeadCheckTarget, signal: AbortSignal): Promise<void> {
  let release: () => Promise<void>;
  try {
    release = await ctx.store.acquirePublicationGuards(target.installationId, target.repositoryId, target.headSha, ctx.guardTimeoutMs);
  } catch {
    throw new RetryLater("publication_guard_timeout");
  }
  try {
    await ensureRememberedCheckInProgress(ctx.forge, { store: ctx.store, now: ctx.now }, target, GROUP_RESET_OUTPUT, { signal });
    ctx.onTransition?.({ pullNumber: null, headSha: target.headSha, status: "in_progress", conclusion: null, title: GROUP_RESET_OUTPUT.title });
  } finally {
    await release();
  }
}

const GROUP_RESET_OUTPUT: CheckOutput = {
  title: "Merge group being verified again",
  summary: "A pull request of this group changed (a new commit, a dismissed approval or a changed membership) after the group was verified; the group is verified again before it may merge.",
};

async function publishGroup(
  ctx: WorkerContext, target: HeadCheckTarget, captured: number, conclusion: "success" | "failure", output: CheckOutput,
  fences: () => Promise<GroupFences>, signal: AbortSignal,
): Promise<{ readonly kind: "published"; readonly checkRunId: number | null } | { readonly kind: "fenced" }> {
  const publishable = (f: GroupFences) => f.shared === captured && f.invalidated === f.shared && !f.fanoutPending && f.queued;
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
    if (!publishable(before)) {
      if (before.fanoutPending && before.queued && before.shared === captured) throw new RetryLater("merge_group_fanout_pending");
      return { kind: "fenced" };
    }
    const complete = (found: ManagedCheck) => ctx.forge.completeCheck(target, found, conclusion, output, new Date(ctx.now()), { signal });
    try {
      const known = await knownCheck(memory, target);
      let completed = known.check === null ? null : await writeUnlessGone(memory, target, known.check, complete);
      if (completed === null) {
        check = noCheckCanExist(known) ? null : await ctx.forge.findManagedCheck(target, { signal });
        if (check !== null) {
          await rememberCheck(memory, target, check);
          signal.throwIfAborted();
          completed = await complete(check);
        } else {
          // No check on the group's commit yet: created with its conclusion in one write (a group is judged before its check
          // exists; in progress first would be a second write that nobody waits on). The fences below still apply to it.
          completed = await createCompletedCheck(ctx.forge, memory, target, conclusion, output, new Date(ctx.now()), { signal });
          check = completed;
          await rememberCheck(memory, target, completed);
        }
      }
      check = completed;
    } catch (error) {
      await shieldedReset(ctx, target, check);
      throw error;
    }
    const after = await fences().catch(async (error) => {
      await shieldedReset(ctx, target, check);
      throw error;
    });
    if (!after.leaseHeld || !publishable(after)) {
      // A destroyed group is gone from the queue, which already acted on what it saw (merged it on a success, or removed the
      // pull request on a failure): nothing is left to reset, and the verdict it acted on stands and is recorded below.
      if (after.queued || !after.leaseHeld) await shieldedReset(ctx, target, check);
      if (!after.leaseHeld) throw new LeaseLost();
      if (after.queued) return { kind: "fenced" };
    }
    ctx.metrics.evaluations.inc({ conclusion });
    await ctx.store.execute(() =>
      lone(recordAudit({ kind: "conclusion", installationId: target.installationId, repositoryId: target.repositoryId, pullNumber: null, headSha: target.headSha, outcome: conclusion, detail: { merge_group: true, check_run_id: check!.id, shared_generation: captured }, now: ctx.now() })),
    ).catch((error) => ctx.log.warn({ code: (error as { code?: string }).code ?? "database" }, "audit row for a merge group's conclusion could not be written"));
    ctx.onTransition?.({ pullNumber: null, headSha: target.headSha, status: "completed", conclusion, title: output.title });
    return { kind: "published", checkRunId: check?.id ?? null };
  } finally {
    await release();
  }
}
