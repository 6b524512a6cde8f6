import { ForgeError } from "../forge/index.ts";
import { claimNext, completeJob, type JobKind, type JobRow, leaseToken, releaseLeases, renewLease, retryJob } from "../store/index.ts";
import { providerDelayMs, retryDelayMs } from "./backoff.ts";
import { type JobOutcome, leaseOf, type WorkerContext } from "./context.ts";
import { LeaseLost, RetryLater } from "./errors.ts";
import { evaluatePullRequest } from "./jobs/evaluate-pull-request.ts";
import { fanOutBaseRef, fanOutInstallation, fanOutRepository } from "./jobs/fan-out.ts";
import { invalidateHead } from "./jobs/invalidate-head.ts";
import { judgeMergeGroup } from "./jobs/judge-merge-group.ts";

/**
 * The worker: `concurrency` slots each claim the next row in global claim order under a lease of their own (one token per
 * claim, leaseToken), renew it every third of the lease while the handler works, then complete it (deleted, or pending
 * again when work merged into it meanwhile) or retry it (pending with a backoff or provider delay; never terminal).
 *
 * A lease is renewed only while its slot works on the row: renewal stops when the handler settles or is cancelled (lease
 * lost, job deadline, shutdown). A cancelled handler that does not stop within CANCEL_GRACE_MS (and never past its lease) is
 * abandoned: the slot goes on and the lapsed lease lets the next claim run the row, so a handler stuck on a dead connection
 * never holds work forever. A claim whose lease was lost completes and retries nothing: the row is the next claim's, and it
 * runs the work again. stop() stops claiming, lets running jobs finish within the drain bound, cancels the rest and hands
 * every lease it still holds back as pending.
 */
export type WorkerOptions = {
  readonly concurrency: number;
  readonly leaseMs: number;
  readonly pollMs: number;
  readonly retryCapSeconds: number;
  readonly drainMs: number;
  /** A job still running this long after its claim is cancelled and retried later (no handler may keep a lease forever). */
  readonly jobDeadlineMs: number;
  readonly random?: () => number;
};

export const DEFAULT_WORKER_OPTIONS = { concurrency: 4, leaseMs: 30_000, pollMs: 500, drainMs: 5_000, jobDeadlineMs: 600_000 } as const;

/**
 * A slot that has not come round its loop for this long while claiming or idling (or this long past its job's deadline and
 * grace while working) is stalled: the worker no longer counts as alive, so liveness and readiness say so.
 */
export const SLOT_STALL_MS = 30_000;

/** How long a cancelled handler may take to stop before its slot abandons it (well-behaved handlers stop at once). */
const CANCEL_GRACE_MS = 1_000;

type Handler = (ctx: WorkerContext, row: JobRow, signal: AbortSignal) => Promise<JobOutcome>;
const HANDLERS: Record<JobKind, Handler> = {
  head_invalidation: invalidateHead,
  installation_fanout: fanOutInstallation,
  repository_fanout: fanOutRepository,
  base_ref: fanOutBaseRef,
  evaluation: evaluatePullRequest,
  merge_group: judgeMergeGroup,
};

/** A claim's hold on its row: `expiresAt` as last granted by the database; stop() ends the renewals for good. */
type Lease = { readonly token: string; expiresAt(): number; stop(): void };

