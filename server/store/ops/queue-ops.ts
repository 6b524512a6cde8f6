import { all, batch, lone, one, type Op, run } from "../op.ts";
import { clearCheckDigest, clearHeadDigests, clearRepositoryDigests, markHeadsReset } from "./published-ops.ts";
import { advanceAndQueue, currentAuthorityEpoch, queueRepositoryFanout, type RepositoryRef } from "./work-rows.ts";

/**
 * Queue operations of the worker (spec "Queue rows"; DESIGN 4).
 *
 * Row states: pending --claim--> leased --complete--> (deleted) | pending (work merged while leased: run again)
 *                                        --retry----> pending with run_at in the future (backoff or provider delay)
 *                                        --expiry---> claimable again by any worker (the holder crashed or stalled)
 * 'dead' rows exist only as legacy or manual rows; nothing here creates one. Claim order is global: priority (exact-head
 * invalidation, installation-wide, repository-wide, base-specific, evaluation and merge group), then webhook-driven rows before background
 * ones (0003_background_work: a large scan never queues ahead of an approval), then run_at, then id.
 *
 * A lease is held by one claim (its token, see leaseToken) until lease_expires_at_ms inclusive. Only the holder of an
 * unexpired lease renews, completes, retries or reads the row as held: a claim whose lease lapsed leaves the row to the next
 * claim, which runs it again, even when nobody has claimed it yet.
 */
export type JobKind = "head_invalidation" | "installation_fanout" | "repository_fanout" | "base_ref" | "evaluation" | "merge_group";

export type JobRow = {
  id: number;
  kind: JobKind;
  installation_id: number;
  repository_id: number | null;
  repository_owner: string | null;
  repository_name: string | null;
  pull_number: number | null;
  head_sha: string | null;
  base_ref: string | null;
  shared_generation: number | null;
  evaluation_generation: number | null;
  authority_epoch: number | null;
  attempts: number;
  merges: number;
  run_at_ms: number;
  lease_owner: string | null;
  lease_expires_at_ms: number | null;
  /** 1: only background work (a reconciler scan, a fan-out) asked for this row; its forge requests yield to webhook-driven ones. */
  background: number;
  /** An authority fan-out scoped to the subjects its events name (authority-subjects.ts); null: every open pull request. */
  authority_subjects: string | null;
};

const COLUMNS = "id, kind, installation_id, repository_id, repository_owner, repository_name, pull_number, head_sha, base_ref, shared_generation, evaluation_generation, authority_epoch, attempts, merges, run_at_ms, lease_owner, lease_expires_at_ms, background, authority_subjects";

const CLAIM_SEPARATOR = "/";
/**
 * The lease owner of one claim: the worker's ID and the claim's number in that worker. Two claims of one worker (its slots,
 * or the same slot before and after its lease lapsed) never pass for each other; shutdown releases them all by the prefix.
 */
export function leaseToken(workerId: string, claim: number): string {
  return `${workerId}${CLAIM_SEPARATOR}${claim}`;
}

const CLAIMABLE = "(state = 'pending' and run_at_ms <= $1) or (state = 'leased' and lease_expires_at_ms < $1)";

export function* claimNext(owner: string, now: number, leaseMs: number): Op<JobRow | null> {
  return yield* one<JobRow>({
    postgresql: `with next as (select id from jobs where ${CLAIMABLE} order by priority, background, run_at_ms, id limit 1 for update skip locked)
      update jobs set state = 'leased', lease_owner = $2, lease_expires_at_ms = $1 + $3, attempts = jobs.attempts + 1, updated_at_ms = $1
      from next where jobs.id = next.id returning ${COLUMNS.split(", ").map((c) => `jobs.${c}`).join(", ")}`,
    sqlite: `update jobs set state = 'leased', lease_owner = $2, lease_expires_at_ms = $1 + $3, attempts = attempts + 1, updated_at_ms = $1
      where id = (select id from jobs where ${CLAIMABLE} order by priority, background, run_at_ms, id limit 1) returning ${COLUMNS}`,
  }, now, owner, leaseMs);
}

/** The row is `$1`, leased by the claim `$2`, and its lease has not expired at `$3`. */
const HELD = "id = $1 and lease_owner = $2 and state = 'leased' and lease_expires_at_ms >= $3";

/** Extends the lease; false when this claim no longer holds the row. */
export function* renewLease(id: number, owner: string, now: number, leaseMs: number): Op<boolean> {
  const changed = yield* run(`update jobs set lease_expires_at_ms = $3 + $4, updated_at_ms = $3 where ${HELD}`, id, owner, now, leaseMs);
  return changed > 0;
}

