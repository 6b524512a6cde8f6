#!/usr/bin/env bun
/**
 * Unverified-body attack (issue 16 item 5): 300 loopback connections each POST a 10 MiB body slowly to the compiled binary's
 * webhook route, with well-formed headers and a signature of the right form but the wrong value, and keep sending their whole
 * body whatever the answer (an attacker ignores it). The service's RSS is sampled from /proc/<pid>/status (VmRSS every
 * 50 ms, and VmHWM, the kernel's own peak) during the attack; the baseline is the idle RSS of the same process in the same
 * run. Target: peak < 250 MiB. Prints JSON; bounded in time and count, loopback only, stops what it started.
 *
 *   bash scripts/bench.sh bodies                       (builds dist/service first)
 *   BODIES_BENCH_COMPARE_BINARY=/tmp/old/service bun e2e/bench/unverified-bodies-bench.ts
 *     also runs the same attack, in the same run, against another build (e.g. one made from an older commit)
 *   BODIES_BENCH_CONNECTIONS (default 300), BODIES_BENCH_SEND_SECONDS (time each body takes to send, default 8)
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY, ensureBinary, runBinary, startBinary } from "../support/binary.ts";
import { signedDelivery } from "../support/payloads.ts";

const MiB = 1024 * 1024;
const BODY_BYTES = 10 * MiB;
const CHUNK_BYTES = 64 * 1024;
const CONNECTIONS = Number(process.env.BODIES_BENCH_CONNECTIONS ?? 300);
const SEND_SECONDS = Number(process.env.BODIES_BENCH_SEND_SECONDS ?? 8);
/** The attack stops here whatever is left unsent; the service is then given this long again to settle. */
const ATTACK_DEADLINE_MS = (SEND_SECONDS + 20) * 1000;
const SETTLE_MS = 2000;
const SECRET = "bench-webhook-secret-0123456789abcdef-xyz";
const TARGET_PEAK_MIB = 250;

function memory(pid: number): { rssKiB: number; hwmKiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string) => Number(status.match(new RegExp(`^${name}:\\s+(\\d+) kB`, "m"))?.[1] ?? NaN);
  return { rssKiB: field("VmRSS"), hwmKiB: field("VmHWM") };
}
const mib = (kib: number) => +(kib / 1024).toFixed(1);

type Outcome = { status: string; sentAll: boolean };

/** One attacker: headers, then the body in 64 KiB pieces spread over SEND_SECONDS, whatever the service answers meanwhile. */
function attack(port: number, index: number, stopAt: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket: Socket = connect(port, "127.0.0.1");
    const chunk = Buffer.alloc(CHUNK_BYTES, 0x20);
    const interval = (SEND_SECONDS * 1000) / (BODY_BYTES / CHUNK_BYTES);
    let received = "";
    let sent = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      socket.destroy();
      resolve({ status: received.match(/^HTTP\/1\.1 (\d{3})/)?.[1] ?? "none", sentAll: sent >= BODY_BYTES });
    };
    socket.on("data", (data) => {
      received += data.toString("latin1");
      if (sent >= BODY_BYTES && received.includes("\r\n\r\n")) finish();
    });
    socket.on("error", finish);
    socket.on("close", finish);
    socket.once("connect", () => {
      socket.write(
        ["POST /webhooks/forge HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json", "X-Forge-Event: pull_request", `X-Forge-Delivery: attack-${index}`,
          `X-Hub-Signature-256: sha256=${"0".repeat(64)}`, `Content-Length: ${BODY_BYTES}`, "", ""].join("\r\n"),
      );
      const pump = () => {
        if (done) return;
        if (Date.now() > stopAt) return finish();
        if (sent >= BODY_BYTES) {
          if (received.includes("\r\n\r\n")) finish();
          else setTimeout(pump, 50);
          return;
        }
        sent += CHUNK_BYTES;
        if (socket.write(chunk)) setTimeout(pump, interval);
        else socket.once("drain", () => setTimeout(pump, interval));
      };
      // Start times are spread over the first second, as connections of a real flood arrive.
      setTimeout(pump, (index * 1000) / CONNECTIONS);
    });
  });
}

