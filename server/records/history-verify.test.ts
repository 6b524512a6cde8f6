import { afterEach, describe, expect, test } from "bun:test";
import { BACKENDS, openMigratedStore, type TestDatabase } from "../../e2e/support/databases.ts";
import {
  acquireElectionLease, all, CHECKPOINT_INTERVAL_MS, confirmDecision, one, readCheckpoints, recordMerge, recordPendingDecision, run, settleMergeEnrollment, type Store, writeCheckpoint,
} from "../store/index.ts";
import { sampleDecisionBody } from "./fixtures.ts";
import { type VerifyOptions, verifyHistory } from "./history-verify.ts";
import { checkpointHash, RECORD_FIELDS, recordDigest } from "./tamper-evidence.ts";

/**
 * `service history verify` over a database tampered with directly (as someone with write access to it would): each change,
 * removal and insertion of a record or checkpoint is found and named, on both backends; the untouched history verifies.
 */
const HEAD = "d".repeat(40);
const DAY = 86_400_000;
const T = 1_764_000_000_000;
const lease = { name: "reconciler", owner: "r1", ttlMs: 30 * DAY };

describe.each(BACKENDS)("history verify on %s", (backend) => {
  let database: TestDatabase;
  let store: Store;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });
  let n = 0;
  async function decide(at: number, conclusion: "success" | "failure" = "success", confirmed = true): Promise<number> {
    const token = `pending:${++n}`;
    await store.execute(() => recordPendingDecision({ body: sampleDecisionBody({ pull_request: n, conclusion, published_at: new Date(at).toISOString() }), sharedGeneration: n, digest: `dg${n}`, token }));
    if (confirmed) await store.execute(() => confirmDecision({ repositoryId: 40, headSha: HEAD, token, now: at + 1 }));
    return Number((await store.execute(() => one<{ id: unknown }>("select max(id) as id from decision_records")))!.id);
  }
  async function merged(at: number): Promise<number> {
    const merge = await store.execute(() => recordMerge({
      installationId: 4, repositoryId: 40, repositoryFullName: "acme/web", pullNumber: n, headSha: HEAD, mergeCommitSha: "m".repeat(40), baseSha: "b".repeat(40),
      mergedBy: { id: 102, login: "bob" }, mergedAtMs: at, recovered: false, now: at,
    }));
    await store.execute(() => settleMergeEnrollment(merge!.id, "enrolled", at + 1));
    return merge!.id;
  }
  const checkpoint = async (at: number) => {
    const outcome = await store.execute(() => writeCheckpoint(lease, at));
    if (outcome.kind !== "written") throw new Error(`no checkpoint: ${outcome.kind}`);
    return outcome.checkpoint;
  };
  const NOW = T + 3 * CHECKPOINT_INTERVAL_MS;
  const verify = (over: Partial<VerifyOptions> = {}) => verifyHistory(store, { nowMs: NOW, retentionMs: 400 * DAY, pageSize: 2, ...over });
  /** Three decisions and a merge under checkpoint 1, two decisions and a merge under checkpoint 2, one decision after it. */
  async function history() {
    ({ database, store } = await openMigratedStore(backend));
    await store.execute(() => acquireElectionLease(lease, T));
    const first = [await decide(T), await decide(T + 1, "failure"), await decide(T + 2)];
    const firstMerge = await merged(T + 3);
    await decide(T + 4, "success", false); // never confirmed: never covered
    await checkpoint(T + 10);
    const second = [await decide(T + CHECKPOINT_INTERVAL_MS), await decide(T + CHECKPOINT_INTERVAL_MS + 1)];
    const secondMerge = await merged(T + CHECKPOINT_INTERVAL_MS + 2);
    await checkpoint(T + CHECKPOINT_INTERVAL_MS + 10);
    const after = await decide(T + 2 * CHECKPOINT_INTERVAL_MS);
    return { first, firstMerge, second, secondMerge, after };
  }
  const sql = (text: string, ...params: unknown[]) => store.execute(() => run(text, ...params));
  /** What the tamperer who knows the digest format writes: the record's digest recomputed from its changed fields. */
  async function recomputeDigest(table: "decision_records" | "merge_records", id: number) {
    const kind = table === "decision_records" ? "decision" : "merge";
    const row = (await store.execute(() => one(`select ${Object.keys(RECORD_FIELDS[kind]).join(", ")} from ${table} where id = $1`, id)))!;
    await sql(`update ${table} set record_sha256 = $1 where id = $2`, recordDigest(kind, row), id);
  }

  test("an untouched history verifies: every checkpoint, every covered record, and the records written since", async () => {
    await history();
    const report = await verify();
    expect(report.finding).toBeNull();
    expect(report).toMatchObject({ checkpoints: 2, pruned: 0, covered: 7, uncovered: 2, withoutDigest: 0 });
    expect(report.last).toEqual((await store.execute(() => readCheckpoints(1, 1)))[0]!);
  });

  test("a conclusion changed in place is named", async () => {
    const { first } = await history();
    await sql("update decision_records set conclusion = 'success' where id = $1", first[1]);
    expect((await verify()).finding).toMatchObject({ subject: "record", change: "changed", name: `d${first[1]}` });
  });

  test("a conclusion changed with the record's digest recomputed is caught by its checkpoint's root", async () => {
    const { first } = await history();
    await sql("update decision_records set conclusion = 'success' where id = $1", first[1]);
    await recomputeDigest("decision_records", first[1]!);
    const { finding } = await verify();
    expect(finding).toMatchObject({ subject: "checkpoint", change: "changed", name: "checkpoint 1" });
    expect(finding!.message).toContain("do not hash to its root");
  });

  test("an unapproved merge made approved is named", async () => {
    const { secondMerge } = await history();
    await sql("update merge_records set unapproved = $1 where id = $2", backend === "sqlite" ? 1 : true, secondMerge);
    expect((await verify()).finding).toMatchObject({ subject: "record", change: "changed", name: `m${secondMerge}` });
  });

  test("a record deleted is named by its place and its neighbours", async () => {
    const { first } = await history();
    await sql("delete from decision_records where id = $1", first[1]);
    const { finding } = await verify();
    expect(finding).toMatchObject({ subject: "record", change: "removed" });
    expect(finding!.message).toBe(`the record at leaf 1 was removed from checkpoint 1 (of its 4 records; after d${first[0]}, before d${first[2]})`);
  });

  test("the last record of the last checkpoint deleted is found", async () => {
    const { secondMerge } = await history();
    await sql("delete from merge_records where id = $1", secondMerge);
    expect((await verify()).finding).toMatchObject({ subject: "record", change: "removed", message: expect.stringContaining("leaf 2 was removed from checkpoint 2") });
  });

  test("a record inserted into a checkpoint, in another record's place, is named", async () => {
    const { first } = await history();
    await sql(`insert into decision_records (installation_id, repository_id, repository_full_name, pull_number, head_sha, shared_generation, digest, conclusion, break_glass,
        published_at_ms, confirmed_at_ms, body_bytes, body, record_sha256, checkpoint_id, checkpoint_leaf)
      select installation_id, repository_id, repository_full_name, 999, head_sha, 999, 'forged', 'success', break_glass, published_at_ms, confirmed_at_ms, body_bytes, body,
        record_sha256, checkpoint_id, checkpoint_leaf from decision_records where id = $1`, first[1]);
    await recomputeDigest("decision_records", Number((await store.execute(() => one<{ id: unknown }>("select max(id) as id from decision_records")))!.id));
    expect((await verify()).finding).toMatchObject({ subject: "record", change: "inserted", message: expect.stringContaining("was inserted into checkpoint 1: its leaf 1 belongs to another record") });
  });

  test("a record inserted with an old date and no checkpoint is named: the checkpoint of its time would have covered it", async () => {
    await history();
    await sql(`insert into decision_records (installation_id, repository_id, repository_full_name, pull_number, head_sha, shared_generation, digest, conclusion, break_glass,
        published_at_ms, confirmed_at_ms, body_bytes, body)
      select installation_id, repository_id, repository_full_name, 998, head_sha, 998, 'forged', 'success', break_glass, published_at_ms, confirmed_at_ms, body_bytes, body
      from decision_records order by id limit 1`);
    const forged = Number((await store.execute(() => one<{ id: unknown }>("select max(id) as id from decision_records")))!.id);
    await recomputeDigest("decision_records", forged);
    const { finding } = await verify();
    expect(finding).toMatchObject({ subject: "record", change: "inserted", name: `d${forged}` });
    expect(finding!.message).toContain("before checkpoint 2 was written, no checkpoint covers it");
  });

  test("a checkpoint edited is named; edited with its hash recomputed, the next one's link names it", async () => {
    await history();
    await sql("update history_checkpoints set record_count = record_count + 1 where id = 1");
    expect((await verify()).finding).toMatchObject({ subject: "checkpoint", change: "changed", name: "checkpoint 1", message: "checkpoint 1 was changed: its fields do not hash to its hash" });
    const [edited] = await store.execute(() => readCheckpoints(0, 1));
    await sql("update history_checkpoints set hash = $1 where id = 1", checkpointHash(edited!));
    expect((await verify()).finding).toMatchObject({ subject: "checkpoint", change: "changed", name: "checkpoint 2", message: "checkpoint 2 does not link to checkpoint 1: one of them was changed (or inserted)" });
  });

  test("the last checkpoint edited with its hash recomputed no longer matches its records", async () => {
    await history();
    await sql("update history_checkpoints set root = $1 where id = 2", "0".repeat(64));
    const [, edited] = await store.execute(() => readCheckpoints(0, 2));
    await sql("update history_checkpoints set hash = $1 where id = 2", checkpointHash(edited!));
    expect((await verify()).finding).toMatchObject({ subject: "checkpoint", change: "changed", name: "checkpoint 2" });
  });

  test("a checkpoint deleted is named, in the middle of the chain or at its end", async () => {
    await history();
    await sql("delete from history_checkpoints where id = 2");
    expect((await verify()).finding).toMatchObject({ subject: "checkpoint", change: "removed", name: "checkpoint 2" });
    await sql("delete from history_checkpoints where id = 1");
    expect((await verify()).finding).toMatchObject({ subject: "checkpoint", change: "removed", name: "checkpoint 1" });
  });

  test("a record not covered yet that was changed is named", async () => {
    const { after } = await history();
    await sql("update decision_records set conclusion = 'failure' where id = $1", after);
    expect((await verify()).finding).toMatchObject({ subject: "record", change: "changed", name: `d${after}`, message: expect.stringContaining("not covered by a checkpoint yet") });
  });

  test("--since starts at a checkpoint (by number or time) and trusts its link: what was changed before it is not read", async () => {
    const { first } = await history();
    await sql("update decision_records set conclusion = 'success' where id = $1", first[1]);
    expect((await verify({ since: { checkpoint: 2 } }))).toMatchObject({ finding: null, checkpoints: 1, covered: 3 });
    expect((await verify({ since: { atMs: T + 11 } }))).toMatchObject({ finding: null, checkpoints: 1 });
    expect((await verify({ since: { atMs: NOW } }))).toMatchObject({ finding: null, checkpoints: 0, uncovered: 2 });
    expect((await verify({ since: { checkpoint: 1 } })).finding).toMatchObject({ name: `d${first[1]}` });
  });

  test("a checkpoint past the retention whose records were pruned verifies its chain without its root", async () => {
    await history();
    await sql("delete from decision_records where checkpoint_id = 1");
    await sql("delete from merge_records where checkpoint_id = 1");
    expect((await verify()).finding).toMatchObject({ change: "removed" });
    const report = await verify({ retentionMs: NOW - (T + 11) });
    expect(report).toMatchObject({ finding: null, checkpoints: 2, pruned: 1, covered: 3 });
  });

  test("records written before records had digests, and never final, are counted, not failed", async () => {
    await history();
    await sql("update decision_records set record_sha256 = null where confirmed_at_ms is null");
    expect(await verify()).toMatchObject({ finding: null, withoutDigest: 1, uncovered: 1 });
  });

  test("progress is told page by page", async () => {
    await history();
    const seen: number[] = [];
    await verify({ onProgress: (counts) => seen.push(counts.covered + counts.uncovered) });
    expect(seen.length).toBeGreaterThan(3);
    expect(seen.at(-1)).toBe(9);
    expect((await store.execute(() => all("select id from history_checkpoints"))).length).toBe(2);
  });
});