type Settled = { readonly kind: "done"; readonly outcome: JobOutcome } | { readonly kind: "failed"; readonly error: unknown } | { readonly kind: "abandoned" };

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
  /** Per slot, the time by which it must come round its loop again (SLOT_STALL_MS). */
  const dueBy: number[] = [];
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

  async function slot(index: number) {
    while (running) {
      dueBy[index] = ctx.now() + SLOT_STALL_MS;
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
      dueBy[index] = ctx.now() + options.jobDeadlineMs + CANCEL_GRACE_MS + SLOT_STALL_MS;
      await runRow(row);
    }
  }

  /**
   * Renews the claim's lease every third of the lease, one renewal at a time (a stalled database does not pile them up; a
   * failed renewal is tried again at the next tick). The lease is lost when a renewal is refused or when its expiry passes
   * without a renewal granted (the database or the whole process stalled): then the renewals stop and `onLost` runs.
   */
  function holdLease(row: JobRow, onLost: () => void): Lease {
    const token = leaseOf(row);
    let expiresAt = row.lease_expires_at_ms!;
    let renewing = false;
    let stopped = false;
    const lost = () => {
      if (stopped) return;
      stop();
      onLost();
    };
    const timer = setInterval(() => {
      const now = ctx.now();
      if (now > expiresAt) return lost();
      if (renewing) return;
      renewing = true;
      ctx.store.execute(() => renewLease(row.id, token, now, options.leaseMs)).then(
        (held) => {
          if (held) expiresAt = Math.max(expiresAt, now + options.leaseMs);
          else lost();
        },
        () => {},
      ).finally(() => {
        renewing = false;
      });
    }, Math.max(50, Math.floor(options.leaseMs / 3)));
    function stop() {
      stopped = true;
      clearInterval(timer);
    }
    return { token, expiresAt: () => expiresAt, stop };
  }

  /**
   * The handler's outcome, or "abandoned" when it was cancelled and did not stop within CANCEL_GRACE_MS or before its lease
   * ended. An abandoned handler keeps running unobserved; without the lease it can no longer publish, complete or retry.
   */
  function settle(work: Promise<JobOutcome>, signal: AbortSignal, lease: Lease): Promise<Settled> {
    return new Promise<Settled>((resolve) => {
      let grace: ReturnType<typeof setTimeout> | undefined;
      const cancelled = () => {
        const wait = Math.min(CANCEL_GRACE_MS, Math.max(0, lease.expiresAt() - ctx.now()));
        grace = setTimeout(() => resolve({ kind: "abandoned" }), wait);
      };
      if (signal.aborted) cancelled();
      else signal.addEventListener("abort", cancelled, { once: true });
      work.then((outcome) => resolve({ kind: "done", outcome }), (error) => resolve({ kind: "failed", error })).finally(() => {
        clearTimeout(grace);
        signal.removeEventListener("abort", cancelled);
      });
    });
  }

  /**
   * A store call that only the lease holder may make (complete, retry): waited for at most until the lease ends, after which
   * the row is the next claim's business whatever became of the call ("lease_ended"; a late call is refused or harmless).
   */
  function whileHeld<T>(lease: Lease, call: () => Promise<T>): Promise<T | "lease_ended"> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ended = new Promise<"lease_ended">((resolve) => {
      timer = setTimeout(() => resolve("lease_ended"), Math.max(0, lease.expiresAt() - ctx.now()));
    });
    return Promise.race([call(), ended]).finally(() => clearTimeout(timer));
  }

  async function runRow(row: JobRow) {
    const controller = new AbortController();
    inFlight.add(controller);
    const lease = holdLease(row, () => controller.abort(new LeaseLost()));
    // The lease is renewed only for work that goes on: a cancelled handler no longer keeps it.
    controller.signal.addEventListener("abort", lease.stop, { once: true });
    const deadline = setTimeout(() => controller.abort(new RetryLater("job_deadline")), options.jobDeadlineMs);
    try {
      const settled = await settle(HANDLERS[row.kind](ctx, row, controller.signal), controller.signal, lease);
      lease.stop(); // the work stopped: completing or handing the row back needs no renewal
      if (settled.kind === "done") await completed(row, lease, settled.outcome);
      else if (settled.kind === "failed") await failed(row, lease, controller.signal, settled.error);
      else {
        if (row.kind === "head_invalidation") ctx.metrics.sharedHeadInvalidations.inc({ outcome: "failed" });
        const cause = controller.signal.reason as { name?: string; code?: string };
        ctx.log.error({ job: row.id, kind: row.kind, cause: cause.code ?? cause.name ?? "cancelled" }, "job abandoned: its handler did not stop when cancelled; the lease lapses and the next claim runs it again");
      }
    } finally {
      clearTimeout(deadline);
      lease.stop();
      inFlight.delete(controller);
    }
  }

  async function completed(row: JobRow, lease: Lease, outcome: JobOutcome) {
    const completion = await whileHeld(lease, () => ctx.store.execute(() => completeJob(row.id, lease.token, row.merges, ctx.now()))).catch((error) => {
      ctx.log.warn({ job: row.id, kind: row.kind, code: (error as { code?: string }).code ?? "database" }, "completing a job failed; its lease lapses and the next claim runs it again");
      return "failed" as const;
    });
    if (row.kind === "head_invalidation") ctx.metrics.sharedHeadInvalidations.inc({ outcome: completion === "requeued" ? "superseded" : "completed" });
    ctx.log.debug({ job: row.id, kind: row.kind, completion, note: outcome.note }, "job finished");
  }

  async function failed(row: JobRow, lease: Lease, signal: AbortSignal, thrown: unknown) {
    // A job cancelled at its deadline retries under that code, whatever its handler threw when it stopped.
    const error = signal.reason instanceof RetryLater ? signal.reason : thrown;
    const rateLimited = (error instanceof ForgeError && error.kind === "rate_limited") || (error instanceof RetryLater && error.providerDelayMs !== null);
    if (row.kind === "head_invalidation") ctx.metrics.sharedHeadInvalidations.inc({ outcome: rateLimited ? "rate_limited" : "failed" });
    if (error instanceof LeaseLost || signal.reason instanceof LeaseLost) {
      ctx.log.warn({ job: row.id, kind: row.kind }, "lease lost while working; the next claim runs the job again");
      return;
    }
    const delay = !running && signal.aborted
      ? 0 // cancelled by shutdown: runnable again at once, by the next process
      : rateLimited
      ? providerDelayMs(error instanceof ForgeError ? error.retryAfterMs : (error as RetryLater).providerDelayMs)
      : retryDelayMs(row.attempts, options.retryCapSeconds, options.random);
    const code = error instanceof RetryLater ? error.code : error instanceof ForgeError ? `forge_${error.kind}` : (error as { code?: string }).code ? `store_${(error as { code: string }).code}` : "unexpected";
    if (code === "unexpected") ctx.log.error({ job: row.id, kind: row.kind, error: (error as Error).name }, "job failed unexpectedly; it will be retried");
    else ctx.log.info({ job: row.id, kind: row.kind, code, delay_ms: delay }, "job will be retried");
    await whileHeld(lease, () => ctx.store.execute(() => retryJob(row.id, lease.token, ctx.now() + delay, code, ctx.now()))).catch(() => {
      // The lease expires on its own; another claim retries the row.
    });
  }

  /** Running, no slot crashed, and every slot came round its loop in time (none is stuck on a call that never settles). */
  function alive(): boolean {
    const now = ctx.now();
    return running && !crashed && dueBy.every((due) => now <= due);
  }

  return {
    start() {
      if (running) return;
      running = true;
      for (let i = 0; i < options.concurrency; i++) {
        slots.push(
          slot(i).catch((error) => {
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
    alive,
    ready: alive,
  };
}
