import { IN_PROGRESS_OUTPUT, resetCheck } from "../../ingress/index.ts";
import {
  decodeSubjects, type JobRow, readEvaluations, recordAudit, type RepositoryRef, splitInstallationFanout, subjectsMeet, supersedeAndQueue, supersedeForFanout,
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
 * - base-specific rows do the same for the open pull requests on that base, without resetting checks.
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

export async function fanOutRepository(ctx: WorkerContext, row: JobRow, signal: AbortSignal): Promise<JobOutcome> {
  const repository = repositoryOf(row);
  const open = await openPulls(ctx, repository, undefined, signal);
  const scoped = row.authority_subjects !== null;
  const pulls = scoped ? await affectedBy(ctx, repository, decodeSubjects(row.authority_subjects), open) : open;
  await ctx.store.execute(function* () {
    yield* supersedeForFanout(repository, pulls, ctx.now(), { background: true, scoped });
    yield* recordAudit({ kind: "fanout", installationId: repository.installationId, repositoryId: repository.repositoryId, pullNumber: null, headSha: null, outcome: "queued", detail: { pull_requests: pulls.length, open_pull_requests: open.length, scoped, authority_epoch: row.authority_epoch }, now: ctx.now() });
  });
  // A bounded attempt to invalidate each managed check; the queued evaluations publish the new result either way.
  const deadline = AbortSignal.any([signal, AbortSignal.timeout(ctx.resetTimeoutMs)]);
  await Promise.allSettled(pulls.map(async (pull) => {
    const target = { installationId: repository.installationId, owner: repository.owner, repo: repository.name, headSha: pull.headSha, repositoryId: repository.repositoryId };
    const { written } = await resetCheck(ctx.forge, { store: ctx.store, now: ctx.now }, target, IN_PROGRESS_OUTPUT, { signal: deadline, ...BACKGROUND });
    if (written) ctx.onTransition?.({ pullNumber: pull.number, headSha: pull.headSha, status: "in_progress", conclusion: null, title: IN_PROGRESS_OUTPUT.title });
  }));
  return { kind: "done", note: `${pulls.length} pull requests re-queued` };
}

export async function fanOutBaseRef(ctx: WorkerContext, row: JobRow, signal: AbortSignal): Promise<JobOutcome> {
  const repository = repositoryOf(row);
  const pulls = await openPulls(ctx, repository, row.base_ref!, signal);
  await ctx.store.execute(() => supersedeAndQueue(repository, pulls, ctx.now(), { background: true }));
  return { kind: "done", note: `${pulls.length} pull requests on the base re-queued` };
}

/** The open pull requests an event about `subjects` can affect: their last evaluation depends on one, or is not known. */
async function affectedBy(ctx: WorkerContext, repository: RepositoryRef, subjects: Set<string> | null, open: readonly { number: number; headSha: string }[]) {
  const seen = new Map((await ctx.store.execute(() => readEvaluations(repository.repositoryId))).map((row) => [Number(row.pull_number), row]));
  return open.filter((pull) => {
    const record = seen.get(pull.number);
    return record === undefined || record.head_sha !== pull.headSha || subjectsMeet(subjects, decodeSubjects(record.authority_subjects));
  });
}

async function openPulls(ctx: WorkerContext, repository: RepositoryRef, base: string | undefined, signal: AbortSignal) {
  const listed = await ctx.forge.listOpenPullRequests(repository.installationId, repository.owner, repository.name, base ? { base } : {}, { signal, ...BACKGROUND });
  if (!listed.complete) {
    if (listed.cause === "transient") throw new RetryLater("open_pull_requests_incomplete", listed.retryAfterMs ?? null);
    ctx.log.warn({ cause: listed.cause }, "open pull requests over the bound: only the listed ones are re-queued");
    return [];
  }
  return listed.items.map((pull) => ({ number: pull.number, headSha: pull.headSha }));
}
