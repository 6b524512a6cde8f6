import { afterEach, beforeAll, describe, expect, test } from "bun:test";
import { all, openStore, run, type Store } from "../server/store/index.ts";
import { ensureBinary, runBinary } from "./support/binary.ts";
import { BACKENDS } from "./support/databases.ts";
import { type ServiceHarness, startServiceHarness, waitUntil } from "./support/service.ts";

/**
 * Tamper evidence end to end: the service decides and records a pull request and its merge from the forge simulator's
 * webhooks, its elected reconciler checkpoints the records, and the compiled binary's `service history verify` passes on
 * the untouched database and names the record once someone changes a conclusion in the database directly. Both backends.
 */
beforeAll(() => ensureBinary());

describe.each(BACKENDS)("history verify of what the service wrote on %s", (backend) => {
  let h: ServiceHarness;
  let reader: Store | undefined;
  afterEach(async () => {
    await reader?.close();
    reader = undefined;
    await h?.stop();
  });

  test("a checkpointed history verifies; a conclusion changed in the database is named, and verifies again once put back", async () => {
    h = await startServiceHarness(backend, { SERVICE_RECONCILE_ENABLED: "true", SERVICE_RECONCILE_INTERVAL_SECONDS: "10" });
    reader = openStore(h.database.target);
    const store = reader;
    const pr = { owner: h.scenario.org, repo: h.scenario.repo, number: h.scenario.pullNumber };
    const { sha: head } = await h.sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "1\n" } });
    await h.waitForCheck(head, { status: "completed", conclusion: "failure" });
    for (const user of ["alice", "bob"]) await h.sim.control.submitReview({ ...pr, user, state: "APPROVED" });
    await h.waitForCheck(head, { status: "completed", conclusion: "success" });
    await h.sim.control.mergePullRequest({ ...pr, by: "bob", at: new Date().toISOString() });
    await waitUntil(async () => (await store.execute(() => all("select id from merge_records where enrollment is not null"))).length === 1, "the merge settled");
    // The reconciler runs every 10 s; its first checkpoint covers what was final by then.
    const covered = () => store.execute(() => all<{ id: unknown; conclusion: string }>("select id, conclusion from decision_records where checkpoint_id is not null order by id"));
    await waitUntil(async () => (await covered()).length > 0, "a checkpoint", 30_000);

    const env = { SERVICE_DATABASE_URL: h.database.url };
    const clean = runBinary(["history", "verify"], env);
    expect({ exitCode: clean.exitCode, stderr: clean.stderr }).toEqual({ exitCode: 0, stderr: "" });
    expect(clean.stdout).toMatch(/^history verified: checkpoint 1, \d+ records covered, \d+ not covered yet\nlast checkpoint: 1, written \S+, covering \d+ records, hash [0-9a-f]{64}\n$/);

    const [target] = await covered();
    const id = Number(target!.id);
    await store.execute(() => run("update decision_records set conclusion = $1 where id = $2", target!.conclusion === "success" ? "failure" : "success", id));
    const tampered = runBinary(["history", "verify"], env);
    expect(tampered.exitCode).toBe(1);
    expect(tampered.stdout.split("\n")[0]).toBe(`history verify: FAILED: decision record d${id} was changed (covered by checkpoint 1): its fields do not hash to its digest`);

    // Put back (the harness replays every record when it stops): the history checks again.
    await store.execute(() => run("update decision_records set conclusion = $1 where id = $2", target!.conclusion, id));
    expect(runBinary(["history", "verify"], env).exitCode).toBe(0);
  }, 90_000);
});
