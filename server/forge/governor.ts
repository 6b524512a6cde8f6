// The request governor (issue 18 item 6): one budget per installation (and one for the App's own JWT requests), asked before
// every forge request and told every answer. It keeps the service inside the forge's limits instead of discovering them:
// - the primary limit: `x-ratelimit-remaining` / `x-ratelimit-reset` of every answer; at or below a reserve, background
//   requests wait for the reset (webhook-driven work may spend the reserve down to zero); a rate-limited answer pauses the
//   whole installation for the provider's delay;
// - the secondary limits: points per rolling minute (GET 1, writes 5), writes per rolling minute, requests in flight;
// - priority: webhook-driven ("interactive") requests go before queued reconciler and fan-out ("background") ones, and
//   background work may use only BACKGROUND_SHARE of each per-minute budget and of the concurrency, so a big scan leaves room
//   for an approval's check.
// A wait for a reset or a provider delay longer than MAX_RATE_LIMIT_WAIT_MS, or cut short by the caller's signal, fails the
// request at once as rate_limited with the remaining delay: a job then frees its worker slot and retries when the budget is back.
//
// Hand-written rather than a limiter package: the two candidates do not fit. bottleneck (what @octokit/plugin-throttling uses)
// has had no release since 2019, refreshes its reservoir in fixed windows (twice the budget across a window edge) and runs on
// wall-clock timers; p-queue counts requests per fixed interval and has no weights. Here the budgets are weighted rolling
// windows driven by response headers, and time comes from an injected clock so tests never wait.
import { ForgeError, rateLimitedForMs } from "./errors.ts";
import { type ProbeClock, systemClock } from "./identity-probe.ts";

export type Priority = "interactive" | "background";

/** Label values of service_forge_requests_total (fixed vocabularies; never a route, repository or installation). */
/** `graphql`: a GraphQL query (POST /graphql; queries only, never a mutation). */
export const REQUEST_KINDS = ["read", "write", "app", "graphql"] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];
/** `deferred`: held back by the governor (a rate-limit wait past the bound, or the caller gave up while it waited); not sent. */
export const REQUEST_OUTCOMES = ["ok", "not_modified", "not_found", "rate_limited", "error", "deferred"] as const;
export type RequestOutcome = (typeof REQUEST_OUTCOMES)[number];

export type GovernorSettings = {
  /** Secondary limit: points per rolling minute and installation (GET 1, other methods 5). */
  readonly pointsPerMinute: number;
  /** Secondary limit: writes (every method but GET/HEAD) per rolling minute and installation. */
  readonly writesPerMinute: number;
  /** Requests in flight at once per installation. */
  readonly concurrentRequests: number;
  /** Primary-limit requests kept for webhook-driven work: background requests wait for the reset at or below it. */
  readonly rateLimitReserve: number;
};

/** Below the forge's documented secondary limits (about 900 points a minute per endpoint group, 100 concurrent requests). */
export const DEFAULT_GOVERNOR_SETTINGS: GovernorSettings = Object.freeze({ pointsPerMinute: 600, writesPerMinute: 60, concurrentRequests: 20, rateLimitReserve: 250 });

export const READ_POINTS = 1;
export const WRITE_POINTS = 5;
export const WINDOW_MS = 60_000;
/** Share of each per-minute budget and of the concurrency that background requests may use. */
export const BACKGROUND_SHARE = 0.75;
/** Longest wait for a primary-limit reset or a provider delay before a request fails as rate_limited instead. */
export const MAX_RATE_LIMIT_WAIT_MS = 10_000;
/** The scope of App-JWT requests (their primary limit is the App's own, not an installation's). */
export const APP_SCOPE = "app";
/**
 * The scope of an installation's GraphQL queries: the forge keeps GraphQL's primary limit (its `x-ratelimit-*` headers name
 * the `graphql` resource) and its per-minute points apart from REST's, so they are paced apart too; a query costs a read's points.
 */
