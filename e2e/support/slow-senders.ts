import { connect, type Socket } from "node:net";
import { organizationWideEvent, signedDelivery } from "./payloads.ts";

/**
 * The slow-sender attack on the webhook route (issue 25 item 2): connections that send the three headers, a well-formed but
 * wrong signature and a Content-Length, then one byte of the body every `byteIntervalMs`, and connect again whenever the
 * service closes the connection. Loopback only; each sender stops at stop() or at `stopAt` (epoch ms), whichever is first.
 */
export type SlowSenderStats = {
  /** Connections opened, over every sender. */
  connections: number;
  /** Connections the service closed while the body was still unsent. */
  cutOff: number;
  /** Status lines the service answered the senders with, by status code ("none": closed without an answer). */
  answers: Record<string, number>;
};

export function startSlowSenders(port: number, declaredLengths: number[], options: { byteIntervalMs: number; stopAt: number }) {
  const stats: SlowSenderStats = { connections: 0, cutOff: 0, answers: {} };
  const sockets = new Set<Socket>();
  let stopped = false;
  const senders = declaredLengths.map((declared, index) => sender(declared, index));

  async function sender(declared: number, index: number) {
    for (let round = 0; !stopped && Date.now() < options.stopAt; round++) {
      await new Promise<void>((resolve) => {
        const socket = connect(port, "127.0.0.1");
        sockets.add(socket);
        stats.connections++;
        let received = "";
        let sent = 0;
        let timer: ReturnType<typeof setInterval> | undefined;
        socket.on("data", (data) => (received += data.toString("latin1")));
        socket.on("error", () => {});
        socket.once("close", () => {
          clearInterval(timer);
          sockets.delete(socket);
          if (!stopped) {
            const status = received.match(/^HTTP\/1\.1 (\d{3})/)?.[1] ?? "none";
            stats.answers[status] = (stats.answers[status] ?? 0) + 1;
            if (sent < declared) stats.cutOff++;
          }
          resolve();
        });
        socket.once("connect", () => {
          socket.write(
            ["POST /webhooks/forge HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json", "X-Forge-Event: pull_request", `X-Forge-Delivery: slow-${index}-${round}`,
              `X-Hub-Signature-256: sha256=${"0".repeat(64)}`, `Content-Length: ${declared}`, "", ""].join("\r\n"),
          );
          // An attacker ignores answers: it goes on trickling until the service closes the connection.
          timer = setInterval(() => {
            if (stopped || Date.now() >= options.stopAt) return socket.destroy();
            if (sent < declared && !socket.destroyed) {
              socket.write("{");
              sent++;
            }
          }, options.byteIntervalMs);
        });
      });
      // Straight back, but never a busy loop against a service that closes connections at once.
      await Bun.sleep(10);
    }
  }

  return {
    stats,
    async stop() {
      stopped = true;
      for (const socket of sockets) socket.destroy();
      await Promise.all(senders);
    },
  };
}

/** The attack's declared lengths: `budget` filled exactly by as many 10 MiB bodies as fit, one body of the rest, and small ones. */
export function declaredLengthsFilling(budget: number, connections: number, smallBytes = 1024): number[] {
  const large = 10 * 1024 * 1024;
  const lengths: number[] = [];
  let left = budget;
  while (left >= large) {
    lengths.push(large);
    left -= large;
  }
  if (left > 0) lengths.push(left);
  while (lengths.length < connections) lengths.push(smallBytes);
  return lengths;
}

export type ValidOutcome = { status: number; ms: number };

/** One valid signed delivery the service stores without a forge: a team membership removal (an authority event). */
export async function sendMembershipRemoval(url: string, secret: string, deliveryId: string): Promise<ValidOutcome> {
  const delivery = signedDelivery(secret, "membership", deliveryId, organizationWideEvent("membership", "removed"));
  const started = performance.now();
  try {
    const response = await fetch(`${url}/webhooks/forge`, { method: "POST", headers: delivery.headers, body: delivery.body as BodyInit, signal: AbortSignal.timeout(15_000) });
    await response.arrayBuffer();
    return { status: response.status, ms: performance.now() - started };
  } catch {
    return { status: 0, ms: performance.now() - started };
  }
}
