import { batch, dialect, one, type Op, type Query, query, run } from "../op.ts";
import { type IndexWrite, indexTombstoneSql, indexWrite } from "./open-pull-index.ts";
import { type MergeInput, mergeRecordQuery, type RecordedMerge, recordedMergeOf } from "./record-ops.ts";
import {
  ADVANCE_INVALIDATED_SQL, advanceAndQueue, advanceAuthorityEpoch, advanceHeadAndQueue, advanceInvalidatedGeneration, currentAuthorityEpoch, MERGE_INTO_LIVE_ROW, MERGE_LEFT_HEAD, readDelivery,
  queueInstallationFanout, queueRepositoryFanout, type RepositoryRef, retainDelivery, SETTLE_INVALIDATION_SQL, settleHeadInvalidation,
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
  /**
   * When the delivery's work rows become claimable: the deadline of the fast path that follows the acceptance, which releases
   * them as it ends (markHeadInvalidated, or releaseFastPathWork); now when absent (no fast path follows). Held, no worker
   * lists and resets the check the fast path is resetting or creating, and no evaluation starts before the check is reset
   * (its publication would be fenced) or without the fast path's read of the pull request (pull-handoff.ts). A row already
   * pending keeps an earlier run time.
   */
  readonly heldUntil?: number;
  /** The pull request's write to the open-pull-request index (DESIGN 3.9): a pull_request delivery's, in this transaction. */
  readonly index?: IndexWrite;
  /**
   * The head a `synchronize` left (`before`): its exact-head invalidation is queued (claimable now) in the same acceptance,
   * so the pull requests still on it are evaluated again (DESIGN 3.8) without waiting for a scan. Its S does not advance:
   * nothing about that head changed but who is on it, so its check is not reset (invalidate-head.ts).
   */
  readonly previousHead?: string;
  /**
   * A merged `closed` delivery's merge (DESIGN 3.10): its merge record is written in the same acceptance, as one more statement
   * after the acceptance's (only for such a delivery: every other one stays one statement). Idempotent: a redelivery, or a
   * merge the reconciler recovered first, writes nothing and answers `merge: null`.
   */
  readonly merge?: Omit<MergeInput, "installationId" | "repositoryId" | "pullNumber" | "headSha" | "recovered" | "now">;
};

/**
 * `evaluationGeneration`: the pull request's E after the acceptance (null for a rerequest, mapped by head alone).
 * `rememberedCheckRunId`: the head's remembered check run (head_checks) as the acceptance found it, null when none is: read by
 * the same statement, so the fast path that follows needs no read of its own (readHeadCheck) before its first forge request.
 * `holdsWork`: whether the head's invalidation row or the pull request's evaluation row is pending and held past `now` after
 * the acceptance (its own `heldUntil`, or an earlier one of another fast path in flight). False when the delivery merged into
 * rows already claimable (a row due earlier keeps its run time): then there is nothing for releaseHeldWork to release, and a
 * fast path that does not settle its head sends no release (issue 26 item 8: a statement less per such delivery).
 */
export type DirectTriggerOutcome =
  | {
    readonly kind: "accepted"; readonly sharedGeneration: number; readonly evaluationGeneration: number | null; readonly rememberedCheckRunId: number | null; readonly holdsWork: boolean;
    /** The merge record this acceptance wrote (a merged `closed` delivery), else absent. */
    readonly merge?: RecordedMerge;
  }
  | { readonly kind: "duplicate" };

/** A retained duplicate: its stored head, and whether that head's invalidation for its generation is still pending. */
export type DuplicateDelivery = { readonly headSha: string | null; readonly sharedGeneration: number | null; readonly pullNumber: number | null; readonly invalidationPending: boolean };

