// The page's only requests: GET /api/decisions and GET /api/decisions/{id} on its own origin (the content security policy
// allows nothing else). The search parameters are the route's; an empty form field is left out rather than sent empty.
import type { HistoryPage, HistoryRecord } from "../../../server/records/schema.ts";

/** The search parameters the page passes on from its own address to the route (the route checks each). */
export const SEARCH_PARAMETERS = ["repository", "pull", "commit", "since", "until", "unapproved", "overrides", "kind"] as const;

export type ApiError = { readonly status: number; readonly message: string };
export type Answer<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: ApiError };

/** The route's query for the page's own search parameters: known ones, trimmed, non-empty. */
export function searchQuery(pageParams: URLSearchParams, cursor: string | null = null): URLSearchParams {
  const query = new URLSearchParams();
  for (const name of SEARCH_PARAMETERS) {
    const value = pageParams.get(name)?.trim();
    if (value) query.set(name, value);
  }
  if (cursor !== null) query.set("cursor", cursor);
  return query;
}

async function read<T>(url: string): Promise<Answer<T>> {
  let response: Response;
  try {
    response = await fetch(url, { headers: { accept: "application/json" }, credentials: "same-origin" });
  } catch {
    return { ok: false, error: { status: 0, message: "The service could not be reached." } };
  }
  let body: unknown = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (response.ok && body !== null) return { ok: true, value: body as T };
  const problem = (body ?? {}) as { error?: unknown; parameter?: unknown; detail?: unknown };
  const detail = typeof problem.detail === "string" ? problem.detail : null;
  const parameter = typeof problem.parameter === "string" ? problem.parameter : null;
  const message =
    response.status === 404 ? "There is no such record: it was pruned after the retention period, or never written."
    : response.status === 503 ? "The service's database did not answer; try again."
    : parameter !== null ? `${parameter}: ${detail ?? "not accepted"}`
    : detail ?? `The service answered ${response.status}.`;
  return { ok: false, error: { status: response.status, message } };
}

export function listRecords(query: URLSearchParams): Promise<Answer<HistoryPage>> {
  return read<HistoryPage>(`/api/decisions?${query.toString()}`);
}

export function readRecord(id: string): Promise<Answer<HistoryRecord>> {
  return read<HistoryRecord>(`/api/decisions/${encodeURIComponent(id)}`);
}
