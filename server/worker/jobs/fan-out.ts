import { IN_PROGRESS_OUTPUT, resetCheck } from "../../ingress/index.ts";
import {
  type BaseRefCursor, decodeSubjects, type IndexedForFanout, type JobRow, type PossibleSuccesses, type PullsOnBasePage, readIndexedForFanout, readPossibleSuccesses, readPullsOnBase, recordAudit, type RepositoryRef, splitInstallationFanout,
  subjectsMeet, type SuccessCursor, supersedeAndQueue, supersedeForFanout,
} from "../../store/index.ts";
import { type JobOutcome, repositoryOf, type WorkerContext } from "../context.ts";
import { RetryLater } from "../errors.ts";

/**
 * Authority fan-out (spec "POST /webhooks/forge" rule 9) and base-ref work (DESIGN 4):
 * - installation-wide rows split into one repository-wide row per accessible, non-archived repository (their own fences);
 * - repository-wide rows supersede every open pull request's evaluation generation, queue evaluations, clear the
 *   repository's published digests and make a bounded attempt to reset each managed check (by its remembered ID if any);
 * - a fan-out scoped to the subjects its events name (a membership, collaborator or team event: server/ingress/event-mapping.ts)
 *   does this only for the open pull requests whose last recorded evaluation depends on one of them, or is unknown (no
 *   record, another head, subjects over their bound): the others' results cannot change;
 * - base-specific rows supersede and queue the pull requests the store names on that base (fanOutBaseRef), without
 *   resetting checks;
 * - when the open pull requests cannot be listed (over the bound, which anyone can reach by opening pull requests), never
 *   nothing: the pull requests the store knows of (the open-pull-request index) or could hold a success (recorded
 *   evaluations, remembered checks) are re-queued instead (fanOutFromStore, DESIGN 3.9).
 * All of it is background work for the forge request governor, and so are the evaluations it queues: webhook-driven work
 * goes first (server/forge/governor.ts).
 */
const BACKGROUND = { priority: "background" } as const;
export async function fanOutInstallation(ctx: WorkerContext, row: JobRow, signal: AbortSignal): Promise<JobOutcome> {
  const listed = await ctx.forge.listInstallationRepositories(row.installation_id, { signal, ...BACKGROUND });
  if (!listed.complete) throw new RetryLater("installation_repositories_incomplete", listed.retryAfterMs ?? null);
  const repositories: RepositoryRef[] = [];
  for (const item of listed.items as Array<Record<string, unknown>>) {
    const owner = (item.owner as { login?: unknown } | undefined)?.login;
    if (typeof item.id !== "number" || typeof item.name !== "string" || typeof owner !== "string") throw new RetryLater("installation_repositories_malformed");
    if (item.archived === true) continue;
    if (item.name.toLowerCase() === ctx.settings.organizationPolicyRepository.toLowerCase()) continue;
    repositories.push({ installationId: row.installation_id, repositoryId: item.id, owner, name: item.name });
  }
  await ctx.store.execute(function* () {
    yield* splitInstallationFanout(row.installation_id, repositories, ctx.now(), row.authority_subjects);
    yield* recordAudit({ kind: "fanout", installationId: row.installation_id, repositoryId: null, pullNumber: null, headSha: null, outcome: "split", detail: { repositories: repositories.length, authority_epoch: row.authority_epoch }, now: ctx.now() });
  });
  return { kind: "done", note: `split into ${repositories.length} repositories` };
}

/**
 * A repository-wide fan-out never lists the repository's open pull requests (DESIGN 3.9): they come from the store's
 * open-pull-request index and recorded evaluations (fanOutFromStore), which also scope it by the event's subjects.
 */
export async function fanOutRepository(ctx: WorkerContext, row: JobRow, signal: AbortSignal): Promise<JobOutcome> {
  return fanOutFromStore(ctx, row, repositoryOf(row), signal);
}

/**
 * The fan-out from what the store knows (DESIGN 3.9), never a listing of the repository (anyone can push a
 * public repository over any listing bound by opening pull requests): the open-pull-request index, then what could hold
 * a success (readPossibleSuccesses: every pull request with a
 * recorded evaluation, every remembered check): each such pull request is superseded, re-queued and its check reset, as
 * a listed one would be (scoped by the event's subjects, an unknown record counting as affected), and each
 * remembered check no record names is reset (its pull request has no record, so the reconciler's next scan evaluates it).
 * Page by page: one transaction per page bounds memory and statement size, and no evaluation of the installation
 * publishes while this row is live (the fan-out fence), so the pages need not be one transaction. Any other open pull
 * request holds no success of ours and waits for the reconciler, as the log line says.
 */
