import type { ForgeClient, ListResult, ProbeClock, StreamOutcome } from "../forge/index.ts";
import type { Logger } from "../observability/logger.ts";
import {
  acquireElectionLease, type CheckpointOutcome, type ElectionLease, indexListingComplete, indexListingPage, type IndexListing, type MergeInput, pruneDeliveryBatch, pruneHistory, pruneMergeGroupBatch, pruneIndexBatch, prunePublishedBatch, queueMissingWork,
  readEvaluations, readHistoryStart, readMergesAwaitingEnrollment, type MergeToAttest, recordRecoveredMerges, renewElectionLease, type RepositoryRef, type SeenEvaluation, type Store, writeCheckpoint,
} from "../store/index.ts";
import { RECENTLY_CLOSED_PAGE } from "../forge/client.ts";
import type { Metrics } from "../observability/metrics.ts";
import { DEFAULT_DECISION_RETENTION_DAYS } from "../records/schema.ts";
import { settleEnrollments } from "../records/enrollment.ts";
import { type AttestationSettings, signCheckpoint, signMerge } from "../records/attest.ts";
import { dueReason, sweepOffsetMs } from "./sweep.ts";
import { type OpenPullItem, type RejectionReason, type Validated, validateClosedPullRequests, validateInstallations, validateOpenPullRequests, validateRepositories } from "./validate.ts";

/**
 * One reconciliation attempt (spec "Reconciliation attempt"):
 *
 *   elect ──another owner──▶ no attempt (nothing recorded)
 *     │ error ─────────────▶ failure
 *     ▼
 *   prune expired delivery IDs and stale published-state records (batches, each fenced by the lease)
 *     ▼
 *   write a checkpoint of the decision and merge records when one is due (fenced by the lease; a failure waits for the next)
 *     ▼
 *   list installations ──gap, not a list, any invalid item──▶ failure (validated whole before any installation is processed)
 *     ▼
 *   while elected, a background renewal every third of the lease TTL keeps the lease through long forge listings;
 *   for each unsuspended installation: renew the lease, list its repositories, validate them whole; for each non-archived
 *   repository other than the organization policy repository: stream its open pull requests page by page (DESIGN 3.9; at
 *   most MAX_RECONCILE_PULL_REQUESTS in the installation), and for each page: validate it whole, read its pull requests'
 *   recorded evaluations, keep those that may have changed since (sweep.ts: new, another head, base commit or updated_at,
 *   or their full-sweep slot came round), queue their missing work in a transaction that renews the lease, then ask for the
 *   next page; then recover the repository's missed merges (below). A gap, a rejected page or a database error marks the attempt partial and the scan goes on with the next
 *   repository or installation; a lost lease or a shutdown marks it partial and stops the scan. Work queued before either
 *   stays durable (a queued evaluation reads its pull request itself, so work from the pages before a break is sound).
 *     ▼
 *   success only when nothing was marked partial.
 *
 * Merge recovery (DESIGN 3.10): per repository scanned, when it is due (below), one conditional request for its most
 * recently updated closed pull requests (one page of 100). A 304 costs nothing more (no rate limit, no statement). Otherwise
 * every merge on that page merged within MERGE_RECOVERY_WINDOW_MS, and not before this database kept decision records, is recorded in one
 * lease-fenced transaction; a merge recorded already (its `closed` delivery came) is left as it is, and one recorded now is
 * `recovered` and reported like a delivered one when unapproved. A merge missed longer ago, or pushed off that page by 100
 * later closed pull requests before a scan, is not recovered (Residual risks).
 *
 * When it is due: a pull request that closes (merged or not) leaves the open listing, so the page it was on changes. A
 * repository whose open listing was complete and answered 304 on every page (conditional on what this process kept) at every
 * scan since its last recovery had no pull request close that was open when that listing was kept: its closed page is not
 * asked, and a steady scan costs what it cost before merge recovery (issue 26 item 5: ceil(N/100) + 3 listing requests).
 * Any other listing (a page changed, a listing incomplete, rejected or cut short) makes a recovery owed, kept until one
 * succeeds. A pull request opened and merged between two scans never shows in the open listing: every repository's recovery
 * is due also once per MERGE_RECOVERY_PERIOD_MS since its last one (less a fixed per-repository share of up to half the
 * period, so recoveries that started together spread out). What the process knows is held in memory (MergeRecoveryState):
 * a new process, or one that was not scanning, owes every repository a recovery at its first scan.
 */
