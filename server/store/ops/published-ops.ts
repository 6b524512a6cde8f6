import { all, batch, dialect, lone, one, type Op, query, run } from "../op.ts";
import { type ElectionLease, renewElectionLease } from "./reconcile-ops.ts";

/**
 * What the service last published (migration 0004), so that neither the reconciler nor the check writer repeats work that
 * changes nothing (issue 18). Both tables are memory, never a fence: a missing or cleared row costs only the forge requests it
 * would have saved, so every reader treats "no row" as "unknown" and does the work.
 *
 * pull_evaluations: per pull request, what its last evaluation that reached a decision saw (head, base commit, `updated_at`).
 * head_checks: per head, our managed check run's ID and a digest of the completed result last written with certainty. The
 * digest protocol keeps it from ever claiming something the check does not show:
 *   - a completing write first replaces the digest with a pending token of its own (beginCheckWrite), writes, and settles the
 *     digest only if its token is still there (settleCheckDigest);
 *   - every reset to in_progress clears the digest after its write (clearCheckDigest), so a completing write that raced it
 *     cannot settle, and a settled digest is gone after the reset;
 *   - the digest also names the head's shared generation S it was written at; a fast-path reset always follows an advance of
 *     S, so a digest of an older S is never trusted either.
 * Both tables come after `jobs` in the store's lock order (store.ts, 6 and 7). The operations on one head's check are one
 * statement sent alone (op.ts `lone`), because the worker and the fast path run them while they hold the publication
 * guards; the head invalidation and the repository-wide fan-out clear digests after their work rows, in the same transaction
 * (clearCheckDigest composes; alone, it is sent through `lone`).
 */
export type SeenEvaluation = {
  readonly pull_number: number;
  readonly head_sha: string;
  readonly base_sha: string;
  readonly pull_updated_at_ms: number | null;
  readonly evaluated_at_ms: number;
  /** Whom its result depends on (server/store/authority-subjects.ts); null: unknown. */
  readonly authority_subjects: string | null;
};

/**
 * Records what an evaluation that reached a decision saw. An older evaluation generation never overwrites a newer one (two
 * evaluations of one pull request may finish in either order).
 */
export function* recordEvaluation(input: {
  readonly installationId: number;
  readonly repositoryId: number;
  readonly pullNumber: number;
  readonly headSha: string;
  readonly baseSha: string;
  readonly updatedAtMs: number | null;
  readonly evaluationGeneration: number;
  /** Encoded (authority-subjects.ts); null: unknown, so every authority event affects it. */
  readonly authoritySubjects: string | null;
  readonly now: number;
}): Op<void> {
  yield* run(
    `insert into pull_evaluations (installation_id, repository_id, pull_number, head_sha, base_sha, pull_updated_at_ms, evaluation_generation, evaluated_at_ms, authority_subjects)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     on conflict (repository_id, pull_number) do update set installation_id = excluded.installation_id, head_sha = excluded.head_sha,
       base_sha = excluded.base_sha, pull_updated_at_ms = excluded.pull_updated_at_ms, evaluation_generation = excluded.evaluation_generation,
       evaluated_at_ms = excluded.evaluated_at_ms, authority_subjects = excluded.authority_subjects
     where pull_evaluations.evaluation_generation <= excluded.evaluation_generation`,
    input.installationId, input.repositoryId, input.pullNumber, input.headSha, input.baseSha, input.updatedAtMs, input.evaluationGeneration, input.now, input.authoritySubjects,
  );
}

/**
 * The recorded evaluations of a repository's pull requests (a read: no row lock): every one, or only those of `numbers` (at
 * most READ_EVALUATIONS_MAX of them; the reconciler reads one listing page's at a time, DESIGN 3.9).
 */
export function* readEvaluations(repositoryId: number, numbers?: readonly number[]): Op<SeenEvaluation[]> {
  const columns = "select pull_number, head_sha, base_sha, pull_updated_at_ms, evaluated_at_ms, authority_subjects from pull_evaluations where repository_id = $1";
  if (numbers === undefined) return yield* all<SeenEvaluation>(columns, repositoryId);
  if (numbers.length === 0) return [];
  if (numbers.length > READ_EVALUATIONS_MAX) throw new RangeError(`readEvaluations: more than ${READ_EVALUATIONS_MAX} pull requests`);
  return yield* all<SeenEvaluation>(`${columns} and pull_number in (${numbers.map((_, i) => `$${i + 2}`).join(", ")})`, repositoryId, ...numbers);
}
/** Pull requests one readEvaluations may name (one statement's parameters stay few on both backends). */
export const READ_EVALUATIONS_MAX = 500;

