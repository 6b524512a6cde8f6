import { afterEach, describe, expect, test } from "bun:test";
import { BACKENDS, createTestDatabase, openMigratedStore, type TestDatabase } from "../../e2e/support/databases.ts";
import { Database } from "bun:sqlite";
import { checksum } from "./migrations.ts";
import { baseEvidence } from "../evaluation/evidence-fixture.ts";
import { recordFixture } from "../records/record-fixture.ts";
import {
  acceptMergeGroupDestroyed, acceptMergeGroupRequest, all, claimNext, clearGroupReset, migrateDatabase, MIGRATIONS, openStore, readGroupFences, readMemberDecisions,
  acquireElectionLease, listHistory, pruneMergeGroupBatch, readHistoryRecord, readMergeGroup, recordGroupJudgement, recordMerge, recordPendingDecision, requeueGroupsOfPull, run, type Store,
} from "./index.ts";
import type { JudgedMember } from "../merge-queue/shapes.ts";
import { groupRecordBody } from "../worker/jobs/judge-merge-group.ts";
import { recordDigest, RECORD_FIELDS } from "../records/tamper-evidence.ts";

/** Merge-group acceptance (migration 0012): durable, fenced like a head, one live row per group, cancelled by `destroyed`. */
const repo = { installationId: 9, repositoryId: 300, owner: "acme", name: "web" };
const group = { headSha: "a".repeat(40), headRef: "refs/heads/gh-readonly-queue/main/pr-1-" + "b".repeat(40), baseRef: "main", baseSha: "b".repeat(40) };

