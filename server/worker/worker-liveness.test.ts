import { expect, test } from "bun:test";
import pino from "pino";
import type { ForgeClient } from "../forge/index.ts";
import { createMetrics } from "../observability/metrics.ts";
import type { Store } from "../store/index.ts";
import { createWorker, SLOT_STALL_MS } from "./worker.ts";

/** A worker over a store whose every call is answered by `execute`, on a clock the test moves. */
function workerWith(execute: () => Promise<unknown>) {
  let now = 1_000_000;
  const store = { backend: "sqlite", execute } as unknown as Store;
  const worker = createWorker(
    {
      store, forge: {} as ForgeClient, metrics: createMetrics(), log: pino({ level: "silent" }), now: () => now, workerId: "w",
      guardTimeoutMs: 1_000, resetTimeoutMs: 1_000,
      settings: { checkName: "c", policyPath: ".forge/service-policy.toml", forgeDirectory: ".forge", allowInsecureChanges: false, organizationPolicyRepository: ".forge" },
    },
    { concurrency: 2, leaseMs: 3_000, pollMs: 5, retryCapSeconds: 1, drainMs: 50, jobDeadlineMs: 60_000 },
  );
  return { worker, advance: (ms: number) => void (now += ms) };
}

test("a worker whose slots are stuck in a store call that never settles stops counting as alive", async () => {
  const { worker, advance } = workerWith(() => new Promise(() => {}));
  worker.start();
  await Bun.sleep(20);
  expect(worker.alive()).toBe(true);
  advance(SLOT_STALL_MS + 1);
  expect(worker.alive()).toBe(false);
  expect(worker.ready()).toBe(false);
  await Promise.race([worker.stop(), Bun.sleep(200)]);
});

test("a worker idling on an empty queue stays alive however long it idles", async () => {
  const { worker, advance } = workerWith(async () => null);
  worker.start();
  for (let i = 0; i < 5; i++) {
    advance(SLOT_STALL_MS - 1);
    await Bun.sleep(30); // every slot comes round its loop again
    expect(worker.alive()).toBe(true);
  }
  await worker.stop();
});
