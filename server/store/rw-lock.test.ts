import { describe, expect, test } from "bun:test";
import { RwLock } from "./rw-lock.ts";

describe("the in-process publication guard", () => {
  test("shared holders coexist; an exclusive waiter is granted when they leave", async () => {
    const lock = new RwLock();
    const a = await lock.acquireShared("i", 100);
    const b = await lock.acquireShared("i", 100);
    let granted = false;
    const exclusive = lock.acquireExclusive("i", 1000).then((release) => ((granted = true), release));
    await Bun.sleep(10);
    expect(granted).toBe(false);
    a();
    b();
    (await exclusive)();
    expect(granted).toBe(true);
  });
  test("a waiting exclusive holder is not starved by later shared requests", async () => {
    const lock = new RwLock();
    const reader = await lock.acquireShared("i", 100);
    const order: string[] = [];
    const writer = lock.acquireExclusive("i", 1000).then((r) => (order.push("writer"), r));
    const lateReader = lock.acquireShared("i", 1000).then((r) => (order.push("reader"), r));
    reader();
    (await writer)();
    (await lateReader)();
    expect(order).toEqual(["writer", "reader"]);
  });
  test("a request not granted within its bound fails with a timeout and leaves the lock usable", async () => {
    const lock = new RwLock();
    const held = await lock.acquireShared("i", 100);
    await expect(lock.acquireExclusive("i", 30)).rejects.toMatchObject({ code: "guard_timeout" });
    held();
    (await lock.acquireExclusive("i", 30))();
  });
  test("keys are independent", async () => {
    const lock = new RwLock();
    const held = await lock.acquireExclusive("one", 100);
    (await lock.acquireExclusive("two", 30))();
    held();
  });
});
