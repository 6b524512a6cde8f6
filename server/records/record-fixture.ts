// A decision record made from evidence and its decision, for tests of the readers (history explanation, replay, export): the
// fields the readers look at, filled as the record builder fills them. Blob SHAs are git's (sha1 of "blob <n>\0" + bytes),
// and `blobs` holds the bytes under them, as a forge would.
import { createHash } from "node:crypto";
import { evaluate } from "../evaluation/evaluate.ts";
import type { Decision } from "../evaluation/decision.ts";
import { DEFAULT_EVALUATION_SETTINGS, type Evidence, type FileRead } from "../evaluation/evidence.ts";
import type { DecisionRecord, MergeRecord, RecordedFileRead } from "./schema.ts";

export function gitBlobSha(bytes: Uint8Array): string {
  return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}

export function recordFixture(evidence: Evidence, options: { id?: number; confirmed?: boolean; decision?: Decision } = {}): { record: DecisionRecord; blobs: Map<string, Uint8Array> } {
  const decision = options.decision ?? evaluate(evidence, DEFAULT_EVALUATION_SETTINGS);
  const blobs = new Map<string, Uint8Array>();
  const recorded = (read: FileRead): RecordedFileRead => {
    if (read.kind !== "found") return read;
    const bytes = new TextEncoder().encode(read.text);
    const sha = gitBlobSha(bytes);
    blobs.set(sha, bytes);
    return { kind: "found", path: read.path, bytes: read.bytes, blob_sha: sha };
  };
  const file = (read: RecordedFileRead) => (read.kind === "found" ? { path: read.path, blob_sha: read.blob_sha, bytes: read.bytes } : null);
  const codeowners = Object.fromEntries(Object.entries(evidence.codeowners).map(([location, read]) => [location, recorded(read!)]));
  const codeownersFound = Object.values(codeowners).find((read) => read.kind === "found") ?? null;
  const repositoryPolicy = recorded(evidence.repositoryPolicy);
  const organizationPolicy = recorded(evidence.organizationPolicy);
  const { headFiles: _headFiles, ...rest } = evidence;
  const reviews = evidence.reviews.complete ? evidence.reviews.items : [];
  const record: DecisionRecord = {
    schema_version: 1,
    kind: "decision",
    id: `d${options.id ?? 1}`,
    confirmed: options.confirmed ?? true,
    installation_id: 4,
    repository: { id: 40, full_name: `${evidence.repository.owner}/${evidence.repository.name}` },
    pull_request: evidence.pullRequest.number,
    head_sha: evidence.pullRequest.headSha,
    base_sha: evidence.pullRequest.baseSha,
    check_run_id: 900,
    conclusion: decision.conclusion ?? "failure",
    title: "title",
    reasons: decision.reasons.map((reason) => reason.code),
    published_at: "2026-11-20T10:00:00.000Z",
    service: { version: "0.1.0", revision: null },
    codeowners: codeownersFound === null ? null : file(codeownersFound),
    repository_policy: file(repositoryPolicy),
    organization_policy: organizationPolicy.kind === "found" ? { ...file(organizationPolicy)!, repository: ".forge", commit_sha: "e".repeat(40) } : null,
    owner_sets: decision.ownerSets.map((set) => ({
      patterns: [],
      owners: set.owners,
      required: set.required,
      approvals: set.approvals,
      status: set.status,
      satisfied_by: set.counted.map((counted) => {
        const review = reviews.find((r) => r.user?.login.toLowerCase() === counted.reviewer.toLowerCase());
        return {
          review_id: review?.id ?? 0, reviewer_id: review?.user?.id ?? 0, reviewer_login: counted.reviewer, commit_id: review?.commitId ?? null, submitted_at: "2026-11-20T09:59:00Z",
          rule: counted.via.kind === "user" ? "direct_owner" : counted.via.kind === "team" ? "team_membership" : "app_delegation",
          via: counted.via.kind === "app" ? counted.via.app : counted.via.owner,
        } as const;
      }),
      path_count: set.paths.length,
      paths: set.paths,
    })),
    unowned_path_count: decision.unownedPathCount,
    non_delegable_path_count: 0,
    break_glass: null,
    summarised: null,
    inputs: { ...rest, codeowners, repositoryPolicy, organizationPolicy },
  };
  return { record, blobs };
}

export function mergeFixture(record: DecisionRecord | null, overrides: Partial<MergeRecord> = {}): MergeRecord {
  return {
    schema_version: 1,
    kind: "merge",
    id: "m1",
    installation_id: 4,
    repository: record?.repository ?? { id: 40, full_name: "acme/widgets" },
    pull_request: record?.pull_request ?? 7,
    head_sha: record?.head_sha ?? "a".repeat(40),
    merge_commit_sha: "9".repeat(40),
    merged_by: { id: 12, login: "carol" },
    merged_at: "2026-11-20T10:05:00Z",
    decision_id: record?.id ?? null,
    decision_conclusion: record?.conclusion ?? null,
    unapproved: record?.conclusion !== "success",
    break_glass: false,
    recovered: false,
    recorded_at: "2026-11-20T10:05:01.000Z",
    ...overrides,
  };
}
