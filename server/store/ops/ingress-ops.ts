import { batch, one, type Op, query, run } from "../op.ts";
import {
  advanceAuthorityEpoch, advanceHeadAndQueue, currentAuthorityEpoch, readDelivery, queueInstallationFanout, queueRepositoryFanout,
  type RepositoryRef, retainDelivery,
} from "./work-rows.ts";

/**
 * The durable acceptance operations of webhook ingress (spec "POST /webhooks/forge" 2-8, "Generations" 1-2 and 4,
 * "Queue rows"; DESIGN 3.3, 3.6 and 4). Each is one transaction: delivery record, generation fence and work, or nothing.
 */

export type DirectTrigger = RepositoryRef & {
  readonly deliveryId: string;
  readonly event: string;
  readonly action: string | null;
  /** null for check-run and check-suite rerequests, mapped by head alone. */
  readonly pullNumber: number | null;
  readonly headSha: string;
  readonly now: number;
};

export type DirectTriggerOutcome =
  | { readonly kind: "accepted"; readonly sharedGeneration: number }
  /** A retained duplicate: its stored head, and whether that head's invalidation for its generation is still pending. */
  | { readonly kind: "duplicate"; readonly headSha: string | null; readonly sharedGeneration: number | null; readonly pullNumber: number | null; readonly invalidationPending: boolean };

export function* acceptDirectTrigger(input: DirectTrigger): Op<DirectTriggerOutcome> {
  const fresh = yield* retainDelivery({ ...input, repositoryId: input.repositoryId });
  if (!fresh) {
    const stored = yield* readDelivery(input.deliveryId);
    let pending = false;
    if (stored?.head_sha && stored.repository_id !== null && stored.shared_generation !== null) {
      const head = yield* one<{ invalidated_generation: number }>(
        "select invalidated_generation from head_generations where repository_id = $1 and head_sha = $2",
        stored.repository_id, stored.head_sha,
      );
      pending = head !== null && head.invalidated_generation < stored.shared_generation;
    }
    return { kind: "duplicate", headSha: stored?.head_sha ?? null, sharedGeneration: stored?.shared_generation ?? null, pullNumber: stored?.pull_number ?? null, invalidationPending: pending };
  }
  // Everything else in one batch that also commits: with the delivery insert, acceptance is two round trips on PostgreSQL.
  const [advanced] = yield* batch([
    ...advanceHeadAndQueue(input, input.headSha, input.pullNumber, input.now),
    query("run", "update webhook_deliveries set shared_generation = (select shared_generation from head_generations where repository_id = $1 and head_sha = $2) where delivery_id = $3", input.repositoryId, input.headSha, input.deliveryId),
  ], { last: true });
  return { kind: "accepted", sharedGeneration: (advanced as { shared_generation: number }).shared_generation };
}

/** A fast path found the pull request on another (live) head: that head's generations advance and it is queued. */
export function* recordLiveHead(input: RepositoryRef & { readonly pullNumber: number; readonly headSha: string; readonly now: number }): Op<number> {
  const [advanced] = yield* batch(advanceHeadAndQueue(input, input.headSha, input.pullNumber, input.now), { last: true });
  return (advanced as { shared_generation: number }).shared_generation;
}

/**
 * The fast path reset (or rightly skipped) the managed check for `generation`: I := max(I, generation). When that catches I
 * up with S, the pending exact-head invalidation row has nothing left to do and goes (a leased one is the worker's). One
 * batch; `last` when it is the whole operation (it then commits with it).
 */
export function* markHeadInvalidated(input: { readonly repositoryId: number; readonly headSha: string; readonly generation: number; readonly now: number }, options: { readonly last?: boolean } = {}): Op<boolean> {
  const [row] = yield* batch([
    query(
      "one",
      `update head_generations set invalidated_generation = case when invalidated_generation < $3 then $3 else invalidated_generation end, updated_at_ms = $4
       where repository_id = $1 and head_sha = $2 and $3 <= shared_generation
       returning shared_generation, invalidated_generation`,
      input.repositoryId, input.headSha, input.generation, input.now,
    ),
    query(
      "run",
      `delete from jobs where kind = 'head_invalidation' and state = 'pending' and repository_id = $1 and head_sha = $2
       and exists (select 1 from head_generations where repository_id = $1 and head_sha = $2 and $3 <= shared_generation and invalidated_generation >= shared_generation)`,
      input.repositoryId, input.headSha, input.generation,
    ),
  ], options);
  const head = row as { shared_generation: number; invalidated_generation: number } | null;
  return head !== null && head.invalidated_generation >= head.shared_generation;
}

