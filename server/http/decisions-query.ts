import type { HistoryFilter } from "../records/schema.ts";
import { MAX_HISTORY_PAGE } from "../store/ops/history-ops.ts";

/**
 * The query of `GET /api/decisions` (DESIGN 3.10), read strictly: every parameter is known, given at most once and well
 * formed, or the request is refused with the parameter's name and its rule (400). A typo such as `repo=` would otherwise
 * widen the search to every record without saying so.
 */
export const DEFAULT_HISTORY_LIMIT = 50;
export const MAX_HISTORY_LIMIT = MAX_HISTORY_PAGE;
/** The largest pull request number the store keeps (an `integer` column on PostgreSQL). */
const MAX_PULL_NUMBER = 2_147_483_647;

export type HistoryQuery = { readonly filter: HistoryFilter; readonly cursor: string | null; readonly limit: number };
export type QueryProblem = { readonly parameter: string; readonly detail: string };

const PARAMETERS = ["repository", "pull", "commit", "since", "until", "unapproved", "overrides", "kind", "cursor", "limit"] as const;
/** The forge's owner and repository name rules (as `service explain --repository` reads them). */
const REPOSITORY = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\/[A-Za-z0-9._-]{1,100}$/;
const COMMIT = /^[0-9a-fA-F]{40}(?:[0-9a-fA-F]{24})?$/;
/** A day (UTC midnight) or an RFC 3339 time with its offset; Date.parse alone would accept far more than this. */
const TIME = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;

/** Epoch milliseconds of a day or RFC 3339 time, or null when it is not one (or not a real date). */
export function parseHistoryTime(text: string): number | null {
  if (!TIME.test(text)) return null;
  const ms = Date.parse(text.length === 10 ? `${text}T00:00:00Z` : text);
  if (!Number.isFinite(ms)) return null;
  // Date.parse rolls 2026-02-30 over to March: a day that does not exist is refused.
  if (new Date(ms + (text.length === 10 ? 0 : offsetMs(text))).toISOString().slice(0, 10) !== text.slice(0, 10)) return null;
  return ms;
}

function offsetMs(text: string): number {
  const match = /([+-])(\d{2}):(\d{2})$/.exec(text);
  if (match === null) return 0;
  return (match[1] === "-" ? -1 : 1) * (Number(match[2]) * 60 + Number(match[3])) * 60_000;
}

function flag(value: string): boolean | null {
  return value === "true" ? true : value === "false" ? false : null;
}

export function parseHistoryQuery(params: URLSearchParams): HistoryQuery | QueryProblem {
  const seen = new Map<string, string>();
  for (const [name, value] of params) {
    if (!(PARAMETERS as readonly string[]).includes(name)) return { parameter: name, detail: `unknown parameter (known: ${PARAMETERS.join(", ")})` };
    if (seen.has(name)) return { parameter: name, detail: "given more than once" };
    seen.set(name, value);
  }
  const filter: { -readonly [K in keyof HistoryFilter]: HistoryFilter[K] } = {};
  const repository = seen.get("repository");
  if (repository !== undefined) {
    if (!REPOSITORY.test(repository)) return { parameter: "repository", detail: "must be OWNER/NAME" };
    filter.repository = repository;
  }
  const pull = seen.get("pull");
  if (pull !== undefined) {
    if (!/^[1-9]\d{0,9}$/.test(pull) || Number(pull) > MAX_PULL_NUMBER) return { parameter: "pull", detail: `must be a pull request number (1..${MAX_PULL_NUMBER})` };
    if (repository === undefined) return { parameter: "pull", detail: "needs repository (a pull request number names a pull request only within its repository)" };
    filter.pull = Number(pull);
  }
  const commit = seen.get("commit");
  if (commit !== undefined) {
    if (!COMMIT.test(commit)) return { parameter: "commit", detail: "must be a full commit SHA (40 or 64 hexadecimal characters)" };
    filter.commit = commit.toLowerCase();
  }
  for (const name of ["since", "until"] as const) {
    const value = seen.get(name);
    if (value === undefined) continue;
    const ms = parseHistoryTime(value);
    if (ms === null) return { parameter: name, detail: "must be a day (YYYY-MM-DD, UTC) or an RFC 3339 time with its offset (2026-11-27T10:00:00Z)" };
    if (name === "since") filter.sinceMs = ms;
    else filter.untilMs = ms;
  }
  if (filter.sinceMs !== undefined && filter.untilMs !== undefined && filter.untilMs <= filter.sinceMs) return { parameter: "until", detail: "must be after since" };
  for (const name of ["unapproved", "overrides"] as const) {
    const value = seen.get(name);
    if (value === undefined) continue;
    const parsed = flag(value);
    if (parsed === null) return { parameter: name, detail: "must be true or false" };
    if (parsed) filter[name] = true;
  }
  const kind = seen.get("kind");
  if (kind !== undefined) {
    if (kind !== "decision" && kind !== "merge") return { parameter: "kind", detail: "must be decision or merge" };
    filter.kind = kind;
  }
  const limitText = seen.get("limit");
  let limit = DEFAULT_HISTORY_LIMIT;
  if (limitText !== undefined) {
    if (!/^[1-9]\d{0,2}$/.test(limitText) || Number(limitText) > MAX_HISTORY_LIMIT) return { parameter: "limit", detail: `must be an integer from 1 to ${MAX_HISTORY_LIMIT}` };
    limit = Number(limitText);
  }
  const cursor = seen.get("cursor") ?? null;
  if (cursor !== null && cursor.length === 0) return { parameter: "cursor", detail: "must be the next_cursor of an earlier page" };
  return { filter, cursor, limit };
}

export function isQueryProblem(value: HistoryQuery | QueryProblem): value is QueryProblem {
  return "parameter" in value;
}
