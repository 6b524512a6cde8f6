import { afterAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../config/index.ts";
import {
  AttestationKeyError, canonicalJson, CHECKPOINT_PAYLOAD_TYPE, type Envelope, IN_TOTO_PAYLOAD_TYPE, LEVEL_BREAK_GLASS, LEVEL_CODE_OWNER_APPROVED, loadSigningKey,
  loadVerificationKeys, mergeStatement, pae, type SigningKey, signEnvelope, verifyEnvelope,
} from "./attestation.ts";

/** Keys, DSSE envelopes and statements of the service's signed attestations. */
const dir = mkdtempSync(join(tmpdir(), "attestation-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const pem = (type: "ed25519" | "ec" | "rsa", options: Record<string, unknown> = {}) =>
  generateKeyPairSync(type as "ed25519", { ...options, privateKeyEncoding: { type: "pkcs8", format: "pem" }, publicKeyEncoding: { type: "spki", format: "pem" } } as never) as unknown as { privateKey: string; publicKey: string };
const ed25519 = pem("ed25519");
const p256 = pem("ec", { namedCurve: "prime256v1" });

const facts = {
  forgeWebUrl: "https://github.com", appId: 77, version: "0.1.0", repository: "acme/web", mergeCommitSha: "c".repeat(40), baseSha: "b".repeat(40),
  merge: { id: "m12", digest: "1".repeat(64) }, decision: { id: "d40", digest: "2".repeat(64) }, breakGlass: false,
  codeowners: { path: ".github/CODEOWNERS", blobSha: "3".repeat(40) }, repositoryPolicy: { path: ".github/service-policy.toml", blobSha: "4".repeat(40) },
  organizationPolicy: { repository: ".github", path: ".github/service-policy.toml", blobSha: "5".repeat(40), commitSha: "6".repeat(40) }, verifiedAt: "2026-11-29T00:00:00.000Z",
};

describe("signing keys", () => {
  test("an Ed25519 or ECDSA P-256 PEM key loads, named by the SHA-256 of its public key", () => {
    const a = loadSigningKey(ed25519.privateKey);
    const b = loadSigningKey(p256.privateKey);
    expect([a.algorithm, b.algorithm]).toEqual(["ed25519", "ecdsa-p256"]);
    expect(a.keyId).toMatch(/^[0-9a-f]{64}$/);
    expect(loadVerificationKeys(ed25519.publicKey)[0]!.keyId).toBe(a.keyId);
  });

  test("a malformed file, a key of another type or curve, an encrypted key and a public key where a private one is due each give a clear error", () => {
    const rsa = pem("rsa", { modulusLength: 2048 });
    const p384 = pem("ec", { namedCurve: "secp384r1" });
    const encrypted = generateKeyPairSync("ed25519", { privateKeyEncoding: { type: "pkcs8", format: "pem", cipher: "aes-256-cbc", passphrase: "pass" }, publicKeyEncoding: { type: "spki", format: "pem" } }).privateKey;
    const cases: [string, string][] = [
      ["not a key at all", "the file holds no PEM private key"],
      [ed25519.privateKey.replace(/\n[A-Za-z0-9+/]{10}/, "\n!!!!!!!!!!"), "cannot be read (malformed or truncated)"],
      [rsa.privateKey, "the key must be Ed25519 or ECDSA P-256 (this one is rsa)"],
      [p384.privateKey, "an ECDSA key must be on curve P-256 (this one is on secp384r1)"],
      [encrypted, "the private key is encrypted"],
      [ed25519.publicKey, "the file holds no PEM private key"],
    ];
    for (const [text, problem] of cases) {
      let error: unknown;
      try {
        loadSigningKey(text);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(AttestationKeyError);
      expect((error as Error).message).toStartWith("SERVICE_ATTESTATION_KEY_FILE: ");
      expect((error as Error).message).toContain(problem);
      // Never the key's bytes.
      expect((error as Error).message).not.toContain("MII");
    }
    expect(() => loadVerificationKeys("nothing")).toThrow("SERVICE_ATTESTATION_PUBLIC_KEYS_FILE: the file holds no PEM public key");
  });

  test("the service does not start with a key it cannot load, naming the setting; without one nothing is signed", () => {
    writeFileSync(join(dir, "rsa.pem"), pem("rsa", { modulusLength: 2048 }).privateKey);
    writeFileSync(join(dir, "good.pem"), ed25519.privateKey);
    writeFileSync(join(dir, "older.pem"), p256.publicKey);
    const base = { SERVICE_DATABASE_URL: "sqlite::memory:" };
    expect(() => loadConfig({ ...base, SERVICE_ATTESTATION_KEY_FILE: join(dir, "rsa.pem") })).toThrow("SERVICE_ATTESTATION_KEY_FILE: the key must be Ed25519 or ECDSA P-256");
    expect(() => loadConfig({ ...base, SERVICE_ATTESTATION_KEY_FILE: join(dir, "missing.pem") })).toThrow("SERVICE_ATTESTATION_KEY_FILE: file cannot be read");
    expect(() => loadConfig({ ...base, SERVICE_ATTESTATION_PUBLIC_KEYS_FILE: join(dir, "older.pem") })).toThrow("SERVICE_ATTESTATION_PUBLIC_KEYS_FILE: needs SERVICE_ATTESTATION_KEY_FILE");
    expect(loadConfig(base).attestation).toBeNull();
    const config = loadConfig({ ...base, SERVICE_ATTESTATION_KEY_FILE: join(dir, "good.pem"), SERVICE_ATTESTATION_PUBLIC_KEYS_FILE: join(dir, "older.pem") });
    expect(config.attestation!.verifiers.map((k) => k.algorithm)).toEqual(["ed25519", "ecdsa-p256"]);
  });
});

describe("DSSE envelopes", () => {
  for (const [name, key] of [["Ed25519", ed25519], ["ECDSA P-256", p256]] as const) {
    test(`an envelope signed with ${name} verifies; a changed payload, type or signature does not`, () => {
      const signer = loadSigningKey(key.privateKey);
      const payload = canonicalJson(mergeStatement(facts));
      const envelope = signEnvelope(signer, IN_TOTO_PAYLOAD_TYPE, payload);
      expect(envelope.signatures[0]!.keyid).toBe(signer.keyId);
      const verified = verifyEnvelope(envelope, [signer], IN_TOTO_PAYLOAD_TYPE);
      expect(verified.ok && verified.payload.equals(payload)).toBe(true);
      const changedPayload = { ...envelope, payload: Buffer.from(payload.toString().replace("c".repeat(40), "d".repeat(40))).toString("base64") };
      expect(verifyEnvelope(changedPayload, [signer], IN_TOTO_PAYLOAD_TYPE)).toEqual({ ok: false, problem: "its signature does not verify: the payload or the signature was changed" });
      const sig = Buffer.from(envelope.signatures[0]!.sig, "base64");
      sig[sig.length - 1]! ^= 1;
      expect(verifyEnvelope({ ...envelope, signatures: [{ keyid: signer.keyId, sig: sig.toString("base64") }] }, [signer], IN_TOTO_PAYLOAD_TYPE).ok).toBe(false);
      expect(verifyEnvelope({ ...envelope, payloadType: CHECKPOINT_PAYLOAD_TYPE }, [signer], IN_TOTO_PAYLOAD_TYPE).ok).toBe(false);
      expect(verifyEnvelope(envelope, [signer], CHECKPOINT_PAYLOAD_TYPE).ok).toBe(false);
      expect(verifyEnvelope({ payload: "x" }, [signer], IN_TOTO_PAYLOAD_TYPE)).toMatchObject({ ok: false, problem: "not a DSSE envelope (payload, payloadType and signatures are required)" });
    });
  }

  test("after a rotation an envelope of the old key verifies with the old public key kept; a key not given does not verify it", () => {
    const old = loadSigningKey(p256.privateKey);
    const next = loadSigningKey(ed25519.privateKey);
    const before = signEnvelope(old, CHECKPOINT_PAYLOAD_TYPE, Buffer.from("{}"));
    const after = signEnvelope(next, CHECKPOINT_PAYLOAD_TYPE, Buffer.from("{}"));
    const keys = [next, ...loadVerificationKeys(p256.publicKey)];
    expect(verifyEnvelope(before, keys, CHECKPOINT_PAYLOAD_TYPE)).toMatchObject({ ok: true, keyId: old.keyId });
    expect(verifyEnvelope(after, keys, CHECKPOINT_PAYLOAD_TYPE)).toMatchObject({ ok: true, keyId: next.keyId });
    expect(verifyEnvelope(before, [next], CHECKPOINT_PAYLOAD_TYPE)).toEqual({ ok: false, problem: "it is signed by no key given to verify with (its key IDs are unknown)" });
  });

  test("PAE is DSSE's: DSSEv1, the type's length, the type, the payload's length and the payload", () => {
    expect(pae("http://example.com/HelloWorld", Buffer.from("hello world")).toString()).toBe("DSSEv1 29 http://example.com/HelloWorld 11 hello world");
  });

  for (const [name, key] of [["Ed25519", ed25519], ["ECDSA P-256", p256]] as const) {
    test(`openssl, sharing no code with the signer, verifies an ${name} envelope over a PAE the shell builds`, () => {
      const signer: SigningKey = loadSigningKey(key.privateKey);
      const envelope: Envelope = signEnvelope(signer, IN_TOTO_PAYLOAD_TYPE, canonicalJson(mergeStatement(facts)));
      const at = mkdtempSync(join(dir, "openssl-"));
      writeFileSync(join(at, "envelope.json"), JSON.stringify(envelope));
      writeFileSync(join(at, "public.pem"), key.publicKey);
      // The envelope's fields cut out with sed, decoded with base64, the PAE written with printf: no code of the service.
      const script = `
        set -e
        field() { sed -e "s/.*\\"$1\\":\\"\\([^\\"]*\\)\\".*/\\1/" envelope.json; }
        field payload | base64 -d > payload.bin
        type=$(field payloadType)
        printf 'DSSEv1 %s %s %s ' "\${#type}" "$type" "$(wc -c < payload.bin | tr -d ' ')" > pae.bin
        cat payload.bin >> pae.bin
        field sig | base64 -d > sig.bin
        if [ "$1" = ed25519 ]; then openssl pkeyutl -verify -pubin -inkey public.pem -rawin -in pae.bin -sigfile sig.bin
        else openssl dgst -sha256 -verify public.pem -signature sig.bin pae.bin; fi`;
      const good = spawnSync("sh", ["-c", script, "sh", signer.algorithm], { cwd: at, encoding: "utf8" });
      expect({ status: good.status, out: good.stdout.trim() }).toEqual({ status: 0, out: signer.algorithm === "ed25519" ? "Signature Verified Successfully" : "Verified OK" });
      // The same check fails on a changed payload.
      const changed = { ...envelope, payload: Buffer.from(Buffer.from(envelope.payload, "base64").toString().replace("PASSED", "FAILED")).toString("base64") };
      writeFileSync(join(at, "envelope.json"), JSON.stringify(changed));
      expect(spawnSync("sh", ["-c", script, "sh", signer.algorithm], { cwd: at, encoding: "utf8" }).status).not.toBe(0);
    });
  }
});

describe("the statement of an approved merge", () => {
  test("is an in-toto Statement v1 about the merge commit with a SLSA verification summary naming the rules and the records", () => {
    const statement = mergeStatement(facts) as { subject: unknown; predicateType: string; predicate: Record<string, unknown> };
    expect(statement).toMatchObject({ _type: "https://in-toto.io/Statement/v1", predicateType: "https://slsa.dev/verification_summary/v1" });
    expect(statement.subject).toEqual([{ name: "https://github.com/acme/web", digest: { gitCommit: "c".repeat(40) } }]);
    expect(statement.predicate).toMatchObject({
      verifier: { id: "urn:codeowner-approval-service:app:77@github.com" }, timeVerified: "2026-11-29T00:00:00.000Z", resourceUri: "git+https://github.com/acme/web",
      verificationResult: "PASSED", verifiedLevels: [LEVEL_CODE_OWNER_APPROVED],
      policy: { uri: `https://github.com/acme/web/tree/${"b".repeat(40)}`, digest: { gitCommit: "b".repeat(40) }, annotations: { codeowners: { path: ".github/CODEOWNERS", gitBlob: "3".repeat(40) } } },
      inputAttestations: [
        { uri: "urn:codeowner-approval-service:record:m12", digest: { sha256: "1".repeat(64) } },
        { uri: "urn:codeowner-approval-service:record:d40", digest: { sha256: "2".repeat(64) } },
      ],
    });
    expect((mergeStatement({ ...facts, breakGlass: true }) as { predicate: { verifiedLevels: string[] } }).predicate.verifiedLevels).toEqual([LEVEL_CODE_OWNER_APPROVED, LEVEL_BREAK_GLASS]);
    // Canonical bytes: the same statement always signs the same payload.
    expect(canonicalJson(mergeStatement(facts)).equals(canonicalJson(JSON.parse(canonicalJson(mergeStatement(facts)).toString())))).toBe(true);
  });
});
