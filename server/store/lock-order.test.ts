import { describe, expect, test } from "bun:test";
import postgres from "postgres";
import { BACKENDS, createTestDatabase } from "../../e2e/support/databases.ts";
import {
  acceptAuthorityEvent, acceptBaseRefPush, acceptDirectTrigger, acquireElectionLease, all, beginCheckWrite, clearCheckDigest, finishHeadInvalidation, indexListingComplete, indexListingPage,
  markGuardedReset, markHeadInvalidated, migrateDatabase, readMergesAwaitingEnrollment, settleMergeEnrollment, openStore, prunePublishedBatch, queueMissingWork, recordEvaluation, recordCheckCreation, recordLiveHead, releaseFastPathWork, releaseHeldWork, rememberHeadCheck,
  settleCheckDigest, type Store, supersedeAndQueue, supersedeForFanout, confirmDecision, type PendingCheckWrite, pruneHistory, recordPendingDecision, recordRecoveredMerges,
  acceptMergeGroupDestroyed, acceptMergeGroupRequest, clearGroupReset, pruneMergeGroupBatch, recordGroupJudgement, requeueGroupsOfPull,
} from "./index.ts";
import { sampleDecisionBody } from "../records/fixtures.ts";

/**
 * The store's single lock order (server/store/store.ts) keeps the operations that touch several of deliveries,
 * generations, epochs and jobs from deadlocking each other. These tests drive the operations webhook ingress, the worker and
 * the reconciler run at the same time, over overlapping heads and pull requests, with the store's deadlock retry switched
 * off, and read PostgreSQL's own deadlock counter: it must not move.
 */
const repo = { installationId: 9, repositoryId: 300, owner: "acme", name: "web" };
const HEADS = Array.from({ length: 3 }, (_, i) => (i + 1).toString(16).repeat(40));
const PULLS = Array.from({ length: 9 }, (_, i) => ({ number: i + 1, headSha: HEADS[i % HEADS.length]! }));

const recordBody = (pull: { number: number; headSha: string }, n: number) =>
  sampleDecisionBody({ installation_id: repo.installationId, repository: { id: repo.repositoryId, full_name: "acme/web" }, pull_request: pull.number, head_sha: pull.headSha, published_at: new Date(1_000 + n).toISOString() });

/** A merge group whose head is one of the pull requests' heads, so its rows overlap theirs. */
const group = (n: number) => ({ headSha: HEADS[n % HEADS.length]!, headRef: "refs/heads/gh-readonly-queue/main/x", baseRef: "main", baseSha: HEADS[(n + 1) % HEADS.length]! });

/** A deterministic shuffle, so each run mixes the same operations in many orders. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let state = seed;
  for (let i = out.length - 1; i > 0; i--) {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** One mixed round: every operation that takes rows of several tables, on the same few heads and pull requests. */
