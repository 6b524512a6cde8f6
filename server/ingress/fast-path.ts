import { IN_PROGRESS_OUTPUT } from "../evaluation/index.ts";
import type { ForgeClient } from "../forge/index.ts";
import { MAX_POLICY_FILE_BYTES } from "../policy/bounds.ts";
import { repositoryPolicyOptsOut } from "../policy/policy-files.ts";
import { markHeadInvalidated, recordLiveHead, type RepositoryRef, type Store } from "../store/index.ts";
import { checkHandle, createCheck, knownCheck, noCheckCanExist, rememberCheck, rememberedCheck, resetCheck } from "./check-memory.ts";
import type { PullHandoff } from "./pull-handoff.ts";

/**
 * The bounded synchronous invalidation after durable acceptance (spec "Managed check run", first row; "POST /webhooks/forge"
 * rule 4): one attempt to fetch the pull request and reset the managed check on the accepted head to in_progress. A check is
 * created only when the head is still current on an open pull request and the repository policy exists (and does not opt
 * out); a historical head without a check is skipped; a pull request that moved gets durable work for its live head.
 * A check whose ID is remembered (check-memory.ts) is reset by that ID, without listing check runs; a check created here is
 * remembered. Errors and the deadline propagate: the caller leaves the invalidation pending and still answers 202.
 */
// The reset's output is the core's (the playground shows it too); re-exported for the ingress's other callers.
export { IN_PROGRESS_OUTPUT };

export type FastPathInput = {
  readonly repository: RepositoryRef;
  readonly pullNumber: number | null;
  readonly headSha: string;
  readonly sharedGeneration: number;
  /** The pull request's E after this delivery's acceptance; null for a duplicate's retry (its read is not handed on). */
  readonly evaluationGeneration: number | null;
  /**
   * The head's remembered check run as the acceptance read it (null: none); absent (a duplicate's retry), it is read here.
   * The acceptance's statement reads it, so a fast path costs no store round trip before its first forge request.
   */
  readonly rememberedCheckRunId?: number | null;
};

/**
 * `settling`: the fast path marked the head invalidated for its generation (the pending invalidation row goes when that
 * caught up with S) and so released the delivery's evaluation; false when it leaves the head to the invalidation job (a
 * rerequest, a pull request no longer open), which then runs at once.
 */
export type FastPathResult = { readonly reset: boolean; readonly liveHeadQueued: boolean; readonly settling: boolean };

export type FastPathDeps = {
  readonly forge: Pick<ForgeClient, "getPullRequest" | "findManagedCheck" | "setCheckInProgress" | "createInProgressCheck" | "readFile">;
  readonly store: Store;
  readonly policyPath: string;
  readonly now: () => number;
  /** Bound on waiting for the head publication guard before creating a check. */
  readonly guardTimeoutMs: number;
  /** Where the read of the pull request is handed to the evaluation this delivery queued (pull-handoff.ts). */
  readonly handoff?: PullHandoff;
  /** Told about each check this fast path reset or created (the demo prints them). */
  readonly onReset?: (event: { pullNumber: number | null; headSha: string; created: boolean }) => void;
};

