import { afterEach, describe, expect, test } from "bun:test";
import { Writable } from "node:stream";
import { BACKENDS, type TestDatabase, openMigratedStore } from "../../e2e/support/databases.ts";
import { loadConfig } from "../config/index.ts";
import { approve, baseEvidence, USERS, withFiles, withReviews } from "../evaluation/evidence-fixture.ts";
import { EVIDENCE_DOCUMENT_FORMAT } from "./explain.ts";
import { ForgeError, type BlobRead } from "../forge/index.ts";
import type { DecisionRecordBody } from "../records/codec.ts";
import { recordFixture } from "../records/record-fixture.ts";
import type { DecisionRecord, HistoryRecord } from "../records/schema.ts";
import { acquireElectionLease, confirmDecision, listHistory, one, readHistoryRecord, recordGroupJudgement, recordMerge, recordPendingDecision, run, type Store, writeCheckpoint } from "../store/index.ts";
import { groupRecordBody } from "../worker/jobs/judge-merge-group.ts";
import { EXIT_HISTORY_NONE, EXIT_REPLAY_NO_RECORD, parseDate, runHistory, runHistoryExport, runHistoryReplay, runHistoryVerify } from "./history.ts";

/** The history commands (issue 28 items 3 and 4) against a database seeded through the writers (ops/record-ops.ts). */
const MERGE_COMMIT = "9".repeat(40);
const baseConfig = loadConfig({ SERVICE_DATABASE_URL: "sqlite::memory:" }, undefined, "database");

function capture() {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return { out: { stdout: (l: string) => void stdout.push(l), stderr: (l: string) => void stderr.push(l) }, stdout, stderr, text: () => stdout.join("\n") };
}

const approvedEvidence = () => withReviews(withFiles(baseEvidence(), ["src/app.ts", "docs/guide.md"]), approve(USERS.alice), approve(USERS.erin));
const failedEvidence = () => withFiles(baseEvidence(), ["src/app.ts"]);

/** A forge serving `blobs` by SHA, as readBlob answers. */
function forgeOf(blobs: Map<string, Uint8Array>) {
  const asked: string[] = [];
  return {
    asked,
    forge: { readBlob: async (at: { sha: string }): Promise<BlobRead> => { asked.push(at.sha); const bytes = blobs.get(at.sha); return bytes === undefined ? { kind: "missing" } : { kind: "found", bytes }; } },
  };
}

