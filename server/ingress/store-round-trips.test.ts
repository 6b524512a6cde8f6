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
    expect((await h.send("pull_request", "d2", pullRequestEvent("synchronize", { number: 4 }))).status).toBe(202);
    expect(operations).toHaveLength(4);
    // On PostgreSQL both are statements sent alone: no transaction reserves a connection.
    expect(reservations).toBe(0);
    // And the release did its work: nothing stays held past the failed fast paths.
    expect(await h.count("jobs", `run_at_ms > ${Date.now()}`)).toBe(0);
    expect(await h.count("jobs")).toBe(2);
  });
});

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
    expect(await h.count("jobs", `run_at_ms > ${Date.now()}`)).toBe(0);
  });
});
