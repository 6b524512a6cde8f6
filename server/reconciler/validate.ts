import { isZonedTimestamp, zonedTimestampMs } from "../forge/validate.ts";
import { type MergeFacts, mergeFactsOf } from "../ingress/event-mapping.ts";

/**
 * Reconciliation input validation (spec "Reconciliation attempt"): installation IDs and pull-request numbers are positive JSON
 * integers (booleans, strings, null, zero and negatives rejected); `suspended_at` is null or a timezone-aware ISO 8601
 * timestamp; `archived` is a JSON boolean; every open pull request has an object `head` with a full lowercase hexadecimal
 * commit ID of 40 or 64 characters. A response that is not the expected list, or has a non-object item, is rejected before
 * any field is looked at. Each list is validated whole before any of its items is acted on: one bad item rejects the list;
 * a repository's open pull requests are streamed (DESIGN 3.9), so there each page is validated whole before any of its items
 * is acted on, and a bad item stops the listing (what earlier pages queued stays: a queued evaluation reads its pull request
 * itself).
 * An open pull request's base commit (`base.sha`) and `updated_at` only say whether it changed since its last evaluation:
 * when either is missing or malformed it is null, and the pull request counts as changed (evaluated again).
 *
 * A rejection is a fixed reason code (below); callers log the code, never the rejected value.
 */
export const REJECTION_REASONS = [
  "installations_not_list",
  "installation_not_object",
  "installation_id_invalid",
  "installation_suspended_at_invalid",
  "repositories_not_list",
  "repository_not_object",
  "repository_id_invalid",
  "repository_name_invalid",
  "repository_owner_invalid",
  "repository_archived_invalid",
  "pull_requests_not_list",
  "pull_request_not_object",
  "pull_request_number_invalid",
  "pull_request_head_invalid",
  "pull_request_head_sha_invalid",
] as const;
export type RejectionReason = (typeof REJECTION_REASONS)[number];

export type Validated<T> = { readonly kind: "valid"; readonly items: readonly T[] } | { readonly kind: "rejected"; readonly reason: RejectionReason };

export type InstallationItem = { readonly id: number; readonly suspended: boolean };
export type RepositoryItem = { readonly id: number; readonly owner: string; readonly name: string; readonly archived: boolean };
/** `baseRef`: the base branch's name for the open-pull-request index (DESIGN 3.9); null when missing or not a non-empty string. */
export type OpenPullItem = { readonly number: number; readonly headSha: string; readonly baseSha: string | null; readonly baseRef: string | null; readonly updatedAtMs: number | null };

export { isZonedTimestamp };

type Json = Record<string, unknown>;

/** A positive JSON integer that is exact in a double (IDs beyond 2^53 cannot be told apart, so they are rejected too). */
export function isPositiveInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0;
}

const COMMIT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
export function isCommitId(value: unknown): value is string {
  return typeof value === "string" && COMMIT_ID.test(value);
}

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Shape first (a list of objects), then each item's fields; the first failure names the reason. */
function validateList<T>(
  items: unknown,
  notList: RejectionReason,
  notObject: RejectionReason,
  field: (item: Json) => T | RejectionReason,
): Validated<T> {
  if (!Array.isArray(items)) return { kind: "rejected", reason: notList };
  if (!items.every(isObject)) return { kind: "rejected", reason: notObject };
  const valid: T[] = [];
  for (const item of items) {
    const result = field(item);
    if (typeof result === "string") return { kind: "rejected", reason: result as RejectionReason };
    valid.push(result);
  }
  return { kind: "valid", items: valid };
}

/** GET /app/installations: validated whole before any installation is processed. */
export function validateInstallations(items: unknown): Validated<InstallationItem> {
  return validateList(items, "installations_not_list", "installation_not_object", (item) => {
    if (!isPositiveInteger(item.id)) return "installation_id_invalid";
    if (item.suspended_at !== null && !isZonedTimestamp(item.suspended_at)) return "installation_suspended_at_invalid";
    return { id: item.id, suspended: item.suspended_at !== null };
  });
}

/** GET /installation/repositories: the repositories the installation can access. */
export function validateRepositories(items: unknown): Validated<RepositoryItem> {
  return validateList(items, "repositories_not_list", "repository_not_object", (item) => {
    if (!isPositiveInteger(item.id)) return "repository_id_invalid";
    if (typeof item.name !== "string" || item.name === "") return "repository_name_invalid";
    const owner = item.owner;
    if (!isObject(owner) || typeof owner.login !== "string" || owner.login === "") return "repository_owner_invalid";
    if (typeof item.archived !== "boolean") return "repository_archived_invalid";
    return { id: item.id, owner: owner.login, name: item.name, archived: item.archived };
  });
}

/** GET /repos/{owner}/{repo}/pulls?state=open. */
export function validateOpenPullRequests(items: unknown): Validated<OpenPullItem> {
  return validateList(items, "pull_requests_not_list", "pull_request_not_object", (item) => {
    if (!isPositiveInteger(item.number)) return "pull_request_number_invalid";
    if (!isObject(item.head)) return "pull_request_head_invalid";
    if (!isCommitId(item.head.sha)) return "pull_request_head_sha_invalid";
    const baseSha = isObject(item.base) && isCommitId(item.base.sha) ? item.base.sha : null;
    const baseRef = isObject(item.base) && typeof item.base.ref === "string" && item.base.ref !== "" ? item.base.ref : null;
    return { number: item.number, headSha: item.head.sha, baseSha, baseRef, updatedAtMs: zonedTimestampMs(item.updated_at) };
  });
}

/** A recently closed pull request: its head, and its merge when it was merged (the listing names no merger: `mergedBy` null). */
export type ClosedPullItem = { readonly number: number; readonly headSha: string; readonly merge: MergeFacts | null };

/**
 * GET /repos/{owner}/{repo}/pulls?state=closed&sort=updated&direction=desc (the merge recovery, DESIGN 3.10): one page of at
 * most `max` items, validated whole as the open ones are. Merge facts that are not of their documented form are null, as a
 * delivery's are (event-mapping.ts).
 */
export function validateClosedPullRequests(items: unknown, max: number): Validated<ClosedPullItem> {
  if (Array.isArray(items) && items.length > max) return { kind: "rejected", reason: "pull_requests_not_list" };
  return validateList(items, "pull_requests_not_list", "pull_request_not_object", (item) => {
    if (!isPositiveInteger(item.number)) return "pull_request_number_invalid";
    if (!isObject(item.head)) return "pull_request_head_invalid";
    if (!isCommitId(item.head.sha)) return "pull_request_head_sha_invalid";
    return { number: item.number, headSha: item.head.sha, merge: mergeFactsOf(item) };
  });
}
