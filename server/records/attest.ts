import type { MergeToAttest } from "../store/index.ts";
import { CHECKPOINT_PAYLOAD_TYPE, canonicalJson, type Envelope, IN_TOTO_PAYLOAD_TYPE, mergeStatement, type SigningKey, signEnvelope } from "./attestation.ts";
import { decodeRecordBody } from "./codec.ts";
import { type Checkpoint, checkpointBytes } from "./tamper-evidence.ts";

/** What the reconciler signs with: the key, and who the statements say verified (the App on its forge, this version). */
export type AttestationSettings = { readonly signer: SigningKey; readonly forgeWebUrl: string; readonly appId: number; readonly version: string };

/** A checkpoint's DSSE envelope (JSON text): its canonical bytes, signed. */
export function signCheckpoint(signer: SigningKey): (checkpoint: Checkpoint) => string {
  return (checkpoint) => JSON.stringify(signEnvelope(signer, CHECKPOINT_PAYLOAD_TYPE, checkpointBytes(checkpoint)));
}

/** An approved merge's statement (records/attestation.ts), from its merge record and the decision record that approved it. */
export function signMerge(settings: AttestationSettings, merge: MergeToAttest, verifiedAt: string): Envelope {
  const decision = decodeRecordBody(merge.decisionBody);
  const statement = mergeStatement({
    forgeWebUrl: settings.forgeWebUrl, appId: settings.appId, version: settings.version, repository: merge.repositoryFullName,
    mergeCommitSha: merge.mergeCommitSha, baseSha: merge.baseSha,
    merge: { id: `m${merge.id}`, digest: merge.recordSha256 }, decision: { id: `d${merge.decisionId}`, digest: merge.decisionSha256 },
    breakGlass: merge.breakGlass || decision.break_glass !== null,
    codeowners: decision.codeowners === null ? null : { path: decision.codeowners.path, blobSha: decision.codeowners.blob_sha },
    repositoryPolicy: decision.repository_policy === null ? null : { path: decision.repository_policy.path, blobSha: decision.repository_policy.blob_sha },
    organizationPolicy: decision.organization_policy === null ? null : {
      repository: decision.organization_policy.repository, path: decision.organization_policy.path, blobSha: decision.organization_policy.blob_sha, commitSha: decision.organization_policy.commit_sha,
    },
    verifiedAt,
  });
  return signEnvelope(settings.signer, IN_TOTO_PAYLOAD_TYPE, canonicalJson(statement));
}
