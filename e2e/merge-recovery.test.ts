import { afterEach, describe, expect, test } from "bun:test";
import { BACKENDS } from "./support/databases.ts";
import { type ReconcilerRig, startReconcilerRig, stopReconcilerRig } from "./support/forge-rig.ts";
import { acceptAuthorityEvent, all } from "../server/store/index.ts";
import { MERGE_RECOVERY_PERIOD_MS, recoveryStaggerMs } from "../server/reconciler/index.ts";
import { manualClock } from "../server/reconciler/test-support.ts";

/**
 * Merges whose `closed` delivery was lost are recovered by the reconciler from the recently closed pull requests (DESIGN 3.10,
 * issue 28 item 2), against the forge simulator with the real worker, on both backends. The rig delivers no webhook at all.
 */
type MergeRow = { pull_number: number; head_sha: string; merge_commit_sha: string | null; decision_id: number | null; decision_conclusion: string | null; unapproved: unknown; recovered: unknown; reset_at_ms: number | null };
const truth = (value: unknown) => value === true || Number(value) === 1;

async function waitForConfirmedRecord(rig: ReconcilerRig, headSha: string, conclusion: string, timeoutMs = 20_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const rows = await rig.store.execute(() => all<{ id: number }>("select id from decision_records where head_sha = $1 and conclusion = $2 and confirmed_at_ms is not null", headSha, conclusion));
    if (rows.length > 0) return Number(rows.at(-1)!.id);
    if (Date.now() > deadline) throw new Error(`no confirmed ${conclusion} record on ${headSha.slice(0, 8)}\n${rig.logs.slice(-10).join("")}`);
    await Bun.sleep(25);
  }
}

