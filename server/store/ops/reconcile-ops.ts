import { all, batch, one, type Op, run } from "../op.ts";
import { advanceAndQueue, type RepositoryRef } from "./work-rows.ts";

/**
 * Store operations of the reconciler (spec "Reconciliation attempt", "Webhook delivery record" retention, "Generations" 3;
 * DESIGN 4 "elected reconciler").
 *
 * Election: one row per lease name in `leases`. A process holds the lease while the row names it as owner and has not expired
 * by the caller's clock. Acquisition is one conditional upsert: it takes a free or expired row, or extends the caller's own.
 * On PostgreSQL the upsert locks the conflicting row, so two processes racing for it serialise and the loser re-checks the
 * condition against the winner's committed row (it sees another owner and gets nothing). Every write the elected reconciler
 * makes renews the lease in the same transaction and writes nothing when the renewal fails: clock skew between processes can
 * at worst let a process take an expired lease early, and then the old owner's next write finds another owner and stops.
 */
export type ElectionLease = { readonly name: string; readonly owner: string; readonly ttlMs: number };

/** Takes the lease when it is free, expired or already ours; false when another owner holds it. */
export function* acquireElectionLease(lease: ElectionLease, now: number): Op<boolean> {
  const row = yield* one(
    `insert into leases (name, owner, expires_at_ms, acquired_at_ms) values ($1, $2, $3::bigint + $4::bigint, $3)
     on conflict (name) do update set owner = excluded.owner, expires_at_ms = excluded.expires_at_ms,
       acquired_at_ms = case when leases.owner = excluded.owner then leases.acquired_at_ms else excluded.acquired_at_ms end
     where leases.owner = excluded.owner or leases.expires_at_ms < $3
     returning owner`,
    lease.name, lease.owner, now, lease.ttlMs,
  );
  return row !== null;
}

/** Extends a lease this owner still holds (not expired by `now`) to now + ttlMs; false when it was lost. */
export function* renewElectionLease(lease: ElectionLease, now: number, ttlMs: number = lease.ttlMs): Op<boolean> {
  const changed = yield* run(
    "update leases set expires_at_ms = $3::bigint + $4::bigint where name = $1 and owner = $2 and expires_at_ms >= $3",
    lease.name, lease.owner, now, ttlMs,
  );
  return changed > 0;
}

/** Gives the lease up (graceful stop), so another process need not wait for it to expire. */
export function* releaseElectionLease(lease: ElectionLease): Op<boolean> {
  return (yield* run("delete from leases where name = $1 and owner = $2", lease.name, lease.owner)) > 0;
}

export function* readElectionLease(name: string): Op<{ owner: string; expires_at_ms: number; acquired_at_ms: number } | null> {
  return yield* one("select owner, expires_at_ms, acquired_at_ms from leases where name = $1", name);
}

export type MissingWorkOutcome =
  | { readonly kind: "lost" }
  /** queued: pull requests given new work; kept: pull requests whose live work was left unchanged. */
  | { readonly kind: "queued"; readonly queued: number; readonly kept: number };

/**
 * Queues the work that is missing for a repository's open pull requests, fenced by the lease (spec "Generations" 3). A pull
 * request has work when a live (pending, delayed or leased) evaluation row exists for it, or a live exact-head invalidation
 * row exists for its head (that job queues the evaluations of every open pull request on the head): such rows are left
 * unchanged. Otherwise the head's shared generation advances and its exact-head invalidation is queued (DESIGN 4: a worker may
 * publish only when S = I, and the invalidation job catches I up), the pull request's evaluation generation advances and its
 * evaluation is queued at the current authority epoch, all in this one transaction.
 */
export function* queueMissingWork(input: {
  readonly lease: ElectionLease;
  readonly repository: RepositoryRef;
  readonly pulls: readonly { readonly number: number; readonly headSha: string }[];
  readonly now: number;
}): Op<MissingWorkOutcome> {
  if (!(yield* renewElectionLease(input.lease, input.now))) return { kind: "lost" };
  const { repository, now } = input;
  if (input.pulls.length === 0) return { kind: "queued", queued: 0, kept: 0 };
  const live = yield* all<{ kind: string; pull_number: number | null; head_sha: string | null }>(
    "select kind, pull_number, head_sha from jobs where repository_id = $1 and kind in ('evaluation', 'head_invalidation') and state in ('pending', 'leased')",
    repository.repositoryId,
  );
  const evaluating = new Set(live.filter((r) => r.kind === "evaluation").map((r) => Number(r.pull_number)));
  const invalidating = new Set(live.filter((r) => r.kind === "head_invalidation").map((r) => r.head_sha));
  const seen = new Set<string>();
  const heads: string[] = [];
  const pulls: { number: number; headSha: string }[] = [];
  let kept = 0;
  for (const pull of input.pulls) {
    if (evaluating.has(pull.number) || invalidating.has(pull.headSha)) {
      kept++;
      continue;
    }
    if (!seen.has(pull.headSha)) {
      // A head this service never saw (a missed delivery) is new work: S advances with an exact-head invalidation (spec
      // "Generations" 3). A head already seen and fully invalidated gets only a fresh evaluation (E below): re-running the
      // invalidation would reset every managed check to in_progress at every scan although nothing about the head changed.
      // Reads take no row locks; the writes below go out as one batch in the store's lock order.
      const head = yield* one<{ shared_generation: number; invalidated_generation: number }>(
        "select shared_generation, invalidated_generation from head_generations where repository_id = $1 and head_sha = $2",
        repository.repositoryId, pull.headSha,
      );
      // Two pull requests on one head: the head advances once, each pull request gets its own evaluation.
      if (head === null || head.shared_generation === 0 || head.invalidated_generation < head.shared_generation) heads.push(pull.headSha);
      seen.add(pull.headSha);
    }
    pulls.push(pull);
  }
  // Background work: the evaluations yield to webhook-driven ones (the invalidation of a head never seen stays urgent).
  if (pulls.length > 0) yield* batch(advanceAndQueue(repository, { heads, pulls, background: true }, now));
  return { kind: "queued", queued: pulls.length, kept };
}

/** Delivery IDs removed per pruning transaction, so one statement stays well inside the ordinary statement bound. */
export const DELIVERY_PRUNE_BATCH = 1_000;

/**
 * Removes up to `batch` delivery records received strictly before `cutoffMs` (spec "Webhook delivery record": retention
 * expiry, elected reconciler prunes), fenced by the lease. Returns the number removed, or null when the lease was lost.
 */
export function* pruneDeliveryBatch(lease: ElectionLease, cutoffMs: number, now: number, batch: number = DELIVERY_PRUNE_BATCH): Op<number | null> {
  if (!(yield* renewElectionLease(lease, now))) return null;
  return yield* run(
    `delete from webhook_deliveries where delivery_id in
       (select delivery_id from webhook_deliveries where received_at_ms < $1 order by received_at_ms limit $2)`,
    cutoffMs, batch,
  );
}