describe("history command usage errors", () => {
  const cases: [string[], string][] = [
    [["--pull", "7"], "--repository OWNER/NAME is required"],
    [["--repository", "acme", "--pull", "7"], "--repository OWNER/NAME is required"],
    [["--repository", "acme/widgets"], "one of --pull N, --commit SHA or --overrides is required"],
    [["--overrides"], "--repository OWNER/NAME is required"],
    [["--repository", "acme/widgets", "--overrides=yes"], "unknown argument: --overrides=yes"],
    [["--repository", "acme/widgets", "--pull", "7", "--commit", MERGE_COMMIT], "give one of --pull N and --commit SHA, not both"],
    [["--repository", "acme/widgets", "--pull", "0"], "--pull N must be a pull request number"],
    [["--repository", "acme/widgets", "--pull"], "--pull N must be a pull request number"],
    [["--repository", "acme/widgets", "--commit", "abc123"], "--commit must be a full commit SHA (40 or 64 hexadecimal digits)"],
    [["--repository", "acme/widgets", "--pull", "7", "--verbose"], "unknown argument: --verbose"],
    [["--repository", "acme/widgets", "--pull", "7", "extra"], "unknown argument: extra"],
    [["--repository", "acme/widgets", "--repository", "acme/other", "--pull", "7"], "--repository given twice"],
  ];
  for (const [args, message] of cases) {
    test(`history ${args.join(" ")}: exit 2, "${message}"`, async () => {
      const c = capture();
      expect(await runHistory(args, baseConfig, c.out)).toBe(2);
      expect(c.stderr[0]).toBe(message);
      expect(c.stderr.join("\n")).toContain("usage: service history");
    });
  }

  const exportCases: [string[], string][] = [
    [["--since", "yesterday"], "--since DATE must be YYYY-MM-DD or an ISO 8601 time with its offset (2026-11-27T10:00:00Z)"],
    [["--until", "2026-02-30"], "--until DATE must be YYYY-MM-DD or an ISO 8601 time with its offset (2026-11-27T10:00:00Z)"],
    [["--since", "2026-11-20T10:00:00"], "--since DATE must be YYYY-MM-DD or an ISO 8601 time with its offset (2026-11-27T10:00:00Z)"],
    [["--since", "2026-11-20", "--until", "2026-11-20"], "--since must be before --until"],
    [["--repository", "acme"], "--repository must be OWNER/NAME"],
    [["--unapproved=yes"], "unknown argument: --unapproved=yes"],
    [["--overrides=yes"], "unknown argument: --overrides=yes"],
    [["all"], "unknown argument: all"],
  ];
  for (const [args, message] of exportCases) {
    test(`history export ${args.join(" ")}: exit 2, "${message}"`, async () => {
      const c = capture();
      expect(await runHistoryExport(args, baseConfig, c.out)).toBe(2);
      expect(c.stderr[0]).toBe(message);
    });
  }

  const replayCases: [string[], string][] = [
    [[], "the record ID (d<n> or m<n>) is required"],
    [["42"], "42 is not a record ID: d<n> for a decision, m<n> for a merge"],
    [["d0"], "d0 is not a record ID: d<n> for a decision, m<n> for a merge"],
    [["d1", "d2"], "unknown argument: d2"],
    [["d1", "--verbose"], "unknown argument: --verbose"],
  ];
  for (const [args, message] of replayCases) {
    test(`history replay ${args.join(" ")}: exit 2, "${message}"`, async () => {
      const c = capture();
      expect(await runHistoryReplay(args, baseConfig, c.out, { forge: forgeOf(new Map()).forge })).toBe(2);
      expect(c.stderr[0]).toBe(message);
    });
  }

  const verifyCases: [string[], string][] = [
    [["--since", "yesterday"], "--since takes a checkpoint number, a date YYYY-MM-DD or an ISO 8601 time with its offset (2026-11-27T10:00:00Z)"],
    [["--since", "0"], "--since takes a checkpoint number, a date YYYY-MM-DD or an ISO 8601 time with its offset (2026-11-27T10:00:00Z)"],
    [["--since"], "--since takes a checkpoint number, a date YYYY-MM-DD or an ISO 8601 time with its offset (2026-11-27T10:00:00Z)"],
    [["--since", "1", "--since", "2"], "--since given twice"],
    [["all"], "unknown argument: all"],
    [["--signatures"], "unknown argument: --signatures"],
    [["--public-key", "key.pem"], "--public-key goes with --attestations"],
    // The configuration in these tests has no signing key: the public keys must be given.
    [["--attestations"], "--attestations needs the public keys: --public-key FILE (GET /api/attestations/public-key gives them), or SERVICE_ATTESTATION_KEY_FILE"],
    [["--attestations", "--public-key", "/nonexistent/key.pem"], "--public-key: the file cannot be read"],
  ];
  for (const [args, message] of verifyCases) {
    test(`history verify ${args.join(" ")}: exit 2, "${message}"`, async () => {
      const c = capture();
      expect(await runHistoryVerify(args, baseConfig, c.out)).toBe(2);
      expect(c.stderr[0]).toBe(message);
      expect(c.stderr.join("\n")).toContain("usage: service history verify");
    });
  }

  test("replay without the App credentials is a configuration error", async () => {
    const c = capture();
    expect(await runHistoryReplay(["d1"], baseConfig, c.out)).toBe(2);
    expect(c.stderr[0]).toContain("replay needs the App credentials");
  });

  test("dates: a day is midnight UTC, a time needs its offset", () => {
    expect(parseDate("2026-11-20")).toBe(Date.UTC(2026, 10, 20));
    expect(parseDate("2026-11-20T10:00:00+02:00")).toBe(Date.UTC(2026, 10, 20, 8));
    expect(parseDate("2026-11-20T10:00Z")).toBe(Date.UTC(2026, 10, 20, 10));
    expect(parseDate("2026-13-01")).toBeNull();
    expect(parseDate("1700000000")).toBeNull();
  });

  test("a database that cannot be opened: history exits 1, export 1, replay 4, each saying so without driver detail", async () => {
    const config = loadConfig({ SERVICE_DATABASE_URL: "sqlite:/nonexistent/never.db" }, undefined, "database");
    const a = capture();
    expect(await runHistory(["--repository", "acme/widgets", "--pull", "7"], config, a.out)).toBe(1);
    expect(a.stderr[0]).toStartWith("cannot read the history of acme/widgets#7: ");
    const b = capture();
    expect(await runHistoryExport([], config, b.out, { exportStream: new Writable({ write: (_c, _e, cb) => cb() }) })).toBe(1);
    expect(b.stderr[0]).toStartWith("export failed: ");
    const c = capture();
    expect(await runHistoryReplay(["d1"], config, c.out, { forge: forgeOf(new Map()).forge })).toBe(EXIT_REPLAY_NO_RECORD);
    expect(c.stderr[0]).toStartWith("cannot read d1: ");
    const d = capture();
    expect(await runHistoryVerify([], config, d.out)).toBe(EXIT_HISTORY_NONE);
    expect(d.stderr[0]).toStartWith("cannot verify the history: ");
  });
});

