import { afterEach, describe, expect, test } from "bun:test";
import { BACKENDS } from "../../e2e/support/databases.ts";
import { type Harness, ingressHarness } from "../../e2e/support/ingress-harness.ts";
import { INSTALLATION, pullRequestEvent, SHA_A, WEB } from "../../e2e/support/payloads.ts";
import { sampleDecisionBody } from "../records/fixtures.ts";
import { pino } from "pino";
import { EnrollmentCache, settleEnrollments } from "../records/enrollment.ts";
import { confirmDecision, PostgresStore, readMergesAwaitingEnrollment, recordPendingDecision } from "../store/index.ts";

/** A merged `closed` delivery records its merge in its acceptance (DESIGN 3.10, issue 28 item 2). */
describe.each(BACKENDS)("merge records at ingress on %s", (backend) => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });
  const MERGE_COMMIT = "e".repeat(40);
  const BASE_SHA = (pullRequestEvent("closed").pull_request as { base: { sha: string } }).base.sha;
  const mergedEvent = (merged = true) => {
    const payload = pullRequestEvent("closed");
    payload.pull_request = { ...payload.pull_request, state: "closed", merged, merge_commit_sha: merged ? MERGE_COMMIT : null, merged_by: merged ? { login: "bob", id: 44, type: "User" } : null, merged_at: merged ? "2026-11-22T10:00:00Z" : null } as typeof payload.pull_request;
    return payload;
  };
  const unapprovedCount = async () => (await h.metrics.unapprovedMerges.get()).values.reduce((sum, v) => sum + v.value, 0);
  const warnings = () => h.logs.filter((line) => line.includes("unapproved merge"));
  const merges = () => h.rows<{ pull_number: number; head_sha: string; merge_commit_sha: string; merged_by_id: number; merged_by_login: string; merged_at_ms: number; decision_id: number | null; unapproved: unknown; recovered: unknown; enrollment: string | null; base_sha: string | null }>(
    "select pull_number, head_sha, merge_commit_sha, merged_by_id, merged_by_login, merged_at_ms, decision_id, unapproved, recovered, enrollment, base_sha from merge_records",
  );
  const truth = (value: unknown) => value === true || Number(value) === 1;

  /** What the worker or the reconciler does next: reads the policy at the base commit (here: one that enables the service). */
  const settle = async () => {
    const pending = await h.store.execute(() => readMergesAwaitingEnrollment(null));
    const forge = { readFile: async () => ({ kind: "found", path: ".forge/service-policy.toml", text: "schema_version = 1\nenabled = true\n", bytes: 32 }) as const };
    return settleEnrollments({ store: h.store, forge, policyPath: ".forge/service-policy.toml", cache: new EnrollmentCache(), now: () => 9_000, metrics: h.metrics, log: pino({ level: "warn" }, { write: (line: string) => void h.logs.push(line) }) }, pending);
  };

  test("a merge without a success is recorded unapproved with its enrollment unread, and counted and logged once when it is read, however often it is delivered", async () => {
    h = await ingressHarness(backend);
    expect((await h.send("pull_request", "m1", mergedEvent())).status).toBe(202);
    const [row] = await merges();
    expect(row).toMatchObject({ pull_number: 7, head_sha: SHA_A, merge_commit_sha: MERGE_COMMIT, merged_by_login: "bob", decision_id: null, enrollment: null, base_sha: BASE_SHA });
    expect([Number(row!.merged_by_id), Number(row!.merged_at_ms), truth(row!.unapproved), truth(row!.recovered)]).toEqual([44, Date.parse("2026-11-22T10:00:00Z"), true, false]);
    // The acceptance makes no forge request: nothing is counted until the enrollment is read.
    expect(await unapprovedCount()).toBe(0);
    expect(await settle()).toBe(1);
    expect(await unapprovedCount()).toBe(1);
    expect(warnings()).toHaveLength(1);
    const warning = JSON.parse(warnings()[0]!);
    expect(warning).toMatchObject({ level: 40, installation_id: INSTALLATION, repository_id: WEB.id, pull_number: 7, head_sha: SHA_A, merge_record: expect.stringMatching(/^m\d+$/) });
    // Identifiers only: no login, title or repository name.
    expect(warnings()[0]).not.toContain("bob");
    expect(warnings()[0]).not.toContain("acme");
    // A redelivery (the same delivery, or the same merge delivered again) records and reports nothing more.
    expect((await h.send("pull_request", "m1", mergedEvent())).status).toBe(202);
    expect((await h.send("pull_request", "m2", mergedEvent())).status).toBe(202);
    expect(await settle()).toBe(0);
    expect(await merges()).toHaveLength(1);
    expect(await unapprovedCount()).toBe(1);
    expect(warnings()).toHaveLength(1);
    expect(await h.metrics.registry.getSingleMetricAsString("service_unapproved_merges_total")).not.toMatch(/\{/);
  });

  test("a merge whose head has a confirmed success names that record and is not unapproved; a close without merge records nothing", async () => {
    h = await ingressHarness(backend);
    const body = sampleDecisionBody({ installation_id: INSTALLATION, repository: { id: WEB.id, full_name: "acme/web" }, pull_request: 7, head_sha: SHA_A });
    await h.store.execute(() => recordPendingDecision({ body, sharedGeneration: 1, digest: "d", token: "pending:1" }));
    await h.store.execute(() => confirmDecision({ repositoryId: WEB.id, headSha: SHA_A, token: "pending:1", now: 5 }));
    expect((await h.send("pull_request", "c1", mergedEvent(false))).status).toBe(202);
    expect(await merges()).toHaveLength(0);
    expect((await h.send("pull_request", "m1", mergedEvent())).status).toBe(202);
    const [row] = await merges();
    expect(row!.decision_id).not.toBeNull();
    expect(truth(row!.unapproved)).toBe(false);
    expect(await unapprovedCount()).toBe(0);
    expect(warnings()).toHaveLength(0);
  });
  test("only a merged close pays for its record: any other delivery's acceptance stays one statement sent alone", async () => {
    h = await ingressHarness(backend);
    // Each operation's statements; the acceptance is the one that retains the delivery.
    const operations: string[][] = [];
    const execute = h.store.execute.bind(h.store);
    h.store.execute = ((op, options) => execute(function* () {
      const steps = op();
      let step = steps.next();
      const texts: string[] = [];
      operations.push(texts);
      while (!step.done) {
        const value = step.value;
        const queries = "batch" in value ? value.batch : "sql" in value ? [value] : [];
        texts.push(...queries.map((q) => (typeof q.sql === "string" ? q.sql : q.sql[h.store.backend])));
        step = steps.next(yield value);
      }
      return step.value;
    }, options)) as typeof h.store.execute;
    const acceptance = () => operations.filter((texts) => texts.some((sql) => /insert into webhook_deliveries/.test(sql))).at(-1)!.length;
    let reservations = 0;
    if (h.store instanceof PostgresStore) {
      const reserve = h.store.sql.reserve.bind(h.store.sql);
      (h.store.sql as { reserve: typeof reserve }).reserve = () => {
        reservations++;
        return reserve();
      };
    }
    await h.send("pull_request", "c1", mergedEvent(false));
    const closed = { acceptance: acceptance(), reservations };
    await h.send("pull_request", "m1", mergedEvent());
    const merged = { acceptance: acceptance(), reservations: reservations - closed.reservations };
    expect(closed.reservations).toBe(0);
    if (backend === "postgresql") expect(closed.acceptance).toBe(1);
    expect(merged.acceptance).toBe(closed.acceptance + 1);
    // On PostgreSQL the second statement makes the acceptance a transaction on a reserved connection.
    expect(merged.reservations).toBe(backend === "postgresql" ? 1 : 0);
  });
});