/**
 * Durable acceptance of a direct trigger: the delivery record, S(head) + 1 with the exact-head invalidation row, E(pull) + 1
 * with the evaluation row, the pull request's index row (upserted, or a closing's tombstone), and for a `synchronize` the
 * invalidation row of the head it left, all or nothing; a delivery ID already retained changes nothing (`duplicate`: read
 * it with readDuplicateDelivery). It also answers the head's remembered check run.
 *
 * On PostgreSQL this is the webhook hot path and stays one statement sent alone (issue 26 item 8): no BEGIN, no COMMIT, no
 * reserved connection, one round trip pipelined with the other acceptances'. A write added to the acceptance goes into that
 * statement as one more data-modifying CTE (acceptInOneStatement), never as a second statement: a second one makes the
 * operation a transaction on a reserved connection, and with the answer's deadline its COMMIT goes alone (op.ts), two more
 * round trips and a wait for the transaction pool.
 */
export function* acceptDirectTrigger(input: DirectTrigger): Op<DirectTriggerOutcome> {
  const merge = mergeOf(input);
  if ((yield* dialect()) === "postgresql") {
    const [row, merged] = yield* batch([acceptInOneStatement(input), ...(merge ? [mergeRecordQuery(merge)] : [])], { last: true });
    if (row === null) return { kind: "duplicate" };
    const accepted = row as { shared_generation: number; evaluation_generation: number | null; check_run_id: number | null; holds_work: boolean };
    const recorded = merge ? recordedMergeOf(merged) : null;
    return {
      kind: "accepted", sharedGeneration: accepted.shared_generation, evaluationGeneration: accepted.evaluation_generation === null ? null : Number(accepted.evaluation_generation),
      rememberedCheckRunId: accepted.check_run_id === null ? null : Number(accepted.check_run_id), holdsWork: accepted.holds_work === true, ...(recorded ? { merge: recorded } : {}),
    };
  }
  if (!(yield* retainDelivery(input))) return { kind: "duplicate" };
  const index = input.index !== undefined && input.pullNumber !== null ? [indexWrite(input, input.pullNumber, input.headSha, input.index, input.now)] : [];
  const left = leftHead(input);
  const results = yield* batch([
    ...advanceAndQueue(input, {
      heads: [input.headSha], pulls: input.pullNumber === null ? [] : [{ number: input.pullNumber, headSha: input.headSha }], heldUntil: input.heldUntil ?? input.now,
      index, ...(left !== null ? { leftHeads: [left] } : {}),
    }, input.now),
    query("run", "update webhook_deliveries set shared_generation = (select shared_generation from head_generations where repository_id = $1 and head_sha = $2) where delivery_id = $3", input.repositoryId, input.headSha, input.deliveryId),
    query("one", REMEMBERED_CHECK_SQL, input.repositoryId, input.headSha),
    query("one", HELD_WORK_SQL, input.repositoryId, input.headSha, input.pullNumber, input.now),
    ...(merge ? [mergeRecordQuery(merge)] : []),
  ], { last: true });
  const [advanced, pulled] = results;
  const recorded = merge ? recordedMergeOf(results.pop()) : null;
  const held = results.at(-1) as { held: number };
  const remembered = results.at(-2);
  // advanceAndQueue's second statement advances the pull request's E when there is one.
  const evaluationGeneration = input.pullNumber === null ? null : (pulled as { evaluation_generation: number }).evaluation_generation;
  const checkRunId = (remembered as { check_run_id: number } | null)?.check_run_id;
  return {
    kind: "accepted", sharedGeneration: (advanced as { shared_generation: number }).shared_generation, evaluationGeneration, rememberedCheckRunId: checkRunId === undefined ? null : Number(checkRunId),
    holdsWork: Number(held.held) > 0,
    ...(recorded ? { merge: recorded } : {}),
  };
}

/** The merge record a merged `closed` delivery writes in its acceptance, or null. */
function mergeOf(input: DirectTrigger): MergeInput | null {
  if (input.merge === undefined || input.pullNumber === null) return null;
  return { ...input.merge, installationId: input.installationId, repositoryId: input.repositoryId, pullNumber: input.pullNumber, headSha: input.headSha, recovered: false, now: input.now };
}