export type AttemptResult = "success" | "partial" | "failure" | "unelected";

/** Only the listings the reconciler needs, so tests can hand it a fake forge. */
export type ReconcileForge = Pick<ForgeClient, "listInstallations" | "listInstallationRepositories" | "streamOpenPullRequestItems" | "listRecentlyClosedPullRequests" | "readFile">;

/** How far back the reconciler recovers missed merges (by their merge time): a week of scans that could not run. */
export const MERGE_RECOVERY_WINDOW_MS = 7 * 86_400_000;

/** A repository's recovery is due at least once per this period (above): a merge opened and made between scans with its delivery lost is recovered within it (plus one scan interval). */
export const MERGE_RECOVERY_PERIOD_MS = 3_600_000;

/** Per repository (installation/repository ID): a recovery is owed (the open listing changed or was incomplete since the last one), and when the last one succeeded. */
export type MergeRecoveryState = Map<string, { owed: boolean; lastAtMs: number }>;

/** The repository's fixed share of the period taken off its next periodic recovery, in [0, period / 2) (a hash, as the sweep slot's). */
export function recoveryStaggerMs(repositoryId: number, periodMs = MERGE_RECOVERY_PERIOD_MS): number {
  return sweepOffsetMs(repositoryId, 0, Math.floor(periodMs / 2));
}

/**
 * Open pull requests listed per installation by the reconciler (DESIGN 3.6, 3.9; one page is 100 items): a repository is
 * listed up to what the installation's earlier repositories left, and over it the repository is not covered (partial).
 */
export const MAX_RECONCILE_PULL_REQUESTS = 100_000;
/** Pull requests queued per transaction (each transaction renews the lease; keeps the lease row lock and each transaction short). */
export const RECONCILE_QUEUE_BATCH = 200;

export type AttemptDeps = {
  readonly store: Store;
  readonly forge: ReconcileForge;
  readonly log: Logger;
  readonly clock: ProbeClock;
  readonly organizationPolicyRepository: string;
  /** Called after a transaction queued new work (the in-process worker wakes at once). */
  readonly onQueued?: () => void;
  /** Counts unapproved merges once their enrollment is read (service_unapproved_merges_total). */
  readonly metrics?: Pick<Metrics, "unapprovedMerges">;
  /** SERVICE_POLICY_PATH: the repository policy read at a merge's base commit for its enrollment (server/records/enrollment.ts). */
  readonly policyPath: string;
  /** With a signing key (SERVICE_ATTESTATION_KEY_FILE): checkpoints are signed, and approved merges attested once covered. */
  readonly attestation?: AttestationSettings;
};

export type AttemptSettings = {
  readonly lease: ElectionLease;
  readonly retentionMs: number;
  /** SERVICE_RECONCILE_FULL_SWEEP_HOURS: every open pull request is evaluated again at least once per this period. */
  readonly fullSweepMs: number;
  /** SERVICE_DECISION_RETENTION_DAYS: decision and merge records older than this are pruned (default 400 days). */
  readonly decisionRetentionMs?: number;
  /** What the merge recovery knows between attempts (the reconciler keeps one); absent: every repository's recovery is due. */
  readonly mergeRecovery?: MergeRecoveryState;
};

export type AttemptReport = {
  readonly result: AttemptResult;
  /** Fixed codes of what made the attempt partial or a failure (first of each kind, in order). */
  readonly problems: readonly string[];
  readonly installations: number;
  readonly repositories: number;
  readonly pullRequests: number;
  /** Listed open pull requests left alone: nothing says they changed since their last evaluation, and their sweep slot is not due. */
  readonly unchanged: number;
  readonly queued: number;
  readonly pruned: number;
  /** Merges whose `closed` delivery was missed, recorded from the recently closed pull requests. */
  readonly mergesRecovered: number;
  /** Records covered by the checkpoint this attempt wrote (0: none was due, or nothing was added). */
  readonly checkpointed: number;
};

/** What stops one repository's listing and marks the attempt partial (a fixed code; `fields` never carry forge values). */
class PageProblem extends Error {
  constructor(readonly code: string, readonly fields: Record<string, unknown>) {
    super(code);
  }
}