export type Completion = "done" | "requeued" | "lost";

/**
 * Finishes a leased row: deleted when no work merged into it since the claim, else back to pending to run again. "lost" when
 * the lease is no longer this claim's (lapsed or taken over): the row stays for the next claim.
 */
export function* completeJob(id: number, owner: string, mergesAtClaim: number, now: number): Op<Completion> {
  const deleted = yield* run(`delete from jobs where ${HELD} and merges = $4`, id, owner, now, mergesAtClaim);
  if (deleted > 0) return "done";
  const requeued = yield* run(
    `update jobs set state = 'pending', lease_owner = null, lease_expires_at_ms = null, attempts = 0, run_at_ms = $3, updated_at_ms = $3 where ${HELD}`,
    id, owner, now,
  );
  return requeued > 0 ? "requeued" : "lost";
}

/** A runtime failure: the row goes back to pending and runs again at runAt (never terminal). False when the lease is lost. */
export function* retryJob(id: number, owner: string, runAt: number, errorCode: string, now: number): Op<boolean> {
  const changed = yield* run(
    `update jobs set state = 'pending', lease_owner = null, lease_expires_at_ms = null, run_at_ms = $4, last_error = $5, updated_at_ms = $3 where ${HELD}`,
    id, owner, now, runAt, errorCode,
  );
  return changed > 0;
}

/** Shutdown: hand every row the worker's claims hold (leaseToken) back as pending, runnable now. */
export function* releaseLeases(workerId: string, now: number): Op<number> {
  const prefix = `${workerId}${CLAIM_SEPARATOR}`;
  return yield* run(
    "update jobs set state = 'pending', lease_owner = null, lease_expires_at_ms = null, run_at_ms = $3, updated_at_ms = $3 where state = 'leased' and substr(lease_owner, 1, $2) = $1",
    prefix, [...prefix].length, now,
  );
}

export type Fences = {
  readonly shared: number;
  readonly invalidated: number;
  readonly evaluation: number;
  readonly authorityEpoch: number;
  readonly fanoutPending: boolean;
  readonly leaseHeld: boolean;
  /** A merge of the pull request awaits its enrollment (read only when asked: readFences' `withMergeAwaiting`). */
  readonly mergeAwaitingEnrollment?: boolean;
};

/**
 * Every fence the publication rule compares (DESIGN 4), read by one statement (one snapshot) sent alone: the worker reads
 * them while it holds the publication guards (op.ts `lone`).
 */
export function* readFences(input: {
  jobId: number; owner: string; installationId: number; repositoryId: number; headSha: string; pullNumber: number; now: number;
  /** Also whether a merge of the pull request awaits its enrollment (the evaluation's first read: no statement of its own). */
  withMergeAwaiting?: boolean;
}): Op<Fences> {
  const awaiting = input.withMergeAwaiting === true
    ? ",\n       case when exists (select 1 from merge_records where repository_id = $1 and pull_number = $3 and enrollment is null) then 1 else 0 end as merge_awaiting"
    : "";
  const row = yield* lone(one<{ shared: number; invalidated: number; evaluation: number; authority_epoch: number; fanout_pending: number; lease_held: number; merge_awaiting?: number }>(
    `select coalesce((select shared_generation from head_generations where repository_id = $1 and head_sha = $2), 0) as shared,
       coalesce((select invalidated_generation from head_generations where repository_id = $1 and head_sha = $2), 0) as invalidated,
       coalesce((select evaluation_generation from pull_generations where repository_id = $1 and pull_number = $3), 0) as evaluation,
       coalesce((select authority_epoch from installation_epochs where installation_id = $4), 0) as authority_epoch,
       case when exists (select 1 from jobs where installation_id = $4 and kind in ('installation_fanout', 'repository_fanout') and state in ('pending', 'leased')) then 1 else 0 end as fanout_pending,
       case when exists (select 1 from jobs where id = $5 and lease_owner = $6 and state = 'leased' and lease_expires_at_ms >= $7) then 1 else 0 end as lease_held${awaiting}`,
    input.repositoryId, input.headSha, input.pullNumber, input.installationId, input.jobId, input.owner, input.now,
  ));
  return {
    shared: Number(row!.shared),
    invalidated: Number(row!.invalidated),
    evaluation: Number(row!.evaluation),
    authorityEpoch: Number(row!.authority_epoch),
    fanoutPending: Number(row!.fanout_pending) === 1,
    leaseHeld: Number(row!.lease_held) === 1,
    ...(input.withMergeAwaiting === true ? { mergeAwaitingEnrollment: Number(row!.merge_awaiting) === 1 } : {}),
  };
}