async function measure(binary: string) {
  const dir = mkdtempSync(join(tmpdir(), "svc-bodies-bench-"));
  writeFileSync(join(dir, "secret"), SECRET);
  const env = {
    SERVICE_DATABASE_URL: `sqlite:${join(dir, "service.db")}`, SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(dir, "secret"),
    SERVICE_WORKER_ENABLED: "false", SERVICE_RECONCILE_ENABLED: "false", SERVICE_LOG_LEVEL: "info",
  };
  if (runBinary(["database", "migrate"], env, { binary }).exitCode !== 0) throw new Error("migrate failed");
  const service = await startBinary(env, { binary });
  const pid = service.process.pid;
  const port = Number(new URL(service.url).port);
  try {
    // One verified delivery first so the route's code is warm, then the idle baseline: the median of ten samples over a second.
    const ping = signedDelivery(SECRET, "ping", "warm-up", { zen: "warm" });
    const warm = await fetch(`${service.url}/webhooks/forge`, { method: "POST", headers: ping.headers, body: ping.body as BodyInit });
    if (warm.status !== 202) throw new Error(`warm-up delivery answered ${warm.status}`);
    await warm.arrayBuffer();
    const idleSamples: number[] = [];
    for (let i = 0; i < 10; i++) {
      idleSamples.push(memory(pid).rssKiB);
      await Bun.sleep(100);
    }
    const idle = idleSamples.sort((a, b) => a - b)[5]!;
    const hwmBefore = memory(pid).hwmKiB;

    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, memory(pid).rssKiB);
        await Bun.sleep(50);
      }
    })();
    const started = performance.now();
    const outcomes = await Promise.all(Array.from({ length: CONNECTIONS }, (_, i) => attack(port, i, Date.now() + ATTACK_DEADLINE_MS)));
    const attackSeconds = (performance.now() - started) / 1000;
    await Bun.sleep(SETTLE_MS);
    sampling = false;
    await sampler;
    const after = memory(pid);
    const statuses: Record<string, number> = {};
    for (const outcome of outcomes) statuses[outcome.status] = (statuses[outcome.status] ?? 0) + 1;
    const live = await fetch(`${service.url}/health/live`).then((r) => r.status).catch(() => "unreachable");
    return {
      binary,
      idle_rss_mib: mib(idle),
      peak_rss_mib: mib(peak),
      peak_vm_hwm_mib: mib(after.hwmKiB),
      vm_hwm_before_attack_mib: mib(hwmBefore),
      rss_after_attack_mib: mib(after.rssKiB),
      peak_over_idle_mib: mib(peak - idle),
      attack_seconds: +attackSeconds.toFixed(1),
      responses: statuses,
      bodies_sent_whole: outcomes.filter((o) => o.sentAll).length,
      health_live_after: live,
    };
  } finally {
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

ensureBinary();
const current = await measure(BINARY);
const compare = process.env.BODIES_BENCH_COMPARE_BINARY ? await measure(process.env.BODIES_BENCH_COMPARE_BINARY) : null;
console.log(JSON.stringify({
  benchmark: "unverified webhook bodies: connections each sending a 10 MiB body slowly with a wrong signature (compiled binary, SQLite, loopback)",
  connections: CONNECTIONS,
  body_bytes: BODY_BYTES,
  send_seconds_per_body: SEND_SECONDS,
  budget_bytes: "default (SERVICE_WEBHOOK_UNVERIFIED_BODY_BUDGET_BYTES unset)",
  measured_by: "VmRSS of the service process from /proc/<pid>/status every 50 ms; VmHWM is the kernel's peak RSS; idle = median RSS before the attack",
  current,
  ...(compare ? { compare } : {}),
  targets: { [`peak RSS < ${TARGET_PEAK_MIB} MiB`]: Math.max(current.peak_rss_mib, current.peak_vm_hwm_mib) < TARGET_PEAK_MIB },
}, null, 2));