export const graphqlScope = (installationId: number): string => `installation:${installationId}:graphql`;
const isGraphqlScope = (key: string) => key.endsWith(":graphql");

export type GovernorOptions = GovernorSettings & {
  readonly clock?: ProbeClock;
  /** Told the kind and outcome of every request (the service counts them in service_forge_requests_total). */
  readonly onRequest?: (kind: RequestKind, outcome: RequestOutcome) => void;
};

export type Answer = {
  readonly status: number;
  readonly headers: Record<string, string | number | undefined>;
  /** The outcome where the status does not tell it: a GraphQL answer carrying errors is HTTP 200 (transport.ts). */
  readonly outcome?: RequestOutcome;
};

export interface Permit {
  /** Reports the forge's answer (null: none came, e.g. a reset connection or a timeout); frees the request's slot. Once. */
  settle(answer: Answer | null): void;
}

export interface Governor {
  /**
   * Waits until a request of `method` in `scope` (APP_SCOPE or `installation:<id>`) fits every budget. Rejects with a
   * rate_limited ForgeError when the wait is for a reset or provider delay past the bound (or the signal ends it), and with
   * an AbortError when the signal ends a wait for pacing.
   */
  acquire(scope: string, method: string, priority: Priority, signal?: AbortSignal): Promise<Permit>;
  /** The smallest primary budget left in a current window across scopes, or null when no answer told one. */
  lowestRemaining(): number | null;
}

type Waiter = {
  readonly kind: RequestKind;
  readonly points: number;
  readonly priority: Priority;
  resolve(permit: Permit): void;
  reject(error: unknown): void;
  detach(): void;
};

type Spent = { readonly at: number; readonly points: number; readonly write: boolean };

class Scope {
  inFlight = 0;
  /** Requests issued in the last WINDOW_MS, oldest first (from `head`), with running sums. */
  spent: Spent[] = [];
  head = 0;
  points = 0;
  writes = 0;
  /** Primary limit as the latest answer of the current window told it (null: unknown). */
  remaining: number | null = null;
  resetAt = 0;
  /** A rate-limited answer's provider delay: nothing is sent before this. */
  pausedUntil = 0;
  readonly waiting: Record<Priority, Waiter[]> = { interactive: [], background: [] };
  timer: unknown = null;
  timerAt = Number.POSITIVE_INFINITY;

  idle(now: number): boolean {
    return this.inFlight === 0 && this.waiting.interactive.length === 0 && this.waiting.background.length === 0 && this.timer === null
      && this.spent.length === this.head && now >= this.resetAt && now >= this.pausedUntil;
  }
}

/** Scopes kept before idle ones are dropped (one per installation that made requests recently). */
const PRUNE_AT_SCOPES = 1024;

type Verdict = { ok: true } | { ok: false; until: number | null; rateLimited: boolean };

