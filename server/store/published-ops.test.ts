import { afterEach, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import postgres from "postgres";
import { BACKENDS, createTestDatabase, type TestDatabase, openMigratedStore } from "../../e2e/support/databases.ts";
import { MIGRATIONS } from "./migrations.ts";
import {
  acceptAuthorityEvent, acceptDirectTrigger, queueMissingWork, readHeadCheckState, recordCheckCreation, recordLiveHead, acceptBaseRefPush, acquireElectionLease, all, beginCheckWrite, claimNext, encodeSubjects, SUBJECTS_TEXT_LIMIT, splitInstallationFanout, clearCheckDigest, finishHeadInvalidation, forgetHeadCheck, prunePublishedBatch,
  type PossibleSuccesses, readEvaluations, readHeadCheck, readPossibleSuccesses, recordEvaluation, rememberHeadCheck, run, settleCheckDigest, type Store, supersedeAndQueue, supersedeForFanout, type SuccessCursor,
} from "./index.ts";

/** What the service last published (migration 0004): evaluation records and the managed check's ID and digest per head. */
const repo = { installationId: 4, repositoryId: 40, owner: "acme", name: "web" };
const HEAD = "d".repeat(40);
const OTHER_HEAD = "e".repeat(40);
const BASE = "f".repeat(40);
const lease = { name: "reconciler", owner: "r1", ttlMs: 60_000 };

describe.each(BACKENDS)("published state on %s", (backend) => {
  let database: TestDatabase;
  let store: Store;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });
  async function open() {
    ({ database, store } = await openMigratedStore(backend));
  }
  const seen = (pullNumber: number, generation: number, now: number, headSha = HEAD) =>
    store.execute(() => recordEvaluation({ installationId: 4, repositoryId: 40, pullNumber, headSha, baseSha: BASE, updatedAtMs: now - 1, evaluationGeneration: generation, authoritySubjects: null, now }));
  const remember = (checkRunId: number, digest: string | null = null, headSha = HEAD, repositoryId = 40) =>
    store.execute(() => rememberHeadCheck({ installationId: 4, repositoryId, headSha, checkRunId, digest, now: 5 }));
  const check = (headSha = HEAD, repositoryId = 40) => store.execute(() => readHeadCheck(repositoryId, headSha));
  const settle = (token: string, digest: string, generation = 3) => store.execute(() => settleCheckDigest({ repositoryId: 40, headSha: HEAD, token, digest, generation, now: 9 }));

  test("an evaluation record keeps what the newest evaluation saw; an older generation finishing later changes nothing", async () => {
    await open();
    await seen(1, 2, 100);
    await seen(1, 1, 200, OTHER_HEAD);
    await seen(2, 1, 300);
    expect(await store.execute(() => readEvaluations(40))).toEqual(expect.arrayContaining([
      { pull_number: 1, head_sha: HEAD, base_sha: BASE, pull_updated_at_ms: 99, evaluated_at_ms: 100, authority_subjects: null },
      { pull_number: 2, head_sha: HEAD, base_sha: BASE, pull_updated_at_ms: 299, evaluated_at_ms: 300, authority_subjects: null },
    ]));
    await seen(1, 3, 400, OTHER_HEAD);
    expect((await store.execute(() => readEvaluations(40))).find((r) => r.pull_number === 1)).toMatchObject({ head_sha: OTHER_HEAD, evaluated_at_ms: 400 });
    expect(await store.execute(() => readEvaluations(41))).toEqual([]);
  });

  test("what could hold a success in a repository is every recorded evaluation, then every remembered check no record names, page by page", async () => {
    await open();
    const heads = ["1", "2", "3", "4", "5"].map((c) => c.repeat(40));
    for (const [i, number] of [7, 3, 12, 5].entries()) await seen(number, 1, 100 + i, heads[i % 2]);
    await remember(70, null, heads[0]); // the head of recorded evaluations: not listed again
    await remember(71, null, heads[4]!);
    await remember(72, null, heads[2]!);
    await remember(73, null, heads[3]!, 41); // another repository's
    await store.execute(() => recordEvaluation({ installationId: 4, repositoryId: 41, pullNumber: 1, headSha: heads[1]!, baseSha: BASE, updatedAtMs: null, evaluationGeneration: 1, authoritySubjects: null, now: 1 }));
    const pages: unknown[] = [];
    let cursor: SuccessCursor | null = null;
    do {
      const at: SuccessCursor | null = cursor;
      const page: PossibleSuccesses = await store.execute(() => readPossibleSuccesses(40, at, { limit: 2 }));
      pages.push({ pulls: page.pulls.map((p) => [p.number, p.headSha[0]]), heads: page.heads.map((h) => h[0]) });
      cursor = page.next;
    } while (cursor !== null);
    expect(pages).toEqual([
      { pulls: [[3, "2"], [5, "2"]], heads: [] },
      { pulls: [[7, "1"], [12, "1"]], heads: [] },
      { pulls: [], heads: [] },
      { pulls: [], heads: ["3", "5"] },
      { pulls: [], heads: [] },
    ]);
    const onHead = await store.execute(() => readPossibleSuccesses(40, null, { headSha: heads[1]! }));
    expect(onHead).toEqual({ pulls: [{ number: 3, headSha: heads[1]!, authoritySubjects: null }, { number: 5, headSha: heads[1]!, authoritySubjects: null }], heads: [], next: null });
  });

  describe("whether a managed check creation was ever tried for a head (migration 0005)", () => {
    const state = (headSha = HEAD) => store.execute(() => readHeadCheckState(40, headSha));
    const created = (headSha: string) => store.execute(() => recordCheckCreation({ installationId: 4, repositoryId: 40, headSha, now: 7 }));

    test("a head an acceptance first saw is untried; a recorded creation makes it tried, and a later acceptance keeps it so", async () => {
      await open();
      expect(await state()).toEqual({ check: null, untried: null });
      await store.execute(() => acceptDirectTrigger({ ...repo, deliveryId: "d-1", event: "pull_request", action: "opened", pullNumber: 1, headSha: HEAD, now: 1 }));
      expect(await state()).toEqual({ check: null, untried: true });
      await created(HEAD);
      await remember(77);
      expect(await state()).toMatchObject({ check: { check_run_id: 77 }, untried: false });
      await store.execute(() => acceptDirectTrigger({ ...repo, deliveryId: "d-2", event: "pull_request_review", action: "submitted", pullNumber: 1, headSha: HEAD, now: 2 }));
      expect(await state()).toMatchObject({ untried: false });
    });

    test("a creation on a head no delivery brought makes its row, S = I = 0, so that a later acceptance cannot call the head untried", async () => {
      await open();
      await created(OTHER_HEAD);
      expect(await state(OTHER_HEAD)).toEqual({ check: null, untried: false });
      const [row] = await store.execute(() => all<{ shared_generation: number; invalidated_generation: number }>("select shared_generation, invalidated_generation from head_generations where head_sha = $1", OTHER_HEAD));
      expect([Number(row!.shared_generation), Number(row!.invalidated_generation)]).toEqual([0, 0]);
      await store.execute(() => acceptDirectTrigger({ ...repo, deliveryId: "d-3", event: "pull_request", action: "opened", pullNumber: 2, headSha: OTHER_HEAD, now: 3 }));
      expect(await state(OTHER_HEAD)).toEqual({ check: null, untried: false });
    });

    test("the migration leaves every head from before it tried, gives every head the service worked on without a row one saying so, and a row made without saying otherwise claims nothing", async () => {
      database = await createTestDatabase(backend);
      const before = MIGRATIONS.filter((m) => m.version < 5);
      const migration5 = MIGRATIONS.find((m) => m.version === 5)!;
      const rows = [
        "insert into head_generations (installation_id, repository_id, head_sha, shared_generation, invalidated_generation, updated_at_ms) values (4, 40, 'h-with-row', 2, 2, 1)",
        "insert into head_checks (installation_id, repository_id, head_sha, check_run_id, updated_at_ms) values (4, 40, 'h-check-only', 9, 1)",
        "insert into pull_evaluations (installation_id, repository_id, pull_number, head_sha, base_sha, evaluation_generation, evaluated_at_ms) values (4, 40, 1, 'h-evaluated', 'b', 1, 1)",
        "insert into audit_events (at_ms, kind, installation_id, repository_id, pull_number, head_sha, outcome, detail) values (1, 'conclusion', 4, 40, 2, 'h-audited', 'success', '{}')",
        "insert into audit_events (at_ms, kind, installation_id, outcome, detail) values (1, 'authority', 4, 'queued', '{}')",
        "insert into jobs (kind, priority, installation_id, repository_id, pull_number, head_sha, run_at_ms, created_at_ms, updated_at_ms) values ('evaluation', 4, 4, 40, 3, 'h-queued', 1, 1, 1)",
        // Also named by another table: one row.
        "insert into head_checks (installation_id, repository_id, head_sha, check_run_id, updated_at_ms) values (4, 40, 'h-evaluated', 8, 1)",
      ];
      const after = "insert into head_generations (installation_id, repository_id, head_sha, updated_at_ms) values (4, 40, 'h-new', 3)";
      const query = "select head_sha, shared_generation, check_untried from head_generations order by head_sha";
      let found: { head_sha: string; shared_generation: number; check_untried: number }[];
      if (backend === "sqlite") {
        const db = new Database((database.target as { path: string }).path, { create: true });
        for (const text of [...before.map((m) => m.sqlite), ...rows, migration5.sqlite, after]) db.exec(text);
        found = db.query(query).all() as typeof found;
        db.close();
      } else {
        const sql = postgres(database.url, { max: 1, onnotice: () => {} });
        for (const text of [...before.map((m) => m.postgres), ...rows, migration5.postgres, after]) await sql.unsafe(text);
        found = (await sql.unsafe(query)) as unknown as typeof found;
        await sql.end();
      }
      expect(found.map((r) => [r.head_sha, Number(r.shared_generation), Number(r.check_untried)])).toEqual([
        ["h-audited", 0, 0], ["h-check-only", 0, 0], ["h-evaluated", 0, 0], ["h-new", 0, 0], ["h-queued", 0, 0], ["h-with-row", 2, 0],
      ]);
    });

    test("a head row made by a reconciler scan or by a moved pull request's live head says untried too", async () => {
      await open();
      const lease = { name: "reconciler", owner: "r1", ttlMs: 60_000 };
      await store.execute(function* () {
        yield* acquireElectionLease(lease, 1);
        return yield* queueMissingWork({ lease, repository: repo, pulls: [{ number: 1, headSha: HEAD }], now: 1 });
      });
      await store.execute(() => recordLiveHead({ ...repo, pullNumber: 2, headSha: OTHER_HEAD, now: 2 }));
      expect(await state(HEAD)).toEqual({ check: null, untried: true });
      expect(await state(OTHER_HEAD)).toEqual({ check: null, untried: true });
    });
  });

  test("a completing write's digest settles only while its pending token is still there", async () => {
    await open();
    await remember(7, "pending:a");
    expect(await settle("pending:a", "D1")).toBe(true);
    expect(await check()).toEqual({ check_run_id: 7, digest: "D1", digest_generation: 3 });

    // A reset between a write's start and its settling clears the token: the write's digest is never claimed.
    await store.execute(() => beginCheckWrite(40, HEAD, "pending:b", 10));
    expect(await check()).toEqual({ check_run_id: 7, digest: "pending:b", digest_generation: null });
    await store.execute(() => clearCheckDigest(40, HEAD, 11));
    expect(await settle("pending:b", "D2")).toBe(false);
    expect(await check()).toEqual({ check_run_id: 7, digest: null, digest_generation: null });

    // A later write's token wins over an earlier one.
    await store.execute(() => beginCheckWrite(40, HEAD, "pending:c", 12));
    await store.execute(() => beginCheckWrite(40, HEAD, "pending:d", 13));
    expect(await settle("pending:c", "D3")).toBe(false);
    expect(await settle("pending:d", "D4", 5)).toBe(true);
    expect(await check()).toEqual({ check_run_id: 7, digest: "D4", digest_generation: 5 });
  });

  test("remembering the same run keeps its digest; another run drops it; forgetting needs the same ID", async () => {
    await open();
    await remember(7, "pending:a");
    await settle("pending:a", "D1");
    await remember(7);
    expect(await check()).toEqual({ check_run_id: 7, digest: "D1", digest_generation: 3 });
    await remember(8);
    expect(await check()).toEqual({ check_run_id: 8, digest: null, digest_generation: null });
    await store.execute(() => forgetHeadCheck(40, HEAD, 7));
    expect((await check())?.check_run_id).toBe(8);
    await store.execute(() => forgetHeadCheck(40, HEAD, 8));
    expect(await check()).toBeNull();
  });

  test("a head invalidation clears its head's digest, a repository-wide fan-out every digest of the repository, a base-ref re-queue none", async () => {
    await open();
    const settled = async (headSha: string, repositoryId = 40) => {
      await store.execute(() => rememberHeadCheck({ installationId: 4, repositoryId, headSha, checkRunId: headSha === HEAD ? 1 : 2, digest: "pending:x", now: 1 }));
      await store.execute(() => settleCheckDigest({ repositoryId, headSha, token: "pending:x", digest: "D", generation: 1, now: 2 }));
    };
    for (const head of [HEAD, OTHER_HEAD]) await settled(head);
    await settled(HEAD, 41);
    await store.execute(() => supersedeAndQueue(repo, [{ number: 1, headSha: HEAD }], 3));
    expect((await check())?.digest).toBe("D");
    await store.execute(() => finishHeadInvalidation(repo, HEAD, 0, [1], 4));
    expect((await check())?.digest).toBeNull();
    expect((await check(OTHER_HEAD))?.digest).toBe("D");
    await store.execute(() => supersedeForFanout(repo, [{ number: 2, headSha: OTHER_HEAD }], 5));
    expect((await check(OTHER_HEAD))?.digest).toBeNull();
    expect((await check(HEAD, 41))?.digest).toBe("D");
    expect(await store.execute(() => all("select pull_number from jobs where kind = 'evaluation' order by pull_number"))).toEqual([{ pull_number: 1 }, { pull_number: 2 }]);
  });

  test("a scoped fan-out clears the digests of its pull requests' heads and of the other checks it goes on to reset, and no others", async () => {
    await open();
    const third = "c".repeat(40);
    for (const [i, head] of [HEAD, OTHER_HEAD, third].entries()) {
      await store.execute(() => rememberHeadCheck({ installationId: 4, repositoryId: 40, headSha: head, checkRunId: i + 1, digest: "pending:x", now: 1 }));
      await store.execute(() => settleCheckDigest({ repositoryId: 40, headSha: head, token: "pending:x", digest: "D", generation: 1, now: 2 }));
    }
    await store.execute(() => supersedeForFanout(repo, [{ number: 2, headSha: OTHER_HEAD }], 5, { scoped: true, heads: [third] }));
    expect([(await check())?.digest, (await check(OTHER_HEAD))?.digest, (await check(third))?.digest]).toEqual(["D", null, null]);
  });

  test("pruning removes evaluation records past their horizon and check records no recorded evaluation names, fenced by the lease", async () => {
    await open();
    await seen(1, 1, 100); // old: pruned
    await seen(2, 1, 5_000, OTHER_HEAD); // recent: kept, and keeps OTHER_HEAD's check
    await remember(7); // HEAD: old and named by no evaluation once pull request 1's record goes
    await remember(8, null, OTHER_HEAD);
    await store.execute(() => run("update head_checks set updated_at_ms = 50"));
    expect(await store.execute(() => prunePublishedBatch(lease, { evaluationCutoffMs: 1_000, checkCutoffMs: 1_000 }, 6_000))).toBeNull();
    expect(await store.execute(() => acquireElectionLease(lease, 6_000))).toBe(true);
    expect(await store.execute(() => prunePublishedBatch(lease, { evaluationCutoffMs: 1_000, checkCutoffMs: 1_000 }, 6_001, 10))).toBe(2);
    expect((await store.execute(() => readEvaluations(40))).map((r) => r.pull_number)).toEqual([2]);
    expect(await check()).toBeNull();
    expect((await check(OTHER_HEAD))?.check_run_id).toBe(8);
    expect(await store.execute(() => prunePublishedBatch(lease, { evaluationCutoffMs: 1_000, checkCutoffMs: 1_000 }, 6_002))).toBe(0);
  });

  describe("authority fan-out rows scoped to subjects", () => {
    const accept = (deliveryId: string, subjects: string | null, kind: "installation" | "repositories" = "repositories") =>
      store.execute(() => acceptAuthorityEvent({
        deliveryId, event: "membership", action: "added", installationId: 4, now: 10,
        scope: kind === "installation" ? { kind, ...(subjects === null ? {} : { subjects }) } : { kind, repositories: [repo], ...(subjects === null ? {} : { subjects }) },
      }), { exclusiveGuard: { installationId: 4, timeoutMs: 2_000 } });
    const fanouts = () => store.execute(() => all<{ kind: string; authority_subjects: string | null }>("select kind, authority_subjects from jobs where kind like '%fanout' order by kind"));

    test("events merged into one live row unite their subjects; a wide event makes it wide and it stays wide", async () => {
      await open();
      await accept("a1", encodeSubjects(["user:dave"]));
      await accept("a2", encodeSubjects(["team:acme/core", "user:dave"]));
      expect(await fanouts()).toEqual([{ kind: "repository_fanout", authority_subjects: "user:dave\nteam:acme/core\nuser:dave\n" }]);
      await accept("a3", null);
      await accept("a4", encodeSubjects(["user:erin"]));
      expect(await fanouts()).toEqual([{ kind: "repository_fanout", authority_subjects: null }]);
    });

    test("a union past the text bound is wide; a scoped row leaves base-ref work alone, a wide one replaces it", async () => {
      await open();
      const half = encodeSubjects(Array.from({ length: 1_500 }, (_, i) => `user:someone-with-a-long-login-${i}`))!;
      expect(half.length * 2).toBeGreaterThan(SUBJECTS_TEXT_LIMIT);
      await store.execute(() => acceptBaseRefPush({ ...repo, deliveryId: "p1", action: null, baseRef: "main", now: 5 }));
      await accept("a1", half);
      expect(await store.execute(() => all("select id from jobs where kind = 'base_ref'"))).toHaveLength(1);
      await accept("a2", half);
      expect((await fanouts())[0]!.authority_subjects).toBeNull();
      await accept("a3", null);
      expect(await store.execute(() => all("select id from jobs where kind = 'base_ref'"))).toEqual([]);
    });

    test("an installation-wide scoped event splits into repository rows with its subjects", async () => {
      await open();
      await accept("a1", encodeSubjects(["user:dave"]), "installation");
      const row = (await store.execute(() => claimNext("w", 20, 1_000)))!;
      expect(row).toMatchObject({ kind: "installation_fanout", authority_subjects: "user:dave\n" });
      await store.execute(() => splitInstallationFanout(4, [repo, { ...repo, repositoryId: 41, name: "api" }], 21, row.authority_subjects));
      expect(await store.execute(() => all("select repository_id, authority_subjects from jobs where kind = 'repository_fanout' order by repository_id")))
        .toEqual([{ repository_id: 40, authority_subjects: "user:dave\n" }, { repository_id: 41, authority_subjects: "user:dave\n" }]);
    });
  });
});
