// The decision record builder (DESIGN 3.10, issue 28): a conclusive Decision, the Evidence it was reached on and the facts of
// its publication become the record's body (schema.ts), bounded by MAX_RECORD_BYTES. Pure: no clock, store or forge; the
// caller gives the time and the service's identity.
import type { BreakGlassOverride, CountedApproval, Decision, OwnerSetResult } from "../evaluation/decision.ts";
import type { EvaluationSettings, Evidence, FileRead } from "../evaluation/evidence.ts";
import type { DecisionRecordBody } from "./codec.ts";
import {
  MAX_RECORD_BYTES, RECORD_SCHEMA_VERSION, type ApprovalRule, type RecordedApproval, type RecordedBreakGlass, type RecordedFile, type RecordedFileRead,
  type RecordedInputs, type RecordedOwnerSet, type RecordedRepository,
} from "./schema.ts";

/** What the publication knows beside the decision and its evidence. */
export type PublicationFacts = {
  readonly installationId: number;
  readonly repository: RecordedRepository;
  /** The check run written (null: not known). */
  readonly checkRunId: number | null;
  /** The check's title as written. */
  readonly title: string;
  /** Epoch milliseconds: when the record is written. */
  readonly publishedAtMs: number;
  readonly service: { readonly version: string; readonly revision: string | null };
  /** The settings the decision was evaluated under (replay evaluates with them). */
  readonly settings: EvaluationSettings;
  /** The organization policy repository's name (SERVICE_ORGANIZATION_POLICY_REPOSITORY), in the repository's owner. */
  readonly organizationPolicyRepository: string;
};

const RULE_OF: Record<CountedApproval["rule"], ApprovalRule> = { direct_owner: "direct_owner", team_membership: "team_membership", app_delegation: "app_delegation" };

function approvalOf(counted: CountedApproval): RecordedApproval {
  return {
    review_id: counted.reviewId, reviewer_id: counted.reviewerId, reviewer_login: counted.reviewer, commit_id: counted.commitId, submitted_at: counted.submittedAt,
    rule: RULE_OF[counted.rule], via: counted.via.kind === "app" ? counted.via.app : counted.via.owner,
  };
}

/** Reasons are kept to this many characters (schema.ts RecordedBreakGlass). */
const MAX_RECORDED_REASON_CHARS = 500;

function breakGlassOf(override: BreakGlassOverride | null): RecordedBreakGlass | null {
  if (override === null) return null;
  return {
    review_id: override.reviewId, reviewer_id: override.reviewerId, reviewer_login: override.reviewer,
    reason: [...override.reason.trim()].slice(0, MAX_RECORDED_REASON_CHARS).join(""), team: override.team, unsatisfied_owner_sets: override.unsatisfiedOwnerSets,
  };
}

/** The override as the approval that stood in for the owners of a set it lifted (rule `break_glass`, via its team). */
function overrideApproval(override: BreakGlassOverride, evidence: Evidence): RecordedApproval {
  const review = evidence.reviews.complete ? evidence.reviews.items.find((r) => r.id === override.reviewId) : undefined;
  return {
    review_id: override.reviewId, reviewer_id: override.reviewerId, reviewer_login: override.reviewer, commit_id: review?.commitId ?? null,
    submitted_at: review?.submittedAt ?? null, rule: "break_glass", via: override.team,
  };
}

function ownerSetOf(set: OwnerSetResult, withPaths: boolean, override: RecordedApproval | null): RecordedOwnerSet {
  return {
    patterns: set.patterns, owners: set.owners, required: set.required, approvals: set.approvals, status: set.status,
    satisfied_by: [...set.counted.map(approvalOf), ...(override ? [override] : [])], path_count: set.paths.length, paths: withPaths ? set.paths : [],
  };
}

function fileOf(read: FileRead | undefined): RecordedFile | null {
  return read?.kind === "found" ? { path: read.path, blob_sha: read.blobSha ?? null, bytes: read.bytes } : null;
}

/** A file read without its text: a found file keeps its path, size and blob SHA (replay reads the blob by it). */
export function recordedRead(read: FileRead): RecordedFileRead {
  return read.kind === "found" ? { kind: "found", path: read.path, bytes: read.bytes, blob_sha: read.blobSha ?? null } : read;
}

