#!/usr/bin/env bun
/**
 * Forge request economy (issue 18 item 1): how many REST requests the compiled service sends the forge simulator, counted by
 * the simulator itself (every answer, by route template and status: server/simulator/request-counter.ts).
 * - pull requests of 50 and 2,999 files: opened, approved (alice, an owner of the docs paths and checked through both teams),
 *   pushed (one file changed), approved again; requests per step and in all. Reconciler off.
 * - one steady reconciler scan with nothing changed at N = 50, 200 and 1,000 open pull requests: N - 1 silent bulk pull requests
 *   (real commits, no webhooks) beside the scenario's own; the service starts with the reconciler on and evaluates them all,
 *   then restarts with an interval long enough for a scan and its work to finish within it (measured from the first round);
 *   after its startup scan has drained, one whole interval scan and the work it queues are counted.
 * - one membership event with those pull requests open: the docs team gains an active member; only the pull requests whose
 *   owner sets name @acme/docs (the scenario's own; the bulk ones change src/ only) can be affected.
 * - the largest N the default settings sustain within 2,500 counted requests an hour, computed from the figures above.
 * - one repository (issue 26 item 5): a steady scan with N = 10 (baseline) and N = 10,000 open pull requests in acme/web, every
 *   one already evaluated (its evaluation recorded in the store as the listing shows it, instead of 10,000 evaluations first;
 *   no evaluation runs in the measured interval, so every request on the listing routes is the scan's),
 *   the governor at its default budgets: the listing requests of one interval scan (target <= ceil(N/100) + 3), how long the
 *   scan took against its interval, and the service's RSS while the scans run (VmRSS every 50 ms; target < 200 MiB), the
 *   open-pull-request index then holding every open pull request (filled by the scans' complete listings: counted). In the
 *   same repository, restarted with the reconciler off and the index kept (issue 26 item 6): the 50-file pull request's four
 *   steps (target <= 30 requests and no more than at N = 10) and a membership event (the docs team gains a member; the bulk
 *   pull requests are recorded with the subjects an evaluation of a src/-only change records, so only docs/ changes are
 *   affected).
 * A 304 answer to a conditional request spends no primary rate limit on the forge: `total` counts every answer, `counted` all but
 * 304s (`not_modified`). Quiet = the service's queue is empty and the simulator answered nothing for QUIET_MS.
 *
 *   bash scripts/bench.sh economy                          (dist/service only)
 *   ECONOMY_BENCH_BINARIES=old=/tmp/old/service,new=dist/service bash scripts/bench.sh economy
 *     each build runs the same steps in the same run, side by side (BENCH_SERVICE_COMMAND, when set, replaces dist/service)
 *   ECONOMY_BENCH_SIZES=50,200 (default 50,200,1000)
 *   ECONOMY_BENCH_CASES=one_repository   only the one-repository case (a few minutes instead of the whole run)
 *   ECONOMY_BENCH_ONE_REPOSITORY_SIZES=10,10000 (the default)
 *   ECONOMY_BENCH_SETTLE_TIMEOUT_SECONDS=600 (default 1800): how long a step may take to settle before the run fails
 * Needs TEST_POSTGRES_URL (scripts/bench.sh starts a cluster); without it each service gets a SQLite file.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { DEFAULTS } from "../../server/config/index.ts";
import { diffCommits } from "../../server/simulator/git.ts";
import { countsSince, type RequestCounts } from "../../server/simulator/request-counter.ts";
import { addOpenPullRequests, createScenario, generateAppKeys, type Scenario } from "../../server/simulator/scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "../../server/simulator/simulator.ts";
import { BINARY, ensureBinary, type RunningBinary, runBinary, startBinary } from "../support/binary.ts";
import { createTestDatabase, type TestDatabase } from "../support/databases.ts";
import { encodeSubjects, openStore, readIndexPage, recordEvaluation, teamSubject, userSubject } from "../../server/store/index.ts";
import { UNPACED_FORGE } from "./unpaced-forge.ts";

const SECRET = "bench-webhook-secret-0123456789abcdef-xyz";
const QUIET_MS = 1500;
/** ECONOMY_BENCH_SETTLE_TIMEOUT_SECONDS bounds a run of a build that may never settle (one failing closed, retrying). */
const SETTLE_TIMEOUT_MS = Number(process.env.ECONOMY_BENCH_SETTLE_TIMEOUT_SECONDS ?? 1800) * 1000;
const SIZES = (process.env.ECONOMY_BENCH_SIZES ?? "50,200,1000").split(",").map(Number);
const HOURLY_BUDGET = 2500;
const FULL_SWEEP_HOURS = Number((DEFAULTS as Record<string, unknown>).reconcileFullSweepHours ?? 24);
const SCANS_PER_HOUR = 3600 / DEFAULTS.reconcileIntervalSeconds;
/**
 * One page per evaluation (every evaluation lists its reviews; the bench's pull requests have far fewer than 100), so its
 * count is the evaluations'. Not the pull request's own route: an evaluation reads it again after a fresh file list (the
 * list's proof), and the fast path reads it too.
 */