/** A listing's ID: the index (DESIGN 3.9) tells one complete listing's rows from an earlier one's by it. */
function newListingId(): string {
  return crypto.randomUUID();
}

class Stop extends Error {
  constructor(readonly code: "lease_lost" | "shutdown") {
    super(code);
  }
}

export async function runAttempt(deps: AttemptDeps, settings: AttemptSettings, signal: AbortSignal): Promise<AttemptReport> {
  const { store, forge, log } = deps;
  const now = () => deps.clock.now();
  const problems: string[] = [];
  const counts = { installations: 0, repositories: 0, pullRequests: 0, unchanged: 0, queued: 0, pruned: 0, mergesRecovered: 0, checkpointed: 0 };
  const report = (result: AttemptResult): AttemptReport => ({ result, problems, ...counts });
  const problem = (code: string, fields: Record<string, unknown> = {}) => {
    if (!problems.includes(code)) problems.push(code);
    log.warn({ reason: code, ...fields }, "reconciliation could not cover part of the forge");
  };

  if (signal.aborted) return report("unelected");
  let elected: boolean;
  try {
    elected = await store.execute(() => acquireElectionLease(settings.lease, now()));
  } catch (error) {
    problem("election_error", { code: errorCode(error) });
    return report("failure");
  }
  if (!elected) {
    log.debug("another process holds the reconciler lease; no attempt");
    return report("unelected");
  }

  // Elected from here on: forge calls are cut short by a shutdown or by the background renewal finding the lease lost. They
  // are background work for the forge request governor: webhook-driven requests go first.
  const lost = new AbortController();
  const scan = AbortSignal.any([signal, lost.signal]);
  const call = { signal: scan, priority: "background" } as const;
  const keeper = keepLease(deps, settings.lease, () => lost.abort());
  const interrupted = () => {
    if (signal.aborted) throw new Stop("shutdown");
    if (lost.signal.aborted) throw new Stop("lease_lost");
  };
  const checkpoint = async () => {
    interrupted();
    let held: boolean;
    try {
      held = await store.execute(() => renewElectionLease(settings.lease, now()));
    } catch {
      // A database error is not proof that another process owns the lease; the next fenced write decides.
      return;
    }
    if (!held) throw new Stop("lease_lost");
  };

  const recovery: MergeRecoveryState = settings.mergeRecovery ?? new Map();
  const recoveryKey = (ref: RepositoryRef) => `${ref.installationId}/${ref.repositoryId}`;
  /** Repositories scanned by this attempt (a successful attempt forgets the state of the others). */
  const scanned = new Set<string>();
  /**
   * One repository's open pull requests, streamed page by page (DESIGN 3.9: bounded memory, never the whole listing held):
   * each page is validated whole, then its pull requests' recorded evaluations are read and those that may have changed are
   * queued, before the next page is asked for. A listing read once more afresh (pagination.ts, a new pass) is a new listing.
   * Returns how many open pull requests were listed (counted against the installation's bound even when the listing broke).
   * A gap, a rejected page or a database error marks the attempt partial; a lost lease or a shutdown is thrown (Stop).
   * Unless the listing was complete and every page answered 304, the repository's merge recovery is owed (above).
   */
  const scanRepository = async (ref: RepositoryRef, max: number): Promise<number> => {
    const key = recoveryKey(ref);
    scanned.add(key);
    // Unless the listing proves every page unchanged (complete, every request answered 304), a recovery is owed: set however
    // the scan ends (a Stop too), since the pages this listing kept are what the next listing's 304s are measured against.
    const counter = { requests: 0, notModified: 0 };
    let unchangedListing = false;
    try {
      const listed = await listRepository(ref, max, counter);
      unchangedListing = listed.complete && counter.requests > 0 && counter.notModified === counter.requests;
      return listed.count;
    } finally {
      if (!unchangedListing) recovery.set(key, { owed: true, lastAtMs: recovery.get(key)?.lastAtMs ?? Number.NEGATIVE_INFINITY });
    }
  };
  const listRepository = async (ref: RepositoryRef, max: number, counter: { requests: number; notModified: number }): Promise<{ count: number; complete: boolean }> => {
    const where = { installation: ref.installationId, repository: ref.repositoryId };
    const indexListing = (): IndexListing => ({ installationId: ref.installationId, repositoryId: ref.repositoryId, listingId: newListingId(), startedAtMs: now(), lease: settings.lease });
    let listing = indexListing();
    // When the last page handed over was done: the forge's reading asks for its next page (or, given up, its first page again)
    // only after that, so it is no later than any page fetched since.
    let pageDoneAtMs = listing.startedAtMs;
    let pass = 0;
    let listed = 0;
    let unchanged = 0;
    let queued = 0;
    let kept = 0;
    let outcome: StreamOutcome;
    try {
      outcome = await forge.streamOpenPullRequestItems(ref.installationId, ref.owner, ref.name, max, async (raw, at) => {
        interrupted();
        if (at.pass !== pass) {
          // The pages told so far belong to a reading that was given up: the list is told again from its first page. The new
          // listing starts when that page may have been fetched, not now: a closing accepted in between left a tombstone the
          // page must not overwrite (DESIGN 3.12), and a delivery's row written in between is newer than the page.
          pass = at.pass;
          listing = { ...indexListing(), startedAtMs: pageDoneAtMs };
          listed = 0;
          unchanged = 0;
        }
        const page = validateOpenPullRequests(raw);
        if (page.kind === "rejected") throw new PageProblem(page.reason, {});
        listed += page.items.length;
        const done = await scanPage(ref, listing, page.items);
        unchanged += done.unchanged;
        queued += done.queued;
        kept += done.kept;
        pageDoneAtMs = now();
      }, { ...call, counter });
    } catch (error) {
      if (!(error instanceof PageProblem)) throw error;
      problem(error.code, { ...where, ...error.fields });
      return { count: listed, complete: false };
    } finally {
      counts.pullRequests += listed;
      counts.unchanged += unchanged;
      if (queued > 0) {
        counts.queued += queued;
        log.info({ ...where, queued, kept }, "reconciliation queued missing work");
      }
    }
    interrupted();
    if (!outcome.complete) {
      // A gap: over the bound, a failed request, a page that is not the list or breaks its list's promises.
      if (outcome.notList) problem("pull_requests_not_list", where);
      else problem("pull_requests_unavailable", { ...where, cause: outcome.cause });
      return { count: listed, complete: false };
    }
    // A complete listing replaces the repository's open-pull-request index rows (DESIGN 3.9): what every page of `listing`
    // upserted stays, and so does what a delivery wrote since the listing started; the rest goes. An incomplete one (above)
    // changes nothing but what its pages upserted.
    let completed: number | null;
    try {
      completed = await store.execute(() => indexListingComplete(listing, now()));
    } catch (error) {
      problem("queue_failed", { ...where, code: errorCode(error) });
      return { count: listed, complete: false };
    }
    if (completed === null) throw new Stop("lease_lost");
    return { count: listed, complete: true };
  };

  /** The earliest merge time recovered: the window, and not before this database kept decision records (null: no recovery). */
  let recoverSince: number | null = null;
  /** One repository's missed merges (see above). A failure marks the attempt partial; a lost lease or a shutdown is thrown. */
  const recoverMergesIfDue = async (ref: RepositoryRef): Promise<void> => {
    const key = recoveryKey(ref);
    const known = recovery.get(key);
    const at = now();
    const periodic = known === undefined || at - known.lastAtMs >= MERGE_RECOVERY_PERIOD_MS - recoveryStaggerMs(ref.repositoryId);
    if (known !== undefined && !known.owed && !periodic) return;
    if (await recoverMerges(ref)) recovery.set(key, { owed: false, lastAtMs: at });
    else recovery.set(key, { owed: true, lastAtMs: known?.lastAtMs ?? Number.NEGATIVE_INFINITY });
  };
  /** Returns whether the repository's recently closed pull requests were read and every merge on them recorded. */
  const recoverMerges = async (ref: RepositoryRef): Promise<boolean> => {
    if (recoverSince === null) return false;
    const where = { installation: ref.installationId, repository: ref.repositoryId };
    let answer: Awaited<ReturnType<ReconcileForge["listRecentlyClosedPullRequests"]>>;
    try {
      answer = await forge.listRecentlyClosedPullRequests(ref.installationId, ref.owner, ref.name, call);
    } catch (error) {
      interrupted();
      problem("closed_pull_requests_unavailable", { ...where, kind: (error as { kind?: string }).kind ?? "unknown" });
      return false;
    }
    interrupted();
    if (answer.notModified) return true;
    const page = validateClosedPullRequests(answer.items, RECENTLY_CLOSED_PAGE);
    if (page.kind === "rejected") {
      problem(page.reason, where);
      return false;
    }
    const since = recoverSince;
    const merges: MergeInput[] = page.items.flatMap((pull) => pull.merge !== null && pull.merge.mergedAtMs !== null && pull.merge.mergedAtMs >= since ? [{
      installationId: ref.installationId, repositoryId: ref.repositoryId, repositoryFullName: `${ref.owner}/${ref.name}`, pullNumber: pull.number, headSha: pull.headSha,
      mergeCommitSha: pull.merge.mergeCommitSha, baseSha: pull.merge.baseSha, mergedBy: pull.merge.mergedBy, mergedAtMs: pull.merge.mergedAtMs, recovered: true, now: now(),
    }] : []);
    if (merges.length === 0) return true;
    let recorded;
    try {
      recorded = await store.execute(() => recordRecoveredMerges(settings.lease, merges, now()));
    } catch (error) {
      problem("queue_failed", { ...where, code: errorCode(error) });
      return false;
    }
    if (recorded === null) throw new Stop("lease_lost");
    counts.mergesRecovered += recorded.length;
    if (recorded.length > 0) log.info({ ...where, recovered: recorded.length }, "reconciliation recovered merges whose closed delivery was missed");
    return true;
  };

  /**
   * The merges whose enrollment is still unread (recovered above, or accepted from a delivery the worker has not settled),
   * at most ENROLLMENT_BATCH an attempt: each is settled, and counted when unapproved (server/records/enrollment.ts). Not
   * fenced by the lease: the first settle of a merge wins, so two processes never both count it.
   */
  const settlePendingEnrollments = async (): Promise<void> => {
    try {
      const pending = await store.execute(() => readMergesAwaitingEnrollment(null));
      if (pending.length > 0) await settleEnrollments({ store, forge, policyPath: deps.policyPath, log, now, ...(deps.metrics ? { metrics: deps.metrics } : {}) }, pending, call);
    } catch (error) {
      problem("queue_failed", { code: errorCode(error) });
    }
  };

  /** One validated page: its index rows, its recorded evaluations, then its due pull requests queued. */
  const scanPage = async (ref: RepositoryRef, listing: IndexListing, items: readonly OpenPullItem[]): Promise<{ unchanged: number; queued: number; kept: number }> => {
    // Every page of a listing is upserted into the open-pull-request index under the listing's ID before its work is queued.
    let indexed: boolean;
    try {
      indexed = await store.execute(() => indexListingPage(listing, items.map((p) => ({ number: p.number, headSha: p.headSha, baseRef: p.baseRef })), now()));
    } catch (error) {
      throw new PageProblem("queue_failed", { code: errorCode(error) });
    }
    if (!indexed) throw new Stop("lease_lost");
    let seen: Map<number, SeenEvaluation>;
    try {
      seen = new Map((await store.execute(() => readEvaluations(ref.repositoryId, items.map((p) => p.number)))).map((row) => [Number(row.pull_number), row]));
    } catch (error) {
      throw new PageProblem("queue_failed", { code: errorCode(error) });
    }
    const due = items.filter((pull) => dueReason(pull, seen.get(pull.number), ref.repositoryId, now(), settings.fullSweepMs) !== null);
    let queued = 0;
    let kept = 0;
    for (let start = 0; start < due.length; start += RECONCILE_QUEUE_BATCH) {
      const batch = due.slice(start, start + RECONCILE_QUEUE_BATCH);
      let outcome;
      try {
        outcome = await store.execute(() => queueMissingWork({ lease: settings.lease, repository: ref, pulls: batch, now: now() }));
      } catch (error) {
        throw new PageProblem("queue_failed", { code: errorCode(error) });
      }
      if (outcome.kind === "lost") throw new Stop("lease_lost");
      queued += outcome.queued;
      kept += outcome.kept;
      if (outcome.queued > 0) deps.onQueued?.();
    }
    return { unchanged: items.length - due.length, queued, kept };
  };

  try {
    counts.pruned = await prune(deps, settings, interrupted);
    counts.checkpointed = await writeHistoryCheckpoint(deps, settings, interrupted);
    try {
      const start = await store.execute(() => readHistoryStart());
      recoverSince = start === null ? null : Math.max(start, now() - MERGE_RECOVERY_WINDOW_MS);
    } catch (error) {
      problem("queue_failed", { code: errorCode(error) });
    }

    const listed = await forge.listInstallations(call);
    interrupted();
    const installations = accept(listed, validateInstallations, "installations");
    if (installations.kind === "problem") {
      problem(installations.code, installations.fields);
      return report("failure");
    }

    for (const installation of installations.items) {
      if (installation.suspended) continue;
      await checkpoint();
      counts.installations++;
      /** Open pull requests listed in this installation so far (MAX_RECONCILE_PULL_REQUESTS bounds their sum). */
      let listedInInstallation = 0;
      const repositories = accept(await forge.listInstallationRepositories(installation.id, call), validateRepositories, "repositories");
      interrupted();
      if (repositories.kind === "problem") {
        problem(repositories.code, { installation: installation.id, ...repositories.fields });
        continue;
      }
      for (const repository of repositories.items) {
        if (repository.archived) continue;
        // Pull-request work for the organization policy repository stays under native enforcement (DESIGN 3.6 "Ingress").
        if (repository.name.toLowerCase() === deps.organizationPolicyRepository.toLowerCase()) continue;
        await checkpoint();
        counts.repositories++;
        const ref: RepositoryRef = { installationId: installation.id, repositoryId: repository.id, owner: repository.owner, name: repository.name };
        const listed = await scanRepository(ref, MAX_RECONCILE_PULL_REQUESTS - listedInInstallation);
        listedInInstallation += listed;
        await recoverMergesIfDue(ref);
      }
    }
    await checkpoint();
    await settlePendingEnrollments();
  } catch (error) {
    if (error instanceof Stop) {
      problem(error.code);
      return report("partial");
    }
    problem("unexpected", { error: (error as Error)?.name });
    return report("failure");
  } finally {
    await keeper.stop();
  }
  if (problems.length > 0) return report("partial");
  // Every repository was covered: what is known of the ones no longer scanned is let go (bounded by the forge's repositories).
  for (const key of recovery.keys()) if (!scanned.has(key)) recovery.delete(key);
  return report("success");
}

