import { finishHeadInvalidation, type JobRow, one, type PossibleSuccesses, readPossibleSuccesses, type RepositoryRef, type SuccessCursor } from "../../store/index.ts";
import { IN_PROGRESS_OUTPUT, resetCheck } from "../../ingress/index.ts";
import { type JobOutcome, repositoryOf, type WorkerContext } from "../context.ts";
import { RetryLater } from "../errors.ts";
import { notListed } from "./fan-out.ts";

/**
 * Exact-head invalidation job (spec "Generations" 1, "Managed check run" third row): reset the managed check on the head,
 * fan evaluation out to the open pull requests whose head it is, then mark the generation captured at the start invalidated
 * (and clear the head's published digest). A check whose ID is remembered is reset by it, without a listing.
 * A generation that advanced meanwhile merged into this row, so the row runs again (outcome `superseded`). When the open
 * pull requests cannot be listed (over the bound), the ones whose recorded evaluation is of the head are re-queued instead.
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
  const onHead = open.complete ? open.items.filter((pull) => pull.headSha === headSha).map((pull) => pull.number) : await recordedOnHead(ctx, repository, headSha);
  if (!open.complete) {
    ctx.log.warn({ cause: open.cause, pull_requests: onHead.length }, `open pull requests not listed (${notListed(open.cause)}): evaluations re-queued for the ${onHead.length} pull requests whose recorded evaluation is of this head; any other pull request on it waits for the reconciler`);
  }
  await ctx.store.execute(() => finishHeadInvalidation(repository, headSha, generation, onHead, ctx.now()));
  return { kind: "done", note: `invalidated generation ${generation}` };
}

/**
 * The open pull requests cannot be listed (over the bound): the pull requests whose recorded evaluation is of this head are
 * the ones that can hold a success on it (DESIGN 3.9: what the store knows is re-queued). Read page by page; a head is
 * rarely the record of more than a few.
 */
async function recordedOnHead(ctx: WorkerContext, repository: RepositoryRef, headSha: string): Promise<number[]> {
  const numbers: number[] = [];
  let cursor: SuccessCursor | null = null;
  do {
    const at: SuccessCursor | null = cursor;
    const page: PossibleSuccesses = await ctx.store.execute(() => readPossibleSuccesses(repository.repositoryId, at, { headSha }));
    numbers.push(...page.pulls.map((pull) => pull.number));
    cursor = page.next;
  } while (cursor !== null);
  return numbers;
}