const REVIEWS = "GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews";
const INSTALLATIONS = "GET /app/installations";
/** The identity probe runs on its own clock; it is no part of any step (its interval is set to the maximum, 300 s). */
const PROBE = "GET /app";
const REPOSITORIES = 2; // the scenario's acme/web and acme/.forge

const binaries = (process.env.ECONOMY_BENCH_BINARIES ?? `current=${process.env.BENCH_SERVICE_COMMAND ?? BINARY}`).split(",").map((entry) => {
  const at = entry.indexOf("=");
  return at > 0 ? { name: entry.slice(0, at), path: resolve(entry.slice(at + 1)) } : { name: entry, path: resolve(entry) };
});
if (!process.env.ECONOMY_BENCH_RESULTS && binaries.some((b) => b.path === BINARY)) ensureBinary();

type Step = { total: number; counted: number; not_modified: number; evaluations: number; routes: RequestCounts["routes"] };

function step(counts: RequestCounts): Step {
  const routes = { ...counts.routes };
  delete routes[PROBE]; // see PROBE
  let total = 0;
  let notModified = 0;
  for (const statuses of Object.values(routes)) for (const [status, n] of Object.entries(statuses)) {
    total += n;
    if (status === "304") notModified += n;
  }
  const evaluations = Object.values(routes[REVIEWS] ?? {}).reduce((sum, n) => sum + n, 0);
  return { total, counted: total - notModified, not_modified: notModified, evaluations, routes };
}

