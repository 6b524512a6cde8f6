import { createHash, createPrivateKey, createPublicKey, type KeyObject, sign, verify } from "node:crypto";
import canonicalize from "canonicalize";

/**
 * Signed attestations (DSSE envelopes) of the service's evidence:
 * - each checkpoint of the decision and merge records (its canonical bytes, tamper-evidence.ts), signed when it is written;
 * - each approved merge: an in-toto Statement v1 whose subject is the merge commit and whose predicate is a SLSA verification
 *   summary (https://slsa.dev/verification_summary/v1): `PASSED` at `ORG_SOURCE_CODE_OWNER_APPROVED` (and
 *   `ORG_SOURCE_BREAK_GLASS` when a break-glass override approved it), naming the rules it was decided under and the merge
 *   and decision records with their digests.
 *
 * DSSE (https://github.com/secure-systems-lab/dsse): the signature is over PAE(payloadType, payload) =
 * "DSSEv1" SP LEN(type) SP type SP LEN(payload) SP payload; the envelope is {payload (base64), payloadType, signatures:
 * [{keyid, sig (base64)}]}. Keys: Ed25519 (signature over the PAE itself) or ECDSA P-256 with SHA-256 (DER signature), both
 * from node:crypto: nothing cryptographic is written by hand. A key's ID is the hexadecimal SHA-256 of its public key's
 * SubjectPublicKeyInfo DER, so anyone holding the public key computes it. Statements are serialized by RFC 8785 (the
 * `canonicalize` package) so that their bytes are stable.
 */

export const IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json";
export const CHECKPOINT_PAYLOAD_TYPE = "application/vnd.codeowner-approval.checkpoint+json";
export const STATEMENT_TYPE = "https://in-toto.io/Statement/v1";
export const VSA_PREDICATE_TYPE = "https://slsa.dev/verification_summary/v1";
export const LEVEL_CODE_OWNER_APPROVED = "ORG_SOURCE_CODE_OWNER_APPROVED";
export const LEVEL_BREAK_GLASS = "ORG_SOURCE_BREAK_GLASS";

export type Envelope = {
  readonly payloadType: string;
  readonly payload: string;
  readonly signatures: readonly { readonly keyid: string; readonly sig: string }[];
};

export type KeyAlgorithm = "ed25519" | "ecdsa-p256";
export type VerificationKey = { readonly keyId: string; readonly algorithm: KeyAlgorithm; readonly publicKey: KeyObject };
export type SigningKey = VerificationKey & { readonly privateKey: KeyObject };

/** A key file the service cannot use: the message names the setting and the problem, never the key's bytes. */
export class AttestationKeyError extends Error {
  override readonly name = "AttestationKeyError";
  constructor(readonly setting: string, readonly problem: string) {
    super(`${setting}: ${problem}`);
  }
}

function algorithmOf(key: KeyObject, setting: string): KeyAlgorithm {
  if (key.asymmetricKeyType === "ed25519") return "ed25519";
  if (key.asymmetricKeyType === "ec") {
    if (key.asymmetricKeyDetails?.namedCurve === "prime256v1") return "ecdsa-p256";
    throw new AttestationKeyError(setting, `an ECDSA key must be on curve P-256 (this one is on ${key.asymmetricKeyDetails?.namedCurve ?? "another curve"})`);
  }
  throw new AttestationKeyError(setting, `the key must be Ed25519 or ECDSA P-256 (this one is ${key.asymmetricKeyType ?? "of an unknown type"})`);
}

export function keyIdOf(publicKey: KeyObject): string {
  return createHash("sha256").update(publicKey.export({ type: "spki", format: "der" })).digest("hex");
}

