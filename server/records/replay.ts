// Replay of a decision record (DESIGN 3.10 "Replay", issue 28 item 4): the record's SHAs name immutable inputs. The files are
// read again at their blob SHAs (by the caller, through `ReadBlob`: the forge in `service history replay`), the reviews,
// changed files and directory facts are taken as recorded, and today's evaluate() runs on them; the outcome says whether it
// reaches the recorded conclusion, owner sets and reasons, and what differs when it does not.
// No Bun, Node, database, forge or clock import: the caller supplies the blob reader.
import { evaluate } from "../evaluation/evaluate.ts";
import type { CountedApproval, Decision, OwnerSetResult } from "../evaluation/decision.ts";
import { CODEOWNERS_LOCATIONS, type CodeownersEvidence, type EvaluationSettings, type Evidence, type FileRead } from "../evaluation/evidence.ts";
import { MAX_CODEOWNERS_BYTES, MAX_POLICY_FILE_BYTES } from "../policy/bounds.ts";
import type { ApprovalRule, DecisionRecord, RecordedFileRead, RecordedOwnerSet } from "./schema.ts";

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

async function resolve(read: RecordedFileRead, at: { owner: string; repo: string }, maxBytes: number, readBlob: ReadBlob, what: string): Promise<Resolved> {
  if (read.kind !== "found") return { read };
  if (read.blob_sha === null) return { cannot: `the record names no blob for ${what} ${read.path} (the forge did not say)` };
  if (at.repo === "") return { cannot: `the record names no repository for ${what} ${read.path}` };
  const answer = await readBlob({ ...at, path: read.path, blobSha: read.blob_sha, maxBytes });
  if (answer.kind === "gone") return { cannot: `the blob ${read.blob_sha} of ${what} ${read.path} is gone from ${at.owner}/${at.repo}` };
  if (answer.kind === "not_as_recorded") return { cannot: `the blob ${read.blob_sha} of ${what} ${read.path} is not the recorded file: ${answer.detail}` };
  if (answer.kind === "unavailable") return { cannot: `the blob ${read.blob_sha} of ${what} ${read.path} could not be read: ${answer.detail}` };
  if (answer.bytes !== read.bytes) return { cannot: `the blob ${read.blob_sha} of ${what} ${read.path} has ${answer.bytes} bytes, the record says ${read.bytes}` };
  return { read: { kind: "found", path: read.path, text: answer.text, bytes: answer.bytes } };
}

/**
 * The Evidence evaluate() was given, rebuilt from the record: every recorded file read again at its blob SHA (each bounded
 * like the service's own reads), everything else as recorded. A string says why it cannot be rebuilt.
 */
export async function rebuildEvidence(record: DecisionRecord, readBlob: ReadBlob): Promise<Evidence | string> {
  if (record.inputs === null) return "the record was summarised without its inputs (it was over the record bound), so it cannot be replayed";
  if (record.summarised !== null && !record.summarised.replayable) return "the record was summarised and says it cannot be replayed";
  const inputs = record.inputs;
  const repository = locationOf(record, "repository");
  const codeowners: Record<string, FileRead> = {};
  for (const location of CODEOWNERS_LOCATIONS) {
    const read = inputs.codeowners[location];
    if (read === undefined) continue;
    // The service reads a code-owners file only when it is under MAX_CODEOWNERS_BYTES (server/forge/evidence.ts).
    const resolved = await resolve(read, repository, MAX_CODEOWNERS_BYTES - 1, readBlob, "the code-owners file");
    if ("cannot" in resolved) return resolved.cannot;
    codeowners[location] = resolved.read;
  }
  const repositoryPolicy = await resolve(inputs.repositoryPolicy, repository, MAX_POLICY_FILE_BYTES, readBlob, "the repository policy");
  if ("cannot" in repositoryPolicy) return repositoryPolicy.cannot;
  const organizationPolicy = await resolve(inputs.organizationPolicy, locationOf(record, "organization"), MAX_POLICY_FILE_BYTES, readBlob, "the organization policy");
  if ("cannot" in organizationPolicy) return organizationPolicy.cannot;
  return { ...inputs, codeowners: codeowners as CodeownersEvidence, repositoryPolicy: repositoryPolicy.read, organizationPolicy: organizationPolicy.read };
}

/**
 * The settings a replay evaluates with: today's (the configured check name and insecure-changes switch), with the policy
 * path the record read its repository policy at, so a renamed SERVICE_POLICY_PATH does not change what is replayed.
 */
export function replaySettings(record: DecisionRecord, today: EvaluationSettings): EvaluationSettings {
  const policy = record.inputs?.repositoryPolicy;
  const policyPath = policy !== undefined && (policy.kind === "found" || policy.kind === "too_large") ? policy.path : (record.repository_policy?.path ?? today.policyPath);
  return { ...today, policyPath };
}

/** An owner set as both sides can say it: the record's fields, computed from a Decision for today's side. */
interface OwnerSetView {
  readonly owners: readonly string[];
  readonly required: number;
  readonly approvals: number;
  readonly status: string;
  readonly pathCount: number;
  /** Null when the record left the paths out (summarised). */
  readonly paths: readonly string[] | null;
  /** `login rule via`, sorted. */
  readonly satisfiedBy: readonly string[];
}

const RULE_OF: Record<CountedApproval["via"]["kind"], ApprovalRule> = { user: "direct_owner", team: "team_membership", app: "app_delegation" };