export function createGovernor(options: GovernorOptions): Governor {
  const clock = options.clock ?? systemClock;
  const scopes = new Map<string, Scope>();
  const count = (kind: RequestKind, outcome: RequestOutcome) => options.onRequest?.(kind, outcome);

  const scopeOf = (key: string): Scope => {
    let scope = scopes.get(key);
    if (scope) return scope;
    if (scopes.size >= PRUNE_AT_SCOPES) {
      const now = clock.now();
      for (const [name, other] of scopes) {
        expire(other, now);
        if (other.idle(now)) scopes.delete(name);
      }
    }
    scope = new Scope();
    scopes.set(key, scope);
    return scope;
  };

  function expire(scope: Scope, now: number) {
    while (scope.head < scope.spent.length && scope.spent[scope.head]!.at + WINDOW_MS <= now) {
      const entry = scope.spent[scope.head++]!;
      scope.points -= entry.points;
      if (entry.write) scope.writes -= 1;
    }
    if (scope.head > 1024 && scope.head * 2 > scope.spent.length) {
      scope.spent = scope.spent.slice(scope.head);
      scope.head = 0;
    }
  }

  /**
   * The earliest time at which the request fits, walking the window from its oldest entry: `fits` is told the points and
   * writes that will have left the window by then.
   */
  function whenFits(scope: Scope, fits: (points: number, writes: number) => boolean): number {
    let points = 0;
    let writes = 0;
    for (let i = scope.head; i < scope.spent.length; i++) {
      const entry = scope.spent[i]!;
      points += entry.points;
      if (entry.write) writes += 1;
      if (fits(points, writes)) return entry.at + WINDOW_MS;
    }
    return clock.now() + WINDOW_MS;
  }

  const share = (limit: number, priority: Priority, floor: number) =>
    priority === "background" ? Math.max(floor, Math.floor(limit * BACKGROUND_SHARE)) : limit;

  /** Until when the primary limit or a provider delay holds a request of `priority` back (null: it does not). */
  function rateLimitedUntil(scope: Scope, priority: Priority, now: number): number | null {
    let until = scope.pausedUntil;
    // Every request in flight may still spend one; webhook-driven work may use the reserve, background work may not.
    const floor = priority === "background" ? options.rateLimitReserve : 0;
    if (scope.remaining !== null && now < scope.resetAt && scope.remaining - scope.inFlight <= floor) until = Math.max(until, scope.resetAt);
    return until > now ? until : null;
  }

  function admit(scope: Scope, waiter: Waiter, now: number): Verdict {
    const limited = rateLimitedUntil(scope, waiter.priority, now);
    if (limited !== null) return { ok: false, until: limited, rateLimited: true };
    if (scope.inFlight >= share(options.concurrentRequests, waiter.priority, 1)) return { ok: false, until: null, rateLimited: false };
    const pointLimit = share(options.pointsPerMinute, waiter.priority, WRITE_POINTS);
    if (scope.points + waiter.points > pointLimit) {
      return { ok: false, until: whenFits(scope, (points) => scope.points - points + waiter.points <= pointLimit), rateLimited: false };
    }
    if (waiter.kind === "write") {
      const writeLimit = share(options.writesPerMinute, waiter.priority, 1);
      if (scope.writes + 1 > writeLimit) return { ok: false, until: whenFits(scope, (_points, writes) => scope.writes - writes + 1 <= writeLimit), rateLimited: false };
    }
    return { ok: true };
  }

  function schedule(key: string, scope: Scope, at: number) {
    if (scope.timer !== null && scope.timerAt <= at) return;
    if (scope.timer !== null) clock.clearTimeout(scope.timer);
    scope.timerAt = at;
    scope.timer = clock.setTimeout(() => {
      scope.timer = null;
      scope.timerAt = Number.POSITIVE_INFINITY;
      pump(key, scope);
    }, Math.max(0, at - clock.now()));
  }

  /** Admits queued requests in priority order, each class first come first served; stops at the first that must wait. */
  function pump(key: string, scope: Scope) {
    const now = clock.now();
    expire(scope, now);
    for (;;) {
      const queue = scope.waiting.interactive.length > 0 ? scope.waiting.interactive : scope.waiting.background;
      const waiter = queue[0];
      if (!waiter) return;
      const verdict = admit(scope, waiter, now);
      if (verdict.ok) {
        queue.shift();
        waiter.detach();
        waiter.resolve(issue(key, scope, waiter, now));
        continue;
      }
      if (verdict.rateLimited && verdict.until! - now > MAX_RATE_LIMIT_WAIT_MS) {
        queue.shift();
        waiter.detach();
        count(waiter.kind, "deferred");
        waiter.reject(deferred(verdict.until! - now));
        continue;
      }
      if (verdict.until !== null) schedule(key, scope, verdict.until);
      return;
    }
  }

  function issue(key: string, scope: Scope, waiter: Waiter, now: number): Permit {
    scope.inFlight += 1;
    scope.spent.push({ at: now, points: waiter.points, write: waiter.kind === "write" });
    scope.points += waiter.points;
    if (waiter.kind === "write") scope.writes += 1;
    let settled = false;
    return {
      settle(answer) {
        if (settled) return;
        settled = true;
        scope.inFlight -= 1;
        const now = clock.now();
        count(waiter.kind, outcomeOf(answer, now));
        if (answer) observe(scope, answer, now);
        pump(key, scope);
      },
    };
  }

  return {
    acquire(key, method, priority, signal) {
      const upper = method.toUpperCase();
      const graphql = isGraphqlScope(key);
      const read = upper === "GET" || upper === "HEAD" || graphql;
      const kind: RequestKind = key === APP_SCOPE ? "app" : graphql ? "graphql" : read ? "read" : "write";
      const scope = scopeOf(key);
      return new Promise<Permit>((resolve, reject) => {
        const onAbort = () => {
          const queue = scope.waiting[priority];
          const at = queue.indexOf(waiter);
          if (at < 0) return;
          queue.splice(at, 1);
          count(kind, "deferred");
          // A wait for a reset or a provider delay ends as that rate limit (the caller retries after it); one for pacing as an abort.
          const now = clock.now();
          const limited = rateLimitedUntil(scope, priority, now);
          reject(limited !== null ? deferred(limited - now) : aborted());
          pump(key, scope);
        };
        const waiter: Waiter = {
          kind, priority, points: read ? READ_POINTS : WRITE_POINTS, resolve, reject,
          detach: () => signal?.removeEventListener("abort", onAbort),
        };
        if (signal?.aborted) {
          count(kind, "deferred");
          reject(aborted());
          return;
        }
        signal?.addEventListener("abort", onAbort, { once: true });
        scope.waiting[priority].push(waiter);
        pump(key, scope);
      });
    },
    lowestRemaining() {
      const now = clock.now();
      let lowest: number | null = null;
      for (const scope of scopes.values()) {
        if (scope.remaining !== null && now < scope.resetAt && (lowest === null || scope.remaining < lowest)) lowest = scope.remaining;
      }
      return lowest;
    },
  };
}