/** The signing key of a PEM private key file (PKCS#8 or SEC1, unencrypted). */
export function loadSigningKey(pem: string, setting = "SERVICE_ATTESTATION_KEY_FILE"): SigningKey {
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) throw new AttestationKeyError(setting, "the file holds no PEM private key");
  if (/ENCRYPTED/.test(pem)) throw new AttestationKeyError(setting, "the private key is encrypted; give the service an unencrypted key file readable only by it");
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: pem, format: "pem" });
  } catch {
    throw new AttestationKeyError(setting, "the PEM private key cannot be read (malformed or truncated)");
  }
  const algorithm = algorithmOf(privateKey, setting);
  const publicKey = createPublicKey(privateKey);
  return { keyId: keyIdOf(publicKey), algorithm, publicKey, privateKey };
}

/** Every public key of a PEM file (one or more `PUBLIC KEY` blocks): older keys kept for verification after a rotation. */
export function loadVerificationKeys(pem: string, setting = "SERVICE_ATTESTATION_PUBLIC_KEYS_FILE"): VerificationKey[] {
  const blocks = pem.match(/-----BEGIN PUBLIC KEY-----[\s\S]*?-----END PUBLIC KEY-----/g) ?? [];
  if (blocks.length === 0) throw new AttestationKeyError(setting, "the file holds no PEM public key (-----BEGIN PUBLIC KEY-----)");
  return blocks.map((block, index) => {
    let publicKey: KeyObject;
    try {
      publicKey = createPublicKey({ key: block, format: "pem" });
    } catch {
      throw new AttestationKeyError(setting, `public key ${index + 1} cannot be read (malformed or truncated)`);
    }
    return { keyId: keyIdOf(publicKey), algorithm: algorithmOf(publicKey, setting), publicKey };
  });
}

/** DSSE's pre-authentication encoding. */
export function pae(payloadType: string, payload: Uint8Array): Buffer {
  const type = Buffer.from(payloadType, "utf8");
  return Buffer.concat([Buffer.from(`DSSEv1 ${type.length} `, "utf8"), type, Buffer.from(` ${payload.byteLength} `, "utf8"), payload]);
}

function signBytes(key: SigningKey, bytes: Uint8Array): Buffer {
  return key.algorithm === "ed25519" ? sign(null, bytes, key.privateKey) : sign("sha256", bytes, { key: key.privateKey, dsaEncoding: "der" });
}

function verifyBytes(key: VerificationKey, bytes: Uint8Array, signature: Buffer): boolean {
  try {
    return key.algorithm === "ed25519" ? verify(null, bytes, key.publicKey, signature) : verify("sha256", bytes, { key: key.publicKey, dsaEncoding: "der" }, signature);
  } catch {
    return false;
  }
}

export function signEnvelope(key: SigningKey, payloadType: string, payload: Uint8Array): Envelope {
  return { payloadType, payload: Buffer.from(payload).toString("base64"), signatures: [{ keyid: key.keyId, sig: signBytes(key, pae(payloadType, payload)).toString("base64") }] };
}

export type EnvelopeCheck = { readonly ok: true; readonly payload: Buffer; readonly keyId: string } | { readonly ok: false; readonly problem: string };

/** Checks an envelope's shape and that one of its signatures verifies with a known key of the ID it names. */
export function verifyEnvelope(envelope: unknown, keys: readonly VerificationKey[], payloadType: string): EnvelopeCheck {
  const e = envelope as Partial<Envelope> | null;
  if (e === null || typeof e !== "object" || typeof e.payload !== "string" || typeof e.payloadType !== "string" || !Array.isArray(e.signatures)) {
    return { ok: false, problem: "not a DSSE envelope (payload, payloadType and signatures are required)" };
  }
  if (e.payloadType !== payloadType) return { ok: false, problem: `its payloadType is ${JSON.stringify(e.payloadType).slice(0, 80)}, not ${payloadType}` };
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(e.payload)) return { ok: false, problem: "its payload is not base64" };
  const payload = Buffer.from(e.payload, "base64");
  const signed = pae(e.payloadType, payload);
  let named = false;
  for (const signature of e.signatures.slice(0, 8)) {
    const key = keys.find((k) => k.keyId === signature?.keyid);
    if (key === undefined || typeof signature.sig !== "string") continue;
    named = true;
    if (verifyBytes(key, signed, Buffer.from(signature.sig, "base64"))) return { ok: true, payload, keyId: key.keyId };
  }
  return { ok: false, problem: named ? "its signature does not verify: the payload or the signature was changed" : "it is signed by no key given to verify with (its key IDs are unknown)" };
}