/**
 * Where the next page of readPossibleSuccesses starts: the recorded evaluations after a pull request number, then the
 * remembered checks after a head (keyset order: each page is one indexed statement, however many rows the repository has).
 */
export type SuccessCursor = { readonly part: "evaluations"; readonly after: number } | { readonly part: "checks"; readonly after: string };

export type PossibleSuccesses = {
  /** Pull requests with a recorded evaluation, with the head and the subjects it recorded (null: unknown). */
  readonly pulls: ReadonlyArray<{ readonly number: number; readonly headSha: string; readonly authoritySubjects: string | null }>;
  /** Heads with a remembered check that no recorded evaluation of the repository names (their pull request is not known). */
  readonly heads: readonly string[];
  /** The next page, or null after the last. */
  readonly next: SuccessCursor | null;
};

/** Rows per page of readPossibleSuccesses (one fan-out transaction each). */
export const POSSIBLE_SUCCESSES_PAGE = 500;

/**
 * One page of what the store knows could hold a `success` in a repository, for when the forge's list of its open pull
 * requests cannot be had (over the bound, DESIGN 3.9): a success is published only by an evaluation, which records what it
 * saw afterwards (pull_evaluations), on a check remembered before the write (head_checks). `headSha`: only the pull
 * requests whose recorded evaluation is of that head, and no remembered checks (the head invalidation resets that check
 * itself). Pages come from a null cursor on, one statement each (a read: no row lock).
 */
export function* readPossibleSuccesses(repositoryId: number, cursor: SuccessCursor | null, options: { readonly headSha?: string; readonly limit?: number } = {}): Op<PossibleSuccesses> {
  const limit = options.limit ?? POSSIBLE_SUCCESSES_PAGE;
  const at = cursor ?? { part: "evaluations", after: 0 };
  if (at.part === "evaluations") {
    const rows = options.headSha === undefined
      ? yield* all<{ pull_number: number; head_sha: string; authority_subjects: string | null }>(
        "select pull_number, head_sha, authority_subjects from pull_evaluations where repository_id = $1 and pull_number > $2 order by pull_number limit $3",
        repositoryId, at.after, limit,
      )
      : yield* all<{ pull_number: number; head_sha: string; authority_subjects: string | null }>(
        "select pull_number, head_sha, authority_subjects from pull_evaluations where repository_id = $1 and head_sha = $4 and pull_number > $2 order by pull_number limit $3",
        repositoryId, at.after, limit, options.headSha,
      );
    const pulls = rows.map((row) => ({ number: Number(row.pull_number), headSha: row.head_sha, authoritySubjects: row.authority_subjects }));
    const next: SuccessCursor | null = rows.length === limit ? { part: "evaluations", after: pulls.at(-1)!.number } : options.headSha === undefined ? { part: "checks", after: "" } : null;
    return { pulls, heads: [], next };
  }
  const rows = yield* all<{ head_sha: string }>(
    `select c.head_sha from head_checks c where c.repository_id = $1 and c.head_sha > $2
       and not exists (select 1 from pull_evaluations p where p.repository_id = c.repository_id and p.head_sha = c.head_sha)
     order by c.head_sha limit $3`,
    repositoryId, at.after, limit,
  );
  const heads = rows.map((row) => row.head_sha);
  return { pulls: [], heads, next: rows.length === limit ? { part: "checks", after: heads.at(-1)! } : null };
}

export type HeadCheck = { readonly check_run_id: number; readonly digest: string | null; readonly digest_generation: number | null };

export function* readHeadCheck(repositoryId: number, headSha: string): Op<HeadCheck | null> {
  return yield* lone(one<HeadCheck>("select check_run_id, digest, digest_generation from head_checks where repository_id = $1 and head_sha = $2", repositoryId, headSha));
}

/**
 * The head's check memory and whether a managed check was ever created for it (migration 0005): `untried` is true when the
 * head's row says no creation was ever tried (the head has no managed check), false when one was, null when the head has no
 * row (nothing known: look the check up).
 */
export type HeadCheckState = { readonly check: HeadCheck | null; readonly untried: boolean | null };

export function* readHeadCheckState(repositoryId: number, headSha: string): Op<HeadCheckState> {
  const row = yield* lone(one<{ check_run_id: number | null; digest: string | null; digest_generation: number | null; check_untried: number | null }>(
    `select c.check_run_id, c.digest, c.digest_generation, g.check_untried from (select 1 as here) one
       left join head_checks c on c.repository_id = $1 and c.head_sha = $2
       left join head_generations g on g.repository_id = $1 and g.head_sha = $2`,
    repositoryId, headSha,
  ));
  const check = row === null || row.check_run_id === null ? null : { check_run_id: row.check_run_id, digest: row.digest, digest_generation: row.digest_generation };
  return { check, untried: row === null || row.check_untried === null ? null : Number(row.check_untried) === 1 };
}