async function metric(service: RunningBinary, name: string): Promise<number> {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  return text.split("\n").filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`)).reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
}

/** Waits until the service's queue is empty, `done` holds and the simulator has answered nothing for QUIET_MS. */
async function settle(sim: ForgeSimulator, service: RunningBinary, done: () => boolean | Promise<boolean> = () => true): Promise<void> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  let last = -1;
  let since = Date.now();
  for (;;) {
    const total = sim.counter.snapshot().total;
    if (total !== last) {
      last = total;
      since = Date.now();
    } else if (Date.now() - since >= QUIET_MS && (await metric(service, "service_queue_depth")) === 0 && (await done())) return;
    if (Date.now() > deadline) throw new Error(`the service did not settle:\n${service.output().split("\n").slice(-20).join("\n")}`);
    await Bun.sleep(100);
  }
}

async function measure(sim: ForgeSimulator, service: RunningBinary, action: () => Promise<unknown>, done?: () => boolean | Promise<boolean>): Promise<Step> {
  const before = sim.counter.snapshot();
  await action();
  await settle(sim, service, done);
  return step(countsSince(before, sim.counter.snapshot()));
}

type Harness = { sim: ForgeSimulator; scenario: Scenario; database: TestDatabase; env: Record<string, string>; dir: string };

async function harness(binary: string, reconcileIntervalSeconds: number | null): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), "svc-economy-"));
  const keys = generateAppKeys();
  const sim = startForgeSimulator({ webhookSecret: SECRET, webhookNeutralHeaders: true });
  const scenario = await createScenario(sim, { keys });
  writeFileSync(join(dir, "key.pem"), keys.privateKey);
  writeFileSync(join(dir, "secret"), SECRET);
  const database = await createTestDatabase(process.env.TEST_POSTGRES_URL ? "postgresql" : "sqlite");
  const env = {
    SERVICE_DATABASE_URL: database.url, SERVICE_FORGE_API_URL: sim.url, SERVICE_FORGE_APP_ID: String(scenario.appId),
    SERVICE_FORGE_PRIVATE_KEY_FILE: join(dir, "key.pem"), SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(dir, "secret"),
    SERVICE_WORKER_ENABLED: "true", SERVICE_RECONCILE_ENABLED: String(reconcileIntervalSeconds !== null),
    SERVICE_RECONCILE_INTERVAL_SECONDS: String(reconcileIntervalSeconds ?? 300), SERVICE_LOG_LEVEL: "info",
    SERVICE_FORGE_IDENTITY_PROBE_INTERVAL_SECONDS: "300", SERVICE_FORGE_IDENTITY_FRESHNESS_SECONDS: "900",
  };
  const migrate = runBinary(["database", "migrate"], env, { binary });
  if (migrate.exitCode !== 0) throw new Error(`migrate failed: ${migrate.stderr}`);
  return { sim, scenario, database, env, dir };
}

/**
 * Pacing changes when requests are sent, not how many: the governor's budgets are lifted (UNPACED_FORGE) so the larger scans
 * finish in minutes. A build from before the governor refuses those settings as unknown, and runs without them.
 */
const unpaced = new Map<string, boolean>();

async function start(h: Harness, binary: string, env: Record<string, string> = {}): Promise<RunningBinary> {
  if (unpaced.get(binary) === false) return serving(h, await startBinary({ ...h.env, ...env }, { binary }));
  let service: RunningBinary;
  try {
    service = await startBinary({ ...h.env, ...UNPACED_FORGE, ...env }, { binary });
    unpaced.set(binary, true);
  } catch (error) {
    if (unpaced.has(binary) || !Object.keys(UNPACED_FORGE).some((name) => String(error).includes(name))) throw error;
    unpaced.set(binary, false);
    service = await startBinary({ ...h.env, ...env }, { binary });
  }
  return serving(h, service);
}

/** Points our App's webhooks at the service. */
function serving(h: Harness, service: RunningBinary): RunningBinary {
  h.sim.control.mustApp(h.scenario.appId).webhookUrl = `${service.url}/webhooks/forge`;
  return service;
}

async function cleanup(h: Harness, service: RunningBinary | null): Promise<void> {
  await service?.stop();
  await h.sim.stop();
  await h.database.drop();
  rmSync(h.dir, { recursive: true, force: true });
}

const completed = (h: Harness, headSha: string) => () =>
  h.sim.control.checkRuns({ owner: "acme", repo: "web", headSha }).some((run) => run.status === "completed");

/** Opened, approved, pushed, approved again, for a pull request changing `files` files (one docs file, the rest under src/). */
async function pullRequestFlow(h: Harness, service: RunningBinary, files: number) {
  const c = h.sim.control;
  const branch = `bench-${files}`;
  const changes: Record<string, string> = { [`docs/${branch}.md`]: "# Bench\n" };
  for (let i = 1; i < files; i++) changes[`src/${branch}/file-${String(i).padStart(4, "0")}.ts`] = `export const v${i} = ${i};\n`;
  await c.commit({ owner: "acme", repo: "web", branch, files: changes, sender: "erin" });
  await settle(h.sim, service); // the push of a branch without a pull request is no part of the steps
  let head = c.state.repo("acme", "web")!.branches.get(branch)!;
  let number = 0;
  const opened = await measure(h.sim, service, async () => { number = (await c.openPullRequest({ owner: "acme", repo: "web", head: branch, author: "erin" })).number; }, completed(h, head));
  const approved = await measure(h.sim, service, () => c.submitReview({ owner: "acme", repo: "web", number, user: "alice", state: "APPROVED" }), completed(h, head));
  const pushed = await measure(h.sim, service, async () => { head = (await c.pushToPullRequest({ owner: "acme", repo: "web", number, files: { [`src/${branch}/file-0001.ts`]: "export const v1 = 'changed';\n" } })).sha; }, completed(h, head));
  const approvedAgain = await measure(h.sim, service, () => c.submitReview({ owner: "acme", repo: "web", number, user: "alice", state: "APPROVED" }), completed(h, head));
  const steps = { opened, approved, pushed, approved_again: approvedAgain };
  const sum = (key: "total" | "counted" | "not_modified") => Object.values(steps).reduce((n, s) => n + s[key], 0);
  return { files, steps, all_steps: { total: sum("total"), counted: sum("counted"), not_modified: sum("not_modified") } };
}

async function pullRequestFlows(binary: string) {
  const h = await harness(binary, null);
  let service: RunningBinary | null = null;
  try {
    service = await start(h, binary);
    // Warm-up (not counted): the installation token, the organization policy and the code-owners file at the base commit.
    await warmUp(h, service);
    return { pr_50_files: await pullRequestFlow(h, service, 50), pr_2999_files: await pullRequestFlow(h, service, 2999) };
  } finally {
    await cleanup(h, service);
  }
}

async function warmUp(h: Harness, service: RunningBinary) {
  const c = h.sim.control;
  await c.commit({ owner: "acme", repo: "web", branch: "warm-up", files: { "src/warm-up.ts": "export {};\n" }, sender: "erin" });
  const head = c.state.repo("acme", "web")!.branches.get("warm-up")!;
  await measure(h.sim, service, () => c.openPullRequest({ owner: "acme", repo: "web", head: "warm-up", author: "erin" }), completed(h, head));
}

/** The routes a reconciler scan lists (installations, their repositories, each repository's open pull requests). */
const LISTING_ROUTES = [INSTALLATIONS, "GET /installation/repositories", "GET /repos/{owner}/{repo}/pulls"];

/** Counted answers (all but 304) on these routes; with `all`, every answer. */
function countedOn(step: Step, routes: readonly string[], all = false): number {
  return routes.reduce((sum, route) => sum + Object.entries(step.routes[route] ?? {}).filter(([status]) => all || status !== "304").reduce((a, [, n]) => a + n, 0), 0);
}

/** One steady scan (and one membership event) with `n` open pull requests. */
async function steadyScan(binary: string, n: number) {
  const h = await harness(binary, 86_400);
  let service: RunningBinary | null = null;
  try {
    addOpenPullRequests(h.sim, { owner: "acme", repo: "web", count: n - 1, files: (number) => ({ [`src/bulk/${number}.ts`]: `export const n = ${number};\n` }) });
    const heads = [...h.sim.control.state.repo("acme", "web")!.pulls.values()].filter((p) => p.state === "open").map((p) => p.headSha);
    const allCompleted = () => {
      const done = new Set(h.sim.control.checkRuns({ owner: "acme", repo: "web" }).filter((r) => r.status === "completed").map((r) => r.head_sha));
      return heads.every((sha) => done.has(sha));
    };
    // 1. The first round evaluates every pull request (timed, to choose an interval the steady scan and its work fit in).
    let started = performance.now();
    service = await start(h, binary);
    await settle(h.sim, service, async () => (await metric(service!, "service_reconciliations_total")) >= 1 && allCompleted());
    const firstRoundSeconds = (performance.now() - started) / 1000;
    await service.stop();
    service = null;
    const interval = Math.max(20, Math.ceil(2 * firstRoundSeconds + 10));
    // 2. Restart with that interval: the startup scan runs and its work drains; then one interval scan is counted.
    service = await start(h, binary, { SERVICE_RECONCILE_ENABLED: "true", SERVICE_RECONCILE_INTERVAL_SECONDS: String(interval) });
    await settle(h.sim, service, async () => (await metric(service!, "service_reconciliations_total")) >= 1);
    started = performance.now();
    const scan = await measure(h.sim, service, async () => {
      while ((await metric(service!, "service_reconciliations_total")) < 2) await Bun.sleep(100);
    });
    const scanSeconds = (performance.now() - started) / 1000 - interval;
    // 3. A membership event: the docs team gains an active member.
    const membership = await measure(h.sim, service, () => h.sim.control.setTeamMembership({ org: "acme", team: "docs", user: "frank", state: "active" }));
    const scans = (s: Step) => Object.values(s.routes[INSTALLATIONS] ?? {}).reduce((a, b) => a + b, 0);
    const overlap = scans(scan) !== 1 || scans(membership) !== 0;
    // The pull requests whose owner sets name @acme/docs: those changing a path under docs/ (CODEOWNERS of the scenario).
    const affected = [...h.sim.control.state.repo("acme", "web")!.pulls.values()]
      .filter((p) => p.state === "open" && diffCommits(h.sim.control.state, p.baseSha, p.headSha).some((f) => f.filename.startsWith("docs/"))).length;
    // 4. What one evaluation of the rolling full sweep costs (a build that has the sweep: its steady scan evaluated fewer than
    //    were open): restarted with the shortest period (1 h), an interval scan sweeps about N × interval / 3600 unchanged pull
    //    requests; their counted requests beyond the steady scan's own, per evaluation. The restart leaves the process caches
    //    cold, as a sweep 24 h apart finds most per-pull-request entries at 10,000 open pull requests.
    let sweep: (Step & { per_evaluation: number | null }) | null = null;
    if (scan.evaluations < n) {
      await service.stop();
      service = null;
      service = await start(h, binary, { SERVICE_RECONCILE_ENABLED: "true", SERVICE_RECONCILE_INTERVAL_SECONDS: String(interval), SERVICE_RECONCILE_FULL_SWEEP_HOURS: "1" });
      await settle(h.sim, service, async () => (await metric(service!, "service_reconciliations_total")) >= 1);
      const swept = await measure(h.sim, service, async () => {
        while ((await metric(service!, "service_reconciliations_total")) < 2) await Bun.sleep(100);
      });
      // Everything but the scan's listing routes is the sweep evaluations' (their shared-head listings are 304s: not counted).
      sweep = { ...swept, per_evaluation: swept.evaluations > 0 ? +((swept.counted - countedOn(swept, LISTING_ROUTES)) / swept.evaluations).toFixed(2) : null };
    }
    return {
      open_pull_requests: n, first_round_seconds: +firstRoundSeconds.toFixed(1), interval_seconds: interval, scan_work_seconds: +Math.max(0, scanSeconds).toFixed(1),
      ...(overlap ? { error: "another scan ran inside a measured window: the figures below are not one scan's" } : {}),
      steady_scan: scan, membership_event: { ...membership, affected_pull_requests: affected }, ...(sweep ? { sweep_hour_scan: sweep } : {}),
    };
  } finally {
    await cleanup(h, service);
  }
}

/** y at x on the polyline through the measured points (sorted by x), extended by its first and last segments (through the origin before a single point). */
function interpolate(points: { x: number; y: number }[]): (x: number) => number {
  const sorted = [...points].sort((a, b) => a.x - b.x);
  if (sorted.length === 0) return () => 0;
  if (sorted.length === 1) return (x) => (sorted[0]!.y / sorted[0]!.x) * x;
  return (x) => {
    let i = sorted.findIndex((p) => p.x >= x);
    if (i === -1) i = sorted.length - 1; // past the last point: the last segment
    if (i === 0) i = 1; // before the first: the first segment
    const a = sorted[i - 1]!;
    const b = sorted[i]!;
    return Math.max(0, a.y + ((b.y - a.y) * (x - a.x)) / (b.x - a.x));
  };
}

/**
 * Counted requests an hour at N open pull requests: the default number of scans an hour times a steady scan's counted cost
 * (interpolated between the measured sizes, extended linearly past them), plus, when a steady scan re-evaluated fewer pull
 * requests than were open, the rolling full sweep re-evaluating each once per FULL_SWEEP_HOURS at the counted cost of one
 * re-evaluation with nothing changed (measured by a scan with a 1 h sweep period; without one, by the membership event).
 */
function sustainable(scans: Awaited<ReturnType<typeof steadyScan>>[]) {
  const sweeps = scans.every((s) => s.steady_scan.evaluations < s.open_pull_requests);
  // A scan's own cost. A build with the rolling sweep: its listing routes only (a steady scan's interval may also hold sweep
  // evaluations, priced below). A build without (every scan re-evaluates every open pull request): everything its scan
  // caused, the evaluations it queued included.
  const scanCost = interpolate(scans.map((s) => ({ x: s.open_pull_requests, y: sweeps ? countedOn(s.steady_scan, LISTING_ROUTES) : s.steady_scan.counted })));
  // A sweep evaluation's cost as measured (step 4) where a scan swept some; otherwise the membership event's evaluation (a
  // changed pull request, the first after a restart: an upper bound). Never extrapolated downwards past the measured sizes.
  const swept = scans.filter((s) => s.sweep_hour_scan?.per_evaluation != null && s.sweep_hour_scan.evaluations >= 5);
  const measuredSweep = swept.length > 0;
  const points = measuredSweep
    ? swept.map((s) => ({ x: s.open_pull_requests, y: s.sweep_hour_scan!.per_evaluation! }))
    : scans.filter((s) => s.membership_event.evaluations > 0).map((s) => ({ x: s.open_pull_requests, y: s.membership_event.counted / s.membership_event.evaluations }));
  const perEvaluationAt = interpolate(points);
  const largestMeasured = Math.max(...points.map((p) => p.x));
  const perEvaluation = (n: number) => (n <= largestMeasured ? perEvaluationAt(n) : Math.max(...points.map((p) => p.y)));
  const hourly = (n: number) => SCANS_PER_HOUR * scanCost(n) + (sweeps ? (n / FULL_SWEEP_HOURS) * perEvaluation(n) : 0);
  // The largest N within budget, counting up (costs need not grow evenly between measured sizes), to 10,000,000 at most.
  let lo = 0;
  for (let n = 1; n <= 10_000_000 && hourly(n) <= HOURLY_BUDGET; n = n < 1000 ? n + 1 : n + Math.ceil(n / 1000)) lo = n;
  return {
    largest_n: lo,
    counted_per_hour_at_10000: Math.round(hourly(10_000)),
    model: {
      counts: "counted (all answers but 304)", scans_per_hour: SCANS_PER_HOUR, reconcile_interval_seconds: DEFAULTS.reconcileIntervalSeconds,
      scan_counted: "a steady scan's counted requests on its listing routes, interpolated between the measured sizes, extended linearly past them",
      full_sweep: sweeps
        ? { hours: FULL_SWEEP_HOURS, counted_per_evaluation: measuredSweep ? "measured sweep evaluations (a scan with a 1 h sweep period), interpolated in N, past the measured sizes their largest" : "the membership event's counted requests per evaluation (an upper bound), interpolated in N, past the measured sizes their largest", points }
        : "none: every steady scan re-evaluates every open pull request",
    },
  };
}

const ONE_REPOSITORY_SIZES = (process.env.ECONOMY_BENCH_ONE_REPOSITORY_SIZES ?? "10,10000").split(",").map(Number);
const ONE_REPOSITORY_INTERVAL_SECONDS = 60;
const RSS_TARGET_MIB = 200;
const EVALUATED_AHEAD_MS = 30 * 60_000;
const CASES = process.env.ECONOMY_BENCH_CASES?.split(",") ?? null;

function rssKiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"));
  return Number(line?.match(/(\d+)/)?.[1] ?? 0);
}

/**
 * A steady scan of one repository with `n` open pull requests, all of them already evaluated: their evaluations are recorded
 * in the store as the listing shows them (head, base commit, updated_at), which is what a service that evaluated them
 * leaves; the rolling sweep's period is the longest (168 h) and no sweep slot comes round while it is measured (below).
 * The governor keeps its default budgets. The startup scan reads every page afresh; the next interval scan is measured.
 */
async function oneRepositoryScan(binary: string, n: number) {
  const h = await harness(binary, ONE_REPOSITORY_INTERVAL_SECONDS);
  let service: RunningBinary | null = null;
  let sampler: ReturnType<typeof setInterval> | null = null;
  try {
    const repo = h.sim.control.mustRepo("acme", "web");
    const open = () => [...repo.pulls.values()].filter((p) => p.state === "open");
    addOpenPullRequests(h.sim, { owner: "acme", repo: "web", count: n - open().length, files: (number) => ({ [`src/bulk/${number}.ts`]: `export const n = ${number};\n` }) });
    // Recorded as evaluated EVALUATED_AHEAD_MS from now, so no rolling-sweep slot comes round during the measurement: a sweep
    // evaluation's own shared-head listing asks for the same pages as the scan (until the open-pull-request index replaces
    // it, issue 26 item 2) and would be counted with the scan's listing requests.
    const evaluatedAt = Date.now() + EVALUATED_AHEAD_MS;
    // What an evaluation of a pull request changing src/ only records as its authority subjects (CODEOWNERS of the scenario:
    // /src/ @bob @acme/core); the scenario's own pull requests (docs/ too) are recorded as unknown (null): affected by any event.
    const srcSubjects = encodeSubjects([userSubject("bob"), teamSubject("acme", "core")]);
    const srcOnly = (p: { baseSha: string; headSha: string }) => diffCommits(h.sim.control.state, p.baseSha, p.headSha).every((f) => f.filename.startsWith("src/"));
    const store = openStore(h.database.target);
    try {
      const pulls = open();
      for (let start = 0; start < pulls.length; start += 1000) {
        await store.execute(function* () {
          for (const p of pulls.slice(start, start + 1000)) {
            yield* recordEvaluation({
              installationId: h.scenario.installationId, repositoryId: repo.id, pullNumber: p.number, headSha: p.headSha, baseSha: p.baseSha,
              updatedAtMs: Date.parse(p.updatedAt), evaluationGeneration: 1, authoritySubjects: srcOnly(p) ? srcSubjects : null, now: evaluatedAt,
            });
          }
        });
      }
    } finally {
      await store.close();
    }
    service = serving(h, await startBinary({ ...h.env, SERVICE_RECONCILE_FULL_SWEEP_HOURS: "168" }, { binary }));
    const pid = service.process.pid;
    const idleKiB = rssKiB(pid);
    let peakKiB = idleKiB;
    sampler = setInterval(() => {
      try {
        peakKiB = Math.max(peakKiB, rssKiB(pid));
      } catch {}
    }, 50);
    await settle(h.sim, service, async () => (await metric(service!, "service_reconciliations_total")) >= 1);
    const installations = () => Object.values(h.sim.counter.snapshot().routes[INSTALLATIONS] ?? {}).reduce((a, b) => a + b, 0);
    const seen = installations();
    let scanStarted = 0;
    let scanEnded = 0;
    const scan = await measure(h.sim, service, async () => {
      while (installations() === seen) await Bun.sleep(20);
      scanStarted = performance.now();
      while ((await metric(service!, "service_reconciliations_total")) < 2) await Bun.sleep(20);
      scanEnded = performance.now();
    });
    const succeeded = await metric(service, 'service_reconciliations_total{result="success"}');
    clearInterval(sampler);
    sampler = null;
    peakKiB = Math.max(peakKiB, rssKiB(pid));
    const openAtScan = open().length;
    const listing = countedOn(scan, LISTING_ROUTES, true);
    const pages = Object.values(scan.routes["GET /repos/{owner}/{repo}/pulls"] ?? {}).reduce((a, b) => a + b, 0);
    const indexed = await indexedRows(h, repo.id);
    // Then, in the same repository with its index as the scans left it, the reconciler off (as in the pull request flows): the
    // 50-file pull request's four steps and one membership event (the docs team gains an active member).
    await service.stop();
    service = null;
    service = await start(h, binary, { SERVICE_RECONCILE_ENABLED: "false" });
    await warmUp(h, service);
    const flow = await pullRequestFlow(h, service, 50);
    const finalHead = repo.branches.get("bench-50")!;
    const finalRun = h.sim.control.checkRuns({ owner: "acme", repo: "web", headSha: finalHead }).find((run) => run.status === "completed");
    const finalCheck = `${finalRun?.conclusion ?? "none"}: ${finalRun?.output?.title ?? ""}`;
    const membership = await measure(h.sim, service, () => h.sim.control.setTeamMembership({ org: "acme", team: "docs", user: "frank", state: "active" }));
    const affected = open().filter((p) => diffCommits(h.sim.control.state, p.baseSha, p.headSha).some((f) => f.filename.startsWith("docs/"))).length;
    return {
      open_pull_requests: openAtScan, interval_seconds: ONE_REPOSITORY_INTERVAL_SECONDS,
      scan_seconds: +((scanEnded - scanStarted) / 1000).toFixed(2),
      listing_requests: listing, listing_target: Math.ceil(n / 100) + 3, pull_request_pages: pages,
      listing_not_modified: countedOn(scan, LISTING_ROUTES, true) - countedOn(scan, LISTING_ROUTES),
      evaluations: scan.evaluations, successful_attempts: succeeded,
      rss_mib: { idle_at_start: +(idleKiB / 1024).toFixed(1), peak_over_both_scans: +(peakKiB / 1024).toFixed(1) },
      indexed_rows_after_scans: indexed,
      steady_scan: scan,
      pr_50_files: flow, pr_50_files_final_check: finalCheck,
      membership_event: { ...membership, affected_pull_requests: affected },
    };
  } finally {
    if (sampler) clearInterval(sampler);
    await cleanup(h, service);
  }
}

/** Rows of the open-pull-request index for the repository (what the service's shared-head check and fan-out read); null: no index (a build from before it). */
async function indexedRows(h: Harness, repositoryId: number): Promise<number | null> {
  const store = openStore(h.database.target);
  try {
    return await store.execute(() => readIndexCount(repositoryId));
  } catch {
    return null;
  } finally {
    await store.close();
  }
}
function* readIndexCount(repositoryId: number) {
  let count = 0;
  for (let after: number | null = null; ;) {
    const page: { number: number }[] = yield* readIndexPage(repositoryId, after, 5000);
    if (page.length === 0) return count;
    count += page.length;
    after = page.at(-1)!.number;
  }
}

const progress = (message: string) => console.error(`economy-bench: ${message}`);
/** The one-repository case for every build, every size, in the same run: its results and its targets. */
async function oneRepositoryCase() {
  const results: Record<string, Awaited<ReturnType<typeof oneRepositoryScan>>[]> = {};
  const targets: Record<string, boolean> = {};
  const errors: Record<string, string> = {};
  for (const binary of binaries) {
    results[binary.name] = [];
    for (const n of ONE_REPOSITORY_SIZES) {
      progress(`${binary.name}: one repository, steady scan with ${n} open pull requests`);
      let r: Awaited<ReturnType<typeof oneRepositoryScan>>;
      try {
        r = await oneRepositoryScan(binary.path, n);
      } catch (error) {
        // A build that never settles (an older one failing closed and retrying) is reported, and the other builds still run.
        errors[`${binary.name}: N=${n}`] = String(error).slice(0, 2000);
        targets[`${binary.name}: one repository with N=${n} open pull requests ran to the end (see errors)`] = false;
        continue;
      }
      results[binary.name]!.push(r);
      targets[`${binary.name}: steady scan at N=${r.open_pull_requests} in one repository: listing requests <= ceil(N/100) + 3 = ${r.listing_target} (${r.listing_requests}, ${r.listing_not_modified} of them 304), in ${r.scan_seconds} s of a ${r.interval_seconds} s interval`] =
        r.listing_requests <= r.listing_target && r.scan_seconds < r.interval_seconds / 2 && r.successful_attempts >= 2 && r.evaluations === 0;
      targets[`${binary.name}: service RSS with N=${r.open_pull_requests} open pull requests (${r.indexed_rows_after_scans} indexed) and scans in progress < ${RSS_TARGET_MIB} MiB (peak ${r.rss_mib.peak_over_both_scans} MiB)`] = r.rss_mib.peak_over_both_scans < RSS_TARGET_MIB;
      // Exactly the affected: fewer would leave an affected result stale (a build that cannot list them evaluates none).
      targets[`${binary.name}: membership event at N=${r.open_pull_requests} in one repository evaluates the affected pull requests and only them (${r.membership_event.evaluations} evaluations, ${r.membership_event.affected_pull_requests} affected)`] =
        r.membership_event.evaluations === r.membership_event.affected_pull_requests;
    }
    const runs = results[binary.name]!;
    if (runs.length === 0) continue;
    const smallest = runs.reduce((a, b) => (b.open_pull_requests < a.open_pull_requests ? b : a));
    for (const r of runs) {
      const total = r.pr_50_files.all_steps.total;
      targets[`${binary.name}: 50-file pull request, four steps in one repository with N=${r.open_pull_requests} open pull requests <= 30 requests and no more than at N=${smallest.open_pull_requests} (${total}; ${smallest.pr_50_files.all_steps.total} at N=${smallest.open_pull_requests}; final check: ${r.pr_50_files_final_check})`] =
        total <= 30 && total <= smallest.pr_50_files.all_steps.total;
    }
  }
  return {
    measured_by: "one interval scan, the governor at its default budgets, then (restarted with the reconciler off, the index kept) the 50-file pull request's four steps and a membership event, as in the pull request flows; listing requests = every answer on GET /app/installations, /installation/repositories and /repos/{owner}/{repo}/pulls during it; scan_seconds from its first request to its attempt being counted; RSS = VmRSS of the service from /proc/<pid>/status every 50 ms from start through both scans",
    targets, results, ...(Object.keys(errors).length > 0 ? { errors } : {}),
  };
}

if (CASES?.includes("one_repository")) {
  const oneRepository = await oneRepositoryCase();
  console.log(JSON.stringify({
    benchmark: "forge request economy, one repository: a steady reconciler scan at N open pull requests (counted by the simulator; PostgreSQL or SQLite)",
    database: process.env.TEST_POSTGRES_URL ? "postgresql" : "sqlite",
    ...oneRepository,
  }, null, 2));
  process.exit(0);
}
const results: Record<string, unknown> = {};
// ECONOMY_BENCH_RESULTS=FILE: no run; the model and the table are computed again from the measurements of a stored run (its JSON).
const stored = process.env.ECONOMY_BENCH_RESULTS;
if (stored) {
  const previous = JSON.parse(await Bun.file(stored).text());
  const measured = (previous.benchmarks?.["economy-bench"]?.result ?? previous).results as Record<string, { scans: Awaited<ReturnType<typeof steadyScan>>[] }>;
  binaries.length = 0;
  for (const [name, r] of Object.entries(measured)) {
    binaries.push({ name, path: "(stored)" });
    results[name] = { ...r, sustainable: sustainable(r.scans) };
  }
}
for (const binary of stored ? [] : binaries) {
  progress(`${binary.name}: pull request flows`);
  const flows = await pullRequestFlows(binary.path);
  const scans = [];
  for (const n of SIZES) {
    progress(`${binary.name}: steady scan with ${n} open pull requests`);
    scans.push(await steadyScan(binary.path, n));
  }
  results[binary.name] = { binary: binary.path, governor_budgets_lifted: unpaced.get(binary.path) ?? false, ...flows, scans, sustainable: sustainable(scans) };
}

const oneRepository = stored ? null : await oneRepositoryCase();

type BinaryResult = { pr_50_files: { steps: Record<string, Step>; all_steps: { total: number; counted: number } }; pr_2999_files: { steps: Record<string, Step>; all_steps: { total: number; counted: number } }; scans: Awaited<ReturnType<typeof steadyScan>>[]; sustainable: ReturnType<typeof sustainable> };
const view = (r: BinaryResult) => ({
  pr_50_files: { ...Object.fromEntries(Object.entries(r.pr_50_files.steps).map(([k, s]) => [k, `${s.total} (${s.counted} counted)`])), all: `${r.pr_50_files.all_steps.total} (${r.pr_50_files.all_steps.counted} counted)` },
  pr_2999_files: { ...Object.fromEntries(Object.entries(r.pr_2999_files.steps).map(([k, s]) => [k, `${s.total} (${s.counted} counted)`])), all: `${r.pr_2999_files.all_steps.total} (${r.pr_2999_files.all_steps.counted} counted)` },
  steady_scan: Object.fromEntries(r.scans.map((s) => [`n_${s.open_pull_requests}`, `${s.steady_scan.total} (${s.steady_scan.counted} counted, ${s.steady_scan.evaluations} evaluations)`])),
  membership_event: Object.fromEntries(r.scans.map((s) => [`n_${s.open_pull_requests}`, `${s.membership_event.total} (${s.membership_event.counted} counted, ${s.membership_event.evaluations} evaluations, ${s.membership_event.affected_pull_requests} affected)`])),
  sweep_evaluation: Object.fromEntries(r.scans.map((s) => [`n_${s.open_pull_requests}`, s.sweep_hour_scan ? `${s.sweep_hour_scan.per_evaluation ?? "-"} counted each (${s.sweep_hour_scan.evaluations} evaluations in a scan with a 1 h sweep)` : "no sweep"])),
  largest_n_within_2500_counted_per_hour: r.sustainable.largest_n,
});
const last = results[binaries.at(-1)!.name] as BinaryResult;
const scanTarget = (n: number) => Math.ceil(n / 100) + REPOSITORIES + 2;
/** Evaluations the rolling full sweep owes in one steady scan's interval (each open pull request once per FULL_SWEEP_HOURS). */
const sweepShare = (s: { open_pull_requests: number; interval_seconds: number }) => Math.ceil((s.open_pull_requests * s.interval_seconds) / (FULL_SWEEP_HOURS * 3600));
console.log(JSON.stringify({
  benchmark: "forge request economy: requests the compiled service sends the forge simulator (counted by the simulator; PostgreSQL or SQLite)",
  counts: "total = every answer; counted = every answer but 304 (a 304 to a conditional request spends no primary rate limit); step figures leave out the identity probe (GET /app)",
  table: Object.fromEntries(Object.entries(results).map(([name, r]) => [name, view(r as BinaryResult)])),
  targets: {
    [`50-file pull request, four steps <= 30 requests (${binaries.at(-1)!.name}: ${last.pr_50_files.all_steps.total}; issue's figure for the old main: 59)`]: last.pr_50_files.all_steps.total <= 30,
    // The scan's own requests are its listings. The rolling full sweep (item 2) re-evaluates each open pull request once per
    // FULL_SWEEP_HOURS, spread evenly, so the measured interval may hold its share: the evaluations there may not exceed it.
    ...Object.fromEntries(last.scans.map((s) => [
      `steady scan at N=${s.open_pull_requests}: listing requests <= ceil(N/100) + ${REPOSITORIES} repositories + 2 = ${scanTarget(s.open_pull_requests)}, and evaluations <= the rolling sweep's share of its ${s.interval_seconds} s interval, ${sweepShare(s)} (${binaries.at(-1)!.name}: ${countedOn(s.steady_scan, LISTING_ROUTES, true)} listing requests, ${s.steady_scan.evaluations} evaluations, ${s.steady_scan.total} requests in all)`,
      countedOn(s.steady_scan, LISTING_ROUTES, true) <= scanTarget(s.open_pull_requests) && s.steady_scan.evaluations <= sweepShare(s),
    ])),
    ...Object.fromEntries(last.scans.map((s) => [
      `membership event at N=${s.open_pull_requests}: evaluations <= affected pull requests (${binaries.at(-1)!.name}: ${s.membership_event.evaluations} of ${s.membership_event.affected_pull_requests})`,
      s.membership_event.evaluations <= s.membership_event.affected_pull_requests,
    ])),
    [`default settings sustain >= 10,000 open pull requests within ${HOURLY_BUDGET} counted requests an hour (${binaries.at(-1)!.name}: ${last.sustainable.largest_n})`]: last.sustainable.largest_n >= 10_000,
    ...oneRepository?.targets,
  },
  results,
  ...(oneRepository ? { one_repository: { measured_by: oneRepository.measured_by, results: oneRepository.results, ...("errors" in oneRepository ? { errors: oneRepository.errors } : {}) } } : {}),
}, null, 2));
