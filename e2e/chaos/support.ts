import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { createScenario, generateAppKeys, onlyFirstAppReceivesWebhooks, type Scenario } from "../../server/simulator/scenario.ts";
import { UNPACED_FORGE } from "../bench/unpaced-forge.ts";
import { type ForgeSimulator, startForgeSimulator } from "../../server/simulator/simulator.ts";
import { ROOT, runBinary, type RunningBinary, startBinary } from "../support/binary.ts";
import { WEBHOOK_SECRET } from "../support/service.ts";

/**
 * The chaos suite's fixture (issue 17): a PostgreSQL cluster of its own (so it can be stopped and its backends terminated
 * without touching the cluster the rest of the suite uses), the forge simulator, the compiled binary as several `serve`
 * processes on one database, and a dispatcher between the forge and the services that spreads deliveries over the processes,
 * sends some to two at once, and records every answer.
 */

export type Cluster = { readonly url: string; readonly dir: string; stop(): void; start(): void; destroy(): void; admin(): postgres.Sql };

const asOwner = (args: string[]) => (process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--", ...args] : args);

export function startCluster(): Cluster {
  const dir = mkdtempSync(join(tmpdir(), "svc-chaos-pg-"));
  const started = Bun.spawnSync(["bash", join(ROOT, "scripts/pg-cluster.sh"), "start", join(dir, "pg")], { stdout: "pipe", stderr: "pipe" });
  if (started.exitCode !== 0) throw new Error(`could not start the chaos PostgreSQL cluster: ${started.stderr.toString()}`);
  const exports = Object.fromEntries(started.stdout.toString().trim().split("\n").map((line) => line.replace(/^export /, "").split(/=(.*)/s).slice(0, 2) as [string, string]));
  const bin = exports.TEST_POSTGRES_BIN!;
  const data = join(dir, "pg", "data");
  const pgCtl = (...args: string[]) => {
    const result = Bun.spawnSync(asOwner([join(bin, "pg_ctl"), "-D", data, "-w", "-t", "60", ...args]), { stdout: "pipe", stderr: "pipe" });
    if (result.exitCode !== 0) throw new Error(`pg_ctl ${args.join(" ")} failed: ${result.stderr.toString()}`);
  };
  return {
    url: exports.TEST_POSTGRES_URL!,
    dir,
    stop: () => pgCtl("-m", "fast", "stop"),
    start: () => pgCtl("-l", join(dir, "pg", "server.log"), "start"),
    destroy() {
      Bun.spawnSync(["bash", join(ROOT, "scripts/pg-cluster.sh"), "stop", join(dir, "pg")]);
      rmSync(dir, { recursive: true, force: true });
    },
    admin: () => postgres(exports.TEST_POSTGRES_URL!, { max: 1, onnotice: () => {} }),
  };
}

/** One answer a service gave to a delivery the dispatcher forwarded. */
export type Answer = { readonly deliveryId: string; readonly event: string; readonly service: number; readonly status: number; readonly accepted: boolean | null; readonly at: number };

export type Dispatcher = {
  readonly url: string;
  readonly answers: Answer[];
  /** Which services receive deliveries now (indexes into the service list). */
  targets: number[];
  /** Every `duplicateEvery`-th delivery goes to two services at once (0: never). */
  duplicateEvery: number;
  stop(): void;
};

export function startDispatcher(services: () => readonly (RunningBinary | null)[]): Dispatcher {
  let next = 0;
  let count = 0;
  const dispatcher: Dispatcher = {
    url: "",
    answers: [],
    targets: [0],
    duplicateEvery: 0,
    stop: () => server.stop(true),
  };
  const forward = async (index: number, request: { body: ArrayBuffer; headers: Record<string, string> }, deliveryId: string, event: string): Promise<number> => {
    const service = services()[index];
    let status = 599;
    let accepted: boolean | null = null;
    if (service) {
      try {
        const response = await fetch(`${service.url}/webhooks/forge`, { method: "POST", headers: request.headers, body: request.body, signal: AbortSignal.timeout(15_000) });
        status = response.status;
        const text = await response.text();
        if (status === 202) accepted = (JSON.parse(text) as { accepted?: boolean }).accepted ?? null;
      } catch {
        status = 599; // no answer: connection refused or reset (a killed process), or no answer within 15 s
      }
    }
    dispatcher.answers.push({ deliveryId, event, service: index, status, accepted, at: performance.now() });
    return status;
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const body = await req.arrayBuffer();
      const headers: Record<string, string> = {};
      // A proxy passes the delivery's headers unchanged: the simulator sends GitHub's names, other senders the neutral ones.
      for (const name of ["content-type", "user-agent", "x-forge-event", "x-forge-delivery", "x-github-event", "x-github-delivery", "x-github-hook-id", "x-github-hook-installation-target-id", "x-github-hook-installation-target-type", "x-hub-signature-256"]) {
        const value = req.headers.get(name);
        if (value !== null) headers[name] = value;
      }
      const targets = dispatcher.targets;
      const first = targets[next++ % targets.length]!;
      const chosen = dispatcher.duplicateEvery > 0 && ++count % dispatcher.duplicateEvery === 0 && targets.length > 1
        ? [first, targets[next % targets.length]!] : [first];
      const statuses = await Promise.all(chosen.map((index) => forward(index, { body, headers }, headers["x-forge-delivery"] ?? headers["x-github-delivery"] ?? "", headers["x-forge-event"] ?? headers["x-github-event"] ?? "")));
      return new Response(null, { status: statuses[0] });
    },
  });
  (dispatcher as { url: string }).url = `http://127.0.0.1:${server.port}/`;
  return dispatcher;
}

