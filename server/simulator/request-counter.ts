// Counts every REST request the simulator answers, by method, route template and status, for as long as it runs (the request
// log keeps only the last MAX_LOGGED). Benchmarks read it to measure the service's request economy (issue 18): a 304 answer
// to a conditional request spends no rate limit on the forge, so it is counted apart from the others.

/** One route's answers: status → how many. The route is `METHOD /template/{param}` as the simulator declares it. */
export type RouteCounts = Record<string, Record<string, number>>;

export interface RequestCounts {
  /** Every answer, by route and status. */
  readonly routes: RouteCounts;
  /** Every answer. */
  readonly total: number;
  /** Answers that spend primary rate limit on the forge: everything but 304. */
  readonly counted: number;
  /** 304 answers to conditional requests (no rate limit spent). */
  readonly notModified: number;
}

/** The route key of a request the simulator has no route for. */
export const UNMATCHED = "(unmatched)";

export class RequestCounter {
  private readonly routes = new Map<string, Map<number, number>>();

  add(method: string, template: string | null, status: number): void {
    const key = `${method} ${template ?? UNMATCHED}`;
    let statuses = this.routes.get(key);
    if (statuses === undefined) {
      statuses = new Map();
      this.routes.set(key, statuses);
    }
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
  }

  reset(): void {
    this.routes.clear();
  }

  snapshot(): RequestCounts {
    const routes: RouteCounts = {};
    let total = 0;
    let notModified = 0;
    for (const [route, statuses] of [...this.routes].sort(([a], [b]) => (a < b ? -1 : 1))) {
      routes[route] = Object.fromEntries([...statuses].sort(([a], [b]) => a - b).map(([status, n]) => [String(status), n]));
      for (const [status, n] of statuses) {
        total += n;
        if (status === 304) notModified += n;
      }
    }
    return { routes, total, counted: total - notModified, notModified };
  }
}

/** What happened between two snapshots of the same counter (`later` taken after `earlier`, no reset between). */
export function countsSince(earlier: RequestCounts, later: RequestCounts): RequestCounts {
  const routes: RouteCounts = {};
  let total = 0;
  let notModified = 0;
  for (const [route, statuses] of Object.entries(later.routes)) {
    for (const [status, n] of Object.entries(statuses)) {
      const delta = n - (earlier.routes[route]?.[status] ?? 0);
      if (delta <= 0) continue;
      (routes[route] ??= {})[status] = delta;
      total += delta;
      if (status === "304") notModified += delta;
    }
  }
  return { routes, total, counted: total - notModified, notModified };
}
