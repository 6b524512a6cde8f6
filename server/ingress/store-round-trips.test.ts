import { afterEach, describe, expect, test } from "bun:test";
import { BACKENDS } from "../../e2e/support/databases.ts";
import { type Harness, ingressHarness } from "../../e2e/support/ingress-harness.ts";
import { pullRequestEvent } from "../../e2e/support/payloads.ts";
import { PostgresStore } from "../store/index.ts";

/**
 * What one delivery costs the store (issue 26 item 8: each operation is a round trip, each transaction a reserved connection,
 * a BEGIN and, under the answer's deadline, a COMMIT sent alone). The harness's forge is unreachable, so every fast path fails.
 */
describe.each(BACKENDS)("store round trips of a delivery on %s", (backend) => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  test("a delivery whose fast path cannot reach the forge costs two store operations: its acceptance and the release of its held work", async () => {
    h = await ingressHarness(backend);
    const operations: string[] = [];
    const execute = h.store.execute.bind(h.store);
    h.store.execute = (op, options) => {
      operations.push(op.name || "op");
      return execute(op, options);
    };
    let reservations = 0;
    if (h.store instanceof PostgresStore) {
      const reserve = h.store.sql.reserve.bind(h.store.sql);
      (h.store.sql as { reserve: typeof reserve }).reserve = () => {
        reservations++;
        return reserve();
      };
    }
    expect((await h.send("pull_request", "d1", pullRequestEvent("opened", { number: 4 }))).status).toBe(202);
    expect((await h.send("pull_request", "d2", pullRequestEvent("opened", { number: 5, headSha: "5".repeat(40) }))).status).toBe(202);
    expect(operations).toHaveLength(4);
    // On PostgreSQL both are statements sent alone: no transaction reserves a connection.
    expect(reservations).toBe(0);
    // And the release did its work (after the answer, which does not wait for it): nothing stays held past the failed fast paths.
    expect(await heldRowsAfterReleases(h)).toBe(0);
    expect(await h.count("jobs")).toBe(4);
  });

  test("a delivery merged into work already claimable costs one store operation: there is nothing for it to release", async () => {
    h = await ingressHarness(backend);
    expect((await h.send("pull_request", "d1", pullRequestEvent("opened", { number: 4 }))).status).toBe(202);
    expect(await heldRowsAfterReleases(h)).toBe(0);
    let operations = 0;
    const execute = h.store.execute.bind(h.store);
    h.store.execute = (op, options) => {
      operations++;
      return execute(op, options);
    };
    expect((await h.send("pull_request", "d2", pullRequestEvent("synchronize", { number: 4 }))).status).toBe(202);
    // Time for a release to have been sent, had one been (it is sent as the fast path ends, and not waited for).
    await Bun.sleep(100);
    expect(operations).toBe(1);
    expect(await h.count("jobs")).toBe(2);
    expect(await h.count("jobs", `run_at_ms > ${Date.now()}`)).toBe(0);
  });

  test("the answer to a delivery whose fast path fails does not wait for the release of its held work", async () => {
    h = await ingressHarness(backend);
    let operations = 0;
    const execute = h.store.execute.bind(h.store);
    // Every operation after the acceptance (the release) is slow: the answer must not wait for it.
    h.store.execute = (async (op: Parameters<typeof execute>[0], options: Parameters<typeof execute>[1]) => {
      if (++operations > 1) await Bun.sleep(RELEASE_DELAY_MS);
      return execute(op, options);
    }) as typeof execute;
    const started = performance.now();
    expect((await h.send("pull_request", "d1", pullRequestEvent("opened", { number: 4 }))).status).toBe(202);
    expect(performance.now() - started).toBeLessThan(RELEASE_DELAY_MS / 2);
    // The release still happens, once its statement goes through.
    expect(await heldRowsAfterReleases(h)).toBe(0);
  });
});

const RELEASE_DELAY_MS = 1_000;

/** The jobs still held once the releases sent after the answers had their time (polled, up to 3 s). */
async function heldRowsAfterReleases(h: Harness): Promise<number> {
  const until = performance.now() + 3_000;
  for (;;) {
    const held = await h.count("jobs", `run_at_ms > ${Date.now()}`);
    if (held === 0 || performance.now() > until) return held;
    await Bun.sleep(20);
  }
}

describe("store round trips of deliveries at once on postgresql", () => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  test("the releases of fast paths that fail at the same time go to the database together, and every delivery's work is released", async () => {
    h = await ingressHarness("postgresql");
    const DELIVERIES = 16;
    let operations = 0;
    const execute = h.store.execute.bind(h.store);
    h.store.execute = (op, options) => {
      operations++;
      return execute(op, options);
    };
    const replies = await Promise.all(Array.from({ length: DELIVERIES }, (_, i) => h.send("pull_request", `d${i}`, pullRequestEvent("synchronize", { number: i + 1, headSha: (i + 1).toString(16).padStart(40, "0") }))));
    expect(replies.map((r) => r.status)).toEqual(Array(DELIVERIES).fill(202));
    // One acceptance each, and fewer releases than deliveries.
    expect(operations).toBeGreaterThan(DELIVERIES);
    expect(operations).toBeLessThan(2 * DELIVERIES);
    expect(await h.count("jobs")).toBe(2 * DELIVERIES);
    expect(await heldRowsAfterReleases(h)).toBe(0);
  });
});
