import { afterEach, describe, expect, test } from "bun:test";
import { pino } from "pino";
import { createScenario, generateAppKeys, POLICY_PATH, type Scenario } from "../simulator/scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "../simulator/simulator.ts";
import { BACKENDS, createTestDatabase, type TestDatabase } from "../../e2e/support/databases.ts";
import { createForgeClient } from "../forge/index.ts";
import { createMetrics } from "../observability/metrics.ts";
import { decodeRecordBody } from "../records/codec.ts";
import type { DecisionRecordBody } from "../records/codec.ts";
import { acceptDirectTrigger, all, claimNext, clearCheckDigest, completeJob, type JobRow, migrateDatabase, type Op, openStore, type Store, supersedeAndQueue } from "../store/index.ts";
import type { Step } from "../store/op.ts";
import type { WorkerContext } from "./context.ts";
import { evaluatePullRequest } from "./jobs/evaluate-pull-request.ts";
import { invalidateHead } from "./jobs/invalidate-head.ts";

/**
 * Decision records written by the worker's publication (DESIGN 3.10, issue 28 items 1 and 6): one per completing write, before
 * it (unconfirmed) and confirmed after it, at no added forge request and no added statement on PostgreSQL.
 */
type StoredRecord = { id: number; pending_token: string | null; confirmed_at_ms: number | null; conclusion: string; shared_generation: number; body: DecisionRecordBody };