export type AuthorityScope =
  | { readonly kind: "installation" }
  | { readonly kind: "repositories"; readonly repositories: readonly RepositoryRef[] };

export type AuthorityEvent = {
  readonly deliveryId: string;
  readonly event: string;
  readonly action: string | null;
  readonly installationId: number;
  readonly scope: AuthorityScope;
  readonly now: number;
};

/**
 * Authority acceptance (run under the exclusive installation guard): advance the authority epoch and record the fan-out.
 * Returns false for a retained duplicate (nothing changes).
 */
export function* acceptAuthorityEvent(input: AuthorityEvent): Op<boolean> {
  const single = input.scope.kind === "repositories" && input.scope.repositories.length === 1 ? input.scope.repositories[0]! : null;
  const fresh = yield* retainDelivery({ deliveryId: input.deliveryId, event: input.event, action: input.action, installationId: input.installationId, repositoryId: single?.repositoryId ?? null, pullNumber: null, headSha: null, now: input.now });
  if (!fresh) return false;
  const epoch = yield* advanceAuthorityEpoch(input.installationId, input.now);
  if (input.scope.kind === "installation") yield* queueInstallationFanout(input.installationId, epoch, input.now);
  else for (const repository of input.scope.repositories) yield* queueRepositoryFanout(repository, epoch, input.now);
  return true;
}

/** Distinct base refs queued per installation and repository before they collapse into one repository-wide job (spec "Limits"). */
export const MAX_BASE_REFS_PER_REPOSITORY = 100;

export type BaseRefPush = RepositoryRef & { readonly deliveryId: string; readonly action: string | null; readonly baseRef: string; readonly now: number };

export type BaseRefOutcome = "queued" | "collapsed" | "covered" | "duplicate";

/**
 * A push to a target repository branch: re-evaluate the open pull requests on that base. The 101st distinct base ref
 * collapses the repository's base rows into one repository-wide job; a pending repository-wide job already covers it.
 */
export function* acceptBaseRefPush(input: BaseRefPush): Op<BaseRefOutcome> {
  const fresh = yield* retainDelivery({ deliveryId: input.deliveryId, event: "push", action: input.action, installationId: input.installationId, repositoryId: input.repositoryId, pullNumber: null, headSha: null, now: input.now });
  if (!fresh) return "duplicate";
  const covering = yield* one("select id from jobs where kind = 'repository_fanout' and state = 'pending' and repository_id = $1", input.repositoryId);
  if (covering !== null) return "covered";
  const existing = yield* one("select id from jobs where kind = 'base_ref' and state <> 'dead' and repository_id = $1 and base_ref = $2", input.repositoryId, input.baseRef);
  if (existing === null) {
    const count = yield* one<{ n: number }>(
      "select count(*) as n from jobs where kind = 'base_ref' and state <> 'dead' and installation_id = $1 and repository_id = $2",
      input.installationId, input.repositoryId,
    );
    if (Number(count!.n) >= MAX_BASE_REFS_PER_REPOSITORY) {
      const epoch = yield* currentAuthorityEpoch(input.installationId, input.now);
      yield* queueRepositoryFanout(input, epoch, input.now);
      return "collapsed";
    }
  }
  yield* run(
    `insert into jobs (kind, priority, installation_id, repository_id, repository_owner, repository_name, base_ref, run_at_ms, created_at_ms, updated_at_ms)
     values ('base_ref', 3, $1, $2, $3, $4, $5, $6, $6, $6)
     on conflict (repository_id, base_ref) where kind = 'base_ref' and state <> 'dead'
     do update set merges = jobs.merges + 1, updated_at_ms = excluded.updated_at_ms,
       run_at_ms = case when jobs.state = 'pending' and excluded.run_at_ms < jobs.run_at_ms then excluded.run_at_ms else jobs.run_at_ms end`,
    input.installationId, input.repositoryId, input.owner, input.name, input.baseRef, input.now,
  );
  return "queued";
}