/** The head's remembered check run ($1 repository, $2 head), as readHeadCheck reads it. */
const REMEMBERED_CHECK_SQL = "select check_run_id from head_checks where repository_id = $1 and head_sha = $2";
/** How many of the head's invalidation row and the pull request's evaluation row ($1 repository, $2 head, $3 pull request) are held past $4. */
const HELD_WORK_SQL = `select count(*) as held from jobs where repository_id = $1 and state = 'pending' and run_at_ms > $4
  and ((kind = 'head_invalidation' and head_sha = $2) or (kind = 'evaluation' and pull_number = $3))`;

/** The head a `synchronize` left, when it is another than the delivery's. */
function leftHead(input: DirectTrigger): string | null {
  return input.previousHead !== undefined && input.previousHead !== input.headSha && input.pullNumber !== null ? input.previousHead : null;
}

/**
 * acceptDirectTrigger on PostgreSQL, as data-modifying CTEs: every write hangs off `head`, which exists only when the delivery
 * ID was not yet retained; the delivery row carries the new S. A copy of the same delivery accepted at the same moment makes
 * the final insert fail on the primary key, the whole statement rolls back, and the store runs it again (it then finds the
 * retained copy and does nothing).
 *
 * PostgreSQL runs the parts of one statement in no documented order, so each part reads the one before it in the store's
 * lock order (store.ts): the pull request's row is written from `head`'s output, its index row (DESIGN 3.9) from `pull`'s,
 * the invalidation rows (in head order: a `synchronize` also queues the head it left) only after the index write (an
 * uncorrelated subquery runs once, to its end, before the first row), the evaluation row only after `invalidation`, and the
 * delivery row only after both work rows. It answers the new S and E (null E for a rerequest). The index write and the old
 * head's row add no statement and no round trip (issue 26). A live row of the delivery's head merges as MERGE_INTO_LIVE_ROW;
 * one of the old head as MERGE_LEFT_HEAD (work-rows.ts: only marked to run again). It also answers the head's remembered
 * check run as the statement's snapshot holds it (a reader: it locks nothing), and whether its work rows are held
 * (`holdsWork`, from the rows the work parts wrote).
 *
 * The statement has only the parts its delivery writes (issue 26 item 8): a rerequest has no pull request parts, a delivery
 * that is not a pull_request event no index part, and only a `synchronize` that left a head the old head's row. Parts that
 * a parameter switched off still cost PostgreSQL their plan nodes at every execution (the generic plan of a prepared
 * statement keeps them all), so each shape is a statement of its own (at most seven, each prepared once per connection).
 */
