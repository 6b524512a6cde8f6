import { afterEach, describe, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { signedDelivery } from "../../e2e/support/payloads.ts";
import { waitUntil } from "../../e2e/support/service.ts";
import { webhookRoutes } from "../http/webhook-route.ts";
import { type BodyBudget, createBodyBudget, defaultLaneBytes } from "./body-budget.ts";
import { type Harness, ingressHarness, SECRET } from "../../e2e/support/ingress-harness.ts";
import { BUSY_WAIT_MS, MAX_WEBHOOK_BODY_BYTES, WEBHOOK_BODY_RATE_GRACE_MS } from "./limits.ts";
import { readBodyCapped } from "./read-body.ts";

/**
 * The process-wide budget of unverified body bytes (issue 16 item 5). Nothing here reaches the store (the budget sits before
 * the signature check and the deliveries are `ping`), so one backend is enough. Budgets are small so the tests stay light;
 * the configured minimum (10 MiB) is a rule of the settings, not of the budget.
 */
const KiB = 1024;
const MiB = 1024 * KiB;
const WRONG_SIGNATURE = `sha256=${"0".repeat(64)}`;
/** Well inside the test timeout, so that a wait that never ends fails its own test with its own message. */
const until = (condition: () => boolean, what: string) => waitUntil(condition, what, 2_000);

describe("the unverified body budget", () => {
  test("reservations share one budget, grow only while it covers them, and give everything back once", () => {
    const budget = createBodyBudget(100, { laneBytes: 0 });
    const a = budget.open();
    const b = budget.open();
    expect(a.cover(60, false)).toBe(true);
    expect(a.cover(40, false)).toBe(true);
    expect(budget.inUse()).toBe(60);
    expect(b.fits(41, false)).toBe(false);
    expect(b.cover(41, false)).toBe(false);
    expect(budget.inUse()).toBe(60);
    expect(b.cover(40, false)).toBe(true);
    expect(budget.inUse()).toBe(100);
    a.release();
    a.release();
    expect(budget.inUse()).toBe(40);
    expect(a.cover(1, false)).toBe(false);
    b.release();
    expect(budget.inUse()).toBe(0);
  });

  test("large bodies never take the small bodies' lane, and a reservation that grows large stays in their share", () => {
    const budget = createBodyBudget(100, { laneBytes: 30 });
    const large = budget.open();
    expect(large.cover(70, true)).toBe(true);
    const second = budget.open();
    expect(second.fits(1, true)).toBe(false);
    expect(second.cover(1, true)).toBe(false);
    // A small body may use the lane, and the large share while it has room.
    const small = budget.open();
    expect(small.cover(30, false)).toBe(true);
    expect(budget.inUse()).toBe(100);
    small.release();
    large.release();
    // A body that starts small and grows large moves all of its bytes into the large share.
    const growing = budget.open();
    expect(growing.cover(20, false)).toBe(true);
    expect(budget.inUseLarge()).toBe(0);
    expect(growing.cover(60, true)).toBe(true);
    expect(budget.inUseLarge()).toBe(60);
    expect(growing.cover(71, false)).toBe(false);
    expect(growing.cover(70, false)).toBe(true);
    expect(budget.inUseLarge()).toBe(70);
    growing.release();
    expect([budget.inUse(), budget.inUseLarge()]).toEqual([0, 0]);
  });

  test("the lane is what the budget holds beyond one maximal body, at most 16 MiB", () => {
    expect(defaultLaneBytes(10 * MiB)).toBe(0);
    expect(defaultLaneBytes(20 * MiB)).toBe(10 * MiB);
    expect(defaultLaneBytes(64 * MiB)).toBe(16 * MiB);
    expect(createBodyBudget(64 * MiB).laneBytes).toBe(16 * MiB);
  });

  test("a give-back wakes the requests waiting for room; a wait without one ends at its bound", async () => {
    const budget = createBodyBudget(100, { laneBytes: 0 });
    const holder = budget.open();
    expect(holder.cover(100, false)).toBe(true);
    const waiting = budget.open();
    const room = () => waiting.fits(100, false);
    const started = performance.now();
    expect(await waiting.waitForRoom(room, 50, 10)).toBe(false);
    expect(performance.now() - started).toBeGreaterThanOrEqual(40);
    expect(budget.waiting()).toBe(0);
    const woken = waiting.waitForRoom(room, 5_000, 10);
    expect(budget.waiting()).toBe(10);
    holder.release();
    expect(await woken).toBe(true);
    expect(budget.waiting()).toBe(0);
    expect(waiting.cover(100, false)).toBe(true);
  });

  test("once a quarter of the budget has been given back by large bodies since the last collection, the heap is collected", () => {
    let collections = 0;
    const budget = createBodyBudget(400, { laneBytes: 0, collect: () => collections++ });
    for (const bytes of [60, 39]) {
      const reservation = budget.open();
      reservation.cover(bytes, true);
      reservation.release();
    }
    expect(collections).toBe(0);
    const third = budget.open();
    third.cover(1, true);
    third.release();
    expect(collections).toBe(1);
    const fourth = budget.open();
    fourth.cover(99, true);
    fourth.release();
    expect(collections).toBe(1);
  });

  test("small bodies given back never force a collection (the hot path of ordinary deliveries pays no pause)", () => {
    let collections = 0;
    const budget = createBodyBudget(400, { laneBytes: 100, collect: () => collections++ });
    for (let i = 0; i < 50; i++) {
      const reservation = budget.open();
      expect(reservation.cover(90, false)).toBe(true);
      reservation.release();
    }
    expect(collections).toBe(0);
  });

  test("waits together leave at most the wait limit unread: past it a request is refused at once", async () => {
    const budget = createBodyBudget(100, { laneBytes: 0, waitLimitBytes: 1_000 });
    const holder = budget.open();
    expect(holder.cover(100, false)).toBe(true);
    const first = budget.open();
    const firstWait = first.waitForRoom(() => first.fits(10, false), 5_000, 800);
    const second = budget.open();
    const started = performance.now();
    expect(await second.waitForRoom(() => second.fits(10, false), 5_000, 201)).toBe(false);
    expect(performance.now() - started).toBeLessThan(100);
    const third = budget.open();
    const thirdWait = third.waitForRoom(() => third.fits(10, false), 5_000, 200);
    expect(budget.waiting()).toBe(1_000);
    holder.release();
    expect([await firstWait, await thirdWait]).toEqual([true, true]);
    expect(budget.waiting()).toBe(0);
  });
});

describe("webhook bodies against the budget", () => {
  let h: Harness | undefined;
  let server: ReturnType<typeof Bun.serve> | undefined;
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    await server?.stop(true);
    server = undefined;
    await h?.close();
    h = undefined;
  });
  const failures = async (reason: string) => {
    const text = await h!.metrics.registry.getSingleMetricAsString("service_webhook_failures_total");
    return Number(text.match(new RegExp(`reason="${reason}"} (\\d+)`))?.[1] ?? 0);
  };
  const busyFailures = () => failures("busy");

  /** The webhook route on a real loopback server, so that bodies arrive from sockets as they do in `serve`. */
  async function serve(budget: BodyBudget) {
    h = await ingressHarness("sqlite", { bodyBudget: budget });
    const app = webhookRoutes(h.deps);
    server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => app.handle(request) });
    return server.port!;
  }

  /** A valid signed `ping` (unmapped: 202) sent to the loopback server. */
  async function signedPing(port: number, deliveryId: string) {
    const delivery = signedDelivery(SECRET, "ping", deliveryId, { zen: "ping" });
    const response = await fetch(`http://127.0.0.1:${port}/webhooks/forge`, { method: "POST", headers: delivery.headers, body: delivery.body as BodyInit });
    await response.arrayBuffer();
    return response.status;
  }

  /** A POST written by hand: headers and the first part of the body now, the rest only if the test writes it. */
  async function startPost(port: number, framing: { contentLength: number } | "chunked", first: Uint8Array) {
    const socket = connect(port, "127.0.0.1");
    sockets.push(socket);
    await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
    let received = "";
    socket.on("data", (data) => (received += data.toString("latin1")));
    socket.on("error", () => {});
    let closed = false;
    socket.once("close", () => (closed = true));
    const lines = [
      "POST /webhooks/forge HTTP/1.1", "Host: 127.0.0.1", "X-Forge-Event: ping", "X-Forge-Delivery: d-budget", `X-Hub-Signature-256: ${WRONG_SIGNATURE}`,
      framing === "chunked" ? "Transfer-Encoding: chunked" : `Content-Length: ${framing.contentLength}`,
    ];
    socket.write(`${lines.join("\r\n")}\r\n\r\n`);
    const writeBody = (bytes: Uint8Array) => {
      if (framing !== "chunked") socket.write(bytes);
      else if (bytes.byteLength > 0) socket.write(Buffer.concat([Buffer.from(`${bytes.byteLength.toString(16)}\r\n`), bytes, Buffer.from("\r\n")]));
    };
    writeBody(first);
    return {
      socket,
      writeBody,
      closed: () => closed,
      /** The response head once it has arrived (or whatever arrived before the connection closed). */
      async head(timeoutMs = 2_000): Promise<string> {
        await waitUntil(() => received.includes("\r\n\r\n") || closed, "a response head", timeoutMs);
        return received;
      },
    };
  }

  test("a sender holds only the bytes it has sent, not the length it declared", async () => {
    const budget = createBodyBudget(64 * MiB);
    const port = await serve(budget);
    const slow = await startPost(port, { contentLength: 10 * MiB }, new Uint8Array(KiB));
    await until(() => budget.inUse() === KiB, "the sender's first kibibyte to be reserved");
    slow.writeBody(new Uint8Array(3 * KiB));
    await until(() => budget.inUse() === 4 * KiB, "the next bytes to be reserved as they arrive");
    slow.socket.destroy();
    await until(() => budget.inUse() === 0, "the bytes to be given back");
  });

  test("a body slower than the minimum rate is cut off after the grace period, its connection closed and its bytes given back", async () => {
    const budget = createBodyBudget(64 * MiB);
    const port = await serve(budget);
    const started = performance.now();
    const slow = await startPost(port, { contentLength: KiB }, new Uint8Array(1));
    const trickle = setInterval(() => slow.closed() || slow.writeBody(new Uint8Array(1)), 100);
    try {
      const head = await slow.head(WEBHOOK_BODY_RATE_GRACE_MS + 2_000);
      expect(head).toStartWith("HTTP/1.1 400");
      expect(head.toLowerCase()).toContain("\r\nconnection: close\r\n");
      expect(performance.now() - started).toBeGreaterThanOrEqual(WEBHOOK_BODY_RATE_GRACE_MS - 50);
      await until(slow.closed, "the service to close the connection while the sender still trickles");
    } finally {
      clearInterval(trickle);
    }
    expect(budget.inUse()).toBe(0);
    expect(await failures("content_length")).toBe(1);
  });

  test("a body that keeps the minimum rate but never ends is cut off at the absolute deadline", async () => {
    const budget = createBodyBudget(64 * MiB);
    const reservation = budget.open();
    let cancelled = false;
    let timer: ReturnType<typeof setInterval> | undefined;
    // 50 KiB/s, far above the rate the rules below ask for, and no end.
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        timer = setInterval(() => controller.enqueue(new Uint8Array(KiB)), 20);
      },
      cancel() {
        cancelled = true;
        clearInterval(timer);
      },
    });
    const request = new Request("http://localhost/webhooks/forge", { method: "POST", body });
    const rules = { deadlineMs: 400, minBytesPerSecond: KiB, graceMs: 50, busyWaitMs: 100 };
    const started = performance.now();
    try {
      const read = await Promise.race([readBodyCapped(request, null, MAX_WEBHOOK_BODY_BYTES, reservation, rules), Bun.sleep(3_000).then(() => "no answer" as const)]);
      expect(read).toEqual({ kind: "failed" });
    } finally {
      clearInterval(timer);
    }
    expect(performance.now() - started).toBeGreaterThanOrEqual(350);
    expect(cancelled).toBe(true);
    expect(budget.inUse()).toBeGreaterThan(0);
    reservation.release();
    expect(budget.inUse()).toBe(0);
  });

  test("time spent waiting for room in the budget is not held against the sender's rate", async () => {
    const budget = createBodyBudget(64 * KiB, { laneBytes: 0 });
    const holder = budget.open();
    expect(holder.cover(64 * KiB, false)).toBe(true);
    const reservation = budget.open();
    const bytes = new Uint8Array(2 * KiB);
    const request = new Request("http://localhost/webhooks/forge", { method: "POST", body: new ReadableStream({ pull: (c) => (c.enqueue(bytes), c.close()) }) });
    // Without forgiveness the 50 ms grace would be spent long before the holder gives its room back.
    const rules = { deadlineMs: 2_000, minBytesPerSecond: MiB, graceMs: 50, busyWaitMs: 1_000 };
    setTimeout(() => holder.release(), 300);
    const read = await readBodyCapped(request, bytes.byteLength, MAX_WEBHOOK_BODY_BYTES, reservation, rules);
    expect(read.kind).toBe("ok");
    expect(budget.inUse()).toBe(2 * KiB);
    reservation.release();
  });

  test("when held bodies fill the budget, the next delivery is answered 503 with Retry-After while its body is still arriving", async () => {
    const budget = createBodyBudget(512 * KiB);
    const port = await serve(budget);
    // Two senders each send 255 KiB of the 256 KiB they declare, then stall: what they sent fills the budget.
    const held = [await startPost(port, { contentLength: 256 * KiB }, new Uint8Array(255 * KiB)), await startPost(port, { contentLength: 256 * KiB }, new Uint8Array(255 * KiB))];
    await until(() => budget.inUse() === 510 * KiB, "the held bodies' bytes");

    // A third sender still sending its body gets the answer, after the short wait for room, while most of its body is unsent.
    const started = performance.now();
    const third = await startPost(port, { contentLength: 200 * KiB }, new Uint8Array(64 * KiB));
    const head = await third.head(BUSY_WAIT_MS + 2_000);
    expect(head).toStartWith("HTTP/1.1 503");
    expect(head.toLowerCase()).toMatch(/\r\nretry-after: 5\r\n/);
    expect(head.toLowerCase()).toContain("\r\nconnection: close\r\n");
    expect(performance.now() - started).toBeGreaterThanOrEqual(BUSY_WAIT_MS - 50);
    expect(await busyFailures()).toBe(1);
    expect(budget.inUse()).toBe(510 * KiB);

    // The held senders finish: their bodies are verified (wrong signature: 401) and the whole budget comes back.
    for (const sender of held) sender.writeBody(new Uint8Array(KiB));
    for (const sender of held) expect(await sender.head()).toStartWith("HTTP/1.1 401");
    await until(() => budget.inUse() === 0, "the budget to be given back");
  });

  test("a delivery that finds the budget spent waits for a give-back instead of being refused at once", async () => {
    const budget = createBodyBudget(512 * KiB);
    const port = await serve(budget);
    const holder = await startPost(port, { contentLength: 512 * KiB }, new Uint8Array(512 * KiB - 1));
    await until(() => budget.inUse() === 512 * KiB - 1, "the holder's bytes");
    const started = performance.now();
    const ping = signedPing(port, "d-waits");
    await Bun.sleep(300);
    holder.writeBody(new Uint8Array(1));
    expect(await holder.head()).toStartWith("HTTP/1.1 401");
    expect(await ping).toBe(202);
    expect(performance.now() - started).toBeGreaterThanOrEqual(250);
    expect(await busyFailures()).toBe(0);
    expect(budget.inUse()).toBe(0);
  });

  test("a large body that would leave more unread than the waits may hold is refused at once instead of waiting", async () => {
    const budget = createBodyBudget(512 * KiB, { laneBytes: 0, waitLimitBytes: MiB });
    const port = await serve(budget);
    const holder = await startPost(port, { contentLength: 512 * KiB }, new Uint8Array(512 * KiB - 1));
    await until(() => budget.inUse() === 512 * KiB - 1, "the holder's bytes");
    // Bun may buffer about 1.1 MiB of a 2 MiB body nobody reads: more than the waits may leave unread here.
    const started = performance.now();
    const large = await startPost(port, { contentLength: 2 * MiB }, new Uint8Array(64 * KiB));
    expect(await large.head()).toStartWith("HTTP/1.1 503");
    expect(performance.now() - started).toBeLessThan(BUSY_WAIT_MS / 2);
    // A small delivery pledges only its own few bytes, and waits.
    const ping = signedPing(port, "d-small-waits");
    await Bun.sleep(200);
    holder.writeBody(new Uint8Array(1));
    expect(await ping).toBe(202);
    expect(await busyFailures()).toBe(1);
  });

  test("small deliveries keep a lane that large declared bodies cannot take", async () => {
    // 12 MiB: a lane of 2 MiB beside 10 MiB for large bodies.
    const budget = createBodyBudget(12 * MiB);
    expect(budget.laneBytes).toBe(2 * MiB);
    const port = await serve(budget);
    const large = await startPost(port, { contentLength: 10 * MiB }, new Uint8Array(10 * MiB - 1));
    await until(() => budget.inUseLarge() === 10 * MiB - 1, "the large body's bytes");
    // Another large body finds no room in the large share, though the budget has 2 MiB free.
    const second = await startPost(port, { contentLength: 2 * MiB }, new Uint8Array(64 * KiB));
    expect(await second.head(BUSY_WAIT_MS + 2_000)).toStartWith("HTTP/1.1 503");
    // A small delivery uses the lane.
    expect(await signedPing(port, "d-small")).toBe(202);
    expect(await busyFailures()).toBe(1);
    large.socket.destroy();
    await until(() => budget.inUse() === 0, "the large body's bytes to be given back");
  });

  test("a body without Content-Length leaves the lane once it grows past the small size", async () => {
    const budget = createBodyBudget(12 * MiB);
    const port = await serve(budget);
    const large = await startPost(port, { contentLength: 10 * MiB }, new Uint8Array(10 * MiB - 1));
    await until(() => budget.inUseLarge() === 10 * MiB - 1, "the large body's bytes");
    const chunked = await startPost(port, "chunked", new Uint8Array(16 * KiB));
    for (let sent = 16 * KiB; sent < 320 * KiB && !chunked.closed(); sent += 16 * KiB) {
      chunked.writeBody(new Uint8Array(16 * KiB));
      await Bun.sleep(1);
    }
    if (!chunked.closed()) chunked.socket.write("0\r\n\r\n");
    expect(await chunked.head(BUSY_WAIT_MS + 2_000)).toStartWith("HTTP/1.1 503");
    await until(() => budget.inUse() === 10 * MiB - 1, "the chunked body's bytes to be given back");
    large.socket.destroy();
    await until(() => budget.inUse() === 0, "the large body's bytes to be given back");
  });

  test("a refused delivery's body is never pulled", async () => {
    const budget = createBodyBudget(64 * KiB);
    h = await ingressHarness("sqlite", { bodyBudget: budget });
    const holder = budget.open();
    expect(holder.cover(60 * KiB, false)).toBe(true);
    for (const contentLength of ["8192", null]) {
      let pulled = 0;
      const body = new ReadableStream({ pull(controller) { if (++pulled > 64) controller.close(); else controller.enqueue(new Uint8Array(KiB)); } });
      const reply = await h.send("ping", "d1", {}, { headers: { "content-length": contentLength }, body });
      expect(reply.status).toBe(503);
      expect(pulled).toBeLessThanOrEqual(1);
    }
    expect(await busyFailures()).toBe(2);
    holder.release();
    expect(budget.inUse()).toBe(0);
  });

  test("a chunked body reserves as it streams and is refused where the budget runs out", async () => {
    const budget = createBodyBudget(512 * KiB);
    const port = await serve(budget);
    const holder = await startPost(port, { contentLength: 400 * KiB }, new Uint8Array(384 * KiB));
    await until(() => budget.inUse() === 384 * KiB, "the holder's bytes");
    const chunked = await startPost(port, "chunked", new Uint8Array(16 * KiB));
    for (let sent = 16 * KiB; sent < 512 * KiB && !chunked.closed(); sent += 16 * KiB) {
      chunked.writeBody(new Uint8Array(16 * KiB));
      await Bun.sleep(1);
    }
    const head = await chunked.head(BUSY_WAIT_MS + 2_000);
    expect(head).toStartWith("HTTP/1.1 503");
    expect(head.toLowerCase()).toContain("\r\nretry-after: ");
    await until(() => budget.inUse() === 384 * KiB, "the refused body's bytes to be given back");
    holder.socket.destroy();
    await until(() => budget.inUse() === 0, "the holder's bytes to be given back");
  });

  /** The budget, noting the most it held after each reservation grew. */
  function watched(budget: BodyBudget) {
    let most = 0;
    const open = () => {
      const reservation = budget.open();
      return {
        ...reservation,
        cover(bytes: number, large: boolean) {
          const covered = reservation.cover(bytes, large);
          most = Math.max(most, budget.inUse());
          return covered;
        },
      };
    };
    return { budget: { ...budget, open }, most: () => most, reset: () => void (most = 0) };
  }

  test("a body is read under a reservation of what has arrived, which comes back whatever the outcome", async () => {
    const budget = createBodyBudget(128 * KiB);
    const watch = watched(budget);
    h = await ingressHarness("sqlite", { bodyBudget: watch.budget });
    const whole = new TextEncoder().encode(JSON.stringify({ zen: "x".repeat(64 * KiB - 10) }));
    expect(whole.byteLength).toBe(64 * KiB);
    const notJson = new TextEncoder().encode("{not json");
    const signatureOf = (bytes: Uint8Array) => signedDelivery(SECRET, "ping", "d", bytes).headers["x-hub-signature-256"]!;
    const cases: Array<[string, Uint8Array, Record<string, string>, number]> = [
      ["accepted", whole, {}, 202],
      ["wrong signature", whole, { "x-hub-signature-256": WRONG_SIGNATURE }, 401],
      ["not JSON", notJson, { "x-hub-signature-256": signatureOf(notJson) }, 400],
    ];
    for (const [outcome, bytes, headers, status] of cases) {
      for (const contentLength of [String(bytes.byteLength), null]) {
        watch.reset();
        const reply = await h.send("ping", "d", bytes, { headers: { ...headers, "content-length": contentLength } });
        expect({ outcome, contentLength, status: reply.status }).toEqual({ outcome, contentLength, status });
        expect(watch.most()).toBe(bytes.byteLength);
        expect(budget.inUse()).toBe(0);
      }
    }
    // A body shorter than its declared length reserved what arrived, never the length it declared.
    watch.reset();
    const short = new ReadableStream<Uint8Array>({ pull: (controller) => (controller.enqueue(whole.slice(0, 1000)), controller.close()) });
    expect((await h.send("ping", "d", whole, { headers: { "content-length": "1001" }, body: short })).status).toBe(400);
    expect(watch.most()).toBe(1000);
    expect(budget.inUse()).toBe(0);
    expect(await busyFailures()).toBe(0);
  });

  test("the smallest budget the settings allow (10 MiB) holds one delivery of the largest body, with or without Content-Length", async () => {
    const budget = createBodyBudget(MAX_WEBHOOK_BODY_BYTES);
    h = await ingressHarness("sqlite", { bodyBudget: budget });
    const text = JSON.stringify({ zen: "x".repeat(MAX_WEBHOOK_BODY_BYTES - 10) });
    for (const contentLength of [String(MAX_WEBHOOK_BODY_BYTES), null]) {
      expect((await h.send("ping", "d-max", text, { headers: { "content-length": contentLength } })).status).toBe(202);
      expect(budget.inUse()).toBe(0);
    }
  });

  for (const framing of [{ contentLength: 256 * KiB }, "chunked"] as const) {
    const name = framing === "chunked" ? "a chunked body" : "a body with Content-Length";
    test(`a client that disconnects in the middle of ${name} gives its reservation back`, async () => {
      const budget = createBodyBudget(512 * KiB);
      const port = await serve(budget);
      const sender = await startPost(port, framing, new Uint8Array(32 * KiB));
      await until(() => budget.inUse() > 0, "the sender's reservation");
      sender.socket.destroy();
      await until(() => budget.inUse() === 0, "the reservation to be given back");
      // Nothing leaked: a body of the whole budget is read again.
      const next = await startPost(port, { contentLength: 512 * KiB }, new Uint8Array(512 * KiB));
      expect(await next.head()).toStartWith("HTTP/1.1 401");
      expect(budget.inUse()).toBe(0);
    });
  }
});