const approvalKey = (login: string, rule: string, via: string) => `${login.toLowerCase()} ${rule} ${via.toLowerCase()}`;

function viewOfResult(set: OwnerSetResult): OwnerSetView {
  return {
    owners: set.owners, required: set.required, approvals: set.approvals, status: set.status, pathCount: set.paths.length, paths: set.paths,
    satisfiedBy: set.counted.map((c) => approvalKey(c.reviewer, RULE_OF[c.via.kind], c.via.kind === "app" ? c.via.app : c.via.owner)).sort(),
  };
}

function viewOfRecorded(set: RecordedOwnerSet, pathsKept: boolean): OwnerSetView {
  return {
    owners: set.owners, required: set.required, approvals: set.approvals, status: set.status, pathCount: set.path_count, paths: pathsKept ? set.paths : null,
    satisfiedBy: set.satisfied_by.map((a) => approvalKey(a.reviewer_login, a.rule, a.via)).sort(),
  };
}

const ownersKey = (owners: readonly string[]) => owners.map((o) => o.toLowerCase()).join(" ");
const listed = (items: readonly string[]) => (items.length === 0 ? "none" : items.join(", "));
const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((item, i) => item === b[i]);

function compareSet(label: string, recorded: OwnerSetView, today: OwnerSetView): Difference[] {
  const out: Difference[] = [];
  if (recorded.status !== today.status) out.push(`${label}: recorded ${recorded.status}, today ${today.status}`);
  if (recorded.required !== today.required) out.push(`${label}: recorded ${recorded.required} required approvals, today ${today.required}`);
  if (recorded.approvals !== today.approvals) out.push(`${label}: recorded ${recorded.approvals} approvals, today ${today.approvals}`);
  if (recorded.pathCount !== today.pathCount) out.push(`${label}: recorded ${recorded.pathCount} paths, today ${today.pathCount}`);
  else if (recorded.paths !== null && today.paths !== null && !sameList(recorded.paths, today.paths)) {
    const gone = recorded.paths.filter((p) => !today.paths!.includes(p));
    const added = today.paths.filter((p) => !recorded.paths!.includes(p));
    out.push(`${label}: paths differ (only recorded: ${listed(gone.slice(0, 5))}; only today: ${listed(added.slice(0, 5))})`);
  }
  if (!sameList(recorded.satisfiedBy, today.satisfiedBy)) out.push(`${label}: recorded satisfied by ${listed(recorded.satisfiedBy)}; today by ${listed(today.satisfiedBy)}`);
  return out;
}

/** Whether `decision` (today's) reaches the record's conclusion, owner sets and reasons; the differences when it does not. */
export function compareWithRecord(record: DecisionRecord, decision: Decision): Difference[] {
  const out: Difference[] = [];
  if (decision.kind !== "conclusive") out.push(`conclusion: recorded ${record.conclusion}, today ${decision.kind === "retry" ? "no conclusion (a transient gap: retry)" : "not enabled"}`);
  else if (decision.conclusion !== record.conclusion) out.push(`conclusion: recorded ${record.conclusion}, today ${decision.conclusion}`);
  const recordedReasons = [...record.reasons].sort();
  const todayReasons = decision.reasons.map((r) => r.code).sort();
  if (!sameList(recordedReasons, todayReasons)) out.push(`reasons: recorded ${listed(recordedReasons)}; today ${listed(todayReasons)}`);
  if (record.unowned_path_count !== decision.unownedPathCount) out.push(`unowned paths: recorded ${record.unowned_path_count}, today ${decision.unownedPathCount}`);
  const pathsKept = record.summarised?.omitted !== "owner_set_paths";
  const todaySets = new Map(decision.ownerSets.map((set) => [ownersKey(set.owners), viewOfResult(set)]));
  const recordedKeys = new Set<string>();
  for (const set of record.owner_sets) {
    const key = ownersKey(set.owners);
    recordedKeys.add(key);
    const label = `owner set ${set.owners.length === 0 ? "(no owners)" : set.owners.join(" ")}`;
    const today = todaySets.get(key);
    if (today === undefined) out.push(`${label}: recorded (${set.status}), absent today`);
    else out.push(...compareSet(label, viewOfRecorded(set, pathsKept), today));
  }
  for (const [key, set] of todaySets) if (!recordedKeys.has(key)) out.push(`owner set ${set.owners.length === 0 ? "(no owners)" : set.owners.join(" ")}: absent from the record, today ${set.status}`);
  const breakGlass = (decision as { readonly breakGlass?: unknown }).breakGlass ?? null;
  if ((record.break_glass !== null) !== (breakGlass !== null)) out.push(`break-glass override: recorded ${record.break_glass === null ? "none" : `by ${record.break_glass.reviewer_login}`}, today ${breakGlass === null ? "none" : "applied"}`);
  return out;
}

/** Replays `record`: gathers its inputs again through `readBlob`, evaluates them with `settings` and compares. */
export async function replayRecord(record: DecisionRecord, settings: EvaluationSettings, readBlob: ReadBlob): Promise<ReplayOutcome> {
  const evidence = await rebuildEvidence(record, readBlob);
  if (typeof evidence === "string") return { kind: "cannot_replay", why: evidence };
  const decision = evaluate(evidence, replaySettings(record, settings));
  const differences = compareWithRecord(record, decision);
  return differences.length === 0 ? { kind: "same", evidence, decision } : { kind: "different", evidence, decision, differences };
}