function round(store: Store, n: number): Promise<unknown>[] {
  const now = 1_000 + n;
  const pull = PULLS[n % PULLS.length]!;
  const onHead = PULLS.filter((p) => p.headSha === pull.headSha).map((p) => p.number);
  const lease = { name: "reconciler", owner: "reconciler-test", ttlMs: 60_000 };
  return [
    store.execute(() => acceptDirectTrigger({ ...repo, deliveryId: `d${n}`, event: "pull_request_review", action: "submitted", pullNumber: pull.number, headSha: pull.headSha, now, heldUntil: now + 5_000 })),
    store.execute(() => acceptDirectTrigger({ ...repo, deliveryId: `r${n}`, event: "check_run", action: "rerequested", pullNumber: null, headSha: pull.headSha, now })),
    // A pull request moving to another head (its index row upserted, the head it left queued), and one closing (deleted).
    store.execute(() => acceptDirectTrigger({
      ...repo, deliveryId: `s${n}`, event: "pull_request", action: "synchronize", pullNumber: pull.number, headSha: HEADS[(n + 1) % HEADS.length]!, now,
      heldUntil: now + 5_000, index: { kind: "upsert", baseRef: "main" }, previousHead: pull.headSha,
    })),
    store.execute(() => acceptDirectTrigger({ ...repo, deliveryId: `c${n}`, event: "pull_request", action: "closed", pullNumber: PULLS[(n + 2) % PULLS.length]!.number, headSha: pull.headSha, now, index: { kind: "delete" } })),
    // A reconciler listing streamed into the index and completed.
    store.execute(function* () {
      yield* acquireElectionLease(lease, now);
      const listing = { installationId: repo.installationId, repositoryId: repo.repositoryId, listingId: `l${n}`, startedAtMs: now, lease };
      yield* indexListingPage(listing, shuffled(PULLS, n + 9).map((p) => ({ number: p.number, headSha: p.headSha, baseRef: "main" })), now);
      return yield* indexListingComplete(listing, now);
    }),
    store.execute(() => finishHeadInvalidation(repo, pull.headSha, 1, shuffled(onHead, n), now)),
    store.execute(() => supersedeAndQueue(repo, shuffled(PULLS, n + 7), now)),
    // A fast path ends by settling its head (releasing its evaluation with it), or by releasing its held work.
    store.execute(() => markHeadInvalidated({ repositoryId: repo.repositoryId, headSha: pull.headSha, generation: 1, now, releaseEvaluationOf: pull.number }, { last: true })),
    store.execute(() => releaseFastPathWork({ repositoryId: repo.repositoryId, headSha: pull.headSha, pullNumber: PULLS[(n + 4) % PULLS.length]!.number, now })),
    // The releases of several fast paths that ended together (ingress's release batcher), in no particular order.
    store.execute(() => releaseHeldWork(shuffled(PULLS, n + 11).slice(0, 4).map((p) => ({ repositoryId: repo.repositoryId, headSha: p.headSha, pullNumber: p.number })), now)),
    store.execute(() => recordLiveHead({ ...repo, pullNumber: pull.number, headSha: HEADS[(n + 1) % HEADS.length]!, now })),
    store.execute(() => acceptBaseRefPush({ ...repo, deliveryId: `p${n}`, action: null, baseRef: `b${n % 2}`, now })),
    store.execute(() => acceptAuthorityEvent({ deliveryId: `a${n}`, event: "team", action: "edited", installationId: repo.installationId, scope: { kind: "repositories", repositories: [repo] }, now }), { exclusiveGuard: { installationId: repo.installationId, timeoutMs: 5_000 } }),
    store.execute(function* () {
      yield* acquireElectionLease(lease, now);
      return yield* queueMissingWork({ lease, repository: repo, pulls: shuffled(PULLS, n + 3), now });
    }),
    // What was published (store.ts 6 and 7): a fan-out clearing every digest, the worker's check memory, records, pruning.
    store.execute(() => supersedeForFanout(repo, shuffled(PULLS, n + 5), now)),
    store.execute(() => rememberHeadCheck({ ...repo, headSha: pull.headSha, checkRunId: n, digest: `pending:${n}`, now })),
    // A creation records itself on the head's row (3) while it holds the publication guards (0), making the row for a head
    // no delivery brought.
    (async () => {
      const headSha = HEADS[(n + 2) % HEADS.length]!;
      const release = await store.acquirePublicationGuards(repo.installationId, repo.repositoryId, headSha, 5_000);
      try {
        await store.execute(() => recordCheckCreation({ ...repo, headSha, now }));
      } finally {
        await release();
      }
    })(),
    store.execute(() => beginCheckWrite(repo.repositoryId, pull.headSha, `pending:${n}`, now)),
    store.execute(() => settleCheckDigest({ repositoryId: repo.repositoryId, headSha: pull.headSha, token: `pending:${n}`, digest: "D", generation: 1, now })),
    // Decision records (7a) ride on the token's write and the settle; a merged close reads them and writes its merge record
    // (8) after its acceptance; the reconciler recovers merges and prunes records after its lease (1).
    store.execute(() => recordPendingDecision({ body: recordBody(pull, n), sharedGeneration: n % 3, digest: "D", token: `pending:r${n}` }, { kind: n % 2 === 0 ? "begin" : "remember", checkRunId: n, now } as PendingCheckWrite)),
    store.execute(() => confirmDecision({ repositoryId: repo.repositoryId, headSha: pull.headSha, token: `pending:r${n}`, now, settle: { digest: "D", generation: 1 } })),
    store.execute(() => acceptDirectTrigger({
      ...repo, deliveryId: `m${n}`, event: "pull_request", action: "closed", pullNumber: pull.number, headSha: pull.headSha, now, index: { kind: "delete" },
      merge: { repositoryFullName: "acme/web", mergeCommitSha: null, baseSha: null, mergedBy: null, mergedAtMs: now },
    })),
    store.execute(function* () {
      yield* acquireElectionLease(lease, now);
      const merges = shuffled(PULLS, n + 13).slice(0, 3).map((p) => ({ installationId: repo.installationId, repositoryId: repo.repositoryId, repositoryFullName: "acme/web", pullNumber: p.number, headSha: p.headSha, mergeCommitSha: null, baseSha: null, mergedBy: null, mergedAtMs: now, recovered: true, now }));
      return yield* recordRecoveredMerges(lease, merges, now);
    }),
    store.execute(function* () {
      yield* acquireElectionLease(lease, now);
      return yield* pruneHistory(lease, now - 3, now);
    }),
    store.execute(() => clearCheckDigest(repo.repositoryId, pull.headSha, now)),
    store.execute(() => markGuardedReset(repo.repositoryId, pull.headSha, now)),
    (async () => {
      const pending = await store.execute(() => readMergesAwaitingEnrollment(null, 3));
      for (const merge of pending) await store.execute(() => settleMergeEnrollment(merge.id, n % 2 === 0 ? "enrolled" : "not_enrolled", n));
    })(),
    store.execute(() => recordEvaluation({ ...repo, pullNumber: pull.number, headSha: pull.headSha, baseSha: pull.headSha, updatedAtMs: now, evaluationGeneration: n, authoritySubjects: `user:u${n}\n`, now })),
    store.execute(function* () {
      yield* acquireElectionLease(lease, now);
      return yield* prunePublishedBatch(lease, { evaluationCutoffMs: now - 3, checkCutoffMs: now - 3 }, now);
    }),
    // Merge groups (4b, 4c) on the same heads: requested, judged, queued again by an evaluation, destroyed and pruned.
    store.execute(() => acceptMergeGroupRequest({ ...repo, deliveryId: `g${n}`, action: "checks_requested", group: group(n), now })),
    store.execute(() => acceptMergeGroupDestroyed({ ...repo, deliveryId: `x${n}`, action: "destroyed", group: group(n + 1), reason: "dequeued", now })),
    store.execute(() => recordGroupJudgement({ ...repo, headSha: group(n + 2).headSha, success: true, members: shuffled(PULLS, n + 15).slice(0, 3).map((p) => ({ pullNumber: p.number, headSha: p.headSha })), now })),
    store.execute(() => requeueGroupsOfPull({ ...repo, pullNumber: pull.number, headSha: HEADS[(n + 1) % HEADS.length]!, now })),
    store.execute(() => clearGroupReset(repo.repositoryId, group(n).headSha, now)),
    store.execute(function* () {
      yield* acquireElectionLease(lease, now);
      return yield* pruneMergeGroupBatch(lease, now - 3, now);
    }),
  ];
}

