import { readAttestationsAfter, readCheckpoints, readUnattestedSignedMerge, type Store } from "../store/index.ts";
import { CHECKPOINT_PAYLOAD_TYPE, IN_TOTO_PAYLOAD_TYPE, RECORD_URN, STATEMENT_TYPE, type VerificationKey, verifyEnvelope, VSA_PREDICATE_TYPE } from "./attestation.ts";
import { checkpointBytes } from "./tamper-evidence.ts";

/**
 * `service history verify --attestations`: every stored signature checked offline against the given public keys. A
 * checkpoint's envelope must verify and carry exactly that checkpoint's canonical bytes; once one checkpoint is signed, every
 * later one must be (a removed signature is named). An approved merge's statement must verify, name that merge's commit as
 * its subject and that merge record's digest as its input, and pass at the code-owner level. Keyset pages: bounded memory.
 */
export type AttestationReport = {
  readonly signedCheckpoints: number;
  readonly unsignedCheckpoints: number;
  readonly statements: number;
  readonly finding: string | null;
};

const PAGE = 500;

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

export async function verifyAttestations(store: Store, keys: readonly VerificationKey[], pageSize = PAGE): Promise<AttestationReport> {
  let signedCheckpoints = 0;
  let unsignedCheckpoints = 0;
  let statements = 0;
  let firstSigned: number | null = null;
  const done = (finding: string | null): AttestationReport => ({ signedCheckpoints, unsignedCheckpoints, statements, finding });
  for (let after = 0; ;) {
    const page = await store.execute(() => readCheckpoints(after, pageSize));
    for (const checkpoint of page) {
      if (checkpoint.envelope === null || checkpoint.envelope === undefined) {
        if (firstSigned !== null) return done(`checkpoint ${checkpoint.id} has no signature, though checkpoint ${firstSigned} before it was signed: its signature was removed`);
        unsignedCheckpoints++;
        continue;
      }
      const check = verifyEnvelope(parsed(checkpoint.envelope), keys, CHECKPOINT_PAYLOAD_TYPE);
      if (!check.ok) return done(`checkpoint ${checkpoint.id}'s signature does not hold: ${check.problem}`);
      if (!check.payload.equals(Buffer.from(checkpointBytes(checkpoint)))) return done(`checkpoint ${checkpoint.id}'s signed statement is not this checkpoint: the checkpoint or its envelope was changed`);
      firstSigned ??= checkpoint.id;
      signedCheckpoints++;
    }
    if (page.length < pageSize) break;
    after = page[page.length - 1]!.id;
  }
  for (let after = 0; ;) {
    const page = await store.execute(() => readAttestationsAfter(after, pageSize));
    for (const stored of page) {
      const name = `m${stored.mergeId}`;
      if (!stored.exists) return done(`the statement of merge record ${name} remains, but the record is gone: it was removed`);
      const check = verifyEnvelope(parsed(stored.envelope), keys, IN_TOTO_PAYLOAD_TYPE);
      if (!check.ok) return done(`the statement of merge record ${name} does not hold: ${check.problem}`);
      const statement = parsed(check.payload.toString("utf8")) as {
        _type?: unknown; predicateType?: unknown; subject?: { digest?: { gitCommit?: unknown } }[];
        predicate?: { verificationResult?: unknown; inputAttestations?: { uri?: unknown; digest?: { sha256?: unknown } }[] };
      } | null;
      if (statement?._type !== STATEMENT_TYPE || statement.predicateType !== VSA_PREDICATE_TYPE) return done(`the statement of merge record ${name} is not an in-toto verification summary`);
      if (statement.subject?.[0]?.digest?.gitCommit !== stored.mergeCommitSha) return done(`the statement of merge record ${name} names another commit than the record's merge commit: one of them was changed`);
      const input = statement.predicate?.inputAttestations?.find((i) => i.uri === `${RECORD_URN}${name}`);
      if (input?.digest?.sha256 !== stored.recordSha256) return done(`the statement of merge record ${name} names another digest than the record's: the record was changed after it was signed`);
      if (statement.predicate?.verificationResult !== "PASSED") return done(`the statement of merge record ${name} does not say PASSED`);
      statements++;
    }
    if (page.length < pageSize) break;
    after = page[page.length - 1]!.mergeId;
  }
  // A signed checkpoint signed every approved merge it covered: one without its statement lost it.
  const missing = await store.execute(() => readUnattestedSignedMerge());
  if (missing !== null) return done(`approved merge record m${missing.mergeId} is covered by signed checkpoint ${missing.checkpointId} but has no statement: it was removed`);
  return done(null);
}
