import { ForgeError } from "../forge/index.ts";
import { claimNext, completeJob, type JobKind, type JobRow, leaseToken, releaseLeases, renewLease, retryJob } from "../store/index.ts";
import { providerDelayMs, retryDelayMs } from "./backoff.ts";
import { type JobOutcome, leaseOf, type WorkerContext } from "./context.ts";
import { LeaseLost, RetryLater } from "./errors.ts";
import { evaluatePullRequest } from "./jobs/evaluate-pull-request.ts";
import { fanOutBaseRef, fanOutInstallation, fanOutRepository } from "./jobs/fan-out.ts";
import { invalidateHead } from "./jobs/invalidate-head.ts";

/**
 * The worker: `concurrency` slots each claim the next row in global claim order under a lease of their own (one token per
 * claim, leaseToken; renewed every third of the lease while the handler runs; a lost lease aborts the handler and the claim
 * completes and retries nothing: the next claim runs the row again), then complete it (deleted, or pending again when work merged
 * into it meanwhile) or retry it (pending with a backoff or provider delay; never terminal). stop() stops claiming, lets
 * running jobs finish within the drain bound, cancels the rest and hands every lease it still holds back as pending.
 */
export type WorkerOptions = {
  readonly concurrency: number;
  readonly leaseMs: number;
  readonly pollMs: number;
  readonly retryCapSeconds: number;
  readonly drainMs: number;
  readonly random?: () => number;
};

export const DEFAULT_WORKER_OPTIONS = { concurrency: 4, leaseMs: 30_000, pollMs: 500, drainMs: 5_000 } as const;

type Handler = (ctx: WorkerContext, row: JobRow, signal: AbortSignal) => Promise<JobOutcome>;
const HANDLERS: Record<JobKind, Handler> = {
  head_invalidation: invalidateHead,
  installation_fanout: fanOutInstallation,
  repository_fanout: fanOutRepository,
  base_ref: fanOutBaseRef,
  evaluation: evaluatePullRequest,
};

export type Worker = {
  start(): void;
  stop(): Promise<void>;
  /** Nudges idle slots to claim now (ingress calls it after storing work). */
  wake(): void;
  alive(): boolean;
  ready(): boolean;
};

export function createWorker(ctx: WorkerContext, options: WorkerOptions): Worker {
  let running = false;
  let crashed = false;
  let claims = 0;
  const slots: Promise<void>[] = [];
  const inFlight = new Set<AbortController>();
  let wakeIdle: (() => void) | null = null;
  let idleGate: Promise<void> | null = null;

  const idle = (ms: number) => {
    idleGate ??= new Promise<void>((resolve) => {
      const timer = setTimeout(finish, ms);
      function finish() {
        clearTimeout(timer);
        idleGate = null;
        wakeIdle = null;
        resolve();
      }
      wakeIdle = finish;
    });
    return idleGate;
  };

  async function slot() {
    while (running) {
      let row: JobRow | null;
      try {
        const token = leaseToken(ctx.workerId, ++claims);
        row = await ctx.store.execute(() => claimNext(token, ctx.now(), options.leaseMs));
      } catch (error) {
        ctx.log.warn({ code: (error as { code?: string }).code ?? "database" }, "claiming work failed; retrying");
        await idle(options.pollMs);
        continue;
      }
      if (row === null) {
        await idle(options.pollMs);
        continue;
      }
      await runRow(row);
    }
  }

  async function runRow(row: JobRow) {
    const token = leaseOf(row);
    const controller = new AbortController();
    inFlight.add(controller);
    let leaseLost = false;
    const renewal = setInterval(() => {
      ctx.store.execute(() => renewLease(row.id, token, ctx.now(), options.leaseMs)).then(
        (held) => {
          if (!held) {
            leaseLost = true;
            controller.abort(new Error("lease lost"));
          }
        },
        () => {},
      );
    }, Math.max(50, Math.floor(options.leaseMs / 3)));
    try {
      const outcome = await HANDLERS[row.kind](ctx, row, controller.signal);
      const completion = await ctx.store.execute(() => completeJob(row.id, token, row.merges, ctx.now()));
      if (row.kind === "head_invalidation") ctx.metrics.sharedHeadInvalidations.inc({ outcome: completion === "requeued" ? "superseded" : "completed" });
      ctx.log.debug({ job: row.id, kind: row.kind, completion, note: outcome.note }, "job finished");
    } catch (error) {
      const rateLimited = (error instanceof ForgeError && error.kind === "rate_limited") || (error instanceof RetryLater && error.providerDelayMs !== null);
      if (row.kind === "head_invalidation") ctx.metrics.sharedHeadInvalidations.inc({ outcome: rateLimited ? "rate_limited" : "failed" });
      if (leaseLost || error instanceof LeaseLost) {
        ctx.log.warn({ job: row.id, kind: row.kind }, "lease lost while working; the next claim runs the job again");
        return;
      }
      const delay = !running && controller.signal.aborted
        ? 0 // cancelled by shutdown: runnable again at once, by the next process
        : rateLimited
        ? providerDelayMs(error instanceof ForgeError ? error.retryAfterMs : (error as RetryLater).providerDelayMs)
        : retryDelayMs(row.attempts, options.retryCapSeconds, options.random);
      const code = error instanceof RetryLater ? error.code : error instanceof ForgeError ? `forge_${error.kind}` : (error as { code?: string }).code ? `store_${(error as { code: string }).code}` : "unexpected";
      if (code === "unexpected") ctx.log.error({ job: row.id, kind: row.kind, error: (error as Error).name }, "job failed unexpectedly; it will be retried");
      else ctx.log.info({ job: row.id, kind: row.kind, code, delay_ms: delay }, "job will be retried");
      await ctx.store.execute(() => retryJob(row.id, token, ctx.now() + delay, code, ctx.now())).catch(() => {
        // The lease expires on its own; another claim retries the row.
      });
    } finally {
      clearInterval(renewal);
      inFlight.delete(controller);
    }
  }

  return {
    start() {
      if (running) return;
      running = true;
      for (let i = 0; i < options.concurrency; i++) {
        slots.push(
          slot().catch((error) => {
            crashed = true;
            ctx.log.fatal({ error: (error as Error).name }, "a worker slot stopped unexpectedly");
          }),
        );
      }
    },
    async stop() {
      if (!running) return;
      running = false;
      wakeIdle?.();
      const drained = Promise.all(slots);
      const timer = setTimeout(() => {
        for (const controller of inFlight) controller.abort(new Error("shutting down"));
      }, options.drainMs);
      await drained;
      clearTimeout(timer);
      const released = await ctx.store.execute(() => releaseLeases(ctx.workerId, ctx.now())).catch(() => 0);
      if (released > 0) ctx.log.info({ released }, "leases handed back for another worker");
    },
    wake() {
      wakeIdle?.();
    },
    alive: () => running && !crashed,
    ready: () => running && !crashed,
  };
}
