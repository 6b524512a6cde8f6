import { SUBJECTS_TEXT_LIMIT } from "../authority-subjects.ts";
import { one, type Op, type Query, query, run } from "../op.ts";

/**
 * Building blocks shared by the acceptance operations: delivery retention, generation advances and work-row upserts.
 * Every live unit of work has at most one row (partial unique indexes in 0001_init); new work merges into it, moves its
 * run time forward to now when it is pending, and bumps `merges` so a worker holding the row re-runs it.
 */
export type RepositoryRef = { readonly installationId: number; readonly repositoryId: number; readonly owner: string; readonly name: string };

export type DeliveryRow = {
  delivery_id: string;
  event: string;
  action: string | null;
  installation_id: number | null;
  repository_id: number | null;
  pull_number: number | null;
  head_sha: string | null;
  shared_generation: number | null;
};

/** Retains the delivery ID; returns false when it was already retained (a duplicate). */
export function* retainDelivery(input: { deliveryId: string; event: string; action: string | null; installationId: number; repositoryId: number | null; pullNumber: number | null; headSha: string | null; now: number }): Op<boolean> {
  const inserted = yield* one(
    `insert into webhook_deliveries (delivery_id, event, action, installation_id, repository_id, pull_number, head_sha, received_at_ms)
     values ($1, $2, $3, $4, $5, $6, $7, $8) on conflict (delivery_id) do nothing returning delivery_id`,
    input.deliveryId, input.event, input.action, input.installationId, input.repositoryId, input.pullNumber, input.headSha, input.now,
  );
  return inserted !== null;
}

export function* readDelivery(deliveryId: string): Op<DeliveryRow | null> {
  return yield* one<DeliveryRow>(
    "select delivery_id, event, action, installation_id, repository_id, pull_number, head_sha, shared_generation from webhook_deliveries where delivery_id = $1",
    deliveryId,
  );
}

/**
 * S(head) := S + 1; the statement's row carries the new shared generation. A head this makes the row of has never had a
 * check created for it (migration 0005: check_untried); an existing row keeps what it says.
 */
function advanceSharedGeneration(repo: RepositoryRef, headSha: string, now: number): Query {
  return query(
    "one",
    `insert into head_generations (installation_id, repository_id, head_sha, shared_generation, invalidated_generation, updated_at_ms, check_untried)
     values ($1, $2, $3, 1, 0, $4, 1)
     on conflict (repository_id, head_sha) do update set shared_generation = head_generations.shared_generation + 1, updated_at_ms = excluded.updated_at_ms
     returning shared_generation`,
    repo.installationId, repo.repositoryId, headSha, now,
  );
}

/** E(pull) := E + 1; the statement's row carries the new evaluation generation. */
function advanceEvaluationGeneration(repo: RepositoryRef, pullNumber: number, now: number): Query {
  return query(
    "one",
    `insert into pull_generations (installation_id, repository_id, pull_number, evaluation_generation, updated_at_ms)
     values ($1, $2, $3, 1, $4)
     on conflict (repository_id, pull_number) do update set evaluation_generation = pull_generations.evaluation_generation + 1, updated_at_ms = excluded.updated_at_ms
     returning evaluation_generation`,
    repo.installationId, repo.repositoryId, pullNumber, now,
  );
}

/** A(installation), 0 before the first authority event (which creates the row). A read: no row lock, no write. */
export function* currentAuthorityEpoch(installationId: number, _now: number): Op<number> {
  const row = yield* one<{ authority_epoch: number }>("select authority_epoch from installation_epochs where installation_id = $1", installationId);
  return row?.authority_epoch ?? 0;
}

/** A(installation) := A + 1. Returns the new authority epoch. */
export function* advanceAuthorityEpoch(installationId: number, now: number): Op<number> {
  const row = yield* one<{ authority_epoch: number }>(
    `insert into installation_epochs (installation_id, authority_epoch, updated_at_ms) values ($1, 1, $2)
     on conflict (installation_id) do update set authority_epoch = installation_epochs.authority_epoch + 1, updated_at_ms = excluded.updated_at_ms
     returning authority_epoch`,
    installationId, now,
  );
  return row!.authority_epoch;
}

