import { afterEach, describe, expect, test } from "bun:test";
import { pino } from "pino";
import type { Scenario } from "../server/simulator/scenario.ts";
import type { ForgeSimulator } from "../server/simulator/simulator.ts";
import { BACKENDS, type BackendName, type TestDatabase } from "./support/databases.ts";
import { CHECK_NAME, startForgeRig } from "./support/forge-rig.ts";
import { waitUntil } from "./support/service.ts";
import type { ForgeClient } from "../server/forge/index.ts";
import { createMetrics } from "../server/observability/metrics.ts";
import { all, claimNext, type JobRow, readFences, renewLease, retryJob, type Store, supersedeAndQueue } from "../server/store/index.ts";
import type { Query } from "../server/store/op.ts";
import type { CheckTransition } from "../server/worker/context.ts";
import { createWorker, DEFAULT_WORKER_OPTIONS, type Worker, type WorkerOptions } from "../server/worker/worker.ts";

/**
 * Job leases when the work outlives them (issue 16 item 3) or the database fails under it (issue 17 item 3), with the real
 * worker against the forge simulator on both backends. A lease that lapses is never the end of the work: the row stays for
 * the next claim, which publishes the right result. A slot that stopped working on a row stops renewing its lease.
 */
const LEASE_MS = 300;
const OPTIONS: WorkerOptions = { ...DEFAULT_WORKER_OPTIONS, concurrency: 1, leaseMs: LEASE_MS, pollMs: 25, drainMs: 500, retryCapSeconds: 1, jobDeadlineMs: 1_500 };

/** The first statement of each operation a worker runs, as its store sees it: which operation, with which parameters. */
type Seen = { readonly op: unknown; readonly params: readonly unknown[]; readonly at: number };

/**
 * The store as one worker sees it: `before` sees each operation (identified by its generator function) and may stall, fail
 * or hang it; `guards` may do the same to the publication guards. Everything else reaches the real store. `claimed` lists
 * the rows this worker claimed, each with its claim's lease token as lease_owner.
 */
type WatchedStore = Store & { readonly claimed: JobRow[] };
function watchedStore(store: Store, hooks: { before?: (seen: Seen) => void | Promise<void>; guards?: () => void | Promise<void> } = {}): WatchedStore {
  const claimed: JobRow[] = [];
  return {
    claimed,
    backend: store.backend,
    ping: () => store.ping(),
    schemaIdentity: () => store.schemaIdentity(),
    async execute(op, options) {
      const generator = op();
      const first = generator.next().value as Query; // operations build their first statement without side effects
      generator.return(undefined as never);
      const seen = { op: Object.getPrototypeOf(generator), params: first?.params ?? [], at: Date.now() };
      await hooks.before?.(seen);
      const result = await store.execute(op, options);
      if (is(seen, claimNext) && result !== null) claimed.push(result as JobRow);
      return result;
    },
    acquireSharedGuard: (installationId, timeoutMs) => store.acquireSharedGuard(installationId, timeoutMs),
    async acquirePublicationGuards(installationId, repositoryId, headSha, timeoutMs) {
      await hooks.guards?.();
      return store.acquirePublicationGuards(installationId, repositoryId, headSha, timeoutMs);
    },
    queueGauges: () => store.queueGauges(),
    close: () => store.close(),
  };
}
const is = (seen: Seen, op: (...args: never[]) => unknown) => seen.op === op.prototype;
const never = () => new Promise<never>(() => {});

type Rig = {
  sim: ForgeSimulator;
  scenario: Scenario;
  database: TestDatabase;
  store: Store;
  forge: ForgeClient;
  logs: string[];
  transitions: CheckTransition[];
  workers: Worker[];
};

