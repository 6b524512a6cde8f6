/**
 * Reconciliation input validation (spec "Reconciliation attempt"): installation IDs and pull-request numbers are positive JSON
 * integers (booleans, strings, null, zero and negatives rejected); `suspended_at` is null or a timezone-aware ISO 8601
 * timestamp; `archived` is a JSON boolean; every open pull request has an object `head` with a full lowercase hexadecimal
 * commit ID of 40 or 64 characters. A response that is not the expected list, or has a non-object item, is rejected before
 * any field is looked at. Each list is validated whole before any of its items is acted on: one bad item rejects the list.
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
export type OpenPullItem = { readonly number: number; readonly headSha: string };

type Json = Record<string, unknown>;

/** A positive JSON integer that is exact in a double (IDs beyond 2^53 cannot be told apart, so they are rejected too). */
export function isPositiveInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value > 0;
}

const COMMIT_ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
export function isCommitId(value: unknown): value is string {
  return typeof value === "string" && COMMIT_ID.test(value);
}

// Extended ISO 8601 date-time with a mandatory zone designator: Z, ±hh, ±hhmm or ±hh:mm; seconds and fraction optional.
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:[.,]\d{1,9})?)?(?:Z|[+-](\d{2})(?::?(\d{2}))?)$/;

/** A timezone-aware ISO 8601 timestamp naming a real calendar instant (a local time without zone is rejected). */
export function isZonedTimestamp(value: unknown): boolean {
  if (typeof value !== "string") return false;
  const m = TIMESTAMP.exec(value);
  if (!m) return false;
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [number, number, number, number, number];
  const second = m[6] === undefined ? 0 : Number(m[6]);
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth) return false;
  if (hour > 23 || minute > 59 || second > 59) return false;
  if (m[7] !== undefined && Number(m[7]) > 23) return false;
  if (m[8] !== undefined && Number(m[8]) > 59) return false;
  return true;
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
    return { number: item.number, headSha: item.head.sha };
  });
}
