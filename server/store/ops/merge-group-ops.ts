import { batch, one, type Op, query } from "../op.ts";
import { MERGE_INTO_LIVE_ROW, type RepositoryRef, retainDelivery } from "./work-rows.ts";

/**
 * Merge groups of the forge's merge queue (migration 0012). A `merge_group` `checks_requested` delivery records its group and
 * queues one `merge_group` work row keyed by repository and the group's head commit; `destroyed` marks the group and cancels
 * that row. The group's head is fenced like a pull request's head: every delivery about it advances S(head) in
 * `head_generations`, so a worker that captured an older S never publishes on it (DESIGN 4). No fast path resets a group's
 * check (its own work row writes it), so the acceptance keeps I = S.
 *
 * Rows are written in the store's lock order (store.ts): the head's `head_generations` row (3), the `merge_groups` row
 * (4b), the work row (5); the delivery row is retained first, as in every acceptance (8: no other operation locks it).
 */
export type MergeGroup = {
  readonly headSha: string;
  /** The group's own ref on the forge (e.g. `refs/heads/gh-readonly-queue/main/pr-1-…`). */
  readonly headRef: string;
  /** The branch the group merges into, without `refs/heads/`. */
  readonly baseRef: string;
  /** The group's parent commit: the base with every entry ahead of the group. */
  readonly baseSha: string;
};

export type MergeGroupDelivery = RepositoryRef & {
  readonly deliveryId: string;
  readonly action: string;
  readonly group: MergeGroup;
  readonly now: number;
};

/**
 * `queued`: the group's work row is live at `sharedGeneration`; `destroyed`: the forge already destroyed the group (a late
 * `checks_requested`), nothing queued; `duplicate`: the delivery ID was retained before, nothing changed.
 */
export type MergeGroupOutcome = { readonly kind: "queued"; readonly sharedGeneration: number } | { readonly kind: "destroyed" } | { readonly kind: "duplicate" };

/** S(head) := S + 1 and I := S (no fast path resets a group's check); the new S. A new row has never had a check created. */
function advanceGroupHead(repo: RepositoryRef, headSha: string, now: number) {
  return query(
    "one",
    `insert into head_generations (installation_id, repository_id, head_sha, shared_generation, invalidated_generation, updated_at_ms, check_untried)
     values ($1, $2, $3, 1, 1, $4, 1)
     on conflict (repository_id, head_sha) do update set shared_generation = head_generations.shared_generation + 1,
       invalidated_generation = head_generations.shared_generation + 1, updated_at_ms = excluded.updated_at_ms
     returning shared_generation`,
    repo.installationId, repo.repositoryId, headSha, now,
  );
}

/** `checks_requested`: the group's record and its work row at the head's new S, in one transaction. */
export function* acceptMergeGroupRequest(input: MergeGroupDelivery): Op<MergeGroupOutcome> {
  const { group } = input;
  if (!(yield* retainDelivery({ ...deliveryOf(input), pullNumber: null }))) return { kind: "duplicate" };
  const known = yield* one<{ state: string }>("select state from merge_groups where repository_id = $1 and head_sha = $2", input.repositoryId, group.headSha);
  // The forge never reuses a group's head commit: a request after its destruction arrived late and asks for nothing.
  if (known?.state === "destroyed") return { kind: "destroyed" };
  const [advanced] = yield* batch([
    advanceGroupHead(input, group.headSha, input.now),
    query(
      "run",
      `insert into merge_groups (installation_id, repository_id, head_sha, head_ref, base_ref, base_sha, state, destroyed_reason, requested_at_ms, updated_at_ms)
       values ($1, $2, $3, $4, $5, $6, 'queued', null, $7, $7)
       on conflict (repository_id, head_sha) do update set updated_at_ms = excluded.updated_at_ms`,
      input.installationId, input.repositoryId, group.headSha, group.headRef, group.baseRef, group.baseSha, input.now,
    ),
    query(
      "run",
      `insert into jobs (kind, priority, installation_id, repository_id, repository_owner, repository_name, head_sha, base_ref, shared_generation, run_at_ms, created_at_ms, updated_at_ms)
       values ('merge_group', 4, $1, $2, $3, $4, $5, $6, (select shared_generation from head_generations where repository_id = $2 and head_sha = $5), $7, $7, $7)
       on conflict (repository_id, head_sha) where kind = 'merge_group' and state <> 'dead'
       do update set shared_generation = excluded.shared_generation, repository_owner = excluded.repository_owner, repository_name = excluded.repository_name, ${MERGE_INTO_LIVE_ROW}`,
      input.installationId, input.repositoryId, input.owner, input.name, group.headSha, group.baseRef, input.now,
    ),
    query("run", "update webhook_deliveries set shared_generation = (select shared_generation from head_generations where repository_id = $1 and head_sha = $2) where delivery_id = $3", input.repositoryId, group.headSha, input.deliveryId),
  ], { last: true });
  return { kind: "queued", sharedGeneration: Number((advanced as { shared_generation: number }).shared_generation) };
}