describe.each(BACKENDS)("history commands on %s", (backend) => {
  let database: TestDatabase;
  let store: Store;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });
  let config = baseConfig;
  async function open() {
    ({ database, store } = await openMigratedStore(backend));
    config = { ...baseConfig, database: database.target };
  }

  let generation = 0;
  /** Writes `record` as the worker does: pending with its token, then confirmed (unless `confirmed: false`). */
  async function seed(record: DecisionRecord, at: string, options: { confirmed?: boolean; repository?: { id: number; full_name: string } } = {}): Promise<DecisionRecord> {
    const { id: _id, confirmed: _confirmed, ...rest } = record;
    const body: DecisionRecordBody = { ...rest, published_at: at, ...(options.repository ? { repository: options.repository } : {}) };
    const token = `token-${++generation}`;
    await store.execute(() => recordPendingDecision({ body, sharedGeneration: generation, digest: `digest-${generation}`, token }));
    if (options.confirmed !== false) await store.execute(() => confirmDecision({ repositoryId: body.repository.id, headSha: body.head_sha, token, now: Date.parse(at) + 1 }));
    const row = await store.execute(() => one<{ id: number }>("select max(id) as id from decision_records"));
    return (await store.execute(() => readHistoryRecord(`d${Number(row!.id)}`))) as DecisionRecord;
  }
  const merge = (record: { head_sha: string; pull_request: number; repository: { id: number; full_name: string } }, at: number, over: { mergeCommitSha?: string } = {}) =>
    store.execute(() => recordMerge({
      installationId: 4, repositoryId: record.repository.id, repositoryFullName: record.repository.full_name, pullNumber: record.pull_request, headSha: record.head_sha,
      mergeCommitSha: over.mergeCommitSha ?? MERGE_COMMIT, baseSha: null, mergedBy: { id: 12, login: "carol" }, mergedAtMs: at, recovered: false, now: at + 1,
    }));

  test("history --pull prints the pull request's records oldest first in plain words, an unconfirmed one said as such", async () => {
    await open();
    const failed = recordFixture(failedEvidence()).record;
    await seed(failed, "2026-11-20T10:00:00.000Z", { confirmed: false });
    const success = await seed(recordFixture(approvedEvidence()).record, "2026-11-20T11:00:00.000Z");
    const c = capture();
    expect(await runHistory(["--repository", "acme/widgets", "--pull", "7"], config, c.out)).toBe(0);
    const text = c.text();
    expect(c.stdout[0]).toBe("acme/widgets#7: 2 records, oldest first");
    expect(text.indexOf(": failure, published 2026-11-20T10:00:00.000Z")).toBeLessThan(text.indexOf(`decision ${success.id} on acme/widgets#7: success, published 2026-11-20T11:00:00.000Z`));
    expect(text).toContain("NOT CONFIRMED");
    expect(text.match(/NOT CONFIRMED/g)).toHaveLength(1);
    expect(text).toContain("approved by @alice (user 10) as a direct owner (@alice)");
  });

  test("history --commit of a merge commit answers why it merged: who merged it and the approving decision in full", async () => {
    await open();
    const success = await seed(recordFixture(approvedEvidence()).record, "2026-11-20T11:00:00.000Z");
    await merge(success, Date.parse("2026-11-20T12:00:00Z"));
    const c = capture();
    expect(await runHistory(["--repository", "acme/widgets", "--commit", MERGE_COMMIT.toUpperCase()], config, c.out)).toBe(0);
    const text = c.text();
    expect(text).toContain(`merge commit ${MERGE_COMMIT}, merged by @carol (user 12)`);
    expect(text).toContain(`approved: the service's check concluded success on the head at merge (${success.id})`);
    expect(text).toContain(`  decision ${success.id} on acme/widgets#7: success`);
    expect(text).toContain(`CODEOWNERS: CODEOWNERS (${success.codeowners!.bytes} bytes) at blob ${success.codeowners!.blob_sha}`);
    expect(text).not.toContain("other decisions on this head");
  });

  test("history --commit of an unapproved merge says so plainly", async () => {
    await open();
    const failed = await seed(recordFixture(failedEvidence()).record, "2026-11-20T10:00:00.000Z");
    await merge(failed, Date.parse("2026-11-20T12:00:00Z"));
    const c = capture();
    expect(await runHistory(["--repository", "acme/widgets", "--commit", MERGE_COMMIT], config, c.out)).toBe(0);
    expect(c.text()).toContain(`UNAPPROVED MERGE: no confirmed success of the service was current for the head at merge (the service's current decision for that head was failure (${failed.id}))`);
  });

  test("history --commit of a head without a merge lists the decisions on it", async () => {
    await open();
    const success = await seed(recordFixture(approvedEvidence()).record, "2026-11-20T11:00:00.000Z");
    const c = capture();
    expect(await runHistory(["--repository", "acme/widgets", "--commit", success.head_sha], config, c.out)).toBe(0);
    expect(c.stdout[0]).toBe(`acme/widgets at ${success.head_sha}: no merge recorded; the decisions on this head:`);
    expect(c.text()).toContain(`decision ${success.id} on acme/widgets#7: success`);
  });

  test("history with no matching record exits 3", async () => {
    await open();
    await seed(recordFixture(approvedEvidence()).record, "2026-11-20T11:00:00.000Z");
    const c = capture();
    expect(await runHistory(["--repository", "acme/widgets", "--pull", "8"], config, c.out)).toBe(EXIT_HISTORY_NONE);
    expect(c.stderr[0]).toContain("no decision or merge record of acme/widgets#8");
  });

  test("history --json prints the records whole, with the merge's decision", async () => {
    await open();
    const success = await seed(recordFixture(approvedEvidence()).record, "2026-11-20T11:00:00.000Z");
    await merge(success, Date.parse("2026-11-20T12:00:00Z"));
    const c = capture();
    expect(await runHistory(["--repository", "acme/widgets", "--commit", MERGE_COMMIT, "--json"], config, c.out)).toBe(0);
    const document = JSON.parse(c.text()) as { schema_version: number; records: HistoryRecord[] };
    expect(document.schema_version).toBe(1);
    expect(document.records.map((r) => r.kind)).toEqual(["merge", "decision"]);
    expect(document.records[1]).toEqual(success);
  });

  test("export writes every record as a line of JSON with its schema_version, oldest first, filtered as asked", async () => {
    await open();
    const failed = await seed({ ...recordFixture(failedEvidence()).record, head_sha: "f".repeat(40) }, "2026-11-19T10:00:00.000Z");
    const success = await seed(recordFixture(approvedEvidence()).record, "2026-11-20T11:00:00.000Z");
    await merge(failed, Date.parse("2026-11-21T12:00:00Z"));
    await seed(recordFixture(approvedEvidence()).record, "2026-11-22T11:00:00.000Z", { repository: { id: 41, full_name: "acme/other" } });
    const exported = async (args: string[]) => {
      const chunks: string[] = [];
      const c = capture();
      const code = await runHistoryExport(args, config, c.out, { exportStream: new Writable({ write: (chunk, _e, cb) => { chunks.push(String(chunk)); cb(); } }) });
      expect(code).toBe(0);
      expect(c.stdout).toEqual([]);
      return chunks.join("").split("\n").filter(Boolean).map((line) => JSON.parse(line) as HistoryRecord);
    };
    const all = await exported([]);
    expect(all.map((r) => r.kind)).toEqual(["decision", "decision", "merge", "decision"]);
    expect(all.every((r) => r.schema_version === 1)).toBe(true);
    expect(all[1]).toEqual(success);
    expect((await exported(["--repository", "acme/widgets"])).map((r) => r.id)).toEqual(all.slice(0, 3).map((r) => r.id));
    expect((await exported(["--since", "2026-11-20", "--until", "2026-11-21T12:00:00Z"])).map((r) => r.id)).toEqual([success.id]);
    expect((await exported(["--unapproved"])).map((r) => r.kind)).toEqual(["merge"]);
    expect(await exported(["--since", "2030-01-01"])).toEqual([]);
  });

  const override = { review_id: 3000009, reviewer_id: 77, reviewer_login: "oncall", reason: "production outage, owners asleep", team: "sre", unsatisfied_owner_sets: [0] };

  test("history --overrides lists only the repository's records with a break-glass override: the overridden decisions and their merges", async () => {
    await open();
    await seed(recordFixture(approvedEvidence()).record, "2026-11-20T10:00:00.000Z");
    const overridden = await seed({ ...recordFixture(failedEvidence()).record, head_sha: "b".repeat(40), pull_request: 8, break_glass: override }, "2026-11-20T11:00:00.000Z");
    await merge(overridden, Date.parse("2026-11-20T12:00:00Z"));
    await seed({ ...recordFixture(failedEvidence()).record, head_sha: "c".repeat(40), break_glass: override }, "2026-11-20T13:00:00.000Z", { repository: { id: 41, full_name: "acme/other" } });
    const c = capture();
    expect(await runHistory(["--repository", "acme/widgets", "--overrides", "--json"], config, c.out)).toBe(0);
    const records = (JSON.parse(c.text()) as { records: HistoryRecord[] }).records;
    expect(records.map((r) => [r.kind, r.repository.full_name, r.kind === "merge_group" ? null : r.pull_request])).toEqual([["decision", "acme/widgets", 8], ["merge", "acme/widgets", 8]]);
    expect(records.every((r) => (r.kind === "merge" ? r.break_glass : r.kind === "decision" && r.break_glass !== null))).toBe(true);
    const d = capture();
    expect(await runHistory(["--repository", "acme/widgets", "--overrides"], config, d.out)).toBe(0);
    expect(d.stdout[0]).toBe("acme/widgets: 2 records with a break-glass override, oldest first");
    expect(d.text()).toContain("@oncall");
    const e = capture();
    expect(await runHistory(["--repository", "acme/widgets", "--pull", "7", "--overrides"], config, e.out)).toBe(EXIT_HISTORY_NONE);
    expect(e.stderr[0]).toContain("no decision or merge record with a break-glass override of acme/widgets#7");
  });

  test("export --overrides writes only the records with a break-glass override", async () => {
    await open();
    await seed(recordFixture(approvedEvidence()).record, "2026-11-20T10:00:00.000Z");
    const overridden = await seed({ ...recordFixture(failedEvidence()).record, head_sha: "b".repeat(40), pull_request: 8, break_glass: override }, "2026-11-20T11:00:00.000Z");
    await merge(overridden, Date.parse("2026-11-20T12:00:00Z"));
    const chunks: string[] = [];
    const c = capture();
    expect(await runHistoryExport(["--overrides"], config, c.out, { exportStream: new Writable({ write: (chunk, _e, cb) => { chunks.push(String(chunk)); cb(); } }) })).toBe(0);
    const lines = chunks.join("").split("\n").filter(Boolean).map((line) => JSON.parse(line) as HistoryRecord);
    expect(lines.map((r) => [r.kind, r.kind === "merge_group" ? null : r.pull_request])).toEqual([["decision", 8], ["merge", 8]]);
    expect(lines[0]).toEqual(overridden);
  });

  test("export stops with exit 3 when its output is closed (EPIPE)", async () => {
    await open();
    await seed(recordFixture(approvedEvidence()).record, "2026-11-20T11:00:00.000Z");
    const c = capture();
    const closed = new Writable({ write: (_chunk, _e, cb) => cb(Object.assign(new Error("write EPIPE"), { code: "EPIPE" })) });
    expect(await runHistoryExport([], config, c.out, { exportStream: closed })).toBe(EXIT_HISTORY_NONE);
    expect(c.stderr[0]).toContain("export stopped: the output was closed (EPIPE)");
  });

  test("a merge group's record is not replayed: replay says so and names its pull requests' decisions, and asks the forge nothing", async () => {
    await open();
    const member = await seed(recordFixture(approvedEvidence()).record, "2026-11-20T11:00:00.000Z");
    const repository = { installationId: 4, repositoryId: member.repository.id, owner: "acme", name: "widgets" };
    const row = { installationId: 4, repositoryId: member.repository.id, headSha: "c".repeat(40), headRef: "refs/heads/gh-readonly-queue/main/pr-7", baseRef: "main", baseSha: "d".repeat(40), state: "queued" as const, destroyedReason: null, requestedAtMs: 0, resetPending: false };
    const judged = [{ pullNumber: 7, headSha: member.head_sha, recordId: Number(member.id.slice(1)), ruleSource: "recorded" as const, outcome: "passed" as const, reason: null, changedBy: null }];
    const at = Date.parse("2026-11-20T12:00:00Z");
    await store.execute(() => recordGroupJudgement({ ...repository, headSha: row.headSha, success: true, members: [{ pullNumber: 7, headSha: member.head_sha }], now: at, record: { body: groupRecordBody(repository, row, 5, "success", "Merge group verified: 1 pull request", judged, at), sharedGeneration: 1, digest: "g" } }));
    const group = (await store.execute(() => listHistory({ commit: row.headSha }, null, 1))).items[0]!;
    expect(group.kind).toBe("merge_group");
    const forge = forgeOf(new Map());
    const c = capture();
    expect(await runHistoryReplay([group.id], config, c.out, { forge: forge.forge })).toBe(EXIT_HISTORY_NONE);
    expect(c.stderr[0]).toBe(`cannot replay ${group.id}: it is a merge group's record; its pull requests' own decisions are replayed (${member.id})`);
    expect(forge.asked).toEqual([]);
  });

  test("replay reaches the recorded decision from the blobs at the recorded SHAs (exit 0); a tampered record differs (exit 1)", async () => {
    await open();
    const { record, blobs } = recordFixture(approvedEvidence());
    const stored = await seed(record, "2026-11-20T11:00:00.000Z");
    const forge = forgeOf(blobs);
    const c = capture();
    expect(await runHistoryReplay([stored.id], config, c.out, { forge: forge.forge })).toBe(0);
    expect(c.stdout[0]).toBe(`replay of ${stored.id} on acme/widgets#7 at ${record.head_sha}: same: today's evaluation reaches the recorded success, its 2 owner sets and its reasons`);
    expect(forge.asked.sort()).toEqual([...blobs.keys()].sort());
    const tampered = await seed({ ...record, head_sha: "f".repeat(40), conclusion: "failure", pull_request: 8 }, "2026-11-20T12:00:00.000Z");
    const d = capture();
    expect(await runHistoryReplay([tampered.id], config, d.out, { forge: forge.forge })).toBe(1);
    expect(d.stdout[0]).toContain("DIFFERENT from the record");
    expect(d.stdout).toContain("  conclusion: recorded failure, today success");
  });

  test("replay --json writes the evidence document the playground opens, with the replay's outcome", async () => {
    await open();
    const { record, blobs } = recordFixture(approvedEvidence());
    const stored = await seed(record, "2026-11-20T11:00:00.000Z");
    const c = capture();
    expect(await runHistoryReplay([stored.id, "--json"], config, c.out, { forge: forgeOf(blobs).forge })).toBe(0);
    const document = JSON.parse(c.text());
    expect(document).toMatchObject({ format: EVIDENCE_DOCUMENT_FORMAT, version: 1, generatedBy: "service history replay", decision: { conclusion: "success" }, replay: { record: stored.id, outcome: "same", differences: [] } });
    const codeowners = document.evidence.codeowners.CODEOWNERS;
    expect(codeowners.kind).toBe("found");
    expect(codeowners.text).toBe(new TextDecoder().decode(blobs.get(record.inputs!.codeowners.CODEOWNERS!.kind === "found" ? record.inputs!.codeowners.CODEOWNERS!.blob_sha! : "")!));
  });

  test("replay of a merge replays its decision; a merge without one, or an unknown ID, cannot be replayed", async () => {
    await open();
    const { record, blobs } = recordFixture(approvedEvidence());
    const stored = await seed(record, "2026-11-20T11:00:00.000Z");
    const merged = await merge(stored, Date.parse("2026-11-20T12:00:00Z"));
    const c = capture();
    expect(await runHistoryReplay([`m${merged!.id}`], config, c.out, { forge: forgeOf(blobs).forge })).toBe(0);
    expect(c.stdout[0]).toContain(`replay of ${stored.id} (the decision behind m${merged!.id})`);
    const lone = await merge({ ...stored, head_sha: "e".repeat(40), pull_request: 9 }, Date.parse("2026-11-20T13:00:00Z"));
    const d = capture();
    expect(await runHistoryReplay([`m${lone!.id}`], config, d.out, { forge: forgeOf(blobs).forge })).toBe(EXIT_HISTORY_NONE);
    expect(d.stderr[0]).toContain("the merge names no decision of the service");
    const e = capture();
    expect(await runHistoryReplay(["d999"], config, e.out, { forge: forgeOf(blobs).forge })).toBe(EXIT_REPLAY_NO_RECORD);
    expect(e.stderr[0]).toBe("no record d999 (never written, or pruned after SERVICE_DECISION_RETENTION_DAYS)");
  });

  test("replay cannot replay (exit 3) a record without inputs, a blob gone, not matching, not UTF-8, or a forge that fails", async () => {
    await open();
    const { record, blobs } = recordFixture(approvedEvidence());
    const summarised = await seed({ ...record, inputs: null, summarised: { omitted: "inputs", replayable: false } }, "2026-11-20T10:00:00.000Z");
    const stored = await seed({ ...record, head_sha: "e".repeat(40) }, "2026-11-20T11:00:00.000Z");
    const cases: [string, { readBlob: (at: { sha: string }) => Promise<BlobRead> }, string][] = [
      [summarised.id, forgeOf(blobs).forge, "summarised without its inputs"],
      [stored.id, { readBlob: async () => ({ kind: "missing" }) }, "is gone from acme/widgets"],
      [stored.id, { readBlob: async () => ({ kind: "mismatch" }) }, "the bytes the forge answered do not hash to that SHA"],
      [stored.id, { readBlob: async () => ({ kind: "too_large", bytes: null }) }, "is over the 2999999-byte bound of its kind"],
      [stored.id, { readBlob: async () => ({ kind: "found", bytes: new Uint8Array([0xff, 0xfe, 0x41]) }) }, "it is not valid UTF-8"],
      [stored.id, { readBlob: async () => { throw new ForgeError("transient", "GET blob: request failed without a response"); } }, "could not be read: the forge request failed (transient)"],
    ];
    for (const [id, forge, why] of cases) {
      const c = capture();
      expect(await runHistoryReplay([id], config, c.out, { forge })).toBe(EXIT_HISTORY_NONE);
      expect(c.stderr[0]).toContain(`cannot replay ${id}`);
      expect(c.stderr[0]).toContain(why);
    }
  });

  test("verify says what it checked and the last checkpoint's hash (exit 0); a record changed in the database is named (exit 1); progress goes to stderr", async () => {
    await open();
    const lease = { name: "reconciler", owner: "verify-test", ttlMs: 86_400_000 };
    const decision = await seed(recordFixture(approvedEvidence()).record, "2026-11-20T11:00:00.000Z");
    await store.execute(() => acquireElectionLease(lease, Date.parse("2026-11-20T11:05:00Z")));
    const written = await store.execute(() => writeCheckpoint(lease, Date.parse("2026-11-20T11:05:00Z")));
    if (written.kind !== "written") throw new Error("no checkpoint");
    await seed(recordFixture(failedEvidence()).record, "2026-11-20T11:06:00.000Z");
    let clock = Date.parse("2026-11-21T00:00:00Z");
    const ticking = { now: () => (clock += 1_500) };
    const c = capture();
    expect(await runHistoryVerify([], config, c.out, ticking)).toBe(0);
    expect(c.stdout).toEqual([
      "history verified: checkpoint 1, 1 records covered, 1 not covered yet",
      `last checkpoint: 1, written 2026-11-20T11:05:00.000Z, covering 1 records, hash ${written.checkpoint.hash}`,
    ]);
    expect(c.stderr.some((line) => /^verified \d+ records/.test(line))).toBe(true);

    await store.execute(() => run("update decision_records set conclusion = 'failure' where id = $1", Number(decision.id.slice(1))));
    const d = capture();
    expect(await runHistoryVerify(["--since", "2026-11-20"], config, d.out)).toBe(1);
    expect(d.stdout[0]).toBe(`history verify: FAILED: decision record ${decision.id} was changed (covered by checkpoint 1): its fields do not hash to its digest`);
    expect(d.stdout[1]).toBe("checked before it: checkpoint 1, 0 records covered, 0 not covered yet");
  });
});
