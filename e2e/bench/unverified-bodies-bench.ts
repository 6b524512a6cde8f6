#!/usr/bin/env bun
/**
 * Unverified-body attacks on the compiled binary's webhook route (SQLite, loopback), each against a fresh service process:
 *
 * 1. Flood (issue 16 item 5): 300 connections each POST a 10 MiB body slowly, with well-formed headers and a signature of the
 *    right form but the wrong value, and keep sending their whole body whatever the answer (an attacker ignores it). The
 *    service's RSS is sampled from /proc/<pid>/status (VmRSS every 50 ms, and VmHWM, the kernel's own peak) during the
 *    attack; the baseline is the idle RSS of the same process in the same run. Target: peak < 250 MiB.
 * 2. Slow senders (issue 25 item 2): 50 connections whose declared lengths fill the default 64 MiB budget exactly (six of
 *    10 MiB, one of 4 MiB; the rest 1 KiB), each sending one byte a second and connecting again whenever closed, while
 *    valid signed deliveries (team membership removals: durable authority events, no forge needed) arrive at 20 a second,
 *    open loop, for 60 s. Targets: >= 99 % of valid deliveries answered 202 within 2 s, peak RSS < 250 MiB. The baseline,
 *    in the same run: the same valid load without the attack.
 *
 * Prints JSON; bounded in time and count, loopback only, stops what it started.
 *
 *   bash scripts/bench.sh bodies                       (builds dist/service first)
 *   BODIES_BENCH_COMPARE_BINARY=/tmp/old/service bun e2e/bench/unverified-bodies-bench.ts
 *     also runs the same attacks, in the same run, against another build (e.g. one made from an older commit)
 *   BODIES_BENCH_CONNECTIONS (flood connections, default 300), BODIES_BENCH_SEND_SECONDS (time each flood body takes to
 *   send, default 8), BODIES_BENCH_SLOW_SECONDS (slow-sender run, default 60), BODIES_BENCH_SLOW_CONNECTIONS (default 50),
 *   BODIES_BENCH_VALID_PER_SECOND (default 20), BODIES_BENCH_ONLY (flood | slow: one attack only)
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BINARY, ensureBinary, runBinary, startBinary } from "../support/binary.ts";
import { signedDelivery } from "../support/payloads.ts";
import { declaredLengthsFilling, sendMembershipRemoval, startSlowSenders, type ValidOutcome } from "../support/slow-senders.ts";

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
const SLOW_SECONDS = Number(process.env.BODIES_BENCH_SLOW_SECONDS ?? 60);
const SLOW_CONNECTIONS = Number(process.env.BODIES_BENCH_SLOW_CONNECTIONS ?? 50);
const VALID_PER_SECOND = Number(process.env.BODIES_BENCH_VALID_PER_SECOND ?? 20);
const ONLY = process.env.BODIES_BENCH_ONLY;
/** The default SERVICE_WEBHOOK_UNVERIFIED_BODY_BUDGET_BYTES, which the slow senders' declared lengths fill exactly. */
const DEFAULT_BUDGET_BYTES = 64 * MiB;
const VALID_WITHIN_MS = 2_000;
const TARGET_VALID_SHARE = 0.99;

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