/**
 * Removes every delivery record older than the retention, then the published-state records no open pull request needs any
 * more (evaluations not renewed for two sweep periods, and checks of heads no recorded evaluation names), in bounded
 * batches. A failure leaves them for the next attempt. Returns the number of delivery records removed.
 */
async function prune(deps: AttemptDeps, settings: AttemptSettings, interrupted: () => void): Promise<number> {
  const now = () => deps.clock.now();
  const cutoff = now() - settings.retentionMs;
  const delivered = await pruneBatches(deps, interrupted, "expired delivery IDs", () => pruneDeliveryBatch(settings.lease, cutoff, now()));
  // Merge groups (and their members) untouched for as long as delivery IDs are kept: long destroyed, or never destroyed.
  await pruneBatches(deps, interrupted, "stale merge groups", () => pruneMergeGroupBatch(settings.lease, cutoff, now()));
  const horizon = now() - 2 * settings.fullSweepMs;
  await pruneBatches(deps, interrupted, "stale published-state records", () => prunePublishedBatch(settings.lease, { evaluationCutoffMs: horizon, checkCutoffMs: horizon }, now()));
  // Decision and merge records past SERVICE_DECISION_RETENTION_DAYS (DESIGN 3.10).
  const kept = settings.decisionRetentionMs ?? DEFAULT_DECISION_RETENTION_DAYS * 86_400_000;
  await pruneBatches(deps, interrupted, "expired decision and merge records", () => pruneHistory(settings.lease, now() - kept, now()));
  // Index rows no complete listing renewed for as long: a repository no longer listed (DESIGN 3.9).
  await pruneBatches(deps, interrupted, "stale open-pull-request index rows", () => pruneIndexBatch(settings.lease, horizon, now()));
  return delivered;
}