async function deadlocksOf(url: string, database: string): Promise<number> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql`select deadlocks from pg_stat_database where datname = ${database}`;
    return Number(row?.deadlocks ?? 0);
  } finally {
    await sql.end();
  }
}

describe.each(BACKENDS)("lock order on %s", (backend) => {
  test("ingress, worker and reconciler operations on the same heads and pull requests all complete and leave one live row per unit of work", async () => {
    const database = await createTestDatabase(backend);
    await migrateDatabase(database.target, 1);
    const stores = backend === "postgresql" ? [openStore(database.target, { deadlockRetries: 0 }), openStore(database.target, { deadlockRetries: 0 })] : [openStore(database.target)];
    const name = backend === "postgresql" ? new URL(database.url).pathname.slice(1) : "";
    const before = backend === "postgresql" ? await deadlocksOf(database.url, name) : 0;
    const failures: string[] = [];
    try {
      for (let batchStart = 0; batchStart < 60; batchStart += 6) {
        const outcomes = await Promise.allSettled(Array.from({ length: 6 }, (_, i) => round(stores[i % stores.length]!, batchStart + i)).flat());
        for (const outcome of outcomes) if (outcome.status === "rejected") failures.push(String((outcome.reason as { code?: string }).code ?? outcome.reason));
      }
      const duplicates = await stores[0]!.execute(function* () {
        return yield* all("select kind, repository_id, pull_number, head_sha, base_ref, count(*) as n from jobs where state <> 'dead' group by kind, repository_id, pull_number, head_sha, base_ref having count(*) > 1");
      });
      expect(duplicates).toEqual([]);
    } finally {
      for (const store of stores) await store.close();
    }
    expect(failures).toEqual([]);
    if (backend === "postgresql") {
      // A backend reports its deadlocks to the cumulative statistics when it exits: the pools are closed above.
      await Bun.sleep(1_200);
      expect(await deadlocksOf(database.url, name)).toBe(before);
    }
    await database.drop();
  }, 120_000);
});

