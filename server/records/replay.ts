// Replay of a decision record (DESIGN 3.10 "Replay", issue 28 item 4): the record's SHAs name immutable inputs. The files are
// read again at their blob SHAs (by the caller, through `ReadBlob`: the forge in `service history replay`), the reviews,
// changed files and directory facts are taken as recorded, and today's evaluate() runs on them; the outcome says whether it
// reaches the recorded conclusion, owner sets and reasons, and what differs when it does not.
// No Bun, Node, database, forge or clock import: the caller supplies the blob reader.
import { evaluate } from "../evaluation/evaluate.ts";
import type { Decision } from "../evaluation/decision.ts";
import { codeownersLocations, type CodeownersEvidence, type EvaluationSettings, type Evidence, type FileRead } from "../evaluation/evidence.ts";
import { MAX_CODEOWNERS_BYTES, MAX_POLICY_FILE_BYTES } from "../policy/bounds.ts";
import { forgeDirectoryProblem } from "../policy/forge-directory.ts";
import { buildDecisionRecord } from "./build.ts";
import type { DecisionRecordBody } from "./codec.ts";
import { type DecisionRecord, recordedForgeDirectory, type RecordedFileRead, type RecordedOwnerSet } from "./schema.ts";

/** Which repository a recorded file is read from: the record's own, or the organization policy repository. */
export interface BlobLocation {
  readonly owner: string;
  readonly repo: string;
  readonly path: string;
  readonly blobSha: string;
  /** The bound of the file's kind (as the service's own reads): a blob over it is not read. */
  readonly maxBytes: number;
}

/** What reading a blob again gave: its text (strict UTF-8), or why it cannot be had. */
export type BlobAnswer =
  | { readonly kind: "found"; readonly text: string; readonly bytes: number }
  /** The forge no longer has it (404): deleted repository, rewritten history, lost access. */
  | { readonly kind: "gone" }
  /** The forge answered something other than the recorded file: a size over the bound, bytes not matching the SHA, not UTF-8. */
  | { readonly kind: "not_as_recorded"; readonly detail: string }
  /** Transient or refused: the forge could not be asked (unreachable, rate limited, credentials). */
  | { readonly kind: "unavailable"; readonly detail: string };

export type ReadBlob = (at: BlobLocation) => Promise<BlobAnswer>;

/** One difference between the record and today's decision, for a person. */
export type Difference = string;

export type ReplayOutcome =
  | { readonly kind: "same"; readonly evidence: Evidence; readonly decision: Decision }
  | { readonly kind: "different"; readonly evidence: Evidence; readonly decision: Decision; readonly differences: readonly Difference[] }
  /** The inputs could not be gathered again; nothing was evaluated. */
  | { readonly kind: "cannot_replay"; readonly why: string };

/** A recorded file read as evaluate() needs it, once its text is known. */
type Resolved = { readonly read: FileRead } | { readonly cannot: string };

function locationOf(record: DecisionRecord, which: "repository" | "organization"): { owner: string; repo: string } {
  const [owner, repo] = record.repository.full_name.split("/") as [string, string];
  if (which === "repository") return { owner, repo };
  const named = record.organization_policy?.repository ?? "";
  // The organization policy repository is named alone (it belongs to the repository's owner) or as owner/name.
  return named.includes("/") ? { owner: named.slice(0, named.indexOf("/")), repo: named.slice(named.indexOf("/") + 1) } : { owner, repo: named };
}

async function resolve(read: RecordedFileRead, at: { owner: string; repo: string }, maxBytes: number, readBlob: ReadBlob, what: string, commitSha: string | null = null): Promise<Resolved> {
  if (read.kind !== "found") return { read };
  if (read.blob_sha === null) return { cannot: `the record names no blob for ${what} ${read.path} (the forge did not say)` };
  if (at.repo === "") return { cannot: `the record names no repository for ${what} ${read.path}` };
  const answer = await readBlob({ ...at, path: read.path, blobSha: read.blob_sha, maxBytes });
  if (answer.kind === "gone") return { cannot: `the blob ${read.blob_sha} of ${what} ${read.path} is gone from ${at.owner}/${at.repo}` };
  if (answer.kind === "not_as_recorded") return { cannot: `the blob ${read.blob_sha} of ${what} ${read.path} is not the recorded file: ${answer.detail}` };
  if (answer.kind === "unavailable") return { cannot: `the blob ${read.blob_sha} of ${what} ${read.path} could not be read: ${answer.detail}` };
  if (answer.bytes !== read.bytes) return { cannot: `the blob ${read.blob_sha} of ${what} ${read.path} has ${answer.bytes} bytes, the record says ${read.bytes}` };
  return { read: { kind: "found", path: read.path, text: answer.text, bytes: answer.bytes, blobSha: read.blob_sha, ...(commitSha === null ? {} : { commitSha }) } };
}

