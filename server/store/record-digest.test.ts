import { afterEach, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { BACKENDS, openMigratedStore, type TestDatabase } from "../../e2e/support/databases.ts";
import { sampleDecisionBody } from "../records/fixtures.ts";
import { recordDigest, RECORD_FIELDS, type RecordKind } from "../records/tamper-evidence.ts";
import { acceptDirectTrigger, all, confirmDecision, type MergeInput, recordMerge, recordPendingDecision, rememberHeadCheck, settleMergeEnrollment, type Store } from "./index.ts";

/**
 * Every statement that writes a record's fields writes its digest (record_sha256) in the same statement: the SQL that
 * computes it in each database must give the digest server/records/tamper-evidence.ts computes from the stored row.
 */
const HEAD = "d".repeat(40);

describe.each(BACKENDS)("record digests written by the store on %s", (backend) => {
  let database: TestDatabase;
  let store: Store;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });
  async function open() {
    ({ database, store } = await openMigratedStore(backend));
  }
  const table = (kind: RecordKind) => (kind === "decision" ? "decision_records" : "merge_records");
  /** Each row's stored digest beside the one recomputed from its stored fields. */
  async function digests(kind: RecordKind): Promise<{ stored: string | null; computed: string }[]> {
    const columns = Object.keys(RECORD_FIELDS[kind]).join(", ");
    const rows = await store.execute(() => all(`select ${columns}, record_sha256 from ${table(kind)} order by id`));
    return rows.map((row) => ({ stored: row.record_sha256 as string | null, computed: recordDigest(kind, row) }));
  }
  async function expectDigestsHold(kind: RecordKind, count: number) {
    const found = await digests(kind);
    expect(found).toHaveLength(count);
    for (const { stored, computed } of found) expect(stored).toBe(computed);
  }
  const merge = (over: Partial<MergeInput> = {}): MergeInput => ({
    installationId: 4, repositoryId: 40, repositoryFullName: "acme/web", pullNumber: 7, headSha: HEAD, mergeCommitSha: "m".repeat(40), baseSha: "b".repeat(40),
    mergedBy: { id: 102, login: "bob" }, mergedAtMs: 1_000, recovered: false, now: 2_000, ...over,
  });

  test("a decision's digest is written with it, recomputed when a retry adopts it, and again when it is confirmed", async () => {
    await open();
    const pending = (token: string, conclusion: "success" | "failure" = "success") =>
      store.execute(() => recordPendingDecision({ body: sampleDecisionBody({ conclusion, break_glass: null }), sharedGeneration: 2, digest: "dg", token }, { kind: "remember", checkRunId: 901, now: 2 }));
    await pending("pending:a");
    await expectDigestsHold("decision", 1);
    const first = (await digests("decision"))[0]!.stored;
    await pending("pending:b", "failure"); // adopted: another body and conclusion
    await expectDigestsHold("decision", 1);
    const adopted = (await digests("decision"))[0]!.stored;
    expect(adopted).not.toBe(first);
    expect(await store.execute(() => confirmDecision({ repositoryId: 40, headSha: HEAD, token: "pending:b", now: 5, settle: { digest: "dg", generation: 2 } }))).toBe(true);
    await expectDigestsHold("decision", 1);
    expect((await digests("decision"))[0]!.stored).not.toBe(adopted);
  });

  test("a decision written beside beginning a check write, alone, or confirmed without a settle keeps its digest true", async () => {
    await open();
    await store.execute(() => rememberHeadCheck({ installationId: 4, repositoryId: 40, headSha: HEAD, checkRunId: 900, now: 1 }));
    await store.execute(() => recordPendingDecision({ body: sampleDecisionBody(), sharedGeneration: 1, digest: "a", token: "pending:1" }, { kind: "begin", now: 2 }));
    await store.execute(() => recordPendingDecision({ body: sampleDecisionBody({ break_glass: { review_id: 1, reviewer_id: 2, reviewer_login: "sam", reason: "the pager", team: "sre", unsatisfied_owner_sets: [0] } }), sharedGeneration: 1, digest: "b", token: null }));
    await store.execute(() => confirmDecision({ repositoryId: 40, headSha: HEAD, token: "pending:1", now: 3 }));
    await expectDigestsHold("decision", 2);
  });

  test("a merge's digest covers the verdict its insert computes, and is recomputed when its enrollment settles", async () => {
    await open();
    await store.execute(() => recordPendingDecision({ body: sampleDecisionBody(), sharedGeneration: 1, digest: "s", token: "pending:s" }));
    await store.execute(() => confirmDecision({ repositoryId: 40, headSha: HEAD, token: "pending:s", now: 3 }));
    await store.execute(() => recordMerge(merge())); // approved by that decision
    await store.execute(() => recordMerge(merge({ pullNumber: 8, mergedBy: null, mergeCommitSha: null, baseSha: null, mergedAtMs: null }))); // no decision
    await store.execute(() => recordMerge(merge({ pullNumber: 9, recovered: true })));
    await expectDigestsHold("merge", 3);
    const before = (await digests("merge")).map((d) => d.stored);
    const ids = (await store.execute(() => all<{ id: number }>("select id from merge_records order by id"))).map((r) => Number(r.id));
    await store.execute(() => settleMergeEnrollment(ids[0]!, "enrolled", 10));
    await store.execute(() => settleMergeEnrollment(ids[1]!, "not_enrolled", 11));
    await expectDigestsHold("merge", 3);
    const after = (await digests("merge")).map((d) => d.stored);
    expect(after[0]).not.toBe(before[0]);
    expect(after[1]).not.toBe(before[1]);
    expect(after[2]).toBe(before[2]);
  });

  test("a merge recorded by the acceptance of its closed delivery carries its digest", async () => {
    await open();
    const { mergeCommitSha, baseSha, mergedBy, mergedAtMs, repositoryFullName } = merge();
    const outcome = await store.execute(() => acceptDirectTrigger({
      installationId: 4, repositoryId: 40, owner: "acme", name: "web", deliveryId: "delivery-1", event: "pull_request", action: "closed",
      pullNumber: 7, headSha: HEAD, now: 5, merge: { mergeCommitSha, baseSha, mergedBy, mergedAtMs, repositoryFullName },
    }));
    expect(outcome).toMatchObject({ kind: "accepted", merge: { unapproved: true } });
    await expectDigestsHold("merge", 1);
  });

  test("any repository name and login, however odd its characters, hashes alike in the database and in the verifier", async () => {
    await open();
    let n = 0;
    // No NUL: PostgreSQL text cannot hold it.
    const odd = fc.constantFrom('"', "\\", "\n", "\t", "\u0001", "\u001f", "\u007f", "\u2028", "\ufeff", "é", "😀", "a", "/");
    const text = fc.oneof(fc.string({ unit: "grapheme", maxLength: 40 }), fc.string({ unit: odd, maxLength: 20 })).map((s) => s.replaceAll("\u0000", ""));
    await fc.assert(fc.asyncProperty(text, text, async (name, login) => {
      n++;
      await store.execute(() => recordPendingDecision({ body: sampleDecisionBody({ repository: { id: 40, full_name: name }, pull_request: n }), sharedGeneration: n, digest: `x${n}`, token: null }));
      await store.execute(() => recordMerge(merge({ repositoryFullName: name, pullNumber: n, mergedBy: { id: 5, login } })));
    }), { numRuns: 60 });
    await expectDigestsHold("decision", n);
    await expectDigestsHold("merge", n);
  });
});