/** The forge's reasons for destroying a group (its webhook description); anything else is stored as null. */
export const DESTROYED_REASONS = new Set(["merged", "invalidated", "dequeued"]);

/**
 * `destroyed`: the group is marked destroyed (recorded even when its request was never seen, so a late one queues nothing),
 * its pending work row goes, and S(head) advances so a worker judging it now publishes nothing. Returns false for a
 * retained duplicate.
 */
export function* acceptMergeGroupDestroyed(input: MergeGroupDelivery & { readonly reason: string | null }): Op<boolean> {
  const { group } = input;
  if (!(yield* retainDelivery({ ...deliveryOf(input), pullNumber: null }))) return false;
  const reason = input.reason !== null && DESTROYED_REASONS.has(input.reason) ? input.reason : null;
  yield* batch([
    advanceGroupHead(input, group.headSha, input.now),
    query(
      "run",
      `insert into merge_groups (installation_id, repository_id, head_sha, head_ref, base_ref, base_sha, state, destroyed_reason, requested_at_ms, updated_at_ms)
       values ($1, $2, $3, $4, $5, $6, 'destroyed', $7, $8, $8)
       on conflict (repository_id, head_sha) do update set state = 'destroyed', destroyed_reason = excluded.destroyed_reason, updated_at_ms = excluded.updated_at_ms`,
      input.installationId, input.repositoryId, group.headSha, group.headRef, group.baseRef, group.baseSha, reason, input.now,
    ),
    query("run", "delete from jobs where kind = 'merge_group' and state = 'pending' and repository_id = $1 and head_sha = $2", input.repositoryId, group.headSha),
  ], { last: true });
  return true;
}

export type MergeGroupRow = MergeGroup & {
  readonly installationId: number;
  readonly repositoryId: number;
  readonly state: "queued" | "destroyed";
  readonly destroyedReason: string | null;
  readonly requestedAtMs: number;
};

/** The group recorded for a head, or null. A read: no row lock. */
export function* readMergeGroup(repositoryId: number, headSha: string): Op<MergeGroupRow | null> {
  const row = yield* one<{ installation_id: number; repository_id: number; head_sha: string; head_ref: string; base_ref: string; base_sha: string; state: "queued" | "destroyed"; destroyed_reason: string | null; requested_at_ms: number }>(
    "select installation_id, repository_id, head_sha, head_ref, base_ref, base_sha, state, destroyed_reason, requested_at_ms from merge_groups where repository_id = $1 and head_sha = $2",
    repositoryId, headSha,
  );
  if (row === null) return null;
  return {
    installationId: Number(row.installation_id), repositoryId: Number(row.repository_id), headSha: row.head_sha, headRef: row.head_ref, baseRef: row.base_ref,
    baseSha: row.base_sha, state: row.state, destroyedReason: row.destroyed_reason, requestedAtMs: Number(row.requested_at_ms),
  };
}

function deliveryOf(input: MergeGroupDelivery) {
  return { deliveryId: input.deliveryId, event: "merge_group", action: input.action, installationId: input.installationId, repositoryId: input.repositoryId, headSha: input.group.headSha, now: input.now };
}