function deferred(delayMs: number): ForgeError {
  return new ForgeError("rate_limited", "the installation's forge rate limit is spent; the request was not sent", null, Math.ceil(delayMs));
}

/** Classified as transient by classifyForgeError, as every aborted request is. */
function aborted(): Error {
  return Object.assign(new Error("the caller stopped waiting for the request budget"), { name: "AbortError" });
}

function header(headers: Answer["headers"], name: string): number | null {
  const text = String(headers[name] ?? "").trim();
  return /^\d{1,15}$/.test(text) ? Number(text) : null;
}

/** Updates the primary limit from an answer's headers and pauses the scope for a rate-limited answer's provider delay. */
function observe(scope: Scope, answer: Answer, now: number) {
  const remaining = header(answer.headers, "x-ratelimit-remaining");
  const reset = header(answer.headers, "x-ratelimit-reset");
  if (remaining !== null && reset !== null) {
    const resetAt = reset * 1000;
    // A later reset is a new window; within one window the lowest count is the latest (answers may arrive out of order).
    if (scope.remaining === null || resetAt > scope.resetAt || now >= scope.resetAt) {
      scope.remaining = remaining;
      scope.resetAt = resetAt;
    } else if (resetAt === scope.resetAt) {
      scope.remaining = Math.min(scope.remaining, remaining);
    }
  }
  const delay = rateLimitedForMs(answer.status, answer.headers, now);
  if (delay !== null) scope.pausedUntil = Math.max(scope.pausedUntil, now + delay);
}

function outcomeOf(answer: Answer | null, now: number): RequestOutcome {
  if (answer === null) return "error";
  if (answer.outcome !== undefined) return answer.outcome;
  if (answer.status === 304) return "not_modified";
  if (answer.status >= 200 && answer.status < 300) return "ok";
  if (answer.status === 404) return "not_found";
  if (rateLimitedForMs(answer.status, answer.headers, now) !== null) return "rate_limited";
  return "error";
}