/** The evaluation's inputs as recorded (schema.ts RecordedInputs): the evidence without file texts or the change preview's reads. */
export function recordedInputs(evidence: Evidence): RecordedInputs {
  const { codeowners, repositoryPolicy, organizationPolicy, headFiles: _preview, ...rest } = evidence;
  return {
    ...rest,
    codeowners: Object.fromEntries(Object.entries(codeowners).map(([location, read]) => [location, recordedRead(read)])),
    repositoryPolicy: recordedRead(repositoryPolicy),
    organizationPolicy: recordedRead(organizationPolicy),
  };
}

/** UTF-8 bytes of the body's JSON: what MAX_RECORD_BYTES bounds. */
export function recordBytes(body: DecisionRecordBody): number {
  return Buffer.byteLength(JSON.stringify(body), "utf8");
}

/**
 * The record of a conclusive decision. Past MAX_RECORD_BYTES the changed paths of each owner set are left out first (the
 * inputs still name every changed file, so replay stays possible), then the inputs too (not replayable); `summarised` says
 * which. The first form within the bound is the record.
 */
export function buildDecisionRecord(decision: Decision, evidence: Evidence, facts: PublicationFacts, maxBytes: number = MAX_RECORD_BYTES): DecisionRecordBody {
  if (decision.kind !== "conclusive" || decision.conclusion === null) throw new Error("buildDecisionRecord: only a conclusive decision is recorded");
  const codeowners = decision.codeownersPath === null ? null : fileOf(evidence.codeowners[decision.codeownersPath as keyof Evidence["codeowners"]]);
  const organizationPolicy = fileOf(evidence.organizationPolicy);
  const orgRead = evidence.organizationPolicy;
  const lifted = new Set(decision.breakGlass?.unsatisfiedOwnerSets ?? []);
  const override = decision.breakGlass ? overrideApproval(decision.breakGlass, evidence) : null;
  const ownerSets = (withPaths: boolean) => decision.ownerSets.map((set, index) => ownerSetOf(set, withPaths, lifted.has(index) ? override : null));
  const nonDelegable = new Set<string>();
  for (const set of decision.ownerSets) for (const path of set.nonDelegablePaths) nonDelegable.add(path);
  const whole: DecisionRecordBody = {
    schema_version: RECORD_SCHEMA_VERSION,
    kind: "decision",
    installation_id: facts.installationId,
    repository: facts.repository,
    pull_request: evidence.pullRequest.number,
    head_sha: evidence.pullRequest.headSha,
    base_sha: evidence.pullRequest.baseSha,
    check_run_id: facts.checkRunId,
    conclusion: decision.conclusion,
    title: facts.title,
    reasons: decision.reasons.map((reason) => reason.code),
    published_at: new Date(facts.publishedAtMs).toISOString(),
    service: facts.service,
    settings: { check_name: facts.settings.checkName, policy_path: facts.settings.policyPath, forge_directory: facts.settings.forgeDirectory, allow_insecure_changes: facts.settings.allowInsecureChanges },
    codeowners,
    repository_policy: fileOf(evidence.repositoryPolicy),
    organization_policy: organizationPolicy === null ? null : {
      ...organizationPolicy,
      repository: `${evidence.repository.owner}/${facts.organizationPolicyRepository}`,
      commit_sha: orgRead.kind === "found" ? orgRead.commitSha ?? null : null,
    },
    owner_sets: ownerSets(true),
    unowned_path_count: decision.unownedPathCount,
    non_delegable_path_count: nonDelegable.size,
    break_glass: breakGlassOf(decision.breakGlass),
    ...(decision.breakGlassRefusals.length === 0 ? {} : {
      break_glass_refusals: decision.breakGlassRefusals.map((refusal) => ({ review_id: refusal.reviewId, reviewer_login: refusal.reviewer, code: refusal.code })),
    }),
    summarised: null,
    inputs: recordedInputs(evidence),
  };
  if (recordBytes(whole) <= maxBytes) return whole;
  const withoutPaths: DecisionRecordBody = { ...whole, owner_sets: ownerSets(false), summarised: { omitted: "owner_set_paths", replayable: true } };
  if (recordBytes(withoutPaths) <= maxBytes) return withoutPaths;
  return { ...withoutPaths, inputs: null, summarised: { omitted: "inputs", replayable: false } };
}
