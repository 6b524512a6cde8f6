// Bounded, provably complete listing (DESIGN 7.1: per_page=100, every list bounded). A list is returned whole or as a Gap:
// over the bound → over_bound; a short or empty page that still links to a next one, a page larger than per_page, a
// duplicate item, or a total that contradicts a known count → inconsistent; a failed request → transient.
import type { Gap, GapCause, Listed } from "../evaluation/evidence.ts";
import { ForgeError, invalidBody } from "./errors.ts";
import { PER_PAGE, type CallOptions, type ForgeResponse } from "./transport.ts";

export interface ListSpec {
  route: string;
  params: Record<string, unknown>;
  /** Most items accepted; one more makes the list over_bound. */
  maxItems: number;
  /** Where the array sits in the body (e.g. "repositories"); the body itself when absent. */
  itemsKey?: string;
  /** A count the forge stated elsewhere (e.g. changed_files): the listed total must equal it. */
  expectedCount?: number;
  /** Identity of an item, for duplicate detection (e.g. review id). */
  key?: (item: unknown) => unknown;
}

/** `notList`: a page was not the documented list (the reconciler rejects that before any field validation, spec "Reconciliation attempt"). */
export type ListOutcome = Listed<unknown> & { retryAfterMs?: number | null; notList?: true };

const hasNextLink = (headers: ForgeResponse["headers"]) => /<[^>]+>;\s*rel="next"/.test(String(headers.link ?? ""));

export function gap(cause: GapCause, detail: string): Gap { return { complete: false, cause, detail }; }

export function gapFromError(error: unknown): Gap & { retryAfterMs: number | null } {
  const e = error instanceof ForgeError ? error : new ForgeError("transient", "unexpected failure while reading the forge");
  const cause: GapCause = e.retryable ? "transient" : "inconsistent";
  return { complete: false, cause, detail: e.message, retryAfterMs: e.retryAfterMs };
}

export async function listAll(fetchPage: (params: Record<string, unknown>, call?: CallOptions) => Promise<ForgeResponse>, spec: ListSpec, call?: CallOptions): Promise<ListOutcome> {
  const items: unknown[] = [];
  const seen = new Set<unknown>();
  const maxPages = Math.ceil(spec.maxItems / PER_PAGE) + 2;
  for (let page = 1; page <= maxPages; page++) {
    let response: ForgeResponse;
    try {
      response = await fetchPage({ ...spec.params, per_page: PER_PAGE, page }, call);
    } catch (error) {
      return gapFromError(error);
    }
    const body = spec.itemsKey ? (response.data as Record<string, unknown> | null)?.[spec.itemsKey] : response.data;
    if (!Array.isArray(body) || (spec.itemsKey && (typeof response.data !== "object" || response.data === null))) return { ...gapFromError(invalidBody(spec.route)), notList: true };
    if (body.length > PER_PAGE) return gap("inconsistent", `${spec.route}: page ${page} has more than ${PER_PAGE} items`);
    for (const item of body) {
      if (spec.key) {
        const k = spec.key(item);
        if (seen.has(k)) return gap("inconsistent", `${spec.route}: page ${page} repeats an item already listed`);
        seen.add(k);
      }
      items.push(item);
    }
    if (items.length > spec.maxItems) return gap("over_bound", `${spec.route}: more than ${spec.maxItems} items`);
    if (spec.expectedCount !== undefined && items.length > spec.expectedCount) {
      return gap("inconsistent", `${spec.route}: listed more items than the ${spec.expectedCount} the forge reported`);
    }
    const next = hasNextLink(response.headers);
    if (next && body.length < PER_PAGE) return gap("inconsistent", `${spec.route}: page ${page} is short but links to a next page`);
    if (!next) {
      // A full last page without a next link may hide a dropped link when no count proves the total: look one page further.
      if (body.length === PER_PAGE && spec.expectedCount === undefined) continue;
      if (spec.expectedCount !== undefined && items.length !== spec.expectedCount) {
        return gap("inconsistent", `${spec.route}: listed ${items.length} items, the forge reported ${spec.expectedCount}`);
      }
      return { complete: true, items };
    }
  }
  return gap("over_bound", `${spec.route}: more than ${maxPages} pages`);
}
