import { finishHeadInvalidation, type JobRow, one, type PossibleSuccesses, readIndexedOnHead, readPossibleSuccesses, type RepositoryRef, type SuccessCursor } from "../../store/index.ts";
import { IN_PROGRESS_OUTPUT, resetCheck } from "../../ingress/index.ts";
import { type JobOutcome, repositoryOf, type WorkerContext } from "../context.ts";
import { RetryLater } from "../errors.ts";
import { notListed } from "./fan-out.ts";

/**
 * Exact-head invalidation job (spec "Generations" 1, "Managed check run" third row): reset the managed check on the head,
 * fan evaluation out to the open pull requests whose head it is, then mark the generation captured at the start invalidated
 * (and clear the head's published digest). A check whose ID is remembered is reset by it, without a listing.
 * A generation that advanced meanwhile merged into this row, so the row runs again (outcome `superseded`). A head whose
 * generation was invalidated already (I = S: the row of a head a pull request left, DESIGN 3.8) keeps its check; only its
 * pull requests are evaluated again.
 *
 * The pull requests on the head (DESIGN 3.9), never a listing of the repository: the forge's open pull requests of the head
 * (GET …/commits/{sha}/pulls) united with the store's open-pull-request index on it. When the forge's answer is over its
 * bound or refused, the index's and those whose recorded evaluation is of the head are re-queued instead (the rest waits for
 * the reconciler, as the log line says); a transient gap retries the job.
 */
export async function invalidateHead(ctx: WorkerContext, row: JobRow, signal: AbortSignal): Promise<JobOutcome> {
  const repository = repositoryOf(row);
  const headSha = row.head_sha!;
  const head = await ctx.store.execute(function* () {
    return yield* one<{ shared_generation: number; invalidated_generation: number }>("select shared_generation, invalidated_generation from head_generations where repository_id = $1 and head_sha = $2", repository.repositoryId, headSha);
  });
  const generation = head === null ? 0 : Number(head.shared_generation);
  const target = { installationId: repository.installationId, owner: repository.owner, repo: repository.name, headSha, repositoryId: repository.repositoryId };

  if (head !== null && Number(head.invalidated_generation) < generation) {
    const { written } = await resetCheck(ctx.forge, { store: ctx.store, now: ctx.now }, target, IN_PROGRESS_OUTPUT, { signal });
    if (written) ctx.onTransition?.({ pullNumber: null, headSha, status: "in_progress", conclusion: null, title: IN_PROGRESS_OUTPUT.title });
  }
  const open = await ctx.forge.listOpenPullRequestsOnHead(repository.installationId, repository.owner, repository.name, headSha, { signal });
  if (!open.complete && open.cause === "transient") throw new RetryLater("open_pull_requests_incomplete", open.retryAfterMs ?? null);
  const indexed = await ctx.store.execute(() => readIndexedOnHead(repository.repositoryId, headSha));
  const recorded = open.complete ? [] : await recordedOnHead(ctx, repository, headSha);
  const onHead = [...new Set([...(open.complete ? open.items.map((pull) => pull.number) : []), ...indexed, ...recorded])].sort((a, b) => a - b);
  if (!open.complete) {
    ctx.log.warn({ cause: open.cause, pull_requests: onHead.length }, `open pull requests on the head not listed (${notListed(open.cause)}): evaluations re-queued for the ${onHead.length} pull requests the open-pull-request index names on it or whose recorded evaluation is of it; any other pull request on it waits for the reconciler`);
  }
  await ctx.store.execute(() => finishHeadInvalidation(repository, headSha, generation, onHead, ctx.now()));
  return { kind: "done", note: `invalidated generation ${generation}` };
}

/**
 * The head's pull requests cannot be listed (over the bound): the pull requests whose recorded evaluation is of this head are
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