describe.each(BACKENDS)("merge-group operations on %s", (backend) => {
  let database: TestDatabase;
  let store: Store;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });
  const request = (deliveryId: string, now = 1000, g = group) => store.execute(() => acceptMergeGroupRequest({ ...repo, deliveryId, action: "checks_requested", group: g, now }));
  const destroy = (deliveryId: string, reason: string | null, now = 2000) => store.execute(() => acceptMergeGroupDestroyed({ ...repo, deliveryId, action: "destroyed", group, reason, now }));
  const jobs = () => store.execute(function* () {
    return yield* all<{ kind: string; head_sha: string; base_ref: string; shared_generation: number; merges: number; state: string }>(
      "select kind, head_sha, base_ref, shared_generation, merges, state from jobs order by id",
    );
  });
  const fences = () => store.execute(function* () {
    return yield* all<{ shared_generation: number; invalidated_generation: number; check_untried: number }>("select shared_generation, invalidated_generation, check_untried from head_generations where head_sha = $1", group.headSha);
  });

  test("checks_requested records the group and queues one merge_group row at the group head's new generation", async () => {
    ({ database, store } = await openMigratedStore(backend));
    expect(await request("d1")).toEqual({ kind: "queued", sharedGeneration: 1 });
    expect((await jobs()).map((j) => ({ ...j, shared_generation: Number(j.shared_generation) }))).toEqual([{ kind: "merge_group", head_sha: group.headSha, base_ref: "main", shared_generation: 1, merges: 0, state: "pending" }]);
    expect(await store.execute(() => readMergeGroup(repo.repositoryId, group.headSha))).toEqual({
      installationId: 9, repositoryId: 300, headSha: group.headSha, headRef: group.headRef, baseRef: "main", baseSha: group.baseSha, state: "queued", destroyedReason: null, requestedAtMs: 1000, resetPending: false,
    });
    // No fast path resets a group's check: the acceptance keeps I = S, and the head has never had a check created.
    expect((await fences()).map((f) => [Number(f.shared_generation), Number(f.invalidated_generation), Number(f.check_untried)])).toEqual([[1, 1, 1]]);
  });

  test("a redelivered checks_requested changes nothing; another request for the same group merges into its live row", async () => {
    ({ database, store } = await openMigratedStore(backend));
    await request("d1");
    expect(await request("d1", 1500)).toEqual({ kind: "duplicate" });
    expect((await jobs())[0]!.merges).toBe(0);
    expect(await request("d2", 1600)).toEqual({ kind: "queued", sharedGeneration: 2 });
    const rows = await jobs();
    expect(rows).toHaveLength(1);
    expect([Number(rows[0]!.shared_generation), rows[0]!.merges]).toEqual([2, 1]);
  });

  test("destroyed cancels the pending row, advances the group head's generation and records why", async () => {
    ({ database, store } = await openMigratedStore(backend));
    await request("d1");
    expect(await destroy("x1", "dequeued")).toBe(true);
    expect(await jobs()).toEqual([]);
    expect(await store.execute(() => readMergeGroup(repo.repositoryId, group.headSha))).toMatchObject({ state: "destroyed", destroyedReason: "dequeued" });
    expect(Number((await fences())[0]!.shared_generation)).toBe(2);
    expect(await destroy("x1", "dequeued")).toBe(false);
  });

  test("a group being judged is not taken from its worker by destroyed; the advanced generation fences its publication", async () => {
    ({ database, store } = await openMigratedStore(backend));
    await request("d1");
    const claimed = await store.execute(() => claimNext("w/1", 5000, 30_000));
    expect(claimed).toMatchObject({ kind: "merge_group", head_sha: group.headSha, shared_generation: 1 });
    await destroy("x1", "merged", 5001);
    expect((await jobs()).map((j) => j.state)).toEqual(["leased"]);
    expect(Number((await fences())[0]!.shared_generation)).toBe(2);
  });

  test("a destroyed group's late checks_requested queues nothing; an unknown reason is kept as none", async () => {
    ({ database, store } = await openMigratedStore(backend));
    expect(await destroy("x1", "exploded")).toBe(true);
    expect(await store.execute(() => readMergeGroup(repo.repositoryId, group.headSha))).toMatchObject({ state: "destroyed", destroyedReason: null, baseRef: "main" });
    expect(await request("d1", 3000)).toEqual({ kind: "destroyed" });
    expect(await jobs()).toEqual([]);
  });

  const members = [{ pullNumber: 7, headSha: "7".repeat(40) }, { pullNumber: 8, headSha: "8".repeat(40) }];
  const judged = (success: boolean, now = 3000) => store.execute(() => recordGroupJudgement({ ...repo, headSha: group.headSha, success, members, now }));
  const requeue = (pullNumber: number, headSha: string, now = 4000) => store.execute(() => requeueGroupsOfPull({ ...repo, pullNumber, headSha, now }));

  test("a group judged success is queued again, its check to be reset, when one of its pull requests is evaluated on another head", async () => {
    ({ database, store } = await openMigratedStore(backend));
    await request("d1");
    await store.execute(function* () { yield* run("delete from jobs"); });
    await judged(true);
    expect(await requeue(7, "7".repeat(40))).toBe(0);
    expect(await jobs()).toEqual([]);
    expect(await requeue(7, "9".repeat(40))).toBe(1);
    expect((await jobs()).map((j) => [j.kind, j.head_sha, Number(j.shared_generation)])).toEqual([["merge_group", group.headSha, 2]]);
    expect(await store.execute(() => readMergeGroup(repo.repositoryId, group.headSha))).toMatchObject({ resetPending: true, requestedAtMs: 4000 });
    // Once queued again it is no longer judged success: a second evaluation queues nothing more.
    expect(await requeue(8, "9".repeat(40))).toBe(0);
    await store.execute(() => clearGroupReset(repo.repositoryId, group.headSha, 5000));
    expect(await store.execute(() => readMergeGroup(repo.repositoryId, group.headSha))).toMatchObject({ resetPending: false });
  });

  test("a group's judgement writes its merge_group record once per result and generation; a merge of a member at its head names it", async () => {
    ({ database, store } = await openMigratedStore(backend));
    const mergeOf = (pullNumber: number, headSha: string) => store.execute(() => recordMerge({
      installationId: 9, repositoryId: 300, repositoryFullName: "acme/web", pullNumber, headSha, mergeCommitSha: group.headSha, baseSha: group.baseSha, mergedBy: null, mergedAtMs: 4000, recovered: false, now: 4000,
    }));
    // #8's merge is recorded before the group's record (its closed delivery came first): the record links it when written.
    const early = (await mergeOf(8, members[1]!.headSha))!;
    await request("d1");
    const row = (await store.execute(() => readMergeGroup(repo.repositoryId, group.headSha)))!;
    const judgedMembers: JudgedMember[] = members.map((m, index) => ({ pullNumber: m.pullNumber, headSha: m.headSha, recordId: 40 + index, ruleSource: index === 0 ? "recorded" : "reevaluated", outcome: "passed", reason: null, changedBy: null }));
    const judge = (success: boolean, generation: number, now: number) => store.execute(() => recordGroupJudgement({
      ...repo, headSha: group.headSha, success, members, now,
      record: { body: groupRecordBody(repo, row, 555, success ? "success" : "failure", "Merge group verified: 2 pull requests", judgedMembers, now), sharedGeneration: generation, digest: success ? "ok" : "bad" },
    }));
    await judge(true, 1, 3000);
    await judge(true, 1, 3500); // the same result published again at the same generation: no second record
    const page = await store.execute(() => listHistory({ repository: "ACME/web", kind: "decision" }, null, 10));
    const groupId = page.items[0]!.id as `d${number}`;
    expect(page.items).toEqual([{
      schema_version: 1, kind: "merge_group", id: groupId, confirmed: true, repository: { id: 300, full_name: "acme/web" }, head_sha: group.headSha,
      base_ref: "main", conclusion: "success", title: "Merge group verified: 2 pull requests", published_at: new Date(3000).toISOString(), break_glass: false, pull_requests: [7, 8],
    }]);
    expect(await store.execute(() => readHistoryRecord(groupId))).toMatchObject({
      kind: "merge_group", base_sha: group.baseSha, check_run_id: 555,
      members: [
        { pull_request: 7, head_sha: members[0]!.headSha, decision_id: "d40", rule_source: "recorded", outcome: "passed", reason: null, changed_by: null },
        { pull_request: 8, head_sha: members[1]!.headSha, decision_id: "d41", rule_source: "reevaluated", outcome: "passed", reason: null, changed_by: null },
      ],
    });
    expect(await store.execute(() => readHistoryRecord(`m${early.id}`))).toMatchObject({ kind: "merge", merge_group_id: groupId });
    // Not a pull request's decision: a merge of #7 finds no decision of its own in it, but names the group that verified it.
    const merged = (await mergeOf(7, members[0]!.headSha))!;
    expect(await store.execute(() => readHistoryRecord(`m${merged.id}`))).toMatchObject({ kind: "merge", decision_id: null, unapproved: true, merge_group_id: groupId });
    // Another head of #7, and a pull request of no group: no group is named.
    const otherHead = (await mergeOf(7, "9".repeat(40)))!;
    expect(await store.execute(() => readHistoryRecord(`m${otherHead.id}`))).toMatchObject({ merge_group_id: null });
    const elsewhere = (await mergeOf(9, "9".repeat(40)))!;
    expect(await store.execute(() => readHistoryRecord(`m${elsewhere.id}`))).toMatchObject({ merge_group_id: null });
    // Judged failure later (a new generation): a second record, which verified nothing; the success still names what it did,
    // even once the group has left the queue and its members are gone.
    await judge(false, 2, 5000);
    await destroy("x1", "invalidated", 5500);
    // Each group record carries the digest of what it stores, as a pull request's decision does (history verify checks it).
    const groupRows = await store.execute(() => all(`select ${Object.keys(RECORD_FIELDS.decision).join(", ")}, record_sha256 from decision_records where pull_number = 0 order by id`));
    expect(groupRows).toHaveLength(2);
    for (const stored of groupRows) expect(stored.record_sha256).toBe(recordDigest("decision", stored));
    const after = await store.execute(() => listHistory({ repository: "acme/web", kind: "decision" }, null, 10));
    expect(after.items.map((item) => [item.kind, item.kind === "merge" ? null : item.conclusion])).toEqual([["merge_group", "failure"], ["merge_group", "success"]]);
    await store.execute(function* () { yield* run("delete from merge_records"); });
    const late = (await mergeOf(8, members[1]!.headSha))!;
    expect(await store.execute(() => readHistoryRecord(`m${late.id}`))).toMatchObject({ merge_group_id: groupId });
  });

  test("a group judged failure, a destroyed group and another pull request are not queued again", async () => {
    ({ database, store } = await openMigratedStore(backend));
    await request("d1");
    await store.execute(function* () { yield* run("delete from jobs"); });
    await judged(false);
    expect(await requeue(7, "9".repeat(40))).toBe(0);
    await judged(true);
    expect(await requeue(6, "9".repeat(40))).toBe(0);
    await destroy("x1", "merged");
    expect(await requeue(7, "9".repeat(40))).toBe(0);
    expect(await store.execute(function* () { return yield* all("select * from merge_group_members"); })).toEqual([]);
  });

  test("a reset of a member's head after the group was judged queues the group again; one before does not", async () => {
    ({ database, store } = await openMigratedStore(backend));
    await request("d1");
    await store.execute(function* () {
      yield* run("delete from jobs");
      yield* run("insert into head_generations (installation_id, repository_id, head_sha, shared_generation, invalidated_generation, updated_at_ms, reset_at_ms) values (9, 300, $1, 1, 1, 1, 2500)", "7".repeat(40));
    });
    await judged(true, 3000);
    expect(await requeue(7, "7".repeat(40))).toBe(0);
    await store.execute(function* () { yield* run("update head_generations set reset_at_ms = 3500 where head_sha = $1", "7".repeat(40)); });
    expect(await requeue(7, "7".repeat(40))).toBe(1);
  });

  test("a member's decision: its newest record on its head, whether a reset followed it, and whether work will decide it again", async () => {
    ({ database, store } = await openMigratedStore(backend));
    const { record } = recordFixture(baseEvidence());
    const { id: _id, confirmed: _confirmed, ...body } = record;
    const head = "7".repeat(40);
    await store.execute(() => recordPendingDecision({ body: { ...body, repository: { id: 300, full_name: "acme/web" }, pull_request: 7, head_sha: head }, sharedGeneration: 1, digest: "x", token: null }));
    await store.execute(function* () {
      yield* run("update decision_records set confirmed_at_ms = published_at_ms");
      yield* run("insert into head_generations (installation_id, repository_id, head_sha, shared_generation, invalidated_generation, updated_at_ms) values (9, 300, $1, 1, 1, 1)", head);
    });
    const read = () => store.execute(() => readMemberDecisions(300, [{ pullNumber: 7, headSha: head }, { pullNumber: 8, headSha: "8".repeat(40) }]));
    const [seven, eight] = await read();
    expect(seven).toMatchObject({ pullNumber: 7, record: { conclusion: record.conclusion, confirmed: true }, resetAfter: false, workLive: false });
    expect(seven!.record!.body.byteLength).toBeGreaterThan(0);
    expect(eight).toEqual({ pullNumber: 8, headSha: "8".repeat(40), record: null, resetAfter: false, workLive: false });
    await store.execute(function* () {
      yield* run("update head_generations set reset_at_ms = $2 where head_sha = $1", head, Date.parse(record.published_at) + 1);
      yield* run("insert into jobs (kind, priority, installation_id, repository_id, pull_number, head_sha, run_at_ms, created_at_ms, updated_at_ms) values ('evaluation', 4, 9, 300, 8, $1, 1, 1, 1)", "8".repeat(40));
    });
    const [reset, evaluating] = await read();
    expect([reset!.resetAfter, evaluating!.workLive]).toEqual([true, true]);
  });

  test("a group's fences: its head's generations, the claim's lease, a pending fan-out and whether it is still queued", async () => {
    ({ database, store } = await openMigratedStore(backend));
    await request("d1");
    const claimed = (await store.execute(() => claimNext("w/1", 5000, 30_000)))!;
    const fences = (now = 5001) => store.execute(() => readGroupFences({ jobId: claimed.id, owner: "w/1", installationId: 9, repositoryId: 300, headSha: group.headSha, now }));
    expect(await fences()).toEqual({ shared: 1, invalidated: 1, fanoutPending: false, leaseHeld: true, queued: true });
    expect(await fences(40_000)).toMatchObject({ leaseHeld: false });
    await destroy("x1", "dequeued", 5002);
    expect(await fences()).toEqual({ shared: 2, invalidated: 2, fanoutPending: false, leaseHeld: true, queued: false });
  });

  test("the reconciler prunes groups untouched since the cutoff, with their members, in batches under its lease", async () => {
    ({ database, store } = await openMigratedStore(backend));
    const lease = { name: "reconciler", owner: "r1", ttlMs: 60_000 };
    expect(await store.execute(() => acquireElectionLease(lease, 1000))).toBe(true);
    await request("d1", 1000);
    await request("d2", 9000, { ...group, headSha: "c".repeat(40) });
    await judged(true, 1500);
    expect(await store.execute(() => pruneMergeGroupBatch(lease, 5000, 2000))).toBe(1);
    expect(await store.execute(function* () { return yield* all<{ head_sha: string }>("select head_sha from merge_groups"); })).toEqual([{ head_sha: "c".repeat(40) }]);
    expect(await store.execute(function* () { return yield* all("select * from merge_group_members"); })).toEqual([]);
    expect(await store.execute(() => pruneMergeGroupBatch({ ...lease, owner: "r2" }, 99_999, 2000))).toBeNull();
  });

  test("two groups of one repository are two rows", async () => {
    ({ database, store } = await openMigratedStore(backend));
    await request("d1");
    await request("d2", 1000, { ...group, headSha: "c".repeat(40), baseSha: group.headSha });
    expect((await jobs()).map((j) => j.head_sha)).toEqual([group.headSha, "c".repeat(40)]);
  });
});