/** RFC 8785 bytes of a JSON value. */
export function canonicalJson(value: unknown): Buffer {
  return Buffer.from(canonicalize(value)!, "utf8");
}

/** What an approved merge's statement says. */
export type MergeFacts = {
  readonly forgeWebUrl: string;
  /** Who verified: this service as the forge's App (appId) on that forge, and its version. */
  readonly appId: number;
  readonly version: string;
  readonly repository: string;
  readonly mergeCommitSha: string;
  readonly baseSha: string | null;
  readonly merge: { readonly id: string; readonly digest: string };
  readonly decision: { readonly id: string; readonly digest: string };
  readonly breakGlass: boolean;
  readonly codeowners: { readonly path: string; readonly blobSha: string | null } | null;
  readonly repositoryPolicy: { readonly path: string; readonly blobSha: string | null } | null;
  readonly organizationPolicy: { readonly repository: string; readonly path: string; readonly blobSha: string | null; readonly commitSha: string | null } | null;
  readonly verifiedAt: string;
};

/** A record as an input of a statement: its ID (GET /api/decisions/{id} reads it) under this prefix, and its digest. */
export const RECORD_URN = "urn:codeowner-approval-service:record:";

/** The verifier's identity: this service as App `appId` of the forge at `forgeWebUrl`. */
export function verifierId(forgeWebUrl: string, appId: number): string {
  return `urn:codeowner-approval-service:app:${appId}@${new URL(forgeWebUrl).host}`;
}

/** The in-toto Statement v1 with a SLSA verification-summary predicate for an approved merge. */
export function mergeStatement(facts: MergeFacts): Record<string, unknown> {
  const repositoryUrl = `${facts.forgeWebUrl.replace(/\/+$/, "")}/${facts.repository}`;
  const file = (f: { path: string; blobSha: string | null } | null) => (f === null ? null : { path: f.path, gitBlob: f.blobSha });
  return {
    _type: STATEMENT_TYPE,
    subject: [{ name: repositoryUrl, digest: { gitCommit: facts.mergeCommitSha } }],
    predicateType: VSA_PREDICATE_TYPE,
    predicate: {
      verifier: { id: verifierId(facts.forgeWebUrl, facts.appId), version: { "codeowner-approval-service": facts.version } },
      timeVerified: facts.verifiedAt,
      resourceUri: `git+${repositoryUrl}`,
      policy: {
        uri: facts.baseSha === null ? repositoryUrl : `${repositoryUrl}/tree/${facts.baseSha}`,
        ...(facts.baseSha === null ? {} : { digest: { gitCommit: facts.baseSha } }),
        annotations: {
          codeowners: file(facts.codeowners),
          repositoryPolicy: file(facts.repositoryPolicy),
          organizationPolicy: facts.organizationPolicy === null ? null : { repository: facts.organizationPolicy.repository, path: facts.organizationPolicy.path, gitBlob: facts.organizationPolicy.blobSha, gitCommit: facts.organizationPolicy.commitSha },
        },
      },
      inputAttestations: [
        { uri: `${RECORD_URN}${facts.merge.id}`, name: `merge record ${facts.merge.id}`, digest: { sha256: facts.merge.digest } },
        { uri: `${RECORD_URN}${facts.decision.id}`, name: `decision record ${facts.decision.id}`, digest: { sha256: facts.decision.digest } },
      ],
      verificationResult: "PASSED",
      verifiedLevels: facts.breakGlass ? [LEVEL_CODE_OWNER_APPROVED, LEVEL_BREAK_GLASS] : [LEVEL_CODE_OWNER_APPROVED],
      slsaVersion: "1.1",
    },
  };
}
