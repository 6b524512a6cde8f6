import { afterEach, describe, expect, test } from "bun:test";
import { BACKENDS, type TestDatabase, openMigratedStore } from "../../e2e/support/databases.ts";
import { decodeRecordBody } from "../records/codec.ts";
import { sampleDecisionBody } from "../records/fixtures.ts";
import {
  acquireElectionLease, all, confirmDecision, finishHeadInvalidation, markHeadInvalidated, type MergeInput, markGuardedReset, pruneHistory, readHeadCheck, readHistoryBatch, recordMerge, recordPendingDecision,
  readFences, readMergesAwaitingEnrollment, recordRecoveredMerges, rememberHeadCheck, run, settleMergeEnrollment, type Store, supersedeForFanout,
} from "./index.ts";

/** Decision records and merge records, the write side (DESIGN 3.10, migration 0008). */
const HEAD = "d".repeat(40);
const lease = { name: "reconciler", owner: "r1", ttlMs: 60_000 };

describe.each(BACKENDS)("decision and merge records on %s", (backend) => {
  let database: TestDatabase;
  let store: Store;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });
  async function open() {
    ({ database, store } = await openMigratedStore(backend));
  }
  const records = () => store.execute(() => all<{ id: number; pending_token: string | null; confirmed_at_ms: number | null; conclusion: string; digest: string; body: Uint8Array }>(
    "select id, pending_token, confirmed_at_ms, conclusion, digest, body from decision_records order by id",
  ));
  const merges = () => store.execute(() => all("select pull_number, head_sha, merge_commit_sha, merged_by_login, decision_id, decision_conclusion, unapproved, recovered from merge_records order by id"));
  const merge = (overrides: Partial<MergeInput> = {}): MergeInput => ({
    installationId: 4, repositoryId: 40, repositoryFullName: "acme/web", pullNumber: 7, headSha: HEAD, mergeCommitSha: "m".repeat(40), baseSha: "b".repeat(40),
    mergedBy: { id: 102, login: "bob" }, mergedAtMs: 1_000, recovered: false, now: 2_000, ...overrides,
  });
  const truth = (value: unknown) => value === true || Number(value) === 1;

  test("a record written with the pending token is unconfirmed until the settle confirms it, and keeps the body it was given", async () => {
    await open();
    await store.execute(() => rememberHeadCheck({ installationId: 4, repositoryId: 40, headSha: HEAD, checkRunId: 900, now: 1 }));
    await store.execute(() => recordPendingDecision({ body: sampleDecisionBody(), sharedGeneration: 3, digest: "dg1", token: "pending:1" }, { kind: "begin", now: 2 }));
    expect((await store.execute(() => readHeadCheck(40, HEAD)))?.digest).toBe("pending:1");
    const [written] = await records();
    expect(written).toMatchObject({ pending_token: "pending:1", confirmed_at_ms: null, conclusion: "success", digest: "dg1" });
    expect(decodeRecordBody(new Uint8Array(written!.body))).toEqual(sampleDecisionBody());
    expect(await store.execute(() => confirmDecision({ repositoryId: 40, headSha: HEAD, token: "pending:1", now: 5, settle: { digest: "dg1", generation: 3 } }))).toBe(true);
    expect(Number((await records())[0]!.confirmed_at_ms)).toBe(5);
    expect(await store.execute(() => readHeadCheck(40, HEAD))).toMatchObject({ digest: "dg1", digest_generation: 3 });
  });

  test("a record folded into remembering a check found or created under the guards writes the token and the run ID", async () => {
    await open();
    await store.execute(() => recordPendingDecision({ body: sampleDecisionBody({ conclusion: "failure" }), sharedGeneration: 1, digest: "dg", token: "pending:2" }, { kind: "remember", checkRunId: 901, now: 2 }));
    expect(await store.execute(() => readHeadCheck(40, HEAD))).toMatchObject({ check_run_id: 901, digest: "pending:2" });
    expect(await records()).toMatchObject([{ pending_token: "pending:2", confirmed_at_ms: null, conclusion: "failure" }]);
  });

  test("a settle that a reset beat still confirms the record: the write reached the forge", async () => {
    await open();
    await store.execute(() => recordPendingDecision({ body: sampleDecisionBody(), sharedGeneration: 1, digest: "dg", token: "pending:3" }, { kind: "remember", checkRunId: 901, now: 2 }));
    await store.execute(() => rememberHeadCheck({ installationId: 4, repositoryId: 40, headSha: HEAD, checkRunId: 902, now: 3 })); // another run: token gone
    expect(await store.execute(() => confirmDecision({ repositoryId: 40, headSha: HEAD, token: "pending:3", now: 4, settle: { digest: "dg", generation: 1 } }))).toBe(false);
    expect(Number((await records())[0]!.confirmed_at_ms)).toBe(4);
  });

  test("a republication of the same result on the same head and generation writes no second record; an unconfirmed one is confirmed by the attempt that lands", async () => {
    await open();
    const pending = (token: string, generation = 1, digest = "dg") => store.execute(() => recordPendingDecision({ body: sampleDecisionBody(), sharedGeneration: generation, digest, token }, { kind: "remember", checkRunId: 901, now: 2 }));
    await pending("pending:a"); // its write failed: never confirmed
    await pending("pending:b");
    expect(await records()).toMatchObject([{ pending_token: "pending:b", confirmed_at_ms: null }]);
    expect(await store.execute(() => confirmDecision({ repositoryId: 40, headSha: HEAD, token: "pending:a", now: 3 }))).toBe(false);
    expect(await store.execute(() => confirmDecision({ repositoryId: 40, headSha: HEAD, token: "pending:b", now: 4 }))).toBe(true);
    await pending("pending:c"); // the same result again after a reset: the confirmed record stays as it was
    expect(await records()).toMatchObject([{ pending_token: "pending:b" }]);
    expect(Number((await records())[0]!.confirmed_at_ms)).toBe(4);
    await pending("pending:d", 2); // another generation: another record
    await pending("pending:e", 2, "other"); // another result: another record
    expect((await records()).map((r) => r.pending_token)).toEqual(["pending:b", "pending:d", "pending:e"]);
  });

  test("a retried publication keeps its unconfirmed record where it was in the history: an export paging past it sees it once, at its first time", async () => {
    await open();
    const at = (iso: string, head = HEAD) => sampleDecisionBody({ published_at: iso, head_sha: head });
    const pending = (body: ReturnType<typeof at>, token: string) => store.execute(() => recordPendingDecision({ body, sharedGeneration: 1, digest: "dg", token }));
    await pending(at("2026-11-01T12:00:00.000Z"), "pending:a"); // its write failed: never confirmed
    await pending(at("2026-11-01T12:00:05.000Z", "e".repeat(40)), "pending:other");
    const first = await store.execute(() => readHistoryBatch({}, null, 1));
    expect(first.records.map((r) => r.kind === "decision" && r.published_at)).toEqual(["2026-11-01T12:00:00.000Z"]);
    await pending(at("2026-11-01T12:00:10.000Z"), "pending:b"); // the retry, later: it adopts the token, not a new place
    const rest = await store.execute(() => readHistoryBatch({}, first.next, 10));
    expect(rest.records.map((r) => r.kind === "decision" && r.head_sha)).toEqual(["e".repeat(40)]);
    const whole = await store.execute(() => readHistoryBatch({}, null, 10));
    expect(whole.records.map((r) => r.kind === "decision" && r.published_at)).toEqual(["2026-11-01T12:00:00.000Z", "2026-11-01T12:00:05.000Z"]);
    expect(await store.execute(() => confirmDecision({ repositoryId: 40, headSha: HEAD, token: "pending:b", now: Date.parse("2026-11-01T12:00:11.000Z") }))).toBe(true);
    expect((await store.execute(() => readHistoryBatch({}, null, 10))).records.map((r) => r.kind === "decision" && [r.published_at, r.confirmed])).toEqual([["2026-11-01T12:00:00.000Z", true], ["2026-11-01T12:00:05.000Z", false]]);
  });

  test("a merge with no decision record on its head is unapproved; recorded once, however often it is delivered", async () => {
    await open();
    expect(await store.execute(() => recordMerge(merge()))).toMatchObject({ unapproved: true });
    expect(await store.execute(() => recordMerge(merge()))).toBeNull();
    const [row] = await merges();
    expect(row).toMatchObject({ pull_number: 7, head_sha: HEAD, merge_commit_sha: "m".repeat(40), merged_by_login: "bob", decision_id: null, decision_conclusion: null });
    expect(truth(row!.unapproved)).toBe(true);
    expect(truth(row!.recovered)).toBe(false);
  });

  test("a merge names the newest record of its head; only a confirmed success approves it", async () => {
    await open();
    const decide = (pull: number, conclusion: "success" | "failure", token: string, digest: string) =>
      store.execute(() => recordPendingDecision({ body: sampleDecisionBody({ pull_request: pull, conclusion }), sharedGeneration: 1, digest, token }, { kind: "remember", checkRunId: 901, now: 2 }));
    const confirm = (token: string) => store.execute(() => confirmDecision({ repositoryId: 40, headSha: HEAD, token, now: 3 }));
    await decide(1, "success", "pending:1", "s1");
    await confirm("pending:1");
    await decide(2, "success", "pending:2", "s2"); // never confirmed
    await decide(3, "success", "pending:3", "s3");
    await confirm("pending:3");
    await decide(3, "failure", "pending:4", "f3"); // newer than the success
    await confirm("pending:4");
    expect(await store.execute(() => recordMerge(merge({ pullNumber: 1 })))).toMatchObject({ unapproved: false });
    expect(await store.execute(() => recordMerge(merge({ pullNumber: 2 })))).toMatchObject({ unapproved: true });
    expect(await store.execute(() => recordMerge(merge({ pullNumber: 3, recovered: true, mergedAtMs: Date.parse("2026-11-02T00:00:00Z") })))).toMatchObject({ unapproved: true });
    const ids = (await records()).map((r) => Number(r.id));
    const rows = await merges();
    expect(rows.map((r) => [Number(r.decision_id), r.decision_conclusion, truth(r.unapproved)])).toEqual([[ids[0], "success", false], [ids[1], "success", true], [ids[3], "failure", true]]);
    expect(truth(rows[2]!.recovered)).toBe(true);
  });

  test("a recovered merge is judged by the records published before it merged, not by a later evaluation of the closed pull request", async () => {
    await open();
    const at = (ms: number) => new Date(ms).toISOString();
    const decide = (pull: number, conclusion: "success" | "failure", publishedMs: number, token: string) =>
      store.execute(() => recordPendingDecision({ body: sampleDecisionBody({ pull_request: pull, conclusion, published_at: at(publishedMs) }), sharedGeneration: publishedMs, digest: conclusion, token }, { kind: "remember", checkRunId: 901, now: 2 }));
    const confirm = (token: string) => store.execute(() => confirmDecision({ repositoryId: 40, headSha: HEAD, token, now: 3 }));
    const MERGED = 10_000_000;
    await decide(1, "failure", MERGED - 120_000, "t1");
    await confirm("t1");
    await decide(1, "success", MERGED + 300_000, "t2"); // after the merge
    await confirm("t2");
    await decide(2, "success", MERGED - 120_000, "t3");
    await confirm("t3");
    await decide(2, "failure", MERGED + 30_000, "t4"); // within the clocks' skew: counts as before
    await confirm("t4");
    expect(await store.execute(() => recordMerge(merge({ pullNumber: 1, mergedAtMs: MERGED, recovered: true })))).toMatchObject({ unapproved: true });
    expect(await store.execute(() => recordMerge(merge({ pullNumber: 2, mergedAtMs: MERGED, recovered: true })))).toMatchObject({ unapproved: true });
    expect((await merges()).map((r) => r.decision_conclusion)).toEqual(["failure", "failure"]);
  });

  /** A confirmed success of `pull` on `head`, published at `publishedMs`. */
  const succeed = async (pull: number, publishedMs: number, head = HEAD) => {
    const token = `pending:${pull}:${publishedMs}`;
    await store.execute(() => recordPendingDecision({ body: sampleDecisionBody({ pull_request: pull, head_sha: head, published_at: new Date(publishedMs).toISOString() }), sharedGeneration: publishedMs, digest: token, token }));
    await store.execute(() => confirmDecision({ repositoryId: 40, headSha: head, token, now: publishedMs + 1 }));
  };
  /** The head's generations row with S = shared and I = invalidated (as an acceptance leaves it, before its fast path). */
  const generations = (head: string, shared: number, invalidated: number) => store.execute(() => run(
    "insert into head_generations (installation_id, repository_id, head_sha, shared_generation, invalidated_generation, updated_at_ms, check_untried) values (4, 40, $1, $2, $3, 0, 0)",
    head, shared, invalidated,
  ));
  const repository = { installationId: 4, repositoryId: 40, owner: "acme", name: "web" };
  const resetColumn = () => store.execute(() => all<{ head_sha: string; reset_at_ms: number | null }>("select head_sha, reset_at_ms from head_generations order by head_sha"));

  test("a merge after a reset that followed the head's success is unapproved, naming the success and the reset; a success after the reset approves again", async () => {
    await open();
    await succeed(7, 1_000);
    await succeed(8, 1_000);
    await generations(HEAD, 2, 1);
    // The fast path reset the check for S = 2 (a dismissal, a new pull request on the head, a push back to it).
    expect(await store.execute(() => markHeadInvalidated({ repositoryId: 40, headSha: HEAD, generation: 2, now: 2_000 }))).toBe(true);
    expect(await store.execute(() => recordMerge(merge({ pullNumber: 7, now: 2_500 })))).toMatchObject({ unapproved: true });
    await succeed(8, 3_000);
    expect(await store.execute(() => recordMerge(merge({ pullNumber: 8, now: 3_500 })))).toMatchObject({ unapproved: false });
    const rows = await store.execute(() => all<{ pull_number: number; decision_conclusion: string; unapproved: unknown; reset_at_ms: number | null }>("select pull_number, decision_conclusion, unapproved, reset_at_ms from merge_records order by id"));
    expect(rows.map((r) => [r.pull_number, r.decision_conclusion, truth(r.unapproved), r.reset_at_ms === null ? null : Number(r.reset_at_ms)])).toEqual([[7, "success", true, 2_000], [8, "success", false, null]]);
  });

  test("every reset path marks the head: the invalidation job, an authority fan-out, the worker's in-progress write; a head whose generation was invalidated already is not reset", async () => {
    await open();
    const [a, b, c, d] = ["a".repeat(40), "b".repeat(40), "c".repeat(40), "e".repeat(40)] as const;
    for (const head of [a, b, c, d]) await generations(head, 1, 1);
    await store.execute(() => run("update head_generations set shared_generation = 2 where head_sha = $1", a));
    await store.execute(() => finishHeadInvalidation(repository, a, 2, [], 5_000)); // the invalidation reset a's check for S = 2
    await store.execute(() => finishHeadInvalidation(repository, b, 1, [], 5_000)); // b was invalidated already: its check was kept
    await store.execute(() => supersedeForFanout(repository, [{ number: 9, headSha: c }], 6_000, { scoped: true }));
    await store.execute(() => markGuardedReset(40, d, 7_000));
    expect((await resetColumn()).map((r) => [r.head_sha, r.reset_at_ms === null ? null : Number(r.reset_at_ms)])).toEqual([[a, 5_000], [b, null], [c, 6_000], [d, 7_000]]);
    // A repository-wide fan-out resets every check it names: those heads are marked, and no other.
    await store.execute(() => supersedeForFanout(repository, [{ number: 10, headSha: b }], 8_000, { heads: [a] }));
    expect((await resetColumn()).map((r) => Number(r.reset_at_ms))).toEqual([8_000, 8_000, 6_000, 7_000]);
  });

  test("a recovered merge counts a reset after its decision as withdrawing it, even one after the merge: the store cannot tell an earlier one from it", async () => {
    await open();
    await succeed(7, 1_000);
    await generations(HEAD, 2, 1);
    await store.execute(() => markHeadInvalidated({ repositoryId: 40, headSha: HEAD, generation: 2, now: 900_000 }));
    expect(await store.execute(() => recordMerge(merge({ pullNumber: 7, mergedAtMs: 2_000, recovered: true })))).toMatchObject({ unapproved: true });
  });

  test("a merge awaits its enrollment until settled once: not_enrolled is never unapproved, enrolled keeps its judgement; the evaluation's fences read says which pull requests await", async () => {
    await open();
    const fences = (pullNumber: number) => store.execute(() => readFences({ jobId: 1, owner: "w", installationId: 4, repositoryId: 40, headSha: HEAD, pullNumber, now: 1, withMergeAwaiting: true }));
    await store.execute(() => recordMerge(merge({ pullNumber: 7 })));
    await store.execute(() => recordMerge(merge({ pullNumber: 8, baseSha: null })));
    const pending = await store.execute(() => readMergesAwaitingEnrollment(null));
    expect(pending.map((m) => [m.pullNumber, m.baseSha, m.repositoryFullName, m.recovered])).toEqual([[7, "b".repeat(40), "acme/web", false], [8, null, "acme/web", false]]);
    expect((await store.execute(() => readMergesAwaitingEnrollment({ repositoryId: 40, pullNumber: 8 }))).map((m) => m.pullNumber)).toEqual([8]);
    expect((await fences(7)).mergeAwaitingEnrollment).toBe(true);
    expect((await fences(9)).mergeAwaitingEnrollment).toBe(false);

    expect(await store.execute(() => settleMergeEnrollment(pending[0]!.id, "not_enrolled", 9))).toEqual({ unapproved: false });
    expect(await store.execute(() => settleMergeEnrollment(pending[0]!.id, "enrolled", 9))).toBeNull(); // settled once
    expect(await store.execute(() => settleMergeEnrollment(pending[1]!.id, "enrolled", 9))).toEqual({ unapproved: true });
    const rows = await store.execute(() => all<{ pull_number: number; enrollment: string; unapproved: unknown; base_sha: string | null }>("select pull_number, enrollment, unapproved, base_sha from merge_records order by id"));
    expect(rows.map((r) => [r.pull_number, r.enrollment, truth(r.unapproved), r.base_sha])).toEqual([[7, "not_enrolled", false, "b".repeat(40)], [8, "enrolled", true, null]]);
    expect(await store.execute(() => readMergesAwaitingEnrollment(null))).toEqual([]);
    expect((await fences(7)).mergeAwaitingEnrollment).toBe(false);
    // Only unapproved enrolled merges answer the history's unapproved filter.
    const unapproved = await store.execute(() => readHistoryBatch({ unapproved: true }, null, 10));
    expect(unapproved.records.map((r) => r.kind === "merge" && [r.pull_request, r.enrollment])).toEqual([[8, "enrolled"]]);
  });

  test("a merge approved by a break-glass override says so, as its record does", async () => {
    await open();
    const breakGlass = { review_id: 12, reviewer_id: 130, reviewer_login: "oncall", reason: "prod is down", team: "sre", unsatisfied_owner_sets: [0] };
    await store.execute(() => recordPendingDecision({ body: sampleDecisionBody({ break_glass: breakGlass }), sharedGeneration: 1, digest: "bg", token: "pending:bg" }));
    await store.execute(() => confirmDecision({ repositoryId: 40, headSha: HEAD, token: "pending:bg", now: 3 }));
    expect(truth((await store.execute(() => all<{ break_glass: unknown }>("select break_glass from decision_records")))[0]!.break_glass)).toBe(true);
    expect(await store.execute(() => recordMerge(merge()))).toMatchObject({ unapproved: false });
    expect(truth((await store.execute(() => all<{ break_glass: unknown }>("select break_glass from merge_records")))[0]!.break_glass)).toBe(true);
  });

  test("the reconciler's recovered merges and its pruning are fenced by its lease; pruning removes only what is older than the cutoff", async () => {
    await open();
    expect(await store.execute(() => recordRecoveredMerges(lease, [merge()], 10))).toBeNull();
    expect(await store.execute(() => acquireElectionLease(lease, 10))).toBe(true);
    expect(await store.execute(() => recordRecoveredMerges(lease, [merge({ now: 100, recovered: true }), merge({ pullNumber: 8, now: 300, recovered: true })], 11))).toHaveLength(2);
    expect(await store.execute(() => recordRecoveredMerges(lease, [merge({ recovered: true })], 12))).toEqual([]);
    await store.execute(() => recordPendingDecision({ body: sampleDecisionBody({ published_at: new Date(100).toISOString() }), sharedGeneration: 1, digest: "a", token: null }));
    await store.execute(() => recordPendingDecision({ body: sampleDecisionBody({ published_at: new Date(300).toISOString() }), sharedGeneration: 1, digest: "b", token: null }));
    expect(await store.execute(() => pruneHistory({ ...lease, owner: "r2" }, 200, 13))).toBeNull();
    // What a pruned record verified as a merge group goes with it; a kept record's rows stay.
    const [pruned, kept] = (await records()).map((r) => Number(r.id));
    await store.execute(function* () {
      yield* run("insert into merge_group_verified (repository_id, pull_number, head_sha, record_id) values (40, 7, $1, $2), (40, 8, $1, $3)", HEAD, pruned, kept);
    });
    expect(await store.execute(() => pruneHistory(lease, 200, 13))).toBe(2);
    expect((await records()).map((r) => r.digest)).toEqual(["b"]);
    expect((await store.execute(() => all<{ record_id: number }>("select record_id from merge_group_verified"))).map((r) => Number(r.record_id))).toEqual([kept!]);
    expect((await merges()).map((r) => r.pull_number)).toEqual([8]);
    expect(await store.execute(() => pruneHistory(lease, 200, 14, 1))).toBe(0);
  });
});