function acceptInOneStatement(input: DirectTrigger): Query {
  const params: unknown[] = [];
  const placed = new Map<string, string>();
  /** The placeholder of a named parameter, numbered in the order of first use (so one shape is always one text). */
  const $ = (name: string, value: unknown, type: string) => {
    let at = placed.get(name);
    if (at === undefined) {
      params.push(value);
      at = `$${params.length}::${type}`;
      placed.set(name, at);
    }
    return at;
  };
  const pull = input.pullNumber !== null;
  const index = pull ? input.index?.kind ?? null : null;
  const left = leftHead(input);
  const inst = $("installation", input.installationId, "bigint");
  const repo = $("repository", input.repositoryId, "bigint");
  const sha = $("head", input.headSha, "text");
  const now = $("now", input.now, "bigint");
  const parts = [
    `head as (
        insert into head_generations (installation_id, repository_id, head_sha, shared_generation, invalidated_generation, updated_at_ms, check_untried)
        select ${inst}, ${repo}, ${sha}, 1, 0, ${now}, 1 where not exists (select 1 from webhook_deliveries where delivery_id = ${$("delivery", input.deliveryId, "text")})
        on conflict (repository_id, head_sha) do update set shared_generation = head_generations.shared_generation + 1, updated_at_ms = excluded.updated_at_ms
        returning shared_generation
      )`,
  ];
  if (pull) {
    parts.push(`pull as (
        insert into pull_generations (installation_id, repository_id, pull_number, evaluation_generation, updated_at_ms)
        select ${inst}, ${repo}, ${$("pull", input.pullNumber, "integer")}, 1, ${now} from head
        on conflict (repository_id, pull_number) do update set evaluation_generation = pull_generations.evaluation_generation + 1, updated_at_ms = excluded.updated_at_ms
        returning evaluation_generation
      )`);
  }
  if (index === "upsert") {
    const baseRef = input.index?.kind === "upsert" ? input.index.baseRef : null;
    parts.push(`indexed as (
        insert into open_pull_requests (installation_id, repository_id, pull_number, head_sha, base_ref, seen_at_ms, listing_id)
        select ${inst}, ${repo}, ${$("pull", input.pullNumber, "integer")}, ${sha}, ${$("base", baseRef, "text")}, ${now}, null from pull
        on conflict (repository_id, pull_number) do update set head_sha = excluded.head_sha, base_ref = excluded.base_ref, seen_at_ms = excluded.seen_at_ms, listing_id = null, closed = false
        returning 1
      )`);
  } else if (index === "delete") {
    // A closing leaves its tombstone (open-pull-index.ts), which a listing page fetched before it cannot overwrite.
    parts.push(`indexed as (
        ${indexTombstoneSql(`select ${inst}, ${repo}, ${$("pull", input.pullNumber, "integer")}, ${sha}, ${now}, true from pull`)}
        returning 1
      )`);
  }
  // What the invalidation rows wait for: the index write (read through a count: true whatever it wrote), else the pull request's E.
  const afterPrevious = index !== null ? "(select count(*) from indexed) >= 0" : pull ? "exists (select 1 from pull)" : "true";
  const owner = $("owner", input.owner, "text");
  const name = $("name", input.name, "text");
  const runAt = $("run_at", input.heldUntil ?? input.now, "bigint");
  if (left === null) {
    parts.push(`invalidation as (
        insert into jobs (kind, priority, installation_id, repository_id, repository_owner, repository_name, head_sha, shared_generation, run_at_ms, created_at_ms, updated_at_ms)
        select 'head_invalidation', 0, ${inst}, ${repo}, ${owner}, ${name}, ${sha}, shared_generation, ${runAt}, ${now}, ${now} from head
        where ${afterPrevious}
        on conflict (repository_id, head_sha) where kind = 'head_invalidation' and state <> 'dead'
        do update set shared_generation = excluded.shared_generation, ${MERGE_INTO_LIVE_ROW}
        returning (state = 'pending' and run_at_ms > ${now}) as held
      )`);
  } else {
    const leftSha = $("left", left, "text");
    parts.push(`invalidation as (
        insert into jobs (kind, priority, installation_id, repository_id, repository_owner, repository_name, head_sha, shared_generation, run_at_ms, created_at_ms, updated_at_ms)
        select 'head_invalidation', 0, ${inst}, ${repo}, ${owner}, ${name}, w.head_sha, w.shared_generation, w.run_at_ms, ${now}, ${now} from (
          select ${sha} as head_sha, shared_generation, ${runAt} as run_at_ms from head
          union all
          select ${leftSha}, coalesce((select shared_generation from head_generations where repository_id = ${repo} and head_sha = ${leftSha}), 0), ${now} from head
        ) w
        where ${afterPrevious}
        order by w.head_sha
        on conflict (repository_id, head_sha) where kind = 'head_invalidation' and state <> 'dead'
        do update set shared_generation = case when jobs.head_sha = ${sha} then excluded.shared_generation else jobs.shared_generation end,
          ${MERGE_LEFT_HEAD},
          run_at_ms = case when jobs.head_sha = ${sha} and jobs.state = 'pending' and excluded.run_at_ms < jobs.run_at_ms then excluded.run_at_ms else jobs.run_at_ms end,
          background = case when jobs.head_sha = ${sha} and excluded.background < jobs.background then excluded.background else jobs.background end
        returning (head_sha = ${sha} and state = 'pending' and run_at_ms > ${now}) as held
      )`);
  }
  if (pull) {
    parts.push(`evaluation as (
        insert into jobs (kind, priority, installation_id, repository_id, repository_owner, repository_name, pull_number, head_sha, evaluation_generation, authority_epoch, run_at_ms, created_at_ms, updated_at_ms)
        select 'evaluation', 4, ${inst}, ${repo}, ${owner}, ${name}, ${$("pull", input.pullNumber, "integer")}, ${sha}, evaluation_generation,
          coalesce((select authority_epoch from installation_epochs where installation_id = ${inst}), 0), ${runAt}, ${now}, ${now} from pull
        where exists (select 1 from invalidation)
        on conflict (repository_id, pull_number) where kind = 'evaluation' and state <> 'dead'
        do update set head_sha = excluded.head_sha, evaluation_generation = excluded.evaluation_generation, authority_epoch = excluded.authority_epoch,
          repository_owner = excluded.repository_owner, repository_name = excluded.repository_name, ${MERGE_INTO_LIVE_ROW}
        returning (state = 'pending' and run_at_ms > ${now}) as held
      )`);
  }
  parts.push(`delivery as (
        insert into webhook_deliveries (delivery_id, event, action, installation_id, repository_id, pull_number, head_sha, received_at_ms, shared_generation)
        select ${$("delivery", input.deliveryId, "text")}, ${$("event", input.event, "text")}, ${$("action", input.action, "text")}, ${inst}, ${repo}, ${pull ? $("pull", input.pullNumber, "integer") : "null::integer"}, ${sha}, ${now}, shared_generation from head
        where exists (select 1 from ${pull ? "evaluation" : "invalidation"})
        returning shared_generation
      )`);
  return query(
    "one",
    `with ${parts.join(", ")}
      select shared_generation, ${pull ? "(select evaluation_generation from pull)" : "null::bigint"} as evaluation_generation,
        (select check_run_id from head_checks where repository_id = ${repo} and head_sha = ${sha}) as check_run_id,
        coalesce((select bool_or(held) from invalidation), false)${pull ? " or coalesce((select bool_or(held) from evaluation), false)" : ""} as holds_work
      from delivery`,
    ...params,
  );
}