export type ChaosFixture = {
  readonly sim: ForgeSimulator;
  readonly scenario: Scenario;
  readonly env: Record<string, string>;
  readonly databaseUrl: string;
  readonly services: (RunningBinary | null)[];
  readonly dispatcher: Dispatcher;
  /** pull request number → whether bob's approval of the current head should make it succeed. */
  readonly expected: Map<number, "success" | "failure">;
  startService(index: number): Promise<RunningBinary>;
  close(): Promise<void>;
};

let databases = 0;

export async function chaosFixture(cluster: Cluster, replicas: number, env: Record<string, string> = {}): Promise<ChaosFixture> {
  const name = `chaos_${process.pid}_${++databases}`;
  const admin = cluster.admin();
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const databaseUrl = cluster.url.replace(/\/[^/?]*(\?|$)/, `/${name}$1`);
  const dir = mkdtempSync(join(tmpdir(), "svc-chaos-"));
  const keys = generateAppKeys();
  const sim = startForgeSimulator({ webhookSecret: WEBHOOK_SECRET, webhookTimeoutMs: 20_000 });
  onlyFirstAppReceivesWebhooks(sim);
  const scenario = await createScenario(sim, { keys });
  writeFileSync(join(dir, "key.pem"), keys.privateKey);
  writeFileSync(join(dir, "secret"), WEBHOOK_SECRET);
  const settings = {
    SERVICE_DATABASE_URL: databaseUrl, SERVICE_FORGE_API_URL: sim.url, SERVICE_FORGE_APP_ID: String(scenario.appId),
    SERVICE_FORGE_PRIVATE_KEY_FILE: join(dir, "key.pem"), SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(dir, "secret"),
    // The simulator has no secondary limits, and the suite is about durability, not pacing.
    ...UNPACED_FORGE, SERVICE_WORKER_LEASE_SECONDS: "3", SERVICE_RECONCILE_INTERVAL_SECONDS: "10", ...env,
  };
  const migrated = runBinary(["database", "migrate"], settings);
  if (migrated.exitCode !== 0) throw new Error(`migrate failed: ${migrated.stderr}`);
  const services: (RunningBinary | null)[] = Array.from({ length: replicas }, () => null);
  const dispatcher = startDispatcher(() => services);
  const fixture: ChaosFixture = {
    sim, scenario, env: settings, databaseUrl, services, dispatcher, expected: new Map(),
    async startService(index) {
      const service = await startBinary(settings);
      services[index] = service;
      return service;
    },
    async close() {
      for (const service of services) await service?.stop("SIGKILL").catch(() => {});
      dispatcher.stop();
      await sim.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  for (let i = 0; i < replicas; i++) await fixture.startService(i);
  dispatcher.targets = services.map((_, i) => i);
  sim.control.mustApp(scenario.appId).webhookUrl = dispatcher.url;
  return fixture;
}

/** Opens `count` pull requests, each changing one file under src/ (owned by @bob and @acme/core), in parallel. */
export async function openPullRequests(f: ChaosFixture, count: number, offset = 0): Promise<number[]> {
  const c = f.sim.control;
  return Promise.all(Array.from({ length: count }, async (_, i) => {
    const branch = `chaos-${offset + i}`;
    await c.commit({ owner: "acme", repo: "web", branch, files: { [`src/chaos-${offset + i}.ts`]: `export const v = ${i};\n` }, sender: "erin" });
    const pr = await c.openPullRequest({ owner: "acme", repo: "web", head: branch, author: "erin" });
    f.expected.set(pr.number, "failure");
    return pr.number;
  }));
}

/** A review whose outcome is known: bob's approval makes a pull request succeed; bob's request for changes makes it fail. */
export async function review(f: ChaosFixture, number: number, approve: boolean): Promise<void> {
  f.expected.set(number, approve ? "success" : "failure");
  await f.sim.control.submitReview({ owner: "acme", repo: "web", number, user: "bob", state: approve ? "APPROVED" : "CHANGES_REQUESTED" });
}

/** Pull requests whose check on the current head is not (yet) completed with the expected conclusion. */
export function wrongPullRequests(f: ChaosFixture): number[] {
  const wrong: number[] = [];
  for (const [number, conclusion] of f.expected) {
    const pr = f.sim.control.state.repo("acme", "web")!.pulls.get(number)!;
    const runs = f.sim.control.checkRuns({ owner: "acme", repo: "web", headSha: pr.headSha });
    if (runs.length !== 1 || runs[0]!.status !== "completed" || runs[0]!.conclusion !== conclusion) wrong.push(number);
  }
  return wrong;
}

/** Waits until every pull request is right; returns the milliseconds it took, or throws naming the ones still wrong. */
export async function waitAllRight(f: ChaosFixture, timeoutMs: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    const wrong = wrongPullRequests(f);
    if (wrong.length === 0) return performance.now() - started;
    if (performance.now() - started > timeoutMs) {
      const sample = wrong.slice(0, 5).map((n) => {
        const pr = f.sim.control.state.repo("acme", "web")!.pulls.get(n)!;
        return { n, want: f.expected.get(n), runs: f.sim.control.checkRuns({ owner: "acme", repo: "web", headSha: pr.headSha }).map((r) => `${r.status}/${r.conclusion}`) };
      });
      throw new Error(`${wrong.length} pull requests not right after ${timeoutMs} ms: ${JSON.stringify(sample)}\n${f.services.map((s) => s?.output().split("\n").slice(-8).join("\n")).join("\n---\n")}`);
    }
    await Bun.sleep(200);
  }
}

export async function readiness(service: RunningBinary): Promise<number> {
  try {
    const response = await fetch(`${service.url}/health/ready`, { signal: AbortSignal.timeout(3_000) });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

/** A figure line for the issue note: the suite prints what each case measured. */
export function report(name: string, figures: Record<string, unknown>): void {
  console.log(`chaos-figures ${JSON.stringify({ case: name, ...figures })}`);
}