test("migration 0012 keeps the work rows and the id sequence of an existing SQLite database", async () => {
  const database = await createTestDatabase("sqlite");
  try {
    // The database as the release before 0012 left it: every earlier migration applied, with a job deleted (the sequence moved on).
    if (database.target.backend !== "sqlite") throw new Error("a SQLite database");
    const db = new Database(database.target.path, { create: true });
    for (const migration of MIGRATIONS.filter((m) => m.version < 12)) {
      db.run(migration.sqlite);
      db.query("insert into service_migrations (version, name, checksum, applied_at_ms) values (?, ?, ?, 1)").run(migration.version, migration.name, checksum(migration.sqlite));
    }
    db.run(`insert into jobs (kind, priority, installation_id, repository_id, pull_number, head_sha, run_at_ms, created_at_ms, updated_at_ms, background, authority_subjects)
      values ('evaluation', 4, 9, 300, 7, '${"d".repeat(40)}', 1, 1, 1, 1, 'user:alice\n')`);
    db.run("insert into jobs (kind, priority, installation_id, run_at_ms, created_at_ms, updated_at_ms) values ('installation_fanout', 1, 9, 1, 1, 1)");
    db.run("delete from jobs where kind = 'installation_fanout'");
    db.close();
    await migrateDatabase(database.target, 1);
    const after = openStore(database.target);
    const rows = await after.execute(function* () {
      yield* all(`insert into jobs (kind, priority, installation_id, run_at_ms, created_at_ms, updated_at_ms) values ('installation_fanout', 1, 9, 1, 1, 1)`);
      return yield* all<{ id: number; kind: string; background: number; authority_subjects: string | null }>("select id, kind, background, authority_subjects from jobs order by id");
    });
    await after.close();
    expect(rows).toEqual([{ id: 1, kind: "evaluation", background: 1, authority_subjects: "user:alice\n" }, { id: 3, kind: "installation_fanout", background: 0, authority_subjects: null }]);
  } finally {
    await database.drop();
  }
});