/** What a retained duplicate delivery recorded, and whether its head's invalidation for that generation is still pending. */
export function* readDuplicateDelivery(deliveryId: string): Op<DuplicateDelivery> {
  const stored = yield* readDelivery(deliveryId);
  let pending = false;
  if (stored?.head_sha && stored.repository_id !== null && stored.shared_generation !== null) {
    const head = yield* one<{ invalidated_generation: number }>(
      "select invalidated_generation from head_generations where repository_id = $1 and head_sha = $2",
      stored.repository_id, stored.head_sha,
    );
    pending = head !== null && head.invalidated_generation < stored.shared_generation;
  }
  return { headSha: stored?.head_sha ?? null, sharedGeneration: stored?.shared_generation ?? null, pullNumber: stored?.pull_number ?? null, invalidationPending: pending };
}

/** A fast path found the pull request on another (live) head: that head's generations advance and it is queued. */
export function* recordLiveHead(input: RepositoryRef & { readonly pullNumber: number; readonly headSha: string; readonly now: number }): Op<number> {
  const [advanced] = yield* batch(advanceHeadAndQueue(input, input.headSha, input.pullNumber, input.now), { last: true });
  return (advanced as { shared_generation: number }).shared_generation;
}

/**
 * The fast path reset (or rightly skipped) the managed check for `generation`: I := max(I, generation). When that catches I
 * up with S, the pending exact-head invalidation row has nothing left to do and goes (a leased one is the worker's). With
 * `releaseEvaluationOf` the fast path ends here: that pull request's held evaluation is released by the same statement, one
 * write per delivery fewer than releaseFastPathWork after it. One batch; `last` when it is the whole operation (it then
 * commits with it).
 */