/** How new work merges into a live row (the ON CONFLICT update shared by every work upsert); webhook-driven work wins. */
export const MERGE_INTO_LIVE_ROW = `merges = jobs.merges + 1, updated_at_ms = excluded.updated_at_ms,
  run_at_ms = case when jobs.state = 'pending' and excluded.run_at_ms < jobs.run_at_ms then excluded.run_at_ms else jobs.run_at_ms end,
  background = case when excluded.background < jobs.background then excluded.background else jobs.background end`;

/** The exact-head invalidation row at the head's current shared generation (read in the statement: it can be batched). */
function queueHeadInvalidation(repo: RepositoryRef, headSha: string, now: number, runAt: number): Query {
  return query(
    "run",
    `insert into jobs (kind, priority, installation_id, repository_id, repository_owner, repository_name, head_sha, shared_generation, run_at_ms, created_at_ms, updated_at_ms)
     values ('head_invalidation', 0, $1, $2, $3, $4, $5, (select shared_generation from head_generations where repository_id = $2 and head_sha = $5), $7, $6, $6)
     on conflict (repository_id, head_sha) where kind = 'head_invalidation' and state <> 'dead'
     do update set shared_generation = excluded.shared_generation, ${MERGE_INTO_LIVE_ROW}`,
    repo.installationId, repo.repositoryId, repo.owner, repo.name, headSha, now, runAt,
  );
}

/**
 * The exact-head invalidation row of a head a pull request left, at its current S (0 without a row), claimable now. A live
 * row of the head is only marked to run again (merges): its run time (held while a fast path on that head is in flight)
 * and generation stay.
 */
export const MERGE_LEFT_HEAD = "merges = jobs.merges + 1, updated_at_ms = excluded.updated_at_ms";
function queueLeftHeadInvalidation(repo: RepositoryRef, headSha: string, now: number): Query {
  return query(
    "run",
    `insert into jobs (kind, priority, installation_id, repository_id, repository_owner, repository_name, head_sha, shared_generation, run_at_ms, created_at_ms, updated_at_ms)
     values ('head_invalidation', 0, $1, $2, $3, $4, $5, coalesce((select shared_generation from head_generations where repository_id = $2 and head_sha = $5), 0), $6, $6, $6)
     on conflict (repository_id, head_sha) where kind = 'head_invalidation' and state <> 'dead'
     do update set ${MERGE_LEFT_HEAD}`,
    repo.installationId, repo.repositoryId, repo.owner, repo.name, headSha, now,
  );
}

/**
 * The evaluation row at the pull request's current evaluation generation and the installation's current authority epoch;
 * `background` when a reconciler scan or a fan-out asked for it (0003_background_work).
 */
function queueEvaluation(repo: RepositoryRef, pullNumber: number, headSha: string, now: number, background: boolean, runAt: number = now): Query {
  return query(
    "run",
    `insert into jobs (kind, priority, installation_id, repository_id, repository_owner, repository_name, pull_number, head_sha, evaluation_generation, authority_epoch, run_at_ms, created_at_ms, updated_at_ms, background)
     values ('evaluation', 4, $1, $2, $3, $4, $5, $6,
       (select evaluation_generation from pull_generations where repository_id = $2 and pull_number = $5),
       coalesce((select authority_epoch from installation_epochs where installation_id = $1), 0), $9, $7, $7, $8)
     on conflict (repository_id, pull_number) where kind = 'evaluation' and state <> 'dead'
     do update set head_sha = excluded.head_sha, evaluation_generation = excluded.evaluation_generation, authority_epoch = excluded.authority_epoch,
       repository_owner = excluded.repository_owner, repository_name = excluded.repository_name, ${MERGE_INTO_LIVE_ROW}`,
    repo.installationId, repo.repositoryId, repo.owner, repo.name, pullNumber, headSha, now, background ? 1 : 0, runAt,
  );
}

