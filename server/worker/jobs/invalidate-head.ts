import { finishHeadInvalidation, type JobRow, one } from "../../store/index.ts";
import { IN_PROGRESS_OUTPUT, resetCheck } from "../../ingress/index.ts";
import { type JobOutcome, repositoryOf, type WorkerContext } from "../context.ts";
import { RetryLater } from "../errors.ts";

/**
 * Exact-head invalidation job (spec "Generations" 1, "Managed check run" third row): reset the managed check on the head,
 * fan evaluation out to the open pull requests whose head it is, then mark the generation captured at the start invalidated
 * (and clear the head's published digest). A check whose ID is remembered is reset by it, without a listing.
 * A generation that advanced meanwhile merged into this row, so the row runs again (outcome `superseded`).
 */
export async function invalidateHead(ctx: WorkerContext, row: JobRow, signal: AbortSignal): Promise<JobOutcome> {
  const repository = repositoryOf(row);
  const headSha = row.head_sha!;
  const head = await ctx.store.execute(function* () {
    return yield* one<{ shared_generation: number }>("select shared_generation from head_generations where repository_id = $1 and head_sha = $2", repository.repositoryId, headSha);
  });
  const generation = head?.shared_generation ?? 0;
  const target = { installationId: repository.installationId, owner: repository.owner, repo: repository.name, headSha, repositoryId: repository.repositoryId };

  const { written } = await resetCheck(ctx.forge, { store: ctx.store, now: ctx.now }, target, IN_PROGRESS_OUTPUT, { signal });
  if (written) ctx.onTransition?.({ pullNumber: null, headSha, status: "in_progress", conclusion: null, title: IN_PROGRESS_OUTPUT.title });
  const open = await ctx.forge.listOpenPullRequests(repository.installationId, repository.owner, repository.name, {}, { signal });
  if (!open.complete && open.cause === "transient") throw new RetryLater("open_pull_requests_incomplete", open.retryAfterMs ?? null);
  const onHead = open.complete ? open.items.filter((pull) => pull.headSha === headSha) : [];
  if (!open.complete) ctx.log.warn({ cause: open.cause }, "open pull requests over the bound: evaluations fan out to the ones listed; the shared-head check fails closed");
  await ctx.store.execute(() => finishHeadInvalidation(repository, headSha, generation, onHead.map((pull) => pull.number), ctx.now()));
  return { kind: "done", note: `invalidated generation ${generation}` };
}