export function* markHeadInvalidated(input: { readonly repositoryId: number; readonly headSha: string; readonly generation: number; readonly now: number; readonly releaseEvaluationOf?: number }, options: { readonly last?: boolean } = {}): Op<boolean> {
  let head: { shared_generation: number; invalidated_generation: number } | null;
  const release = input.releaseEvaluationOf;
  if ((yield* dialect()) === "postgresql") {
    // One statement (the fast path runs this after every accepted trigger, issue 5); the same effect as the batch below. The
    // delete depends on the head's row and the release on the delete, so the rows are locked in the store's lock order: the
    // head, its invalidation row, then the pull request's evaluation row.
    const released = release === undefined ? "" : `, released as (${releaseHeldSql("evaluation", "$1", "$4", "$5")} and (select count(*) from settled) >= 0)`;
    const [row] = yield* batch([query("one", `with head as (${ADVANCE_INVALIDATED_SQL}), settled as (${SETTLE_INVALIDATION_SQL} and exists (select 1 from head where invalidated_generation >= shared_generation) returning 1)${released}
      select shared_generation, invalidated_generation from head`, input.repositoryId, input.headSha, input.generation, input.now, ...(release === undefined ? [] : [release]))], options);
    head = row as typeof head;
  } else {
    const [row] = yield* batch([advanceInvalidatedGeneration(input), settleHeadInvalidation(input), ...(release === undefined ? [] : [releaseEvaluation(input.repositoryId, release, input.now)])], options);
    head = row as typeof head;
  }
  return head !== null && head.invalidated_generation >= head.shared_generation;
}

/**
 * A held work row becomes claimable now (a row due earlier keeps its run time): a pull request's evaluation, by its number, or
 * a head's invalidation, by its SHA. The arguments are the statement's placeholders.
 */
const releaseHeldSql = (kind: "evaluation" | "head_invalidation", repositoryId: string, now: string, key: string) =>
  `update jobs set run_at_ms = ${now} where kind = '${kind}' and state = 'pending' and repository_id = ${repositoryId}
    and ${kind === "evaluation" ? "pull_number" : "head_sha"} = ${key} and run_at_ms > ${now}`;

function releaseEvaluation(repositoryId: number, pullNumber: number, now: number) {
  return query("run", releaseHeldSql("evaluation", "$1", "$2", "$3"), repositoryId, now, pullNumber);
}

/** The work one delivery's fast path holds: its head's invalidation, and its pull request's evaluation (none for a rerequest). */
export type HeldWork = { readonly repositoryId: number; readonly headSha: string; readonly pullNumber: number | null };

/**
 * The fast path of a delivery accepted with `heldUntil` ended without settling its head (it failed, ran out of time, or leaves
 * the head to the invalidation job: a closed pull request, a rerequest; markHeadInvalidated releases the evaluation of one
 * that settled): the head's pending invalidation and the pull request's pending evaluation become claimable now. Rows due
 * earlier keep their run time.
 */
export function* releaseFastPathWork(input: HeldWork & { readonly now: number }): Op<void> {
  yield* releaseHeldWork([input], input.now);
}

/**
 * releaseFastPathWork for the fast paths of several deliveries at once (ingress gathers the releases of fast paths that end
 * together: release-batcher.ts). On PostgreSQL one statement sent alone, whatever the count: no transaction to reserve a
 * connection for, no BEGIN or COMMIT (issue 26 item 8: every delivery whose fast path fails runs this). Rows are locked in
 * the store's lock order: every invalidation row by head, then every evaluation row by pull request number.
 */
