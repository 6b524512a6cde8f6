// The forge's primary rate limit per installation, for installations a test gives one: `limit` requests per window, counted
// on installation-token requests; a 304 spends none; when none is left the forge answers 403 with `x-ratelimit-remaining: 0`
// until the reset. Installations without a limit answer with the fixed headers of simulator.ts. Time comes from `now` (tests
// pass the clock they give the service).
import type { Result } from "./route-kit.ts";

interface Budget { limit: number; remaining: number; resetAt: number; windowMs: number }

export class PrimaryRateLimits {
  private readonly budgets = new Map<number, Budget>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Gives an installation `limit` requests per window (default one hour), `remaining` of them left now (default all). */
  set(installationId: number, options: { limit: number; remaining?: number; windowSeconds?: number }): void {
    const windowMs = (options.windowSeconds ?? 3600) * 1000;
    this.budgets.set(installationId, { limit: options.limit, remaining: options.remaining ?? options.limit, resetAt: this.now() + windowMs, windowMs });
  }

  clear(): void { this.budgets.clear(); }

  /** The 403 the forge sends while the installation's budget is spent, or null when it may be answered. */
  refusal(installationId: number): Result | null {
    const budget = this.current(installationId);
    if (!budget || budget.remaining > 0) return null;
    return { status: 403, body: { message: "API rate limit exceeded for installation", documentation_url: "https://docs.github.com/rest/rate-limit" }, headers: headersOf(budget) };
  }

  /** Spends one request of the installation's budget (none for a 304 or a refusal) and puts its state in the headers. */
  charge(installationId: number, response: Response): void {
    const budget = this.current(installationId);
    if (!budget) return;
    if (response.status !== 304 && budget.remaining > 0) budget.remaining -= 1;
    for (const [name, value] of Object.entries(headersOf(budget))) response.headers.set(name, value);
  }

  private current(installationId: number): Budget | undefined {
    const budget = this.budgets.get(installationId);
    if (budget && this.now() >= budget.resetAt) {
      budget.remaining = budget.limit;
      budget.resetAt = this.now() + budget.windowMs;
    }
    return budget;
  }
}

function headersOf(budget: Budget): Record<string, string> {
  return {
    "x-ratelimit-limit": String(budget.limit), "x-ratelimit-remaining": String(budget.remaining), "x-ratelimit-used": String(budget.limit - budget.remaining),
    "x-ratelimit-reset": String(Math.ceil(budget.resetAt / 1000)), "x-ratelimit-resource": "core",
  };
}
