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

/** S(head) := S + 1; the statement's row carries the new shared generation. */
function advanceSharedGeneration(repo: RepositoryRef, headSha: string, now: number): Query {
  return query(
    "one",
    `insert into head_generations (installation_id, repository_id, head_sha, shared_generation, invalidated_generation, updated_at_ms)
     values ($1, $2, $3, 1, 0, $4)
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

/** How new work merges into a live row (the ON CONFLICT update shared by every work upsert). */
export const MERGE_INTO_LIVE_ROW = `merges = jobs.merges + 1, updated_at_ms = excluded.updated_at_ms,
  run_at_ms = case when jobs.state = 'pending' and excluded.run_at_ms < jobs.run_at_ms then excluded.run_at_ms else jobs.run_at_ms end`;

/** The exact-head invalidation row at the head's current shared generation (read in the statement: it can be batched). */
function queueHeadInvalidation(repo: RepositoryRef, headSha: string, now: number): Query {
  return query(
    "run",
    `insert into jobs (kind, priority, installation_id, repository_id, repository_owner, repository_name, head_sha, shared_generation, run_at_ms, created_at_ms, updated_at_ms)
     values ('head_invalidation', 0, $1, $2, $3, $4, $5, (select shared_generation from head_generations where repository_id = $2 and head_sha = $5), $6, $6, $6)
     on conflict (repository_id, head_sha) where kind = 'head_invalidation' and state <> 'dead'
     do update set shared_generation = excluded.shared_generation, ${MERGE_INTO_LIVE_ROW}`,
    repo.installationId, repo.repositoryId, repo.owner, repo.name, headSha, now,
  );
}

/** The evaluation row at the pull request's current evaluation generation and the installation's current authority epoch. */
function queueEvaluation(repo: RepositoryRef, pullNumber: number, headSha: string, now: number): Query {
  return query(
    "run",
    `insert into jobs (kind, priority, installation_id, repository_id, repository_owner, repository_name, pull_number, head_sha, evaluation_generation, authority_epoch, run_at_ms, created_at_ms, updated_at_ms)
     values ('evaluation', 4, $1, $2, $3, $4, $5, $6,
       (select evaluation_generation from pull_generations where repository_id = $2 and pull_number = $5),
       coalesce((select authority_epoch from installation_epochs where installation_id = $1), 0), $7, $7, $7)
     on conflict (repository_id, pull_number) where kind = 'evaluation' and state <> 'dead'
     do update set head_sha = excluded.head_sha, evaluation_generation = excluded.evaluation_generation, authority_epoch = excluded.authority_epoch,
       repository_owner = excluded.repository_owner, repository_name = excluded.repository_name, ${MERGE_INTO_LIVE_ROW}`,
    repo.installationId, repo.repositoryId, repo.owner, repo.name, pullNumber, headSha, now,
  );
}

/** S(head) := S + 1 and the exact-head invalidation at the new S (spec "Generations" 1); the first row carries the new S. */
export function headAdvanceQueries(repo: RepositoryRef, headSha: string, now: number): Query[] {
  return [advanceSharedGeneration(repo, headSha, now), queueHeadInvalidation(repo, headSha, now)];
}

/** E(pull) := E + 1 and its evaluation at the new E and the current authority epoch (spec "Generations" 2). */
export function evaluationAdvanceQueries(repo: RepositoryRef, pullNumber: number, headSha: string, now: number): Query[] {
  return [advanceEvaluationGeneration(repo, pullNumber, now), queueEvaluation(repo, pullNumber, headSha, now)];
}

export function* queueRepositoryFanout(repo: RepositoryRef, authorityEpoch: number, now: number): Op<void> {
  yield* run(
    `insert into jobs (kind, priority, installation_id, repository_id, repository_owner, repository_name, authority_epoch, run_at_ms, created_at_ms, updated_at_ms)
     values ('repository_fanout', 2, $1, $2, $3, $4, $5, $6, $6, $6)
     on conflict (repository_id) where kind = 'repository_fanout' and state <> 'dead'
     do update set authority_epoch = excluded.authority_epoch, repository_owner = excluded.repository_owner, repository_name = excluded.repository_name, ${MERGE_INTO_LIVE_ROW}`,
    repo.installationId, repo.repositoryId, repo.owner, repo.name, authorityEpoch, now,
  );
  // Repository-wide work covers every base of the repository: older pending base-specific rows go.
  yield* run("delete from jobs where kind = 'base_ref' and state = 'pending' and repository_id = $1", repo.repositoryId);
}

export function* queueInstallationFanout(installationId: number, authorityEpoch: number, now: number): Op<void> {
  yield* run(
    `insert into jobs (kind, priority, installation_id, authority_epoch, run_at_ms, created_at_ms, updated_at_ms)
     values ('installation_fanout', 1, $1, $2, $3, $3, $3)
     on conflict (installation_id) where kind = 'installation_fanout' and state <> 'dead'
     do update set authority_epoch = excluded.authority_epoch, ${MERGE_INTO_LIVE_ROW}`,
    installationId, authorityEpoch, now,
  );
}

/**
 * Advances the head's shared generation and the pull request's evaluation generation and queues the exact-head invalidation
 * and the evaluation (spec "Generations" 1 and 2), as one batch; its first row carries the new shared generation.
 */
export function advanceHeadAndQueue(repo: RepositoryRef, headSha: string, pullNumber: number | null, now: number): Query[] {
  return [...headAdvanceQueries(repo, headSha, now), ...(pullNumber === null ? [] : evaluationAdvanceQueries(repo, pullNumber, headSha, now))];
}
