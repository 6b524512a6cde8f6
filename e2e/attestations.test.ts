import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { all, one, openStore, run, type Store } from "../server/store/index.ts";
import { ensureBinary, runBinary } from "./support/binary.ts";
import { BACKENDS } from "./support/databases.ts";
import { READER_TOKEN, type ServiceHarness, startServiceHarness, waitUntil } from "./support/service.ts";

/**
 * Signed attestations end to end: with SERVICE_ATTESTATION_KEY_FILE the service's reconciler signs its checkpoint and, once
 * the checkpoint covers it, an approved merge's statement; the route serves it, the public-key route its key, the export
 * carries it, and the compiled binary's `history verify --attestations` passes with that public key, then names a changed
 * envelope and a changed record. Both backends.
 */
beforeAll(() => ensureBinary());

describe.each(BACKENDS)("signed attestations of what the service wrote on %s", (backend) => {
  let h: ServiceHarness;
  let reader: Store | undefined;
  let dir: string;
  afterEach(async () => {
    await reader?.close();
    reader = undefined;
    await h?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("an approved merge's statement is signed, served, exported and verified offline; a changed envelope or record is named", async () => {
    dir = mkdtempSync(join(tmpdir(), "attest-e2e-"));
    const keys = generateKeyPairSync("ed25519", { privateKeyEncoding: { type: "pkcs8", format: "pem" }, publicKeyEncoding: { type: "spki", format: "pem" } });
    writeFileSync(join(dir, "attestation.pem"), keys.privateKey);
    h = await startServiceHarness(backend, { SERVICE_RECONCILE_ENABLED: "true", SERVICE_RECONCILE_INTERVAL_SECONDS: "10", SERVICE_ATTESTATION_KEY_FILE: join(dir, "attestation.pem") });
    reader = openStore(h.database.target);
    const store = reader;
    const pr = { owner: h.scenario.org, repo: h.scenario.repo, number: h.scenario.pullNumber };
    const { sha: head } = await h.sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "1\n" } });
    for (const user of ["alice", "bob"]) await h.sim.control.submitReview({ ...pr, user, state: "APPROVED" });
    await h.waitForCheck(head, { status: "completed", conclusion: "success" });
    const merged = await h.sim.control.mergePullRequest({ ...pr, by: "bob", at: new Date().toISOString() });
    const mergeCommit = merged.merged!.commitSha;
    // The reconciler runs every 10 s: its first checkpoint covers the settled merge, which it then attests.
    await waitUntil(async () => (await store.execute(() => all("select merge_id from merge_attestations"))).length === 1, "the merge's statement", 40_000);
    const merge = (await store.execute(() => one<{ id: unknown }>("select id from merge_records")))!;
    const id = `m${Number(merge.id)}`;

    const api = (path: string, token = true) => fetch(`${h.service.url}${path}`, token ? { headers: { authorization: `Bearer ${READER_TOKEN}` } } : {});
    const served = await api(`/api/decisions/${id}/attestation`);
    expect(served.status).toBe(200);
    const envelope = (await served.json()) as { payloadType: string; payload: string; signatures: { keyid: string }[] };
    expect(envelope.payloadType).toBe("application/vnd.in-toto+json");
    const statement = JSON.parse(Buffer.from(envelope.payload, "base64").toString());
    // The harness keeps the default forge web URL (SERVICE_FORGE_WEB_URL).
    expect(statement.subject).toEqual([{ name: "https://github.com/acme/web", digest: { gitCommit: mergeCommit } }]);
    expect(statement.predicate.verifiedLevels).toEqual(["ORG_SOURCE_CODE_OWNER_APPROVED"]);
    // No credential, no statement; the public key is public.
    expect((await api(`/api/decisions/${id}/attestation`, false)).status).toBe(401);
    const published = (await (await api("/api/attestations/public-key", false)).json()) as { signing_key_id: string; keys: { key_id: string; pem: string }[] };
    expect(published.keys.map((k) => k.key_id)).toEqual([envelope.signatures[0]!.keyid]);
    expect(published.keys[0]!.pem.replace(/\s/g, "")).toBe(keys.publicKey.replace(/\s/g, ""));
    // A decision is no merge: no statement.
    const decision = (await store.execute(() => one<{ id: unknown }>("select id from decision_records order by id limit 1")))!;
    expect(await (await api(`/api/decisions/d${Number(decision.id)}/attestation`)).json()).toMatchObject({ error: "no_attestation" });

    // The export carries the envelope on the merge's line.
    const env = { SERVICE_DATABASE_URL: h.database.url };
    const exported = runBinary(["history", "export"], env);
    const line = exported.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l)).find((r) => r.id === id);
    expect(line.attestation).toEqual(envelope);

    writeFileSync(join(dir, "public.pem"), published.keys[0]!.pem);
    const verify = () => runBinary(["history", "verify", "--attestations", "--public-key", join(dir, "public.pem")], env);
    const clean = verify();
    expect({ exitCode: clean.exitCode, first: clean.stdout.split("\n")[0] }).toEqual({ exitCode: 0, first: expect.stringMatching(/^attestations verified: 1 checkpoint signatures, 1 merge statements, with key [0-9a-f]{16}$/) });
    // Another key does not verify them.
    writeFileSync(join(dir, "other.pem"), generateKeyPairSync("ed25519", { publicKeyEncoding: { type: "spki", format: "pem" }, privateKeyEncoding: { type: "pkcs8", format: "pem" } }).publicKey);
    const other = runBinary(["history", "verify", "--attestations", "--public-key", join(dir, "other.pem")], env);
    expect(other.exitCode).toBe(1);
    expect(other.stdout.split("\n")[0]).toBe("history verify: FAILED: checkpoint 1's signature does not hold: it is signed by no key given to verify with (its key IDs are unknown)");

    // The statement changed in the database (another merge commit, re-encoded): its signature no longer holds.
    const stored = (await store.execute(() => one<{ envelope: string }>("select envelope from merge_attestations")))!.envelope;
    const forged = JSON.parse(stored) as { payload: string };
    forged.payload = Buffer.from(Buffer.from(forged.payload, "base64").toString().replace(mergeCommit, "f".repeat(40))).toString("base64");
    await store.execute(() => run("update merge_attestations set envelope = $1", JSON.stringify(forged)));
    const tampered = verify();
    expect(tampered.exitCode).toBe(1);
    expect(tampered.stdout.split("\n")[0]).toBe(`history verify: FAILED: the statement of merge record ${id} does not hold: its signature does not verify: the payload or the signature was changed`);
    await store.execute(() => run("update merge_attestations set envelope = $1", stored));
    expect(verify().exitCode).toBe(0);

    // The statement deleted: the signed checkpoint that covers the merge signed it, so its absence is named; and the service
    // never signs it again (it signs only what a checkpoint seals, in that checkpoint's transaction).
    await store.execute(() => run("delete from merge_attestations"));
    expect(verify().stdout.split("\n")[0]).toBe(`history verify: FAILED: approved merge record ${id} is covered by signed checkpoint 1 but has no statement: it was removed`);
    await Bun.sleep(11_000); // one more reconciler attempt
    expect(await store.execute(() => all("select merge_id from merge_attestations"))).toEqual([]);
    await store.execute(() => run("insert into merge_attestations (merge_id, key_id, envelope, created_at_ms) values ($1, $2, $3, $4)", Number(merge.id), envelope.signatures[0]!.keyid, stored, Date.now()));
    expect(verify().exitCode).toBe(0);

    // The merge record changed in the database (who merged it): named before any signature is read.
    await store.execute(() => run("update merge_records set merged_by_login = 'mallory'"));
    expect(verify().stdout.split("\n")[0]).toBe(`history verify: FAILED: merge record ${id} was changed (covered by checkpoint 1): its fields do not hash to its digest`);
    await store.execute(() => run("update merge_records set merged_by_login = 'bob'"));

    // A checkpoint's signature changed is named.
    const signed = (await store.execute(() => one<{ envelope: string }>("select envelope from history_checkpoints where id = 1")))!.envelope;
    await store.execute(() => run("update history_checkpoints set envelope = $1 where id = 1", signed.replace(/"sig":"[A-Za-z0-9+/]{4}/, '"sig":"AAAA')));
    expect(verify().stdout.split("\n")[0]).toBe("history verify: FAILED: checkpoint 1's signature does not hold: its signature does not verify: the payload or the signature was changed");
    await store.execute(() => run("update history_checkpoints set envelope = $1 where id = 1", signed));
    expect(verify().exitCode).toBe(0);
  }, 90_000);
});
