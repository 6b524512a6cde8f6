import { afterEach, describe, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { signedDelivery } from "../../e2e/support/payloads.ts";
import { waitUntil } from "../../e2e/support/service.ts";
import { webhookRoutes } from "../http/webhook-route.ts";
import { type BodyBudget, createBodyBudget } from "./body-budget.ts";
import { type Harness, ingressHarness, SECRET } from "../../e2e/support/ingress-harness.ts";
import { MAX_WEBHOOK_BODY_BYTES } from "./limits.ts";

/**
 * The process-wide budget of unverified body bytes (issue 16 item 5). Nothing here reaches the store (the budget sits before
 * the signature check and the deliveries are `ping`), so one backend is enough. Budgets are small so the tests stay light;
 * the configured minimum (10 MiB) is a rule of the settings, not of the budget.
 */
const KiB = 1024;
const WRONG_SIGNATURE = `sha256=${"0".repeat(64)}`;
/** Well inside the test timeout, so that a wait that never ends fails its own test with its own message. */
const until = (condition: () => boolean, what: string) => waitUntil(condition, what, 2_000);

describe("the unverified body budget", () => {
  test("reservations share one budget, grow only while it covers them, and give everything back once", () => {
    const budget = createBodyBudget(100);
    const a = budget.open();
    const b = budget.open();
    expect(a.cover(60)).toBe(true);
    expect(a.cover(40)).toBe(true);
    expect(budget.inUse()).toBe(60);
    expect(b.cover(41)).toBe(false);
    expect(budget.inUse()).toBe(60);
    expect(b.cover(40)).toBe(true);
    expect(budget.inUse()).toBe(100);
    a.release();
    a.release();
    expect(budget.inUse()).toBe(40);
    expect(a.cover(1)).toBe(false);
    b.release();
    expect(budget.inUse()).toBe(0);
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
  const busyFailures = async () => {
    const text = await h!.metrics.registry.getSingleMetricAsString("service_webhook_failures_total");
    return Number(text.match(/reason="busy"} (\d+)/)?.[1] ?? 0);
  };

  /** The webhook route on a real loopback server, so that bodies arrive from sockets as they do in `serve`. */
  async function serve(budget: BodyBudget) {
    h = await ingressHarness("sqlite", { bodyBudget: budget });
    const app = webhookRoutes(h.deps);
    server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (request) => app.handle(request) });
    return server.port!;
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
      /** The response head once it has arrived (or whatever arrived before the connection closed). */
      async head(): Promise<string> {
        await until(() => received.includes("\r\n\r\n") || closed, "a response head");
        return received;
      },
    };
  }

  test("when held bodies fill the budget, the next delivery is answered 503 with Retry-After while its body is still arriving", async () => {
    const budget = createBodyBudget(512 * KiB);
    const port = await serve(budget);
    // Two slow senders each declare 256 KiB and send a little of it: their reservations fill the budget while they trickle.
    const slow = [await startPost(port, { contentLength: 256 * KiB }, new Uint8Array(KiB)), await startPost(port, { contentLength: 256 * KiB }, new Uint8Array(KiB))];
    await until(() => budget.inUse() === 512 * KiB, "the slow senders' reservations");

    // A third sender declaring a body still sending it gets the answer while most of its body is unsent.
    const third = await startPost(port, { contentLength: 200 * KiB }, new Uint8Array(KiB));
    const head = await third.head();
    expect(head).toStartWith("HTTP/1.1 503");
    expect(head.toLowerCase()).toMatch(/\r\nretry-after: \d+\r\n/);
    expect(await busyFailures()).toBe(1);
    expect(budget.inUse()).toBe(512 * KiB);

    // The slow senders finish: their bodies are verified (wrong signature: 401) and the whole budget comes back.
    for (const sender of slow) sender.writeBody(new Uint8Array(255 * KiB));
    for (const sender of slow) expect(await sender.head()).toStartWith("HTTP/1.1 401");
    await until(() => budget.inUse() === 0, "the budget to be given back");
  });

  test("a refused delivery's body is never pulled", async () => {
    const budget = createBodyBudget(64 * KiB);
    h = await ingressHarness("sqlite", { bodyBudget: budget });
    const holder = budget.open();
    expect(holder.cover(60 * KiB)).toBe(true);
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
    const holder = await startPost(port, { contentLength: 384 * KiB }, new Uint8Array(KiB));
    await until(() => budget.inUse() === 384 * KiB, "the holder's reservation");
    const chunked = await startPost(port, "chunked", new Uint8Array(16 * KiB));
    for (let sent = 16 * KiB; sent < 512 * KiB && !chunked.socket.destroyed; sent += 16 * KiB) {
      chunked.writeBody(new Uint8Array(16 * KiB));
      await Bun.sleep(1);
    }
    const head = await chunked.head();
    expect(head).toStartWith("HTTP/1.1 503");
    expect(head.toLowerCase()).toContain("\r\nretry-after: ");
    await until(() => budget.inUse() === 384 * KiB, "the refused body's bytes to be given back");
    holder.socket.destroy();
    await until(() => budget.inUse() === 0, "the holder's bytes to be given back");
  });

  /** A body that notes how many budget bytes are reserved each time the service pulls from it. */
  function observedBody(budget: BodyBudget, bytes: Uint8Array) {
    const seen: number[] = [];
    let offset = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        seen.push(budget.inUse());
        if (offset >= bytes.byteLength) return controller.close();
        controller.enqueue(bytes.slice(offset, offset + 16 * KiB));
        offset += 16 * KiB;
      },
    });
    return { stream, maxReserved: () => Math.max(...seen) };
  }

  test("a body is read under a reservation that comes back whatever the outcome", async () => {
    // A chunked body reserves a 64 KiB step ahead of what it has read, so 64 KiB bodies need the whole 128 KiB at their end.
    const budget = createBodyBudget(128 * KiB);
    h = await ingressHarness("sqlite", { bodyBudget: budget });
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
        const body = observedBody(budget, bytes);
        const reply = await h.send("ping", "d", bytes, { headers: { ...headers, "content-length": contentLength }, body: body.stream });
        expect({ outcome, contentLength, status: reply.status }).toEqual({ outcome, contentLength, status });
        expect(body.maxReserved()).toBeGreaterThan(0);
        expect(budget.inUse()).toBe(0);
      }
    }
    const short = observedBody(budget, whole.slice(0, 1000));
    expect((await h.send("ping", "d", whole, { headers: { "content-length": "1001" }, body: short.stream })).status).toBe(400);
    expect(short.maxReserved()).toBe(1001);
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