async function startRig(backend: BackendName): Promise<Rig> {
  // alice and bob approved: the right result is success.
  const { sim, scenario, database, store, forge, logs } = await startForgeRig(backend, ["alice", "bob"]);
  const repository = { installationId: scenario.installationId, repositoryId: sim.control.mustRepo(scenario.org, scenario.repo).id, owner: scenario.org, name: scenario.repo };
  await store.execute(() => supersedeAndQueue(repository, [{ number: scenario.pullNumber, headSha: scenario.headSha }], Date.now()));
  return { sim, scenario, database, store, forge, logs, transitions: [], workers: [] };
}

function startWorker(rig: Rig, workerId: string, seams: { store?: Store; forge?: ForgeClient } = {}): Worker {
  const log = pino({ level: "debug" }, { write: (line: string) => void rig.logs.push(line) });
  const worker = createWorker(
    {
      store: seams.store ?? rig.store, forge: seams.forge ?? rig.forge, metrics: createMetrics(), log, now: () => Date.now(), workerId,
      guardTimeoutMs: 2_000, resetTimeoutMs: 2_000, onTransition: (event) => rig.transitions.push(event),
      settings: { checkName: CHECK_NAME, policyPath: ".forge/service-policy.toml", forgeDirectory: ".forge", allowInsecureChanges: false, organizationPolicyRepository: ".forge" },
    },
    OPTIONS,
  );
  rig.workers.push(worker);
  worker.start();
  return worker;
}

async function waitForSuccess(rig: Rig, timeoutMs = 15_000) {
  const checks = () => rig.sim.control.checkRuns({ owner: rig.scenario.org, repo: rig.scenario.repo, headSha: rig.scenario.headSha }) as Array<{ status: string; conclusion: string | null }>;
  await waitUntil(() => checks()[0]?.status === "completed", "the check to complete", timeoutMs).catch((error) => {
    throw new Error(`${(error as Error).message}; saw ${JSON.stringify(checks())}\n${rig.logs.slice(-8).join("")}`);
  });
  expect(checks()).toEqual([expect.objectContaining({ status: "completed", conclusion: "success" })]);
}

const jobs = (rig: Rig) => rig.store.execute(() => all<{ id: number; state: string; lease_owner: string | null }>("select id, state, lease_owner from jobs"));