/**
 * Generation advances and their work rows, as one batch in the store's lock order (store.ts): every head's S (sorted by
 * head), then every pull request's E (sorted by number), then the index writes, then the exact-head invalidation rows,
 * then the evaluation rows.
 * Each work row reads its generation in SQL, so the batch needs no result before it is sent. When heads are given, the
 * batch's first row carries the first head's new shared generation.
 */
export function advanceAndQueue(repo: RepositoryRef, work: AdvanceWork, now: number): Query[] {
  const heads = [...new Set(work.heads ?? [])].sort();
  const pulls = [...new Map((work.pulls ?? []).map((pull) => [pull.number, pull])).values()].sort((a, b) => a.number - b.number);
  const invalidated = work.invalidated ? { repositoryId: repo.repositoryId, ...work.invalidated, now } : null;
  const invalidations = [...heads.map((head) => ({ head, left: false })), ...[...new Set(work.leftHeads ?? [])].filter((head) => !heads.includes(head)).map((head) => ({ head, left: true }))]
    .sort((a, b) => (a.head < b.head ? -1 : a.head > b.head ? 1 : 0));
  return [
    ...(invalidated ? [advanceInvalidatedGeneration(invalidated)] : []),
    ...heads.map((head) => advanceSharedGeneration(repo, head, now)),
    ...pulls.map((pull) => advanceEvaluationGeneration(repo, pull.number, now)),
    ...(work.index ?? []),
    ...(invalidated ? [settleHeadInvalidation(invalidated)] : []),
    ...invalidations.map(({ head, left }) => left ? queueLeftHeadInvalidation(repo, head, now) : queueHeadInvalidation(repo, head, now, work.heldUntil ?? now)),
    ...pulls.map((pull) => queueEvaluation(repo, pull.number, pull.headSha, now, work.background === true, work.heldUntil ?? now)),
  ];
}

export type AdvanceWork = {
  /** Heads whose shared generation advances, each with its exact-head invalidation. */
  readonly heads?: readonly string[];
  /** Pull requests whose evaluation generation advances, each with its evaluation. */
  readonly pulls?: readonly { readonly number: number; readonly headSha: string }[];
  /** A head whose invalidation reached `generation` (I := max(I, generation)); its pending invalidation row goes when I = S. */
  readonly invalidated?: { readonly headSha: string; readonly generation: number };
  /**
   * When the new work rows become claimable: later than now only while a fast path is in flight (its deadline), which
   * releases them when it ends (markHeadInvalidated, or releaseFastPathWork); now when absent. A row already pending keeps an
   * earlier run time.
   */
  readonly heldUntil?: number;
  /** Only background work (a reconciler scan, a fan-out) asks for these evaluations; webhook-driven work when absent. */
  readonly background?: boolean;
  /**
   * Heads a pull request left (a `synchronize`'s `before`): each gets its exact-head invalidation row at its current S (0
   * without a row), claimable now, without advancing S: only who is on the head changed (DESIGN 3.8).
   */
  readonly leftHeads?: readonly string[];
  /** Writes to the open-pull-request index (open-pull-index.ts), after the generations and before the work rows (store.ts). */
  readonly index?: readonly Query[];
};

type Invalidated = { readonly repositoryId: number; readonly headSha: string; readonly generation: number; readonly now: number };

/**
 * I(head) := max(I, generation) when generation <= S; the row (S, I) when it changed. I advances only once the head's check
 * was reset for that generation (or rightly was not: none, or in progress already), so an advance is also the head's last
 * reset (migration 0010), at $4.
 */
export const ADVANCE_INVALIDATED_SQL = `update head_generations set invalidated_generation = case when invalidated_generation < $3 then $3 else invalidated_generation end, updated_at_ms = $4,
      reset_at_ms = case when invalidated_generation < $3 then $4 else reset_at_ms end
    where repository_id = $1 and head_sha = $2 and $3 <= shared_generation
    returning shared_generation, invalidated_generation`;
