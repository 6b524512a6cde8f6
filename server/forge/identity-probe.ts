// App-identity probe (spec "Health": readiness forge_credentials). Runs at start() and then every intervalMs: GET /app with the
// App JWT. Fresh while the last success is within freshnessMs and /app answered with the configured App ID. A failed pass keeps a
// still-fresh success; an answer naming another App clears it at once. Time comes from the injected clock (tests move it).
import type { Logger } from "pino";

export interface ProbeClock {
  now(): number;
  setTimeout(run: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: ProbeClock = {
  now: () => Date.now(),
  setTimeout: (run, ms) => setTimeout(run, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

export interface IdentityProbeOptions {
  client: { getApp(): Promise<{ id: number; slug: string }> };
  appId: number;
  intervalMs: number;
  freshnessMs: number;
  clock?: ProbeClock;
  logger?: Logger;
}

export interface IdentityProbe {
  start(): void;
  /** Stops the loop and waits for the pass in flight. */
  stop(): Promise<void>;
  isFresh(): boolean;
  /** One pass now (also what the loop runs). */
  runOnce(): Promise<void>;
}

export function createIdentityProbe(options: IdentityProbeOptions): IdentityProbe {
  const clock = options.clock ?? systemClock;
  let lastSuccessAt: number | null = null;
  let timer: unknown = null;
  let running = false;
  let current: Promise<void> | null = null;

  async function pass(): Promise<void> {
    try {
      const app = await options.client.getApp();
      if (app.id === options.appId) {
        lastSuccessAt = clock.now();
      } else {
        lastSuccessAt = null;
        options.logger?.error({ configuredAppId: options.appId, forgeAppId: app.id }, "the private key belongs to another App than SERVICE_FORGE_APP_ID");
      }
    } catch (error) {
      const kind = typeof error === "object" && error !== null && "kind" in error ? String((error as { kind: unknown }).kind) : "unknown";
      options.logger?.warn({ kind }, "App identity probe failed; keeping the last success while it is fresh");
    }
  }

  function runOnce(): Promise<void> {
    if (!current) current = pass().finally(() => { current = null; });
    return current;
  }

  function schedule(): void {
    if (!running) return;
    timer = clock.setTimeout(() => { timer = null; void runOnce().then(schedule); }, options.intervalMs);
  }

  return {
    start() {
      if (running) return;
      running = true;
      void runOnce().then(schedule);
    },
    async stop() {
      running = false;
      if (timer !== null) clock.clearTimeout(timer);
      timer = null;
      await current;
    },
    isFresh() {
      return lastSuccessAt !== null && clock.now() - lastSuccessAt <= options.freshnessMs;
    },
    runOnce,
  };
}