describe.each(BACKENDS)("merge recovery by the reconciler on %s", (backend) => {
  let rig: ReconcilerRig | undefined;
  afterEach(async () => {
    if (rig) await stopReconcilerRig(rig);
    rig = undefined;
  });
  const merges = () => rig!.store.execute(() => all<MergeRow>("select pull_number, head_sha, merge_commit_sha, decision_id, decision_conclusion, unapproved, recovered, reset_at_ms from merge_records order by id"));
  const unapprovedCount = async () => (await rig!.metrics.unapprovedMerges.get()).values.reduce((sum, v) => sum + v.value, 0);

  test("a merge whose webhook was lost is recovered by the next scan when it was open at the previous one, and counted unapproved when its head had no success; a steady scan then asks no closed page", async () => {
    rig = await startReconcilerRig(backend, []);
    const { sim, scenario } = rig;
    expect((await rig.reconciler.runOnce()).result).toBe("success");
    const failure = await waitForConfirmedRecord(rig, scenario.headSha, "failure");
    const merged = await sim.control.mergePullRequest({ owner: scenario.org, repo: scenario.repo, number: scenario.pullNumber, by: "bob", at: new Date().toISOString() });

    expect(await rig.reconciler.runOnce()).toMatchObject({ result: "success", problems: [], mergesRecovered: 1 });
    const rows = await merges();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ pull_number: scenario.pullNumber, head_sha: scenario.headSha, merge_commit_sha: merged.merged!.commitSha, decision_conclusion: "failure" });
    expect([Number(rows[0]!.decision_id), truth(rows[0]!.unapproved), truth(rows[0]!.recovered)]).toEqual([failure, true, true]);
    expect(await unapprovedCount()).toBe(1);
    expect(rig.logs.filter((line) => line.includes("unapproved merge"))).toHaveLength(1);

    // Nothing closed since: every open page answers 304, so the recently closed pull requests are not asked at all, and
    // nothing is recorded or counted again.
    const from = sim.requests.length;
    expect(await rig.reconciler.runOnce()).toMatchObject({ result: "success", mergesRecovered: 0 });
    const pulls = sim.requests.slice(from).filter((r) => r.path === `/repos/${scenario.org}/${scenario.repo}/pulls`);
    expect(pulls.map((r) => [r.query?.includes("state=closed") ?? false, r.status])).toEqual([[false, 304]]);
    expect(await merges()).toHaveLength(1);
    expect(await unapprovedCount()).toBe(1);
  }, 60_000);

  test("a pull request opened and merged between two scans, its webhooks lost, is recovered at the repository's periodic recovery", async () => {
    const clock = manualClock(Date.now());
    rig = await startReconcilerRig(backend, [], { reconcilerClock: clock });
    const { sim, scenario } = rig;
    // Its branch was pushed before the scan (a push changes the repository every listed pull request embeds).
    const head = await sim.control.commit({ owner: scenario.org, repo: scenario.repo, branch: "quick", files: { "src/quick.ts": "export {};\n" }, sender: "erin" });
    expect((await rig.reconciler.runOnce()).result).toBe("success");
    await waitForConfirmedRecord(rig, scenario.headSha, "failure");
    const closedAsked = (from: number) => sim.requests.slice(from).filter((r) => r.path === `/repos/${scenario.org}/${scenario.repo}/pulls` && r.query?.includes("state=closed")).length;

    // Opened and merged with no scan between: the open listing never shows it.
    const quick = await sim.control.openPullRequest({ owner: scenario.org, repo: scenario.repo, head: "quick", author: "erin" });
    const merged = await sim.control.mergePullRequest({ owner: scenario.org, repo: scenario.repo, number: quick.number, by: "bob", at: new Date().toISOString() });
    let from = sim.requests.length;
    expect(await rig.reconciler.runOnce()).toMatchObject({ result: "success", mergesRecovered: 0 });
    expect(closedAsked(from)).toBe(0);
    expect(await merges()).toHaveLength(0);

    const repositoryId = sim.control.mustRepo(scenario.org, scenario.repo).id;
    clock.advance(MERGE_RECOVERY_PERIOD_MS - recoveryStaggerMs(repositoryId));
    from = sim.requests.length;
    expect(await rig.reconciler.runOnce()).toMatchObject({ result: "success", problems: [], mergesRecovered: 1 });
    expect(closedAsked(from)).toBe(1);
    const rows = await merges();
    expect(rows.map((r) => [r.pull_number, r.head_sha, r.merge_commit_sha, truth(r.recovered), truth(r.unapproved)])).toEqual([[quick.number, head.sha, merged.merged!.commitSha, true, true]]);
  }, 60_000);

  test("a recovered merge after an authority fan-out reset its head's success, before the next success, is unapproved and counted", async () => {
    rig = await startReconcilerRig(backend, ["alice", "bob"]);
    const { sim, scenario } = rig;
    expect((await rig.reconciler.runOnce()).result).toBe("success");
    const success = await waitForConfirmedRecord(rig, scenario.headSha, "success");
    // Re-evaluation is held back (every listing of the reviews fails); an authority event's fan-out resets the check.
    sim.faults.add({ kind: "status", status: 503, path: `/repos/${scenario.org}/${scenario.repo}/pulls/${scenario.pullNumber}/reviews` });
    const repository = { installationId: scenario.installationId, repositoryId: sim.control.mustRepo(scenario.org, scenario.repo).id, owner: scenario.org, name: scenario.repo };
    await rig.store.execute(() => acceptAuthorityEvent({ deliveryId: "member-removed-1", event: "member", action: "removed", installationId: scenario.installationId, scope: { kind: "repositories", repositories: [repository] }, now: Date.now() }), { exclusiveGuard: { installationId: scenario.installationId, timeoutMs: 5_000 } });
    rig.worker.wake();
    const deadline = Date.now() + 15_000;
    while (sim.control.checkRuns({ owner: scenario.org, repo: scenario.repo, headSha: scenario.headSha })[0]?.status !== "in_progress") {
      if (Date.now() > deadline) throw new Error(`the fan-out did not reset the check\n${rig.logs.slice(-10).join("")}`);
      await Bun.sleep(25);
    }
    await sim.control.mergePullRequest({ owner: scenario.org, repo: scenario.repo, number: scenario.pullNumber, by: "bob", at: new Date().toISOString() });
    expect(await rig.reconciler.runOnce()).toMatchObject({ mergesRecovered: 1 });
    const rows = await merges();
    expect(rows.map((r) => [Number(r.decision_id), r.decision_conclusion, truth(r.unapproved), truth(r.recovered), r.reset_at_ms !== null])).toEqual([[success, "success", true, true, true]]);
    expect(await unapprovedCount()).toBe(1);
    sim.faults.clear();
  }, 60_000);

  test("a recovered merge in a repository that does not enable the service is not_enrolled and not counted", async () => {
    rig = await startReconcilerRig(backend, []);
    const { sim, scenario } = rig;
    sim.control.createRepository({ owner: scenario.org, name: "legacy", files: { "README.md": "legacy\n" } });
    await sim.control.commit({ owner: scenario.org, repo: "legacy", branch: "change", files: { "src/x.ts": "export {};\n" }, sender: "erin" });
    const legacy = await sim.control.openPullRequest({ owner: scenario.org, repo: "legacy", head: "change", author: "erin" });
    expect((await rig.reconciler.runOnce()).result).toBe("success");
    await sim.control.mergePullRequest({ owner: scenario.org, repo: "legacy", number: legacy.number, by: "bob", at: new Date().toISOString() });
    expect(await rig.reconciler.runOnce()).toMatchObject({ result: "success", mergesRecovered: 1 });
    const rows = await rig.store.execute(() => all<{ pull_number: number; enrollment: string | null; unapproved: unknown; recovered: unknown }>("select pull_number, enrollment, unapproved, recovered, base_sha from merge_records"));
    expect(rows.map((r) => [r.pull_number, r.enrollment, truth(r.unapproved), truth(r.recovered)])).toEqual([[legacy.number, "not_enrolled", false, true]]);
    expect(await unapprovedCount()).toBe(0);
    expect(rig.logs.filter((line) => line.includes("unapproved merge"))).toHaveLength(0);
  }, 60_000);

  test("a recovered merge whose head had a confirmed success is not unapproved; a merge from before records were kept is not recovered", async () => {
    rig = await startReconcilerRig(backend, ["alice", "bob"]);
    const { sim, scenario } = rig;
    // Merged long ago (before this database kept decision records): no record could have approved it, so it is left alone.
    await sim.control.commit({ owner: scenario.org, repo: scenario.repo, branch: "old", files: { "src/old.ts": "export {};\n" }, sender: "erin" });
    const old = await sim.control.openPullRequest({ owner: scenario.org, repo: scenario.repo, head: "old", author: "erin" });
    await sim.control.mergePullRequest({ owner: scenario.org, repo: scenario.repo, number: old.number, by: "bob", at: "2026-01-02T00:00:00Z" });
    expect((await rig.reconciler.runOnce()).result).toBe("success");
    const success = await waitForConfirmedRecord(rig, scenario.headSha, "success");
    await sim.control.mergePullRequest({ owner: scenario.org, repo: scenario.repo, number: scenario.pullNumber, by: "bob", at: new Date().toISOString() });
    expect(await rig.reconciler.runOnce()).toMatchObject({ result: "success", mergesRecovered: 1 });
    const rows = await merges();
    expect(rows.map((r) => [r.pull_number, Number(r.decision_id), r.decision_conclusion, truth(r.unapproved)])).toEqual([[scenario.pullNumber, success, "success", false]]);
    expect(await unapprovedCount()).toBe(0);
  }, 60_000);
});