describe.each(BACKENDS)("job leases on %s", (backend) => {
  let rig: Rig | undefined;
  afterEach(async () => {
    if (!rig) return;
    // A worker slot that never lets go must not hang the suite: stop is bounded here, whatever the worker does.
    await Promise.race([Promise.all(rig.workers.map((w) => w.stop())), Bun.sleep(2_000)]);
    await rig.store.close();
    await rig.sim.stop();
    await rig.database.drop();
    rig = undefined;
  });

  test("an evaluation that outlives its lease is run again by the next claim and publishes; the claim that lost the lease deletes nothing", async () => {
    rig = await startRig(backend);
    // The first evaluation stalls the whole process for three leases once its evidence is in (a long synchronous step).
    let stalled = false;
    const forge: ForgeClient = {
      ...rig.forge,
      async gatherEvidence(...args) {
        const gathered = await rig!.forge.gatherEvidence(...args);
        if (!stalled) {
          stalled = true;
          Bun.sleepSync(3 * LEASE_MS);
        }
        return gathered;
      },
    };
    const store = watchedStore(rig.store);
    startWorker(rig, "worker-a", { forge, store });
    await waitForSuccess(rig);
    expect(stalled).toBe(true);
    // The stalled claim published nothing; the row survived it and a new claim of the same worker completed it.
    await waitUntil(async () => (await jobs(rig!)).length === 0, "the queue to drain");
    expect(rig.transitions.filter((t) => t.status === "completed")).toHaveLength(1);
    const [first, ...later] = store.claimed;
    expect(later.some((row) => row.id === first!.id && row.lease_owner !== first!.lease_owner)).toBe(true);
  }, 60_000);

  test("a slot stuck on the database past the job deadline stops renewing; the lease lapses and another claim runs the job", async () => {
    rig = await startRig(backend);
    const renewals: Seen[] = [];
    // Worker a's first publication waits forever on the guards (a reserved connection whose backend died never answers).
    let hung = false;
    const store = watchedStore(rig.store, {
      before: (seen) => void (is(seen, renewLease) && renewals.push(seen)),
      guards: () => {
        if (hung) return;
        hung = true;
        return never();
      },
    });
    startWorker(rig, "worker-a", { store });
    await waitUntil(() => hung, "worker a to get stuck");
    const other = watchedStore(rig.store);
    startWorker(rig, "worker-b", { store: other });
    await waitForSuccess(rig);
    const [first] = store.claimed;
    const firstToken = first!.lease_owner;
    expect([...store.claimed, ...other.claimed].some((row) => row.id === first!.id && row.lease_owner !== firstToken)).toBe(true);
    const claimedAt = first!.lease_expires_at_ms! - LEASE_MS;
    const renewedAfter = renewals.filter((r) => r.params[1] === firstToken).map((r) => r.at - claimedAt);
    expect(renewedAfter.length).toBeGreaterThan(0);
    // Renewed while it worked, never past its deadline (one renewal interval of slack for timers).
    expect(Math.max(...renewedAfter)).toBeLessThan(OPTIONS.jobDeadlineMs + LEASE_MS / 3 + 100);
    // Nothing renews the stuck claim's lease after the job was taken over.
    const settled = renewals.length;
    await Bun.sleep(3 * LEASE_MS);
    expect(renewals.slice(settled).filter((r) => r.params[1] === firstToken)).toEqual([]);
    await waitUntil(async () => (await jobs(rig!)).length === 0, "the queue to drain");
  }, 60_000);

  test("shutdown with a handler stuck on the database returns within the drain bound and hands the lease back", async () => {
    rig = await startRig(backend);
    let hung = false;
    const store = watchedStore(rig.store, {
      guards: () => {
        hung = true;
        return never();
      },
    });
    const worker = startWorker(rig, "worker-a", { store });
    await waitUntil(() => hung, "worker a to get stuck");
    const started = performance.now();
    await Promise.race([worker.stop(), Bun.sleep(10_000)]);
    // The drain bound, then at most a second for the cancelled handler before the slot gives it up.
    expect(performance.now() - started).toBeLessThan(OPTIONS.drainMs + 1_000 + 500);
    expect(await jobs(rig)).toEqual([{ id: store.claimed[0]!.id, state: "pending", lease_owner: null }]);
  }, 60_000);

  test("a slot whose job failed on the database stops renewing at once, also when handing the job back hangs; the job runs again", async () => {
    rig = await startRig(backend);
    const renewals: Seen[] = [];
    let failedAt = 0;
    const store: WatchedStore = watchedStore(rig.store, {
      before: (seen) => {
        if (is(seen, renewLease)) renewals.push(seen);
        if (is(seen, readFences) && failedAt === 0) {
          // The first claim's first database call fails (its connection was terminated)...
          failedAt = Date.now();
          throw Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" });
        }
        // ...and the statement handing its row back never settles.
        if (is(seen, retryJob) && seen.params[1] === store.claimed[0]?.lease_owner) return never();
      },
    });
    startWorker(rig, "worker-a", { store });
    await waitForSuccess(rig);
    const [first, ...later] = store.claimed;
    expect(failedAt).toBeGreaterThan(0);
    // No renewal of the failed claim starts after the failure (one already in flight may finish).
    expect(renewals.filter((r) => r.params[1] === first!.lease_owner && r.at > failedAt + 20)).toEqual([]);
    // The same worker took the job over once the lease lapsed: a new claim, not the stuck one.
    expect(later.some((row) => row.id === first!.id && row.lease_owner !== first!.lease_owner)).toBe(true);
    await waitUntil(async () => (await jobs(rig!)).length === 0, "the queue to drain");
  }, 60_000);
});