export async function runFastPath(deps: FastPathDeps, input: FastPathInput, signal: AbortSignal): Promise<FastPathResult> {
  const { forge, store } = deps;
  const { installationId, owner, name } = input.repository;
  const target = { installationId, owner, repo: name, headSha: input.headSha, repositoryId: input.repository.repositoryId };
  const call = { signal };
  const memory = { store, now: deps.now };
  const known = input.rememberedCheckRunId;
  const remembered = known === undefined ? await rememberedCheck(memory, target) : known === null ? null : checkHandle(known, input.headSha);

  if (input.pullNumber === null) {
    // A rerequest names only the head: reset an existing check; the invalidation job finds the pull requests on it.
    const { check, written } = await resetCheck(forge, memory, target, IN_PROGRESS_OUTPUT, call, remembered);
    if (written) deps.onReset?.({ pullNumber: null, headSha: input.headSha, created: false });
    return { reset: check !== null, liveHeadQueued: false, settling: false };
  }

  // A remembered check is reset by its ID, issued together with the read of the pull request (the whole fast path must fit in
  // a few seconds; both settle before it goes on or fails, so nothing is left in flight). With none remembered, the pull
  // request comes first: when the check may be created here, the one listing happens under the guard (a listing before it
  // as well would only repeat it), and otherwise any check the listing finds is reset.
  const reading = forge.getPullRequest(installationId, owner, name, input.pullNumber, call);
  const [pulled, located] = await Promise.allSettled([reading, remembered === null ? Promise.resolve(null) : resetCheck(forge, memory, target, IN_PROGRESS_OUTPUT, call, remembered)]);
  if (located.status === "fulfilled" && located.value?.written) deps.onReset?.({ pullNumber: input.pullNumber, headSha: input.headSha, created: false });
  if (pulled.status === "rejected") throw pulled.reason;
  if (located.status === "rejected") throw located.reason;
  const pull = pulled.value;
  if (input.evaluationGeneration !== null && pull.headSha === input.headSha) deps.handoff?.offer(input.repository.repositoryId, pull, input.evaluationGeneration, deps.now());
  const current = pull.state === "open" && pull.headSha === input.headSha;
  // Resets a check found by listing, unless the reset by a remembered ID above already looked (it lists when the forge says
  // the remembered run is gone).
  const resetListed = async () => {
    if (located.value !== null) return false;
    const listed = await resetCheck(forge, memory, target, IN_PROGRESS_OUTPUT, call, null);
    if (listed.written) deps.onReset?.({ pullNumber: input.pullNumber, headSha: input.headSha, created: false });
    return listed.check !== null;
  };
  let reset = false;
  if (located.value !== null && located.value.check !== null) {
    reset = true;
  } else if (!current) {
    reset = await resetListed();
  } else {
    const policy = await forge.readFile({ installationId, owner, repo: name, path: deps.policyPath, ref: pull.baseSha }, MAX_POLICY_FILE_BYTES, call);
    if (policy.kind === "incomplete") {
      await resetListed();
      throw new Error("repository policy could not be read within the fast path");
    }
    const optedIn = policy.kind === "too_large" || (policy.kind === "found" && !repositoryPolicyOptsOut(policy.text));
    if (!optedIn) {
      reset = await resetListed();
    } else {
      // Creation happens under the head publication guard, as every creation does, so that two processes (or this fast
      // path and a worker) never create two managed checks on one head; looked up under the guard (by a remembered ID, or
      // listed when none is remembered, unless no creation was ever tried for the head), reset when found, created when not.
      const release = await store.acquirePublicationGuards(installationId, input.repository.repositoryId, input.headSha, deps.guardTimeoutMs);
      try {
        const known = await knownCheck(memory, target);
        const found = noCheckCanExist(known) ? { check: null, written: false } : await resetCheck(forge, memory, target, IN_PROGRESS_OUTPUT, call, known.check);
        if (found.written) deps.onReset?.({ pullNumber: input.pullNumber, headSha: input.headSha, created: false });
        if (found.check === null) {
          const created = await createCheck(forge, memory, target, IN_PROGRESS_OUTPUT, call);
          await rememberCheck(memory, target, created);
          deps.onReset?.({ pullNumber: input.pullNumber, headSha: input.headSha, created: true });
        } else {
          await rememberCheck(memory, target, found.check);
        }
      } finally {
        await release();
      }
      reset = true;
    }
  }
  let liveHeadQueued = false;
  if (pull.state === "open" && pull.headSha !== input.headSha) {
    await store.execute(() => recordLiveHead({ ...input.repository, pullNumber: input.pullNumber!, headSha: pull.headSha, now: deps.now() }));
    liveHeadQueued = true;
  }
  // A pull request that left the head (closed) may leave another open pull request alone on it: only the invalidation job,
  // which fans evaluation out to the open pull requests on the head, may settle that generation. Settling is the fast path's
  // last step: the same statement releases this delivery's evaluation.
  if (pull.state === "open") {
    await store.execute(() => markHeadInvalidated({ repositoryId: input.repository.repositoryId, headSha: input.headSha, generation: input.sharedGeneration, now: deps.now(), releaseEvaluationOf: input.pullNumber! }, { last: true }));
  }
  return { reset, liveHeadQueued, settling: pull.state === "open" };
}
