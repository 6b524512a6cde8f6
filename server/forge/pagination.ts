// Bounded, provably complete listing (DESIGN 7.1: per_page=100, every list bounded; DESIGN 3.8: a page that breaks its list's
// Link promises is incomplete evidence). A list is returned whole or as a Gap:
// - over the bound → over_bound (permanent);
// - a failed request or a body that is not the list → transient (from the error);
// - a broken promise → transient with a named reason, so the job retries instead of deciding on part of a list: an empty page
//   that the previous page linked to as next; a short page that links to a next one; a list that ends before the last page
//   page 1 announced (rel="last"), or goes on past it, or a page that announces another last page; a next link to another
//   page than the following one; a page larger than per_page; the same item twice; a total that disagrees with a count the
//   forge gives elsewhere (changed_files, total_count).
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
  /** A count field beside the items (e.g. "total_count"): every page must state the same, and the listed total must equal it. */
  countKey?: string;
  /** Identity of an item, for duplicate detection (e.g. review id). */
  key: (item: unknown) => unknown;
}

/** `notList`: a page was not the documented list (the reconciler rejects that before any field validation, spec "Reconciliation attempt"). */
export type ListOutcome = Listed<unknown> & { retryAfterMs?: number | null; notList?: true };

export function gap(cause: GapCause, detail: string): Gap { return { complete: false, cause, detail }; }

export function gapFromError(error: unknown): Gap & { retryAfterMs: number | null } {
  const e = error instanceof ForgeError ? error : new ForgeError("transient", "unexpected failure while reading the forge");
  const cause: GapCause = e.retryable ? "transient" : "inconsistent";
  return { complete: false, cause, detail: e.message, retryAfterMs: e.retryAfterMs };
}

interface PageLinks { next: boolean; nextPage: number | null; lastPage: number | null }

/**
 * The next and last relations of a Link header, with the page number each URL names (null when it names none, e.g. a cursor).
 * Hand-written: the forge's Link is a plain list of `<url>; rel="x"` (RFC 8288), which is all the forge's own client libraries
 * parse too, and a parser package would add a dependency for one regular expression.
 */
function pageLinks(header: unknown): PageLinks {
  const links: PageLinks = { next: false, nextPage: null, lastPage: null };
  for (const [, url, rels] of String(header ?? "").matchAll(/<([^>]*)>\s*;\s*rel="([^"]*)"/g)) {
    const relations = rels!.split(/\s+/);
    if (relations.includes("next")) { links.next = true; links.nextPage = pageOf(url!); }
    if (relations.includes("last")) links.lastPage = pageOf(url!);
  }
  return links;
}

function pageOf(url: string): number | null {
  let page: string | null;
  try {
    page = new URL(url).searchParams.get("page");
  } catch {
    return null;
  }
  return page !== null && /^[1-9][0-9]{0,8}$/.test(page) ? Number(page) : null;
}

/** Where a page sits: `pass` 0, or 1 when the list is read once more afresh (below); `page` from 1. */
export type PagePosition = { readonly pass: number; readonly page: number };
/**
 * Told each page's items as soon as the page passed its own checks, before the next page is asked for; a new `pass` starts
 * the list over (what earlier pages told belongs to a reading that was given up). An error it throws ends the listing and
 * is thrown to the caller as it is.
 */
export type PageSink = (items: readonly unknown[], at: PagePosition) => void | Promise<void>;
/** A streamed list: whole (`count` items told) or a Gap, like ListOutcome without the items. */
export type StreamOutcome = ({ complete: true; count: number } | Gap) & { retryAfterMs?: number | null; notList?: true };

/**
 * Lists every page. A page answered 304 is the body kept from an earlier answer, with the Link the 304 carried (or, when it
 * carried none, the kept one): a list that changed since may then look broken while it is not. So a broken promise found
 * after any revalidated page reads the list once more, asking afresh.
 */
export async function listAll(fetchPage: (params: Record<string, unknown>, call?: CallOptions) => Promise<ForgeResponse>, spec: ListSpec, call?: CallOptions): Promise<ListOutcome> {
  let items: unknown[] = [];
  let pass = 0;
  const outcome = await streamAll(fetchPage, spec, (page, at) => {
    if (at.pass !== pass) {
      pass = at.pass;
      items = [];
    }
    for (const item of page) items.push(item);
  }, call);
  if (!outcome.complete) return outcome;
  return { complete: true, items };
}

/**
 * listAll without holding the list: each page goes to `onPage` and is let go (bounded memory however long the list; only the
 * items' keys are kept, for duplicate detection). The outcome says whether what was told is the whole list: a Gap means the
 * pages told so far are a part of it and prove nothing about the rest.
 */
