import { afterEach, describe, expect, test } from "bun:test";
import { createTestDatabase, type TestDatabase } from "../../e2e/support/databases.ts";
import {
  all, beginCheckWrite, clearCheckDigest, confirmDecision, forgetHeadCheck, lone, markGuardedReset, migrateDatabase, readFences, readHeadCheck, recordAudit, recordPendingDecision, rememberHeadCheck, settleCheckDigest,
} from "./index.ts";
import { PostgresStore } from "./postgres.ts";
import { sampleDecisionBody } from "../records/fixtures.ts";

/**
 * A process whose every transaction connection holds publication guards must not stall (issue 18's chaos failure): the
 * guards are session locks held on a reserved connection of the transaction pool while the holder writes a check, and the
 * holder's own store operations must then need no second reservation from that pool, or N holders on a pool of N wait for
 * each other until the pool's acquisition bound (2 s) fails them all, and the webhooks behind them are answered 503.
 * Every operation a guard holder runs is one statement sent alone (op.ts `lone`): it runs on the statement pool.
 * PostgreSQL only: SQLite has one connection and no pool to exhaust.
 */
const HEAD = "a".repeat(40);

describe("operations under the publication guards on postgresql", () => {
  let database: TestDatabase;
  let store: PostgresStore;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });

  test("a guard holder's store operations complete while the guards hold the only transaction connection", async () => {
    database = await createTestDatabase("postgresql");
    await migrateDatabase(database.target, 1);
    if (database.target.backend !== "postgresql") throw new Error("expected a PostgreSQL target");
    store = PostgresStore.open(database.target, { max: 1 });
    const release = await store.acquirePublicationGuards(4, 40, HEAD, 1_000);
    try {
      const now = 10;
      // What publishCompleted, shieldedReset, the fast path's guarded creation and ensureRememberedCheckInProgress run.
      const fences = await store.execute(() => readFences({ jobId: 1, owner: "w", installationId: 4, repositoryId: 40, headSha: HEAD, pullNumber: 7, now }));
      expect(fences).toEqual({ shared: 0, invalidated: 0, evaluation: 0, authorityEpoch: 0, fanoutPending: false, leaseHeld: false });
      await store.execute(() => rememberHeadCheck({ installationId: 4, repositoryId: 40, headSha: HEAD, checkRunId: 99, digest: "pending:1", now }));
      expect(await store.execute(() => readHeadCheck(40, HEAD))).toEqual({ check_run_id: 99, digest: "pending:1", digest_generation: null });
      await store.execute(() => beginCheckWrite(40, HEAD, "pending:2", now));
      expect(await store.execute(() => settleCheckDigest({ repositoryId: 40, headSha: HEAD, token: "pending:2", digest: "d", generation: 3, now }))).toBe(true);
      // The decision record rides on the token's write and on the settle (ops/record-ops.ts): still one statement each.
      const body = sampleDecisionBody({ installation_id: 4, repository: { id: 40, full_name: "acme/web" }, head_sha: HEAD });
      await store.execute(() => recordPendingDecision({ body, sharedGeneration: 3, digest: "e", token: "pending:3" }, { kind: "begin", now }));
      await store.execute(() => recordPendingDecision({ body, sharedGeneration: 3, digest: "e", token: "pending:3" }, { kind: "remember", checkRunId: 99, now }));
      expect(await store.execute(() => confirmDecision({ repositoryId: 40, headSha: HEAD, token: "pending:3", now, settle: { digest: "e", generation: 3 } }))).toBe(true);
      await store.execute(() => lone(clearCheckDigest(40, HEAD, now)));
      expect(await store.execute(() => readHeadCheck(40, HEAD))).toEqual({ check_run_id: 99, digest: null, digest_generation: null });
      // ensureRememberedCheckInProgress (a shared head): the head's last reset and the digest, one statement.
      await store.execute(() => markGuardedReset(40, HEAD, now));
      await store.execute(() => forgetHeadCheck(40, HEAD, 99));
      expect(await store.execute(() => readHeadCheck(40, HEAD))).toBeNull();
      await store.execute(() => lone(recordAudit({ kind: "conclusion", installationId: 4, repositoryId: 40, pullNumber: 7, headSha: HEAD, outcome: "success", detail: {}, now })));
    } finally {
      await release();
    }
    // The audit row is there (read after the release: an ordinary operation may use the transaction pool again).
    expect(await store.execute(() => all("select outcome from audit_events where head_sha = $1", HEAD))).toEqual([{ outcome: "success" }]);
  });
});