async function fanOutFromStore(ctx: WorkerContext, row: JobRow, repository: RepositoryRef, signal: AbortSignal): Promise<JobOutcome> {
  const scoped = row.authority_subjects !== null;
  const subjects = decodeSubjects(row.authority_subjects);
  const deadline = AbortSignal.any([signal, AbortSignal.timeout(ctx.resetTimeoutMs)]);
  let requeued = 0;
  let indexed = 0;
  let otherChecks = 0;
  let resets = 0;
  // First the open-pull-request index (DESIGN 3.9): every open pull request the store knows of, scoped by the event's
  // subjects (no record, or a record of another head, counts as affected). The numbers and heads it covered are not taken again below.
  const covered = new Set<number>();
  const coveredHeads = new Set<string>();
  for (let after: number | null = null; ;) {
    const from: number | null = after;
    const page: IndexedForFanout[] = await ctx.store.execute(() => readIndexedForFanout(repository.repositoryId, from));
    if (page.length === 0) break;
    const pulls = page
      .filter((pull) => pull.recordedHeadSha === null || pull.recordedHeadSha !== pull.headSha || subjectsMeet(subjects, decodeSubjects(pull.authoritySubjects)))
      .map(({ number, headSha }) => ({ number, headSha }));
    for (const pull of page) covered.add(pull.number);
    for (const pull of pulls) coveredHeads.add(pull.headSha);
    await ctx.store.execute(() => supersedeForFanout(repository, pulls, ctx.now(), { background: true, scoped }));
    resets += await resetChecks(ctx, repository, pulls, deadline);
    requeued += pulls.length;
    indexed += pulls.length;
    after = page.at(-1)!.number;
  }
  let cursor: SuccessCursor | null = null;
  do {
    const at: SuccessCursor | null = cursor;
    const page: PossibleSuccesses = await ctx.store.execute(() => readPossibleSuccesses(repository.repositoryId, at));
    const pulls = page.pulls.filter((pull) => !covered.has(pull.number) && subjectsMeet(subjects, decodeSubjects(pull.authoritySubjects))).map(({ number, headSha }) => ({ number, headSha }));
    const heads = page.heads.filter((head) => !coveredHeads.has(head));
    await ctx.store.execute(() => supersedeForFanout(repository, pulls, ctx.now(), { background: true, scoped, heads }));
    resets += await resetChecks(ctx, repository, [...pulls, ...heads.map((headSha) => ({ number: null, headSha }))], deadline);
    requeued += pulls.length;
    otherChecks += heads.length;
    cursor = page.next;
  } while (cursor !== null);
  await ctx.store.execute(() => recordAudit({ kind: "fanout", installationId: repository.installationId, repositoryId: repository.repositoryId, pullNumber: null, headSha: null, outcome: "queued", detail: { pull_requests: requeued, indexed, open_pull_requests: null, from_store: true, other_checks: otherChecks, scoped, authority_epoch: row.authority_epoch }, now: ctx.now() }));
  ctx.log.info(
    { scoped, pull_requests: requeued, indexed, other_checks: otherChecks, checks_reset: resets },
    `fan-out from the store: re-queued the ${requeued} pull requests the open-pull-request index names (${indexed}) or with a recorded evaluation${scoped ? " that the event's subjects can affect" : ""}; of their checks and the ${otherChecks} other remembered checks, ${resets} were set to in progress (the others were in progress already, had no check, or were not reached within the reset bound); any other open pull request (never delivered nor listed yet) waits for the reconciler`,
  );
  return { kind: "done", note: `${requeued} pull requests from the index or with a recorded evaluation re-queued` };
}

/** Best effort within `deadline`: each check set to in_progress (by its remembered ID when known). Returns how many were written. */
async function resetChecks(ctx: WorkerContext, repository: RepositoryRef, heads: readonly { number: number | null; headSha: string }[], deadline: AbortSignal): Promise<number> {
  if (deadline.aborted) return 0;
  const results = await Promise.allSettled(heads.map(async (pull) => {
    const target = { installationId: repository.installationId, owner: repository.owner, repo: repository.name, headSha: pull.headSha, repositoryId: repository.repositoryId };
    const { written } = await resetCheck(ctx.forge, { store: ctx.store, now: ctx.now }, target, IN_PROGRESS_OUTPUT, { signal: deadline, ...BACKGROUND });
    if (written) ctx.onTransition?.({ pullNumber: pull.number, headSha: pull.headSha, status: "in_progress", conclusion: null, title: IN_PROGRESS_OUTPUT.title });
    return written;
  }));
  return results.filter((result) => result.status === "fulfilled" && result.value).length;
}

/**
 * Base-ref work never lists the forge (DESIGN 3.9; a monorepo's base can have more open pull requests than any listing
 * bound): it re-queues, page by page (one transaction each), what the store names on the pushed base (readPullsOnBase):
 * the open-pull-request index's rows on that base, those of unknown base, and the recorded evaluations of pull requests the
 * index does not name (records name no base ref: the safe superset). No check resets (the base moved, not the head). An
 * open pull request on the base that neither names (never delivered nor listed) waits for the reconciler, as the log says.
 */
export async function fanOutBaseRef(ctx: WorkerContext, row: JobRow, _signal: AbortSignal): Promise<JobOutcome> {
  const repository = repositoryOf(row);
  const baseRef = row.base_ref!;
  const counts = { indexed: 0, unknown_base: 0, recorded: 0 };
  let cursor: BaseRefCursor | null = null;
  do {
    const at: BaseRefCursor | null = cursor;
    const page: PullsOnBasePage = await ctx.store.execute(() => readPullsOnBase(repository.repositoryId, baseRef, at));
    const pulls = page.pulls.map(({ number, headSha }) => ({ number, headSha }));
    await ctx.store.execute(() => supersedeAndQueue(repository, pulls, ctx.now(), { background: true }));
    for (const pull of page.pulls) counts[pull.source] += 1;
    cursor = page.next;
  } while (cursor !== null);
  const requeued = counts.indexed + counts.unknown_base + counts.recorded;
  ctx.log.info(
    { pull_requests: requeued, indexed: counts.indexed, unknown_base: counts.unknown_base, recorded: counts.recorded },
    `base-ref work from the store: re-queued the ${requeued} pull requests the open-pull-request index names on the base (${counts.indexed}) or without a base (${counts.unknown_base}), and those with a recorded evaluation the index does not name (${counts.recorded}, on any base); the forge was not listed, and any other open pull request on the base (never delivered nor listed yet) waits for the reconciler`,
  );
  return { kind: "done", note: `${requeued} pull requests on the base (or of unknown base) from the store re-queued` };
}

/** Why a list of open pull requests was not had, for a log line: over the bound, or an answer that cannot change by retrying. */
export function notListed(cause: string): string {
  return cause === "over_bound" ? "over the bound" : "refused";
}
