import { afterEach, describe, expect, test } from "bun:test";
import { BACKENDS, openMigratedStore, type TestDatabase } from "../../e2e/support/databases.ts";
import { sampleDecisionBody } from "../records/fixtures.ts";
import { checkpointBytes, checkpointHash, checkpointLeafHash, merkleRoot, recordDigest, RECORD_FIELDS, type RecordKind, toHex } from "../records/tamper-evidence.ts";
import { generateKeyPairSync } from "node:crypto";
import { CHECKPOINT_PAYLOAD_TYPE, loadSigningKey, verifyEnvelope } from "../records/attestation.ts";
import { signCheckpoint, signMerge } from "../records/attest.ts";
import {
  acquireElectionLease, all, CHECKPOINT_INTERVAL_MS, confirmDecision, type MergeInput, type MergeToAttest, pruneHistory, readCheckpoints, recordMerge, recordPendingDecision, run, settleMergeEnrollment,
  type Store, writeCheckpoint,
} from "./index.ts";

/** Checkpoints of the decision and merge records, written by the elected reconciler (ops/checkpoint-ops.ts, migration 0014). */
const HEAD = "d".repeat(40);
const lease = { name: "reconciler", owner: "r1", ttlMs: 86_400_000 };
const T = 1_764_000_000_000;