export async function streamAll(fetchPage: (params: Record<string, unknown>, call?: CallOptions) => Promise<ForgeResponse>, spec: ListSpec, onPage: PageSink, call?: CallOptions): Promise<StreamOutcome> {
  const first = await readPages(fetchPage, spec, onPage, 0, call);
  if (first.broken && first.revalidated) return (await readPages(fetchPage, spec, onPage, 1, { ...call, conditional: false })).outcome;
  return first.outcome;
}

async function readPages(fetchPage: (params: Record<string, unknown>, call?: CallOptions) => Promise<ForgeResponse>, spec: ListSpec, onPage: PageSink, pass: number, call?: CallOptions): Promise<{ outcome: StreamOutcome; broken: boolean; revalidated: boolean }> {
  let listed = 0;
  const seen = new Set<unknown>();
  const maxPages = Math.ceil(spec.maxItems / PER_PAGE) + 2;
  let revalidated = false;
  const done = (outcome: StreamOutcome) => ({ outcome, broken: false, revalidated });
  const broken = (detail: string) => ({ outcome: gap("transient", `${spec.route}: ${detail}`), broken: true, revalidated });
  /** Page 1's rel="last" page number, when it gave one (the forge leaves it out when it cannot compute it). */
  let announcedLast: number | null = null;
  let announcedCount: number | null = null;
  /** This page was reached through the previous page's next link (not as a look one page further). */
  let linked = false;
  for (let page = 1; page <= maxPages; page++) {
    let response: ForgeResponse;
    try {
      response = await fetchPage({ ...spec.params, per_page: PER_PAGE, page }, call);
    } catch (error) {
      return done(gapFromError(error));
    }
    if (response.revalidated) revalidated = true;
    const data = response.data as Record<string, unknown> | null;
    const body = spec.itemsKey ? data?.[spec.itemsKey] : response.data;
    if (!Array.isArray(body) || (spec.itemsKey && (typeof response.data !== "object" || response.data === null))) return done({ ...gapFromError(invalidBody(spec.route)), notList: true });
    if (spec.countKey !== undefined) {
      const count = data?.[spec.countKey];
      if (typeof count !== "number" || !Number.isSafeInteger(count) || count < 0) return done(gapFromError(invalidBody(spec.route)));
      if (page === 1) announcedCount = count;
      else if (count !== announcedCount) return broken(`page ${page} reports ${count} items in all where page 1 reported ${announcedCount}`);
    }
    const links = pageLinks(response.headers.link);
    if (page === 1) announcedLast = links.lastPage;
    else if (announcedLast !== null && links.lastPage !== null && links.lastPage !== announcedLast) {
      return broken(`page ${page} announces ${links.lastPage} pages where page 1 announced ${announcedLast}`);
    }
    if (body.length > PER_PAGE) return broken(`page ${page} has more than ${PER_PAGE} items`);
    if (linked && body.length === 0) return broken(`page ${page} is empty although page ${page - 1} linked to it`);
    if (announcedLast !== null && page > announcedLast && body.length > 0) return broken(`page ${page} has items beyond the last page ${announcedLast} that page 1 announced`);
    for (const item of body) {
      const k = spec.key(item);
      if (seen.has(k)) return broken(`page ${page} repeats an item already listed`);
      seen.add(k);
    }
    listed += body.length;
    if (listed > spec.maxItems) return done(gap("over_bound", `${spec.route}: more than ${spec.maxItems} items`));
    const expected = spec.expectedCount ?? announcedCount ?? undefined;
    if (expected !== undefined && listed > expected) return broken(`listed more items than the ${expected} the forge reported`);
    if (body.length > 0) await onPage(body, { pass, page });
    if (links.next) {
      if (body.length < PER_PAGE) return broken(`page ${page} has ${body.length} items but links to a next page`);
      if (links.nextPage !== null && links.nextPage !== page + 1) return broken(`page ${page} links to page ${links.nextPage} as the next one`);
      if (announcedLast !== null && page >= announcedLast) return broken(`page ${page} links to a next page beyond the last page ${announcedLast} that page 1 announced`);
      linked = true;
      continue;
    }
    if (announcedLast !== null && page < announcedLast) return broken(`the list ends at page ${page}, before the last page ${announcedLast} that page 1 announced`);
    // A full page without a next link may hide a dropped link (or a Link kept from an older answer) unless a count proves the
    // total: look one page further, which must then be empty or go on.
    if (body.length === PER_PAGE && (expected === undefined || listed < expected)) {
      linked = false;
      continue;
    }
    if (expected !== undefined && listed !== expected) return broken(`listed ${listed} items; the forge reported ${expected}`);
    return done({ complete: true, count: listed });
  }
  return done(gap("over_bound", `${spec.route}: more than ${maxPages} pages`));
}