/**
 * The checkpoint of the decision and merge records (store ops/checkpoint-ops.ts), when one is due: database work only, so it
 * is written whatever the forge answers. With a signing key it also signs, in its transaction, itself and the approved merges
 * it covers (records/attest.ts). A failure leaves it to the next attempt; a lost lease stops the attempt.
 */
async function writeHistoryCheckpoint(deps: AttemptDeps, settings: AttemptSettings, interrupted: () => void): Promise<number> {
  interrupted();
  let outcome: CheckpointOutcome;
  try {
    const at = deps.clock.now();
    const attestation = deps.attestation;
    const sign = attestation === undefined ? undefined : {
      checkpoint: signCheckpoint(attestation.signer),
      merges: (merges: readonly MergeToAttest[]) => merges.map((merge) => ({
        mergeId: merge.id, keyId: attestation.signer.keyId, envelope: JSON.stringify(signMerge(attestation, merge, new Date(at).toISOString())),
      })),
    };
    outcome = await deps.store.execute(() => writeCheckpoint(settings.lease, at, sign === undefined ? {} : { sign }));
  } catch (error) {
    deps.log.warn({ code: errorCode(error) }, "writing a checkpoint of the decision and merge records failed; the next attempt retries");
    return 0;
  }
  if (outcome.kind === "lost") throw new Stop("lease_lost");
  if (outcome.kind !== "written") return 0;
  deps.log.info({ checkpoint: outcome.checkpoint.id, records: outcome.checkpoint.count }, "checkpoint of the decision and merge records written");
  return outcome.checkpoint.count;
}