/**
 * Supersedes each pull request's evaluation generation and queues its evaluation at the current authority epoch; `background`
 * when only a fan-out (or a background evaluation that found its head moved) asks for it.
 */
export function* supersedeAndQueue(repository: RepositoryRef, pulls: readonly { number: number; headSha: string }[], now: number, origin: { readonly background?: boolean } = {}): Op<void> {
  if (pulls.length > 0) yield* batch(advanceAndQueue(repository, { pulls, background: origin.background === true }, now));
}

/**
 * A repository fan-out's queueing: as supersedeAndQueue, and the published digests of the checks the job goes on to reset
 * are cleared (no completing write can settle a digest while the fan-out row is live): every digest of the repository for
 * a wide fan-out, those of the affected pull requests' heads for one scoped to an event's subjects.
 */
export function* supersedeForFanout(
  repository: RepositoryRef, pulls: readonly { number: number; headSha: string }[], now: number,
  /** `heads`: more checks the job goes on to reset, of pull requests it does not know (their digests go too, in head order). */
  origin: { readonly background?: boolean; readonly scoped?: boolean; readonly heads?: readonly string[] } = {},
): Op<void> {
  // The heads whose checks the job resets next: their last reset (migration 0010), first (head_generations precedes the
  // generations and work rows supersedeAndQueue writes in the store's lock order).
  yield* markHeadsReset(repository.repositoryId, [...pulls.map((pull) => pull.headSha), ...(origin.heads ?? [])], now);
  yield* supersedeAndQueue(repository, pulls, now, origin);
  if (origin.scoped === true) yield* clearHeadDigests(repository.repositoryId, [...pulls.map((pull) => pull.headSha), ...(origin.heads ?? [])], now);
  else yield* clearRepositoryDigests(repository.repositoryId, now);
}

/**
 * The end of an exact-head invalidation job: each open pull request on the head gets a new evaluation generation and its
 * evaluation, the generation captured at the job's start is marked invalidated, the head's published digest is cleared (the
 * job reset the check without the guards, so a completing write that raced it may have settled one), and the audit row is
 * written.
 */
export function* finishHeadInvalidation(repository: RepositoryRef, headSha: string, generation: number, pulls: readonly number[], now: number): Op<void> {
  yield* batch(advanceAndQueue(repository, { invalidated: { headSha, generation }, pulls: pulls.map((number) => ({ number, headSha })) }, now));
  yield* clearCheckDigest(repository.repositoryId, headSha, now);
  yield* recordAudit({ kind: "invalidation", installationId: repository.installationId, repositoryId: repository.repositoryId, pullNumber: null, headSha, outcome: "completed", detail: { shared_generation: generation, pull_requests: pulls.length }, now });
}

/** Installation-wide work split into one repository-wide row per repository (their own fences), in one transaction. */
export function* splitInstallationFanout(installationId: number, repositories: readonly RepositoryRef[], now: number, subjects: string | null = null): Op<void> {
  const epoch = yield* currentAuthorityEpoch(installationId, now);
  for (const repository of repositories) yield* queueRepositoryFanout(repository, epoch, now, subjects);
}

export type AuditEvent = {
  readonly kind: "conclusion" | "fanout" | "invalidation";
  readonly installationId: number;
  readonly repositoryId: number | null;
  readonly pullNumber: number | null;
  readonly headSha: string | null;
  readonly outcome: string;
  /** Identifiers and counts only: never payloads, titles, names of people or secrets. */
  readonly detail: Readonly<Record<string, string | number | boolean | null>>;
  readonly now: number;
};

export function* recordAudit(event: AuditEvent): Op<void> {
  yield* run(
    "insert into audit_events (at_ms, kind, installation_id, repository_id, pull_number, head_sha, outcome, detail) values ($1, $2, $3, $4, $5, $6, $7, $8::jsonb)",
    event.now, event.kind, event.installationId, event.repositoryId, event.pullNumber, event.headSha, event.outcome, JSON.stringify(event.detail),
  );
}

export function* listAudit(limit = 100): Op<Array<{ kind: string; outcome: string; pull_number: number | null; head_sha: string | null }>> {
  return (yield* all("select kind, outcome, pull_number, head_sha from audit_events order by id desc limit $1", limit)) as never;
}
