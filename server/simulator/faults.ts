// Fault injection per route: matched by method and a pathname regular expression (and optionally a page), consumed `times` times.

export type FaultKind =
  | "status" | "rate_limit" | "slow" | "reset" | "truncate"
  // A commit pushed to the pull request's head branch (of a /pulls/{n}/… route) just before the request is answered, e.g.
  // between two pages of its files:
  | "push"
  // Pages that break their list's Link promises (route-kit.ts paginate):
  | "missing_page" | "extra_page" | "short_page" | "end_early" | "wrong_last" | "omit_last" | "repeat_item"
  // GraphQL answers (graphql.ts; path "/graphql"): the first node (or field) null with an error entry (partial data), or
  // null without one (a missing node):
  | "graphql_partial" | "graphql_missing_node";

export interface Fault {
  kind: FaultKind;
  /** Regular expression (anchored) matched against the decoded request pathname, e.g. "/repos/acme/web/pulls/1/files". */
  path: string;
  method?: string;
  /** Only requests for this page (query `page`; every page when absent); extra_page ignores it. */
  page?: number;
  /** status: 500/502/503; rate_limit: 403 or 429. */
  status?: number;
  retryAfterSeconds?: number;
  resetInSeconds?: number;
  delayMs?: number;
  /** push: the files the commit changes (path → content, null deletes). */
  files?: Record<string, string | null>;
  /** graphql_partial: the error entry's `type` (INTERNAL when absent). */
  errorType?: string;
  /** How many matching requests the fault applies to; unlimited when absent. */
  times?: number;
}

interface Armed extends Fault { id: number; re: RegExp; remaining: number }

export class FaultTable {
  private faults: Armed[] = [];
  private nextId = 1;

  add(fault: Fault): number {
    const id = this.nextId++;
    this.faults.push({ ...fault, id, re: new RegExp(`^(?:${fault.path})$`), remaining: fault.times ?? Number.POSITIVE_INFINITY });
    return id;
  }

  clear(): void { this.faults = []; }

  /** The first live fault of one of `kinds` for this request; consumes one use. */
  take(method: string, pathname: string, page: number, kinds: FaultKind[]): Fault | undefined {
    const found = this.faults.find((f) => f.remaining > 0 && kinds.includes(f.kind) && (!f.method || f.method.toUpperCase() === method)
      && f.re.test(pathname) && (f.page === undefined || f.kind === "extra_page" || f.page === page));
    if (found) found.remaining -= 1;
    return found;
  }
}
