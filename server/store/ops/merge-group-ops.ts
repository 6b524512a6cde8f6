import { encodeRecordBody, type MergeGroupRecordBody } from "../../records/codec.ts";
import { all, batch, type Dialect, dialect, lone, one, type Op, query, run } from "../op.ts";
import { type ElectionLease, renewElectionLease } from "./reconcile-ops.ts";
import { digestStatement, recordDigestSql } from "./record-digest.ts";
import { MERGE_INTO_LIVE_ROW, type RepositoryRef, retainDelivery } from "./work-rows.ts";

/**
 * Merge groups of the forge's merge queue (migration 0012). A `merge_group` `checks_requested` delivery records its group and
 * queues one `merge_group` work row keyed by repository and the group's head commit; `destroyed` marks the group and cancels
 * that row. The group's head is fenced like a pull request's head: every delivery about it advances S(head) in
 * `head_generations`, so a worker that captured an older S never publishes on it (DESIGN 4). No fast path resets a group's
 * check (its own work row writes it), so the acceptance keeps I = S.
 *
 * Rows are written in the store's lock order (store.ts): the head's `head_generations` row (3), the `merge_groups` row
 * (4b), its `merge_group_members` rows (4c), the work row (5); the delivery row is retained first, as in every acceptance (8:
 * no other operation locks it).
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

/** The group's work row at its head's current S (one live row per group: new work merges into it). */
function queueGroupJudgement(repo: RepositoryRef, headSha: string, baseRef: string, now: number) {
  return query(
    "run",
    `insert into jobs (kind, priority, installation_id, repository_id, repository_owner, repository_name, head_sha, base_ref, shared_generation, run_at_ms, created_at_ms, updated_at_ms)
     values ('merge_group', 4, $1, $2, $3, $4, $5, $6, (select shared_generation from head_generations where repository_id = $2 and head_sha = $5), $7, $7, $7)
     on conflict (repository_id, head_sha) where kind = 'merge_group' and state <> 'dead'
     do update set shared_generation = excluded.shared_generation, repository_owner = excluded.repository_owner, repository_name = excluded.repository_name, ${MERGE_INTO_LIVE_ROW}`,
    repo.installationId, repo.repositoryId, repo.owner, repo.name, headSha, baseRef, now,
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
    queueGroupJudgement(input, group.headSha, group.baseRef, input.now),
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
    query("run", "delete from merge_group_members where repository_id = $1 and group_head_sha = $2", input.repositoryId, group.headSha),
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
  /** A reset of one of its pull requests asks for its check to go back to in_progress before it is judged again. */
  readonly resetPending: boolean;
};

/** The group recorded for a head, or null. A read: no row lock. */
export function* readMergeGroup(repositoryId: number, headSha: string): Op<MergeGroupRow | null> {
  const row = yield* one<{ installation_id: number; repository_id: number; head_sha: string; head_ref: string; base_ref: string; base_sha: string; state: "queued" | "destroyed"; destroyed_reason: string | null; requested_at_ms: number; reset_pending: unknown }>(
    "select installation_id, repository_id, head_sha, head_ref, base_ref, base_sha, state, destroyed_reason, requested_at_ms, reset_pending from merge_groups where repository_id = $1 and head_sha = $2",
    repositoryId, headSha,
  );
  if (row === null) return null;
  return {
    installationId: Number(row.installation_id), repositoryId: Number(row.repository_id), headSha: row.head_sha, headRef: row.head_ref, baseRef: row.base_ref,
    baseSha: row.base_sha, state: row.state, destroyedReason: row.destroyed_reason, requestedAtMs: Number(row.requested_at_ms),
    resetPending: row.reset_pending === true || Number(row.reset_pending) === 1,
  };
}

function deliveryOf(input: MergeGroupDelivery) {
  return { deliveryId: input.deliveryId, event: "merge_group", action: input.action, installationId: input.installationId, repositoryId: input.repositoryId, headSha: input.group.headSha, now: input.now };
}

/**
 * The fences a group's publication compares (as readFences for a pull request's head): the group head's S and I, whether
 * the claim still holds its row, whether an authority fan-out is pending for the installation (it may reset the checks the
 * judgement read), and the group's state. One statement: the worker reads them while it holds the publication guards.
 */
export type GroupFences = { readonly shared: number; readonly invalidated: number; readonly fanoutPending: boolean; readonly leaseHeld: boolean; readonly queued: boolean };

export function* readGroupFences(input: { jobId: number; owner: string; installationId: number; repositoryId: number; headSha: string; now: number }): Op<GroupFences> {
  const row = yield* lone(one<{ shared: number; invalidated: number; fanout_pending: number; lease_held: number; queued: number }>(
    `select coalesce((select shared_generation from head_generations where repository_id = $1 and head_sha = $2), 0) as shared,
       coalesce((select invalidated_generation from head_generations where repository_id = $1 and head_sha = $2), 0) as invalidated,
       case when exists (select 1 from jobs where installation_id = $3 and kind in ('installation_fanout', 'repository_fanout') and state in ('pending', 'leased')) then 1 else 0 end as fanout_pending,
       case when exists (select 1 from jobs where id = $4 and lease_owner = $5 and state = 'leased' and lease_expires_at_ms >= $6) then 1 else 0 end as lease_held,
       case when exists (select 1 from merge_groups where repository_id = $1 and head_sha = $2 and state = 'queued') then 1 else 0 end as queued`,
    input.repositoryId, input.headSha, input.installationId, input.jobId, input.owner, input.now,
  ));
  return {
    shared: Number(row!.shared), invalidated: Number(row!.invalidated), fanoutPending: Number(row!.fanout_pending) === 1,
    leaseHeld: Number(row!.lease_held) === 1, queued: Number(row!.queued) === 1,
  };
}

/**
 * What the store holds about a pull request's head in a group: its newest decision record there (null: none), whether a
 * reset of the head's check followed that record (head_generations.reset_at_ms, migration 0010), and whether work that will
 * decide the head again is live (its evaluation, or its head's invalidation).
 */
export type MemberDecisionRow = {
  readonly pullNumber: number;
  readonly headSha: string;
  readonly record: { readonly id: number; readonly conclusion: "success" | "failure"; readonly confirmed: boolean; readonly body: Uint8Array } | null;
  readonly resetAfter: boolean;
  readonly workLive: boolean;
};

export function* readMemberDecisions(repositoryId: number, members: readonly { readonly pullNumber: number; readonly headSha: string }[]): Op<MemberDecisionRow[]> {
  if (members.length === 0) return [];
  const rows = yield* batch(members.map((member) => query(
    "one",
    `select d.id, d.conclusion, d.confirmed_at_ms, d.body,
       case when d.id is not null and g.reset_at_ms is not null and g.reset_at_ms > d.published_at_ms then 1 else 0 end as reset_after,
       case when exists (select 1 from jobs where repository_id = $1 and state in ('pending', 'leased')
         and ((kind = 'evaluation' and pull_number = $2) or (kind = 'head_invalidation' and head_sha = $3))) then 1 else 0 end as work_live
     from (select 1 as here) one
     left join (select id, conclusion, confirmed_at_ms, published_at_ms, body from decision_records where repository_id = $1 and head_sha = $3 and pull_number = $2 order by id desc limit 1) d on 1 = 1
     left join head_generations g on g.repository_id = $1 and g.head_sha = $3`,
    repositoryId, member.pullNumber, member.headSha,
  )), { last: true });
  return rows.map((raw, index) => {
    const row = raw as { id: number | null; conclusion: "success" | "failure" | null; confirmed_at_ms: number | null; body: Uint8Array | null; reset_after: number; work_live: number };
    const member = members[index]!;
    return {
      pullNumber: member.pullNumber, headSha: member.headSha,
      record: row.id === null ? null : { id: Number(row.id), conclusion: row.conclusion!, confirmed: row.confirmed_at_ms !== null, body: new Uint8Array(row.body!) },
      resetAfter: Number(row.reset_after) === 1, workLive: Number(row.work_live) === 1,
    };
  });
}

/**
 * After a group's check was completed: when and how it was judged, and, for a success, its pull requests and their heads (a
 * reset of one of them before the group merges queues the group's judgement again: requeueGroupsOfPull). Lock order: the
 * group's row (4b), then its members (4c).
 */
export type GroupRecordWrite = { readonly body: MergeGroupRecordBody; readonly sharedGeneration: number; readonly digest: string };

export function* recordGroupJudgement(input: RepositoryRef & {
  readonly headSha: string;
  readonly success: boolean;
  readonly members: readonly { readonly pullNumber: number; readonly headSha: string }[];
  readonly now: number;
  /**
   * The group's record (kind merge_group) with the publication facts that key it: the group head's S the verdict was
   * published at and the check's digest (a judgement published again with the same result at the same S writes no second
   * record). Written confirmed: the check write it records was answered.
   */
  readonly record?: GroupRecordWrite;
}): Op<void> {
  const members = input.success ? [...input.members].sort((a, b) => a.pullNumber - b.pullNumber) : [];
  const record = input.record;
  const which = yield* dialect();
  yield* batch([
    query("run", "update merge_groups set judged_at_ms = $3, judged_success = $4, updated_at_ms = $3 where repository_id = $1 and head_sha = $2", input.repositoryId, input.headSha, input.now, input.success),
    query("run", "delete from merge_group_members where repository_id = $1 and group_head_sha = $2", input.repositoryId, input.headSha),
    ...members.map((member) => query(
      "run",
      "insert into merge_group_members (installation_id, repository_id, group_head_sha, pull_number, head_sha) values ($1, $2, $3, $4, $5) on conflict (repository_id, group_head_sha, pull_number) do update set head_sha = excluded.head_sha",
      input.installationId, input.repositoryId, input.headSha, member.pullNumber, member.headSha,
    )),
    // The group's record last (7a after 4c in the lock order); pull request number 0, which no pull request has, keeps it out
    // of every per-pull-request read of the records (a merge's decision, a member's newest decision). A success also names
    // the pull requests and heads it verified, and links a merge of one of them recorded before it (8, last).
    ...(record === undefined ? [] : [groupRecordQuery(input, record, which), ...verifiedQueries(input, record, members)]),
  ], { last: true });
}

/**
 * For a success: the `merge_group_verified` rows naming each pull request and head the record verified, and the link of a
 * merge of one of them recorded before the record (its `closed` delivery came first). Members' parameters from $5 on, two
 * each (pull request number, head).
 */
function verifiedQueries(input: RepositoryRef & { readonly headSha: string }, record: GroupRecordWrite, members: readonly { readonly pullNumber: number; readonly headSha: string }[]) {
  if (record.body.conclusion !== "success" || members.length === 0) return [];
  const recordId = "(select id from decision_records where repository_id = $1 and head_sha = $2 and shared_generation = $3 and digest = $4)";
  const params = [input.repositoryId, input.headSha, record.sharedGeneration, record.digest, ...members.flatMap((member) => [member.pullNumber, member.headSha])];
  const number = (index: number) => `$${5 + 2 * index}`;
  const head = (index: number) => `$${6 + 2 * index}`;
  const verified = members.map((_, i) => `select CAST($1 AS bigint), CAST(${number(i)} AS integer), CAST(${head(i)} AS text), ${recordId}`);
  const merged = members.map((_, i) => `(pull_number = ${number(i)} and head_sha = ${head(i)})`);
  return [
    query("run", `insert into merge_group_verified (repository_id, pull_number, head_sha, record_id) ${verified.join(" union all ")} on conflict do nothing`, ...params),
    query("run", `update merge_records set merge_group_id = ${recordId} where repository_id = $1 and merge_group_id is null and (${merged.join(" or ")})`, ...params),
  ];
}

/** Which parameter of the group record's insert carries each column its digest covers (ops/record-digest.ts). */
const GROUP_RECORD_VALUES: Readonly<Record<string, string>> = {
  installation_id: "$1", repository_id: "$2", repository_full_name: "$3", pull_number: "0", head_sha: "$4", shared_generation: "$5", digest: "$6",
  conclusion: "$7", break_glass: "false", published_at_ms: "$8", confirmed_at_ms: "$8", body_bytes: "CAST($9 AS integer)", body: "$10",
};

/** The group's record, confirmed as it is written (its check was written already) and so final, with its digest. */
function groupRecordQuery(input: RepositoryRef & { readonly headSha: string; readonly now: number }, record: GroupRecordWrite, which: Dialect) {
  const encoded = encodeRecordBody(record.body);
  return query(
    "run",
    `insert into decision_records (installation_id, repository_id, repository_full_name, pull_number, head_sha, shared_generation, digest,
       pending_token, conclusion, break_glass, published_at_ms, confirmed_at_ms, body_bytes, body, record_sha256)
     values ($1, $2, $3, 0, $4, $5, $6, null, $7, false, $8, $8, $9, $10, ${digestStatement(`group-record-digest:${which}`, () => recordDigestSql("decision", which, (column) => GROUP_RECORD_VALUES[column]!))})
     on conflict (repository_id, head_sha, shared_generation, digest) do nothing`,
    input.installationId, input.repositoryId, record.body.repository.full_name, input.headSha, record.sharedGeneration, record.digest,
    record.body.conclusion, input.now, encoded.size, Buffer.from(encoded.bytes.buffer, encoded.bytes.byteOffset, encoded.bytes.byteLength),
  );
}

/**
 * A pull request is being evaluated again: every queued group judged success that holds it on another head, or on a head
 * whose check was reset after the group was judged (head_generations.reset_at_ms, migration 0010), goes back to work: its
 * head's S advances (I with it), its check is to be reset to in_progress first (reset_pending), and its work row is queued.
 * Returns how many groups were queued. Nothing is written when no group holds the pull request (one read).
 */
export function* requeueGroupsOfPull(input: RepositoryRef & { readonly pullNumber: number; readonly headSha: string; readonly now: number }): Op<number> {
  const groups = yield* all<{ group_head_sha: string; base_ref: string }>(
    `select m.group_head_sha, g.base_ref from merge_group_members m
     join merge_groups g on g.repository_id = m.repository_id and g.head_sha = m.group_head_sha
     left join head_generations h on h.repository_id = m.repository_id and h.head_sha = m.head_sha
     where m.repository_id = $1 and m.pull_number = $2 and g.state = 'queued' and g.judged_success = true
       and (m.head_sha <> $3 or (h.reset_at_ms is not null and h.reset_at_ms > g.judged_at_ms))
     order by m.group_head_sha`,
    input.repositoryId, input.pullNumber, input.headSha,
  );
  for (const group of groups) {
    yield* batch([
      advanceGroupHead(input, group.group_head_sha, input.now),
      // Its retry window starts again: the group is judged anew.
      query("run", "update merge_groups set judged_success = false, reset_pending = true, requested_at_ms = $3, updated_at_ms = $3 where repository_id = $1 and head_sha = $2", input.repositoryId, group.group_head_sha, input.now),
      queueGroupJudgement(input, group.group_head_sha, group.base_ref, input.now),
    ]);
  }
  return groups.length;
}

/** The group's reset_pending flag is cleared once its check was set back to in_progress. */
export function* clearGroupReset(repositoryId: number, headSha: string, now: number): Op<void> {
  yield* lone(one("update merge_groups set reset_pending = false, updated_at_ms = $3 where repository_id = $1 and head_sha = $2 returning 1", repositoryId, headSha, now));
}

/** Groups removed per pruning transaction. */
export const MERGE_GROUP_PRUNE_BATCH = 1_000;

/**
 * Removes up to `batch` merge groups not touched since `cutoffMs` (a group lives while its queue tries it: hours, not the
 * delivery retention this is given) and the member rows left without a group, fenced by the reconciler's lease (1, then 4b,
 * then 4c). Returns the number of groups removed, or null when the lease was lost. A work row of a removed group finds no
 * group and ends.
 */
export function* pruneMergeGroupBatch(lease: ElectionLease, cutoffMs: number, now: number, batch: number = MERGE_GROUP_PRUNE_BATCH): Op<number | null> {
  if (!(yield* renewElectionLease(lease, now))) return null;
  const removed = yield* run(
    `delete from merge_groups where (repository_id, head_sha) in
       (select repository_id, head_sha from merge_groups where updated_at_ms < $1 order by updated_at_ms limit $2)`,
    cutoffMs, batch,
  );
  if (removed > 0) {
    yield* run("delete from merge_group_members where not exists (select 1 from merge_groups g where g.repository_id = merge_group_members.repository_id and g.head_sha = merge_group_members.group_head_sha)");
  }
  return removed;
}