describe("deadlock retry on postgresql", () => {
  /**
   * A session outside the store takes a pull request's row and then its head's row: the opposite of the store's order. The
   * acceptance that waits on the pull request's row while holding the head's is the one PostgreSQL aborts (it waited longest).
   */
  async function acceptAgainstOppositeOrder(retries: number) {
    const database = await createTestDatabase("postgresql");
    await migrateDatabase(database.target, 1);
    const reasons: string[] = [];
    const store = openStore(database.target, { deadlockRetries: retries, onRetry: (reason) => reasons.push(reason) });
    const head = HEADS[0]!;
    const trigger = (deliveryId: string) => store.execute(() => acceptDirectTrigger({ ...repo, deliveryId, event: "pull_request_review", action: "submitted", pullNumber: 1, headSha: head, now: 5 }));
    await trigger("seed");
    const other = postgres(database.url, { max: 1, onnotice: () => {} });
    try {
      const reserved = await other.reserve();
      await reserved`begin`;
      await reserved`update pull_generations set updated_at_ms = 6 where repository_id = ${repo.repositoryId} and pull_number = 1`;
      const accepted = trigger("racing").then((value) => ({ value }), (error: { code?: string }) => ({ error: error.code ?? String(error) }));
      await Bun.sleep(200); // the acceptance now holds the head's row and waits for the pull request's
      const opposite = reserved`update head_generations set updated_at_ms = 6 where repository_id = ${repo.repositoryId} and head_sha = ${head}`.then(() => "ok", (e: { code?: string }) => e.code);
      expect(await opposite).toBe("ok"); // granted once PostgreSQL aborted the acceptance's transaction
      await reserved`commit`;
      const outcome = await accepted;
      reserved.release();
      return { outcome, reasons };
    } finally {
      await other.end();
      await store.close();
      await database.drop();
    }
  }

  test("a webhook acceptance aborted by a deadlock runs again and is accepted", async () => {
    const { outcome, reasons } = await acceptAgainstOppositeOrder(4);
    expect(outcome).toEqual({ value: { kind: "accepted", sharedGeneration: 2, evaluationGeneration: 2, rememberedCheckRunId: null, holdsWork: false } });
    expect(reasons).toEqual(["deadlock"]);
  }, 30_000);

  test("without retries the same deadlock reaches the caller (the test above can fail)", async () => {
    const { outcome, reasons } = await acceptAgainstOppositeOrder(0);
    expect(outcome).toEqual({ error: "40P01" });
    expect(reasons).toEqual([]);
  }, 30_000);
});
