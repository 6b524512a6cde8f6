// A decision record made from evidence, for tests of the readers (history explanation, replay, export), by the record builder
// the worker uses. Blob SHAs are git's (sha1 of "blob <n>\0" + bytes), and `blobs` holds the bytes under them, as a forge would.
import { createHash } from "node:crypto";
import { evaluate } from "../evaluation/evaluate.ts";
import { DEFAULT_EVALUATION_SETTINGS, type EvaluationSettings, type Evidence, type FileRead } from "../evaluation/evidence.ts";
import { buildDecisionRecord } from "./build.ts";
import type { DecisionRecord, MergeRecord } from "./schema.ts";

export function gitBlobSha(bytes: Uint8Array): string {
  return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}

/**
 * The record the worker would write for `evidence` (through the record builder, build.ts), with each found file's blob SHA
 * set as the forge reader sets it, and `blobs` holding the files under their SHAs.
 */
export function recordFixture(evidence: Evidence, options: { id?: number; confirmed?: boolean; settings?: EvaluationSettings } = {}): { record: DecisionRecord; blobs: Map<string, Uint8Array>; evidence: Evidence } {
  const blobs = new Map<string, Uint8Array>();
  const named = (read: FileRead): FileRead => {
    if (read.kind !== "found") return read;
    const bytes = new TextEncoder().encode(read.text);
    const sha = gitBlobSha(bytes);
    blobs.set(sha, bytes);
    return { ...read, blobSha: sha };
  };
  const withShas: Evidence = {
    ...evidence,
    codeowners: Object.fromEntries(Object.entries(evidence.codeowners).map(([location, read]) => [location, named(read!)])),
    repositoryPolicy: named(evidence.repositoryPolicy),
    organizationPolicy: evidence.organizationPolicy.kind === "found" ? { ...named(evidence.organizationPolicy), commitSha: "e".repeat(40) } as FileRead : evidence.organizationPolicy,
  };
  const settings = options.settings ?? DEFAULT_EVALUATION_SETTINGS;
  const decision = evaluate(withShas, settings);
  const body = buildDecisionRecord(decision, withShas, {
    installationId: 4, repository: { id: 40, full_name: `${evidence.repository.owner}/${evidence.repository.name}` }, checkRunId: 900, title: "title",
    publishedAtMs: Date.parse("2026-11-20T10:00:00.000Z"), service: { version: "0.1.0", revision: null }, settings, organizationPolicyRepository: ".forge",
  });
  return { record: { ...body, id: `d${options.id ?? 1}`, confirmed: options.confirmed ?? true }, blobs, evidence: withShas };
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
    reset_at: null,
    base_sha: record?.base_sha ?? null,
    enrollment: "enrolled",
    break_glass: false,
    recovered: false,
    recorded_at: "2026-11-20T10:05:01.000Z",
    ...overrides,
  };
}