/**
 * Under the head publication guard, before a managed check is created: from now on the head counts as one a creation was
 * tried for, so that a creation which does not finish (its write may have landed, its record not) is looked up by listing
 * next time, never created twice. A head without a row gets one with S = I = 0, which every reader takes as no row.
 */
export function* recordCheckCreation(input: { readonly installationId: number; readonly repositoryId: number; readonly headSha: string; readonly now: number }): Op<void> {
  yield* lone(run(
    `insert into head_generations (installation_id, repository_id, head_sha, shared_generation, invalidated_generation, updated_at_ms, check_untried)
     values ($1, $2, $3, 0, 0, $4, 0)
     on conflict (repository_id, head_sha) do update set check_untried = 0 where head_generations.check_untried = 1`,
    input.installationId, input.repositoryId, input.headSha, input.now,
  ));
}

/**
 * Remembers the check run found or created for the head (under the head publication guard), with `digest` (null, or the
 * pending token of the write about to be made). Another ID than the remembered one drops the digest: it was about that run.
 */
export function* rememberHeadCheck(input: {
  readonly installationId: number;
  readonly repositoryId: number;
  readonly headSha: string;
  readonly checkRunId: number;
  readonly digest?: string | null;
  readonly now: number;
}): Op<void> {
  yield* lone(run(REMEMBER_HEAD_CHECK_SQL, ...rememberHeadCheckParams(input)));
}

/** rememberHeadCheck's statement ($1 installation, $2 repository, $3 head, $4 run ID, $5 digest, $6 now); ops/record-ops.ts folds a record into it. */
export const REMEMBER_HEAD_CHECK_SQL = `insert into head_checks (installation_id, repository_id, head_sha, check_run_id, digest, digest_generation, updated_at_ms)
     values ($1, $2, $3, $4, $5, null, $6)
     on conflict (repository_id, head_sha) do update set check_run_id = excluded.check_run_id, updated_at_ms = excluded.updated_at_ms,
       digest = case when excluded.digest is not null or head_checks.check_run_id <> excluded.check_run_id then excluded.digest else head_checks.digest end,
       digest_generation = case when excluded.digest is not null or head_checks.check_run_id <> excluded.check_run_id then null else head_checks.digest_generation end`;

export function rememberHeadCheckParams(input: { readonly installationId: number; readonly repositoryId: number; readonly headSha: string; readonly checkRunId: number; readonly digest?: string | null; readonly now: number }): unknown[] {
  return [input.installationId, input.repositoryId, input.headSha, input.checkRunId, input.digest ?? null, input.now];
}

/** The forge says the remembered run is gone (404/410): forget it, unless another ID was remembered meanwhile. */
export function* forgetHeadCheck(repositoryId: number, headSha: string, checkRunId: number): Op<void> {
  yield* lone(run("delete from head_checks where repository_id = $1 and head_sha = $2 and check_run_id = $3", repositoryId, headSha, checkRunId));
}

/** Before a completing write: the digest becomes this write's pending token (nothing is claimed until it settles). */
export function* beginCheckWrite(repositoryId: number, headSha: string, token: string, now: number): Op<void> {
  yield* lone(run(BEGIN_CHECK_WRITE_SQL, repositoryId, headSha, token, now));
}

/** beginCheckWrite's statement ($1 repository, $2 head, $3 token, $4 now). */
export const BEGIN_CHECK_WRITE_SQL = "update head_checks set digest = $3, digest_generation = null, updated_at_ms = $4 where repository_id = $1 and head_sha = $2";

/** After a completing write that is certain and still publishable: its digest, if no reset cleared the token meanwhile. */
export function* settleCheckDigest(input: { readonly repositoryId: number; readonly headSha: string; readonly token: string; readonly digest: string; readonly generation: number; readonly now: number }): Op<boolean> {
  const changed = yield* lone(run(SETTLE_CHECK_DIGEST_SQL, input.repositoryId, input.headSha, input.token, input.digest, input.generation, input.now));
  return changed > 0;
}

/** settleCheckDigest's statement ($1 repository, $2 head, $3 token, $4 digest, $5 generation, $6 now). */
export const SETTLE_CHECK_DIGEST_SQL = "update head_checks set digest = $4, digest_generation = $5, updated_at_ms = $6 where repository_id = $1 and head_sha = $2 and digest = $3";