export function* releaseHeldWork(releases: readonly HeldWork[], now: number): Op<void> {
  const heads = [...new Map(releases.map((r) => [`${r.repositoryId}:${r.headSha}`, { repository_id: r.repositoryId, head_sha: r.headSha }])).values()]
    .sort((a, b) => a.repository_id - b.repository_id || (a.head_sha < b.head_sha ? -1 : a.head_sha > b.head_sha ? 1 : 0));
  const pulls = [...new Map(releases.filter((r) => r.pullNumber !== null).map((r) => [`${r.repositoryId}:${r.pullNumber}`, { repository_id: r.repositoryId, pull_number: r.pullNumber! }])).values()]
    .sort((a, b) => a.repository_id - b.repository_id || a.pull_number - b.pull_number);
  if (heads.length === 0) return;
  if ((yield* dialect()) === "postgresql") {
    if (releases.length === 1) {
      // One delivery's: the evaluation's update waits for the invalidation's (the store's lock order).
      const [one] = releases;
      yield* batch([one!.pullNumber === null
        ? query("run", releaseHeldSql("head_invalidation", "$1", "$2", "$3"), one!.repositoryId, now, one!.headSha)
        : query("run", `with invalidation as (${releaseHeldSql("head_invalidation", "$1", "$2", "$3")} returning 1)
            ${releaseHeldSql("evaluation", "$1", "$2", "$4")} and (select count(*) from invalidation) >= 0`, one!.repositoryId, now, one!.headSha, one!.pullNumber)], { last: true });
      return;
    }
    // Several: each kind's rows locked in key order (ORDER BY under FOR UPDATE locks them as sorted), the evaluations after
    // every invalidation.
    yield* batch([query("run", `with heads as (
        select j.id from jobs j join jsonb_to_recordset($2::text::jsonb) as r(repository_id bigint, head_sha text) on j.repository_id = r.repository_id and j.head_sha = r.head_sha
        where j.kind = 'head_invalidation' and j.state = 'pending' and j.run_at_ms > $1::bigint
        order by j.repository_id, j.head_sha for update of j
      ), invalidation as (
        update jobs set run_at_ms = $1::bigint where id in (select id from heads) returning 1
      ), pulls as (
        select j.id from jobs j join jsonb_to_recordset($3::text::jsonb) as r(repository_id bigint, pull_number integer) on j.repository_id = r.repository_id and j.pull_number = r.pull_number
        where j.kind = 'evaluation' and j.state = 'pending' and j.run_at_ms > $1::bigint and (select count(*) from invalidation) >= 0
        order by j.repository_id, j.pull_number for update of j
      )
      update jobs set run_at_ms = $1::bigint where id in (select id from pulls)`, now, JSON.stringify(heads), JSON.stringify(pulls))], { last: true });
    return;
  }
  // The store's lock order (store.ts): the heads' invalidation rows before the pull requests' evaluation rows.
  yield* batch([
    ...heads.map((head) => query("run", releaseHeldSql("head_invalidation", "$1", "$2", "$3"), head.repository_id, now, head.head_sha)),
    ...pulls.map((pull) => releaseEvaluation(pull.repository_id, pull.pull_number, now)),
  ], { last: true });
}

/**
 * Where an authority event's fan-out goes; `subjects` (encoded, authority-subjects.ts) scopes it to the pull requests whose
 * last evaluation depends on one of them (or is unknown). Absent: every open pull request there.
 */
export type AuthorityScope =
  | { readonly kind: "installation"; readonly subjects?: string }
  | { readonly kind: "repositories"; readonly repositories: readonly RepositoryRef[]; readonly subjects?: string };

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
  const subjects = input.scope.subjects ?? null;
  if (input.scope.kind === "installation") yield* queueInstallationFanout(input.installationId, epoch, input.now, subjects);
  else for (const repository of input.scope.repositories) yield* queueRepositoryFanout(repository, epoch, input.now, subjects);
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