/** A fresh service process of `binary` (SQLite, no forge, worker and reconciler off), warmed by one verified delivery. */
async function withService<T>(binary: string, run: (service: { url: string; port: number; pid: number; idleKiB: number }) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "svc-bodies-bench-"));
  writeFileSync(join(dir, "secret"), SECRET);
  const env = {
    SERVICE_DATABASE_URL: `sqlite:${join(dir, "service.db")}`, SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(dir, "secret"),
    SERVICE_WORKER_ENABLED: "false", SERVICE_RECONCILE_ENABLED: "false", SERVICE_LOG_LEVEL: "info",
  };
  if (runBinary(["database", "migrate"], env, { binary }).exitCode !== 0) throw new Error("migrate failed");
  const service = await startBinary(env, { binary });
  const pid = service.process.pid;
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
    return await run({ url: service.url, port: Number(new URL(service.url).port), pid, idleKiB: idleSamples.sort((a, b) => a - b)[5]! });
  } finally {
    await service.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Samples the service's VmRSS every 50 ms until stopped; returns the peak seen. */
function rssSampler(pid: number) {
  let peak = 0;
  let sampling = true;
  const loop = (async () => {
    while (sampling) {
      peak = Math.max(peak, memory(pid).rssKiB);
      await Bun.sleep(50);
    }
  })();
  return async () => {
    sampling = false;
    await loop;
    return peak;
  };
}

function flood(binary: string) {
  return withService(binary, async ({ url, port, pid, idleKiB: idle }) => {
    const hwmBefore = memory(pid).hwmKiB;
    const stopSampling = rssSampler(pid);
    const started = performance.now();
    const outcomes = await Promise.all(Array.from({ length: CONNECTIONS }, (_, i) => attack(port, i, Date.now() + ATTACK_DEADLINE_MS)));
    const attackSeconds = (performance.now() - started) / 1000;
    await Bun.sleep(SETTLE_MS);
    const peak = await stopSampling();
    const after = memory(pid);
    const statuses: Record<string, number> = {};
    for (const outcome of outcomes) statuses[outcome.status] = (statuses[outcome.status] ?? 0) + 1;
    const live = await fetch(`${url}/health/live`).then((r) => r.status).catch(() => "unreachable");
    return {
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
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The failure counter's values by reason, read from /metrics. */
async function failuresByReason(url: string): Promise<Record<string, number>> {
  const text = await fetch(`${url}/metrics`).then((r) => r.text()).catch(() => "");
  const reasons: Record<string, number> = {};
  for (const match of text.matchAll(/^service_webhook_failures_total\{reason="([a-z_]+)"\} (\d+)/gm)) reasons[match[1]!] = Number(match[2]);
  return reasons;
}

/** Valid deliveries at VALID_PER_SECOND for SLOW_SECONDS, with or without the slow senders, against a fresh process. */
function slowSenders(binary: string, withAttack: boolean) {
  return withService(binary, async ({ url, port, pid, idleKiB: idle }) => {
    const declared = declaredLengthsFilling(DEFAULT_BUDGET_BYTES, SLOW_CONNECTIONS);
    const stopAt = Date.now() + (SLOW_SECONDS + 5) * 1000;
    const stopSampling = rssSampler(pid);
    const attack = withAttack ? startSlowSenders(port, declared, { byteIntervalMs: 1000, stopAt }) : null;
    // The senders take hold first (on a build that reserves declared lengths, the budget is then spent).
    if (attack) await Bun.sleep(1000);
    const pending: Array<Promise<ValidOutcome>> = [];
    const started = performance.now();
    const total = SLOW_SECONDS * VALID_PER_SECOND;
    for (let i = 0; i < total; i++) {
      // Open loop: each delivery leaves at its own time whatever the service answered before.
      const due = started + (i * 1000) / VALID_PER_SECOND;
      const wait = due - performance.now();
      if (wait > 0) await Bun.sleep(wait);
      pending.push(sendMembershipRemoval(url, SECRET, `valid-${withAttack ? "a" : "b"}-${i}`));
    }
    const outcomes = await Promise.all(pending);
    const peak = await stopSampling();
    await attack?.stop();
    const after = memory(pid);
    const statuses: Record<string, number> = {};
    for (const outcome of outcomes) statuses[outcome.status] = (statuses[outcome.status] ?? 0) + 1;
    const ms = outcomes.map((o) => o.ms).sort((a, b) => a - b);
    const inTime = outcomes.filter((o) => o.status === 202 && o.ms <= VALID_WITHIN_MS).length;
    return {
      attack: withAttack ? { senders: declared.length, declared_bytes: declared.reduce((a, b) => a + b, 0), byte_interval_ms: 1000, ...attack!.stats } : null,
      valid_deliveries: outcomes.length,
      valid_responses: statuses,
      valid_202_within_2s_share: +(inTime / outcomes.length).toFixed(4),
      valid_latency_ms: { p50: Math.round(percentile(ms, 50)), p99: Math.round(percentile(ms, 99)), max: Math.round(ms.at(-1) ?? NaN) },
      service_failures_by_reason: await failuresByReason(url),
      idle_rss_mib: mib(idle),
      peak_rss_mib: mib(peak),
      peak_vm_hwm_mib: mib(after.hwmKiB),
    };
  });
}

async function measure(binary: string) {
  const floodResult = ONLY === "slow" ? null : await flood(binary);
  const slow = ONLY === "flood" ? null : { without_attack: await slowSenders(binary, false), with_attack: await slowSenders(binary, true) };
  return { binary, ...(floodResult ? { flood: floodResult } : {}), ...(slow ? { slow_senders: slow } : {}) };
}

ensureBinary();
const current = await measure(BINARY);
const compare = process.env.BODIES_BENCH_COMPARE_BINARY ? await measure(process.env.BODIES_BENCH_COMPARE_BINARY) : null;
const peakOf = (r: { peak_rss_mib: number; peak_vm_hwm_mib: number }) => Math.max(r.peak_rss_mib, r.peak_vm_hwm_mib);
console.log(JSON.stringify({
  benchmark: "unverified webhook bodies (compiled binary, SQLite, loopback, default budget); each attack against a fresh process",
  flood: { connections: CONNECTIONS, body_bytes: BODY_BYTES, send_seconds_per_body: SEND_SECONDS },
  slow_senders: { connections: SLOW_CONNECTIONS, seconds: SLOW_SECONDS, valid_per_second: VALID_PER_SECOND, valid: "signed membership removals (authority events), open loop" },
  budget_bytes: "default (SERVICE_WEBHOOK_UNVERIFIED_BODY_BUDGET_BYTES unset)",
  measured_by: "VmRSS of the service process from /proc/<pid>/status every 50 ms; VmHWM is the kernel's peak RSS; idle = median RSS before the attack; latency from the client's send to the whole response",
  current,
  ...(compare ? { compare } : {}),
  targets: {
    ...(current.flood ? { [`flood: peak RSS < ${TARGET_PEAK_MIB} MiB`]: peakOf(current.flood) < TARGET_PEAK_MIB } : {}),
    ...(current.slow_senders
      ? {
          [`slow senders: >= ${TARGET_VALID_SHARE * 100} % of valid deliveries 202 within 2 s`]: current.slow_senders.with_attack.valid_202_within_2s_share >= TARGET_VALID_SHARE,
          [`slow senders: peak RSS < ${TARGET_PEAK_MIB} MiB`]: peakOf(current.slow_senders.with_attack) < TARGET_PEAK_MIB,
        }
      : {}),
  },
}, null, 2));