/** Before a guarded reset, or after an unguarded one: the check shows something else now, or may. */
export function* clearCheckDigest(repositoryId: number, headSha: string, now: number): Op<void> {
  yield* run(CLEAR_CHECK_DIGEST_SQL, repositoryId, headSha, now);
}
const CLEAR_CHECK_DIGEST_SQL = "update head_checks set digest = null, digest_generation = null, updated_at_ms = $3 where repository_id = $1 and head_sha = $2 and digest is not null";

/** A repository-wide fan-out is about to reset every managed check of the repository: no digest of it holds any more. */
export function* clearRepositoryDigests(repositoryId: number, now: number): Op<void> {
  yield* run("update head_checks set digest = null, digest_generation = null, updated_at_ms = $2 where repository_id = $1 and digest is not null", repositoryId, now);
}

/** A scoped fan-out is about to reset the checks of these heads only (sorted: the table's order is by head). */
export function* clearHeadDigests(repositoryId: number, heads: readonly string[], now: number): Op<void> {
  for (const head of [...new Set(heads)].sort()) yield* clearCheckDigest(repositoryId, head, now);
}

/** Rows removed per pruning transaction (as DELIVERY_PRUNE_BATCH: one statement well inside the ordinary bound). */
export const PUBLISHED_PRUNE_BATCH = 1_000;

/**
 * Removes, fenced by the reconciler lease, up to `batch` evaluation records older than `evaluationCutoffMs` (a pull request
 * still open is evaluated again well before: the full sweep), then up to `batch` check records untouched since
 * `checkCutoffMs` whose head is no recorded evaluation's head. Returns the number removed, or null when the lease was lost.
 */
export function* prunePublishedBatch(lease: ElectionLease, cutoffs: { readonly evaluationCutoffMs: number; readonly checkCutoffMs: number }, now: number, batch: number = PUBLISHED_PRUNE_BATCH): Op<number | null> {
  if (!(yield* renewElectionLease(lease, now))) return null;
  const evaluations = yield* run(
    `delete from pull_evaluations where (repository_id, pull_number) in (
       select repository_id, pull_number from pull_evaluations where evaluated_at_ms < $1 order by evaluated_at_ms limit $2)`,
    cutoffs.evaluationCutoffMs, batch,
  );
  const checks = yield* run(
    `delete from head_checks where (repository_id, head_sha) in (
       select c.repository_id, c.head_sha from head_checks c where c.updated_at_ms < $1
         and not exists (select 1 from pull_evaluations p where p.repository_id = c.repository_id and p.head_sha = c.head_sha)
       order by c.updated_at_ms limit $2)`,
    cutoffs.checkCutoffMs, batch,
  );
  return checks + evaluations;
}

/**
 * Under the head publication guard, before the worker sets the check to in_progress (a shared head): the head's last reset is
 * now (migration 0010: a success published before it no longer approves a merge) and its digest goes, in one statement
 * sent alone on PostgreSQL (the head's row first: the store's lock order), one batch on SQLite. Only a head with a
 * generations row is marked: every head an evaluation reaches has one.
 */
export function* markGuardedReset(repositoryId: number, headSha: string, now: number): Op<void> {
  if ((yield* dialect()) === "sqlite") {
    yield* batch([query("run", MARK_HEAD_RESET_SQL, repositoryId, headSha, now), query("run", CLEAR_CHECK_DIGEST_SQL, repositoryId, headSha, now)], { last: true });
    return;
  }
  yield* lone(run(`with reset as (${MARK_HEAD_RESET_SQL} returning 1) ${CLEAR_CHECK_DIGEST_SQL} and (select count(*) from reset) >= 0`, repositoryId, headSha, now));
}

/** The head's last reset of its managed check is $3 ($1 repository, $2 head; migration 0010). */
export const MARK_HEAD_RESET_SQL = "update head_generations set reset_at_ms = $3 where repository_id = $1 and head_sha = $2";

/**
 * A fan-out is about to reset these heads' checks (without the guards): each head's last reset is now, written before the
 * resets (a reset that then fails still withdrew the success: the service no longer vouches for it). Head by head in head
 * order (the table's lock order), as clearHeadDigests.
 */
export function* markHeadsReset(repositoryId: number, heads: readonly string[], now: number): Op<void> {
  for (const head of [...new Set(heads)].sort()) yield* run(MARK_HEAD_RESET_SQL, repositoryId, head, now);
}