/** The pending exact-head invalidation row of a head (a leased one is a worker's); callers add the condition that I = S. */
export const SETTLE_INVALIDATION_SQL = "delete from jobs where kind = 'head_invalidation' and state = 'pending' and repository_id = $1 and head_sha = $2";

export function advanceInvalidatedGeneration(input: Invalidated): Query {
  return query("one", ADVANCE_INVALIDATED_SQL, input.repositoryId, input.headSha, input.generation, input.now);
}

/** Removes the head's pending invalidation row when its invalidated generation caught up with its shared generation. */
export function settleHeadInvalidation(input: Invalidated): Query {
  return query("run", `${SETTLE_INVALIDATION_SQL} and exists (select 1 from head_generations where repository_id = $1 and head_sha = $2 and $3 <= shared_generation and invalidated_generation >= shared_generation)`, input.repositoryId, input.headSha, input.generation);
}

/**
 * How an authority fan-out row's subjects merge: the union (stored lists are newline-ended, so they concatenate), unless
 * either side is wide (null) or the union would pass SUBJECTS_TEXT_LIMIT: then the row is wide, which covers both.
 */
const MERGE_SUBJECTS = `authority_subjects = case when jobs.authority_subjects is null or excluded.authority_subjects is null
    or length(jobs.authority_subjects) + length(excluded.authority_subjects) > ${SUBJECTS_TEXT_LIMIT} then null
    else jobs.authority_subjects || excluded.authority_subjects end`;

/** `subjects`: the encoded subjects the event is about (the fan-out re-evaluates only what they can affect); null: wide. */
export function* queueRepositoryFanout(repo: RepositoryRef, authorityEpoch: number, now: number, subjects: string | null = null): Op<void> {
  yield* run(
    `insert into jobs (kind, priority, installation_id, repository_id, repository_owner, repository_name, authority_epoch, run_at_ms, created_at_ms, updated_at_ms, authority_subjects)
     values ('repository_fanout', 2, $1, $2, $3, $4, $5, $6, $6, $6, $7)
     on conflict (repository_id) where kind = 'repository_fanout' and state <> 'dead'
     do update set authority_epoch = excluded.authority_epoch, repository_owner = excluded.repository_owner, repository_name = excluded.repository_name,
       ${MERGE_SUBJECTS}, ${MERGE_INTO_LIVE_ROW}`,
    repo.installationId, repo.repositoryId, repo.owner, repo.name, authorityEpoch, now, subjects,
  );
  // Repository-wide work covers every base of the repository: older pending base-specific rows go (not for scoped work).
  if (subjects === null) yield* run("delete from jobs where kind = 'base_ref' and state = 'pending' and repository_id = $1", repo.repositoryId);
}

export function* queueInstallationFanout(installationId: number, authorityEpoch: number, now: number, subjects: string | null = null): Op<void> {
  yield* run(
    `insert into jobs (kind, priority, installation_id, authority_epoch, run_at_ms, created_at_ms, updated_at_ms, authority_subjects)
     values ('installation_fanout', 1, $1, $2, $3, $3, $3, $4)
     on conflict (installation_id) where kind = 'installation_fanout' and state <> 'dead'
     do update set authority_epoch = excluded.authority_epoch, ${MERGE_SUBJECTS}, ${MERGE_INTO_LIVE_ROW}`,
    installationId, authorityEpoch, now, subjects,
  );
}

/**
 * Advances the head's shared generation and the pull request's evaluation generation and queues the exact-head invalidation
 * and the evaluation (spec "Generations" 1 and 2), as one batch; its first row carries the new shared generation.
 */
export function advanceHeadAndQueue(repo: RepositoryRef, headSha: string, pullNumber: number | null, now: number, heldUntil = now): Query[] {
  return advanceAndQueue(repo, { heads: [headSha], pulls: pullNumber === null ? [] : [{ number: pullNumber, headSha }], heldUntil }, now);
}