describe.each(BACKENDS)("decision records of published checks on %s", (backend) => {
  let sim: ForgeSimulator;
  let database: TestDatabase;
  let store: Store;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
    await sim?.stop();
  });

  /** Every operation's statements, in order, and whether PostgreSQL would send it alone (one statement, no transaction). */
  const operations: { statements: string[] }[] = [];
  function countStatements(target: Store) {
    const execute = target.execute.bind(target);
    target.execute = ((op: () => Op<unknown>, options) => {
      const seen: string[] = [];
      operations.push({ statements: seen });
      return execute(function* () {
        const steps = op();
        let step = steps.next();
        while (!step.done) {
          const value: Step = step.value;
          if ("batch" in value) seen.push(...value.batch.map((q) => (typeof q.sql === "string" ? q.sql : q.sql[target.backend])));
          else if ("sql" in value) seen.push(typeof value.sql === "string" ? value.sql : value.sql[target.backend]);
          step = steps.next(yield value);
        }
        return step.value;
      }, options);
    }) as Store["execute"];
  }

  async function rig() {
    sim = startForgeSimulator({});
    const scenario: Scenario = await createScenario(sim, { keys: generateAppKeys() });
    database = await createTestDatabase(backend);
    await migrateDatabase(database.target, Date.now());
    store = openStore(database.target);
    const log = pino({ level: "silent" });
    const forge = createForgeClient({ apiUrl: sim.url, appId: scenario.appId, privateKey: scenario.privateKey, requestTimeoutMs: 5_000, checkName: "Service / approval", logger: log });
    const ctx: WorkerContext = {
      store, forge, metrics: createMetrics(), log, now: () => Date.now(), workerId: "w", guardTimeoutMs: 5_000, resetTimeoutMs: 5_000,
      settings: { checkName: "Service / approval", policyPath: POLICY_PATH, forgeDirectory: ".forge", allowInsecureChanges: false, organizationPolicyRepository: ".forge" },
    };
    const repo = { installationId: scenario.installationId, repositoryId: sim.control.mustRepo(scenario.org, scenario.repo).id, owner: scenario.org, name: scenario.repo };
    const pull = { number: scenario.pullNumber, headSha: scenario.headSha };
    const run = async (kind: JobRow["kind"], handler: (ctx: WorkerContext, row: JobRow, signal: AbortSignal) => Promise<unknown>) => {
      const row = (await store.execute(() => claimNext("w", Date.now(), 30_000)))!;
      expect(row.kind).toBe(kind);
      try {
        return await handler(ctx, row, new AbortController().signal);
      } finally {
        await store.execute(() => completeJob(row.id, "w", row.merges, Date.now()));
      }
    };
    const records = async (): Promise<StoredRecord[]> => (await store.execute(() => all<Omit<StoredRecord, "body"> & { body: Uint8Array }>(
      "select id, pending_token, confirmed_at_ms, conclusion, shared_generation, body from decision_records order by id",
    ))).map((row) => ({ ...row, body: decodeRecordBody(new Uint8Array(row.body)) }));
    const opened = async () => {
      await store.execute(() => acceptDirectTrigger({ ...repo, deliveryId: crypto.randomUUID(), event: "pull_request", action: "opened", pullNumber: pull.number, headSha: pull.headSha, now: Date.now() }));
      await run("head_invalidation", invalidateHead);
      return run("evaluation", evaluatePullRequest);
    };
    const again = async () => {
      await store.execute(() => supersedeAndQueue(repo, [pull], Date.now(), { background: false }));
      return run("evaluation", evaluatePullRequest);
    };
    /** The reviews that satisfy both owner sets: the App on docs/ (delegated) and dave (of @acme/core) on src/. */
    const approveAll = async () => {
      const review = (user: string) => sim.control.submitReview({ owner: scenario.org, repo: scenario.repo, number: pull.number, user, state: "APPROVED" });
      return { bot: await review(`${scenario.botSlug}[bot]`), dave: await review("dave") };
    };
    return { scenario, repo, pull, run, records, opened, again, approveAll };
  }

  test("a failure and then a success each leave one confirmed record naming the check run, the reviews, the rule and the blob SHAs", async () => {
    const { scenario, pull, records, opened, again, approveAll } = await rig();
    await opened();
    const [failure] = await records();
    expect(failure).toMatchObject({ conclusion: "failure", pending_token: expect.stringMatching(/^pending:/) });
    expect(failure!.confirmed_at_ms).not.toBeNull();
    const check = sim.control.checkRuns({ owner: scenario.org, repo: scenario.repo, headSha: pull.headSha })[0] as { id: number; output: { title: string } };
    expect(failure!.body).toMatchObject({ conclusion: "failure", head_sha: pull.headSha, base_sha: scenario.baseSha, check_run_id: check.id, title: check.output.title, pull_request: pull.number });
    expect(failure!.body.reasons).toEqual([]);

    const reviews = await approveAll();
    await again();
    const rows = await records();
    expect(rows.map((r) => [r.conclusion, r.confirmed_at_ms !== null])).toEqual([["failure", true], ["success", true]]);
    const success = rows[1]!.body;
    const repository = sim.control.mustRepo(scenario.org, scenario.repo);
    const blob = (path: string) => sim.control.state.commits.get(scenario.baseSha)!.tree.get(path) ?? null;
    expect(success.codeowners).toEqual({ path: ".forge/CODEOWNERS", blob_sha: blob(".forge/CODEOWNERS"), bytes: expect.any(Number) });
    expect(success.repository_policy).toMatchObject({ path: POLICY_PATH, blob_sha: blob(POLICY_PATH) });
    expect(success.repository).toEqual({ id: repository.id, full_name: `${scenario.org}/${scenario.repo}` });
    const satisfied = success.owner_sets.flatMap((set) => set.satisfied_by);
    const user = (login: string) => sim.control.state.accounts.get(login.toLowerCase())!.id;
    const by = (login: string, review: { id: number }, rule: "direct_owner" | "team_membership" | "app_delegation", via: string) =>
      ({ review_id: review.id, reviewer_id: user(login), reviewer_login: login, commit_id: pull.headSha, submitted_at: expect.any(String), rule, via });
    // The sets in order of their owners: src/ (@acme/core @bob), then docs/ (@acme/docs @alice).
    expect(satisfied).toEqual([by("dave", reviews.dave, "team_membership", "@acme/core"), by(`${scenario.botSlug}[bot]`, reviews.bot, "app_delegation", scenario.botSlug)]);
    expect(success.inputs?.reviews).toMatchObject({ complete: true });
    expect(success.settings).toEqual({ check_name: "Service / approval", policy_path: POLICY_PATH, forge_directory: ".forge", allow_insecure_changes: false });
  }, 30_000);

  test("a republication of the same result on the same head and generation writes no second record; the unchanged check writes none", async () => {
    const { repo, pull, records, opened, again } = await rig();
    await opened();
    await again(); // the check shows this already: no write, no record
    expect(await records()).toHaveLength(1);
    // A reset cleared the digest: the same result is written again, at the same shared generation.
    await store.execute(() => clearCheckDigest(repo.repositoryId, pull.headSha, Date.now()));
    const writes = sim.requests.length;
    await again();
    expect(sim.requests.slice(writes).some((r) => r.method === "PATCH")).toBe(true);
    expect(await records()).toHaveLength(1);
  }, 30_000);

  test("a completing write that fails leaves its record unconfirmed; the attempt that lands confirms that same record", async () => {
    const { records, opened, again, approveAll } = await rig();
    await opened();
    await approveAll();
    sim.faults.add({ kind: "status", status: 500, path: "/repos/acme/web/check-runs/\\d+", method: "PATCH", times: 1 });
    expect(await again().then(() => "published", () => "failed")).toBe("failed");
    expect((await records()).map((r) => [r.conclusion, r.confirmed_at_ms !== null])).toEqual([["failure", true], ["success", false]]);
    await again();
    expect((await records()).map((r) => [r.conclusion, r.confirmed_at_ms !== null])).toEqual([["failure", true], ["success", true]]);
  }, 30_000);

  test("recording adds no forge request, and no statement on PostgreSQL: the record rides on the token's write and the settle", async () => {
    const { opened, again, approveAll } = await rig();
    countStatements(store);
    operations.length = 0;
    const requests = sim.requests.length;
    await opened();
    await approveAll();
    await again();
    const recording = operations.filter((op) => op.statements.some((sql) => /decision_records/.test(sql)));
    // Two publications: each wrote its record with its token and confirmed it with its settle, nothing else.
    expect(recording).toHaveLength(4);
    for (const op of recording) {
      expect(op.statements.every((sql) => /head_checks/.test(sql) || /decision_records/.test(sql))).toBe(true);
      expect(op.statements.some((sql) => /head_checks/.test(sql))).toBe(true);
      // PostgreSQL: one statement of data-modifying CTEs, sent alone; SQLite: the two in one batch of one transaction.
      expect(op.statements).toHaveLength(backend === "postgresql" ? 1 : 2);
    }
    const forgeRequests = sim.requests.slice(requests).filter((r) => !r.path.endsWith("/access_tokens"));
    console.log(JSON.stringify({ backend, publication_cost: { store_operations: operations.length, statements: operations.reduce((n, op) => n + op.statements.length, 0), forge_requests: forgeRequests.length } }));
  }, 30_000);
});