/**
 * The Evidence evaluate() was given, rebuilt from the record: every recorded file read again at its blob SHA (each bounded
 * like the service's own reads), everything else as recorded; the code-owners locations are those of the record's forge
 * directory. A string says why it cannot be rebuilt.
 */
export async function rebuildEvidence(record: DecisionRecord, readBlob: ReadBlob): Promise<Evidence | string> {
  if (record.inputs === null) return "the record was summarised without its inputs (it was over the record bound), so it cannot be replayed";
  if (record.summarised !== null && !record.summarised.replayable) return "the record was summarised and says it cannot be replayed";
  const forgeDirectory = recordedForgeDirectory(record);
  const problem = forgeDirectoryProblem(forgeDirectory);
  if (problem !== null) return `the record's forge directory is not one the service accepts: it ${problem}`;
  const inputs = record.inputs;
  const repository = locationOf(record, "repository");
  const codeowners: Record<string, FileRead> = {};
  for (const location of codeownersLocations(forgeDirectory)) {
    const read = inputs.codeowners[location];
    if (read === undefined) continue;
    // The service reads a code-owners file only when it is under MAX_CODEOWNERS_BYTES (server/forge/evidence.ts).
    const resolved = await resolve(read, repository, MAX_CODEOWNERS_BYTES - 1, readBlob, "the code-owners file");
    if ("cannot" in resolved) return resolved.cannot;
    codeowners[location] = resolved.read;
  }
  const repositoryPolicy = await resolve(inputs.repositoryPolicy, repository, MAX_POLICY_FILE_BYTES, readBlob, "the repository policy");
  if ("cannot" in repositoryPolicy) return repositoryPolicy.cannot;
  const organizationPolicy = await resolve(inputs.organizationPolicy, locationOf(record, "organization"), MAX_POLICY_FILE_BYTES, readBlob, "the organization policy", record.organization_policy?.commit_sha ?? null);
  if ("cannot" in organizationPolicy) return organizationPolicy.cannot;
  return { ...inputs, codeowners: codeowners as CodeownersEvidence, repositoryPolicy: repositoryPolicy.read, organizationPolicy: organizationPolicy.read };
}

/**
 * The settings a replay evaluates with: those the record was written under (its `settings`), so a changed
 * SERVICE_CHECK_NAME, SERVICE_POLICY_PATH, SERVICE_FORGE_DIRECTORY or SERVICE_ALLOW_INSECURE_CHANGES does not change what is
 * replayed. A record written before they were recorded: today's, with the policy path the record read its repository policy
 * at. The forge directory is always the record's (recordedForgeDirectory: `.forge` before it was recorded).
 */
export function replaySettings(record: DecisionRecord, today: EvaluationSettings): EvaluationSettings {
  const forgeDirectory = recordedForgeDirectory(record);
  if (record.settings !== undefined) {
    return { checkName: record.settings.check_name, policyPath: record.settings.policy_path, forgeDirectory, allowInsecureChanges: record.settings.allow_insecure_changes };
  }
  const policy = record.inputs?.repositoryPolicy;
  const policyPath = policy !== undefined && (policy.kind === "found" || policy.kind === "too_large") ? policy.path : (record.repository_policy?.path ?? today.policyPath);
  return { ...today, policyPath, forgeDirectory };
}

/** An owner set's facts replay compares (the record's fields). */
function setFacts(set: RecordedOwnerSet, pathsKept: boolean) {
  return {
    status: set.status, required: set.required, approvals: set.approvals, path_count: set.path_count, paths: pathsKept ? set.paths : null, patterns: set.patterns,
    satisfied_by: set.satisfied_by.map((a) => `@${a.reviewer_login} (review ${a.review_id} on ${a.commit_id ?? "no commit"}, ${a.rule} ${a.via})`).sort(),
  };
}

const ownersKey = (owners: readonly string[]) => owners.map((o) => o.toLowerCase()).join(" ");
const listed = (items: readonly string[]) => (items.length === 0 ? "none" : items.join(", "));
const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((item, i) => item === b[i]);
const setLabel = (owners: readonly string[]) => `owner set ${owners.length === 0 ? "(no owners)" : owners.join(" ")}`;

function compareSet(label: string, recorded: ReturnType<typeof setFacts>, today: ReturnType<typeof setFacts>): Difference[] {
  const out: Difference[] = [];
  if (recorded.status !== today.status) out.push(`${label}: recorded ${recorded.status}, today ${today.status}`);
  if (recorded.required !== today.required) out.push(`${label}: recorded ${recorded.required} required approvals, today ${today.required}`);
  if (recorded.approvals !== today.approvals) out.push(`${label}: recorded ${recorded.approvals} approvals, today ${today.approvals}`);
  if (!sameList(recorded.patterns, today.patterns)) out.push(`${label}: recorded under ${listed(recorded.patterns)}; today under ${listed(today.patterns)}`);
  if (recorded.path_count !== today.path_count) out.push(`${label}: recorded ${recorded.path_count} paths, today ${today.path_count}`);
  else if (recorded.paths !== null && !sameList(recorded.paths, today.paths!)) {
    const gone = recorded.paths.filter((p) => !today.paths!.includes(p));
    const added = today.paths!.filter((p) => !recorded.paths!.includes(p));
    out.push(`${label}: paths differ (only recorded: ${listed(gone.slice(0, 5))}; only today: ${listed(added.slice(0, 5))})`);
  }
  if (!sameList(recorded.satisfied_by, today.satisfied_by)) out.push(`${label}: recorded satisfied by ${listed(recorded.satisfied_by)}; today by ${listed(today.satisfied_by)}`);
  return out;
}