describe.each(BACKENDS)("checkpoints on %s", (backend) => {
  let database: TestDatabase;
  let store: Store;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });
  async function open() {
    ({ database, store } = await openMigratedStore(backend));
    await store.execute(() => acquireElectionLease(lease, T));
  }
  let n = 0;
  /** A decision record published at `at`, confirmed unless told otherwise. */
  async function decide(at: number, confirmed = true): Promise<void> {
    const token = `pending:${++n}`;
    await store.execute(() => recordPendingDecision({ body: sampleDecisionBody({ pull_request: n, published_at: new Date(at).toISOString() }), sharedGeneration: n, digest: `dg${n}`, token }));
    if (confirmed) await store.execute(() => confirmDecision({ repositoryId: 40, headSha: HEAD, token, now: at + 1 }));
  }
  const merge = (over: Partial<MergeInput> = {}): MergeInput => ({
    installationId: 4, repositoryId: 40, repositoryFullName: "acme/web", pullNumber: ++n, headSha: HEAD, mergeCommitSha: "m".repeat(40), baseSha: "b".repeat(40),
    mergedBy: { id: 102, login: "bob" }, mergedAtMs: T, recovered: false, now: T, ...over,
  });
  const table = (kind: RecordKind) => (kind === "decision" ? "decision_records" : "merge_records");
  const rows = (kind: RecordKind) => store.execute(() => all(`select id, checkpoint_id, checkpoint_leaf, record_sha256, ${Object.keys(RECORD_FIELDS[kind]).join(", ")} from ${table(kind)} order by id`));
  const checkpoint = (now: number, options?: { batch?: number }) => store.execute(() => writeCheckpoint(lease, now, options));
  /** The root recomputed from the rows a checkpoint names, by leaf. */
  async function rootOf(checkpointId: number): Promise<{ root: string; leaves: number[] }> {
    const covered = [...(await rows("decision")).map((r) => ({ kind: "decision" as const, r })), ...(await rows("merge")).map((r) => ({ kind: "merge" as const, r }))]
      .filter(({ r }) => Number(r.checkpoint_id) === checkpointId && r.checkpoint_id !== null)
      .sort((a, b) => Number(a.r.checkpoint_leaf) - Number(b.r.checkpoint_leaf));
    return {
      root: toHex(merkleRoot(covered.map(({ kind, r }) => checkpointLeafHash({ kind, id: Number(r.id), digest: recordDigest(kind, r) })))),
      leaves: covered.map(({ r }) => Number(r.checkpoint_leaf)),
    };
  }

  test("a checkpoint covers the final records not covered yet, leaf by leaf, with the Merkle root over them; unconfirmed and unsettled records wait", async () => {
    await open();
    await decide(T);
    await decide(T + 1, false); // its write never reached the forge
    await decide(T + 2);
    const settled = await store.execute(() => recordMerge(merge()));
    await store.execute(() => settleMergeEnrollment(settled!.id, "enrolled", T + 3));
    await store.execute(() => recordMerge(merge())); // its enrollment is not read yet
    const outcome = await checkpoint(T + 10);
    expect(outcome.kind).toBe("written");
    if (outcome.kind !== "written") return;
    const { checkpoint: written } = outcome;
    expect(written).toMatchObject({ id: 1, count: 3, previous: null, createdAtMs: T + 10 });
    expect(written.hash).toBe(checkpointHash(written));
    expect(await rootOf(1)).toEqual({ root: written.root, leaves: [0, 1, 2] });
    expect((await rows("decision")).map((r) => (r.checkpoint_id === null ? null : Number(r.checkpoint_id)))).toEqual([1, null, 1]);
    expect((await rows("merge")).map((r) => (r.checkpoint_id === null ? null : Number(r.checkpoint_leaf)))).toEqual([2, null]);
    expect(await store.execute(() => readCheckpoints(0, 10))).toEqual([written]);
  });

  test("at most one checkpoint per interval, none when nothing was added, and each chains to the one before", async () => {
    await open();
    await decide(T);
    const first = await checkpoint(T);
    await decide(T + 1_000);
    expect((await checkpoint(T + CHECKPOINT_INTERVAL_MS - 1)).kind).toBe("not_due");
    const second = await checkpoint(T + CHECKPOINT_INTERVAL_MS);
    expect(second).toMatchObject({ kind: "written", checkpoint: { id: 2, count: 1 } });
    if (first.kind !== "written" || second.kind !== "written") throw new Error("not written");
    expect(second.checkpoint.previous).toBe(first.checkpoint.hash);
    expect(await rootOf(2)).toEqual({ root: second.checkpoint.root, leaves: [0] });
    expect((await checkpoint(T + 3 * CHECKPOINT_INTERVAL_MS)).kind).toBe("nothing_new");
    expect((await store.execute(() => readCheckpoints(0, 10))).map((c) => c.id)).toEqual([1, 2]);
  });

  test("only the holder of the reconciler's lease writes a checkpoint", async () => {
    await open();
    await decide(T);
    expect(await store.execute(() => writeCheckpoint({ ...lease, owner: "r2" }, T + 1))).toEqual({ kind: "lost" });
    expect(await store.execute(() => readCheckpoints(0, 10))).toEqual([]);
    expect((await rows("decision"))[0]!.checkpoint_id).toBeNull();
  });

  test("a backlog larger than one statement's batch is covered by one checkpoint, its leaves numbered on across batches and kinds", async () => {
    await open();
    for (let i = 0; i < 5; i++) await decide(T + i);
    for (let i = 0; i < 3; i++) {
      const m = await store.execute(() => recordMerge(merge()));
      await store.execute(() => settleMergeEnrollment(m!.id, "enrolled", T + 9));
    }
    const outcome = await checkpoint(T + 10, { batch: 2 });
    expect(outcome).toMatchObject({ kind: "written", checkpoint: { count: 8 } });
    if (outcome.kind !== "written") return;
    expect(await rootOf(1)).toEqual({ root: outcome.checkpoint.root, leaves: [0, 1, 2, 3, 4, 5, 6, 7] });
  });

  test("a record written before records had digests is given its digest as the first checkpoint covers it", async () => {
    await open();
    await decide(T);
    const m = await store.execute(() => recordMerge(merge()));
    await store.execute(() => settleMergeEnrollment(m!.id, "not_enrolled", T + 1));
    await store.execute(() => run("update decision_records set record_sha256 = null"));
    await store.execute(() => run("update merge_records set record_sha256 = null"));
    const outcome = await checkpoint(T + 10);
    expect(outcome).toMatchObject({ kind: "written", checkpoint: { count: 2 } });
    for (const kind of ["decision", "merge"] as const) for (const row of await rows(kind)) expect(row.record_sha256).toBe(recordDigest(kind, row));
    if (outcome.kind === "written") expect((await rootOf(1)).root).toBe(outcome.checkpoint.root);
  });

  test("pruning removes a covered record only with its whole checkpoint, once that checkpoint is past the retention; uncovered records go by their own time", async () => {
    await open();
    await decide(T + 1_000);
    await decide(T + 2_000);
    await checkpoint(T + 10_000);
    await decide(T + 3_000); // published before that checkpoint, confirmed after it: the next checkpoint covers it
    await decide(T + 4_000, false);
    await checkpoint(T + 10_000 + CHECKPOINT_INTERVAL_MS);
    const kept = async () => (await rows("decision")).map((r) => Number(r.published_at_ms) - T);
    const now = T + 2 * CHECKPOINT_INTERVAL_MS;
    expect(await store.execute(() => pruneHistory(lease, T + 5_000, now))).toBe(1); // only the unconfirmed one: no checkpoint is past the cutoff
    expect(await kept()).toEqual([1_000, 2_000, 3_000]);
    expect(await store.execute(() => pruneHistory(lease, T + 10_001, now, 1))).toBe(1);
    expect(await store.execute(() => pruneHistory(lease, T + 10_001, now, 1))).toBe(1);
    expect(await store.execute(() => pruneHistory(lease, T + 10_001, now, 1))).toBe(0);
    expect(await kept()).toEqual([3_000]);
    expect((await store.execute(() => readCheckpoints(0, 10))).map((c) => c.id)).toEqual([1, 2]);
  });
  test("with a key a checkpoint signs, in its transaction, itself and the approved merges it covers, and never a merge an earlier checkpoint covered", async () => {
    await open();
    const signer = loadSigningKey(generateKeyPairSync("ed25519", { privateKeyEncoding: { type: "pkcs8", format: "pem" }, publicKeyEncoding: { type: "spki", format: "pem" } }).privateKey);
    const settings = { signer, forgeWebUrl: "https://forge.example", appId: 7, version: "0.1.0" };
    const sign = {
      checkpoint: signCheckpoint(signer),
      merges: (merges: readonly MergeToAttest[]) => merges.map((m) => ({ mergeId: m.id, keyId: signer.keyId, envelope: JSON.stringify(signMerge(settings, m, new Date(T).toISOString())) })),
    };
    /** A merge its pull request's confirmed success approved, settled enrolled. */
    const approvedMerge = async (at: number) => {
      const token = `pending:${++n}`;
      const pull = n;
      await store.execute(() => recordPendingDecision({ body: sampleDecisionBody({ pull_request: pull, published_at: new Date(at).toISOString() }), sharedGeneration: n, digest: `dg${n}`, token }));
      await store.execute(() => confirmDecision({ repositoryId: 40, headSha: HEAD, token, now: at + 1 }));
      const merged = (await store.execute(() => recordMerge(merge({ pullNumber: pull, now: at + 2 }))))!;
      expect(merged.unapproved).toBe(false);
      await store.execute(() => settleMergeEnrollment(merged.id, "enrolled", at + 3));
      return merged.id;
    };
    const approved = await approvedMerge(T);
    const unapproved = (await store.execute(() => recordMerge(merge())))!; // no decision: unapproved
    await store.execute(() => settleMergeEnrollment(unapproved.id, "enrolled", T + 4));
    const first = await store.execute(() => writeCheckpoint(lease, T + 10, { sign }));
    expect(first.kind).toBe("written");
    const attested = async () => (await store.execute(() => all<{ merge_id: unknown; envelope: string }>("select merge_id, envelope from merge_attestations order by merge_id")));
    expect((await attested()).map((a) => Number(a.merge_id))).toEqual([approved]);
    const [checkpointRow] = await store.execute(() => readCheckpoints(0, 1));
    const check = verifyEnvelope(JSON.parse(checkpointRow!.envelope!), [signer], CHECKPOINT_PAYLOAD_TYPE);
    expect(check.ok && check.payload.equals(Buffer.from(checkpointBytes(checkpointRow!)))).toBe(true);
    // Someone who can write the database turns the covered unapproved merge into an approved one, digest recomputed: the next
    // checkpoint signs what it covers (a new approved merge), never that one.
    await store.execute(() => run("update merge_records set unapproved = false where id = $1", unapproved.id));
    const [flipped] = await store.execute(() => all(`select ${Object.keys(RECORD_FIELDS.merge).join(", ")} from merge_records where id = $1`, unapproved.id));
    await store.execute(() => run("update merge_records set record_sha256 = $1 where id = $2", recordDigest("merge", flipped!), unapproved.id));
    const later = await approvedMerge(T + CHECKPOINT_INTERVAL_MS + 20);
    expect((await store.execute(() => writeCheckpoint(lease, T + CHECKPOINT_INTERVAL_MS + 100, { sign }))).kind).toBe("written");
    expect((await attested()).map((a) => Number(a.merge_id))).toEqual([approved, later]);
  });
});