async function pruneBatches(deps: AttemptDeps, interrupted: () => void, what: string, batch: () => ReturnType<typeof pruneDeliveryBatch>): Promise<number> {
  let total = 0;
  for (;;) {
    interrupted();
    let removed: number | null;
    try {
      removed = await deps.store.execute(batch);
    } catch (error) {
      deps.log.warn({ code: errorCode(error) }, `pruning ${what} failed; the next attempt retries`);
      return total;
    }
    if (removed === null) throw new Stop("lease_lost");
    total += removed;
    if (removed === 0) break;
  }
  if (total > 0) deps.log.info({ pruned: total }, `${what} pruned`);
  return total;
}

/** Renews the lease every third of its TTL until stopped; calls onLost once when a renewal finds it gone. */
function keepLease(deps: AttemptDeps, lease: ElectionLease, onLost: () => void): { stop(): Promise<void> } {
  let timer: unknown = null;
  let inFlight: Promise<void> | null = null;
  let stopped = false;
  const schedule = () => {
    if (stopped) return;
    timer = deps.clock.setTimeout(() => {
      timer = null;
      inFlight = (async () => {
        let held = true;
        try {
          held = await deps.store.execute(() => renewElectionLease(lease, deps.clock.now()));
        } catch {
          // Not proof of loss: the next fenced write decides.
        }
        if (!held) onLost();
        else schedule();
      })().finally(() => {
        inFlight = null;
      });
    }, Math.max(1, Math.floor(lease.ttlMs / 3)));
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      if (timer !== null) deps.clock.clearTimeout(timer);
      timer = null;
      await inFlight;
    },
  };
}

type Accepted<T> = { kind: "ok"; items: readonly T[] } | { kind: "problem"; code: string; fields: Record<string, unknown> };

/** A listing that is whole and valid, or the fixed code of why not (a rejection's code; the gap's cause, never its values). */
function accept<T>(listed: ListResult, validate: (items: unknown) => Validated<T>, what: "installations" | "repositories" | "pull_requests"): Accepted<T> {
  if (!listed.complete) {
    if (listed.notList) return { kind: "problem", code: rejection(validate(null)), fields: {} };
    return { kind: "problem", code: `${what}_unavailable`, fields: { cause: listed.cause } };
  }
  const validated = validate(listed.items);
  if (validated.kind === "rejected") return { kind: "problem", code: validated.reason, fields: {} };
  return { kind: "ok", items: validated.items };
}

function rejection(validated: Validated<unknown>): RejectionReason | "unexpected" {
  return validated.kind === "rejected" ? validated.reason : "unexpected";
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  return typeof code === "string" ? code : "database";
}