/** The record today's decision makes, whole (never summarised), with the recorded publication's facts and `settings`. */
export function todaysRecord(record: DecisionRecord, decision: Decision, evidence: Evidence, settings: EvaluationSettings): DecisionRecordBody {
  const organization = record.organization_policy?.repository ?? "";
  return buildDecisionRecord(decision, evidence, {
    installationId: record.installation_id, repository: record.repository, checkRunId: record.check_run_id, title: record.title,
    publishedAtMs: Date.parse(record.published_at), service: record.service, settings,
    organizationPolicyRepository: organization.includes("/") ? organization.slice(organization.indexOf("/") + 1) : organization,
  }, Number.POSITIVE_INFINITY);
}

/**
 * Whether `decision` (today's, on the rebuilt evidence) reaches the record's conclusion, owner sets and reasons: today's
 * record is built by the same builder the worker uses and compared field by field; the differences when it does not.
 */
export function compareWithRecord(record: DecisionRecord, decision: Decision, evidence: Evidence, settings: EvaluationSettings): Difference[] {
  if (decision.kind !== "conclusive" || decision.conclusion === null) {
    return [`conclusion: recorded ${record.conclusion}, today ${decision.kind === "retry" ? "no conclusion (a transient gap: retry)" : "not enabled"}`];
  }
  const today = todaysRecord(record, decision, evidence, settings);
  const out: Difference[] = [];
  if (today.conclusion !== record.conclusion) out.push(`conclusion: recorded ${record.conclusion}, today ${today.conclusion}`);
  const recordedReasons = [...record.reasons].sort();
  const todayReasons = [...today.reasons].sort();
  if (!sameList(recordedReasons, todayReasons)) out.push(`reasons: recorded ${listed(recordedReasons)}; today ${listed(todayReasons)}`);
  if ((record.codeowners?.path ?? null) !== (today.codeowners?.path ?? null)) out.push(`code-owners file: recorded ${record.codeowners?.path ?? "none"}, today ${today.codeowners?.path ?? "none"}`);
  if (record.unowned_path_count !== today.unowned_path_count) out.push(`unowned paths: recorded ${record.unowned_path_count}, today ${today.unowned_path_count}`);
  if (record.non_delegable_path_count !== today.non_delegable_path_count) out.push(`non-delegable paths: recorded ${record.non_delegable_path_count}, today ${today.non_delegable_path_count}`);
  const pathsKept = record.summarised?.omitted !== "owner_set_paths";
  const todaySets = new Map(today.owner_sets.map((set) => [ownersKey(set.owners), set]));
  const recordedKeys = new Set<string>();
  for (const set of record.owner_sets) {
    const key = ownersKey(set.owners);
    recordedKeys.add(key);
    const now = todaySets.get(key);
    if (now === undefined) out.push(`${setLabel(set.owners)}: recorded (${set.status}), absent today`);
    else out.push(...compareSet(setLabel(set.owners), setFacts(set, pathsKept), setFacts(now, pathsKept)));
  }
  for (const [key, set] of todaySets) if (!recordedKeys.has(key)) out.push(`${setLabel(set.owners)}: absent from the record, today ${set.status}`);
  if (JSON.stringify(record.break_glass) !== JSON.stringify(today.break_glass)) {
    const who = (glass: DecisionRecord["break_glass"]) => (glass === null ? "none" : `by @${glass.reviewer_login} (review ${glass.review_id})`);
    out.push(`break-glass override: recorded ${who(record.break_glass)}, today ${who(today.break_glass)}`);
  }
  return out;
}

/** Replays `record`: gathers its inputs again through `readBlob`, evaluates them (replaySettings: the recorded settings, else `settings`) and compares. */
export async function replayRecord(record: DecisionRecord, settings: EvaluationSettings, readBlob: ReadBlob): Promise<ReplayOutcome> {
  const evidence = await rebuildEvidence(record, readBlob);
  if (typeof evidence === "string") return { kind: "cannot_replay", why: evidence };
  const used = replaySettings(record, settings);
  const decision = evaluate(evidence, used);
  const differences = compareWithRecord(record, decision, evidence, used);
  return differences.length === 0 ? { kind: "same", evidence, decision } : { kind: "different", evidence, decision, differences };
}
