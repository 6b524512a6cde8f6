import { afterEach, describe, expect, test } from "bun:test";
import { BACKENDS } from "./support/databases.ts";
import { type ReconcilerRig, startReconcilerRig, stopReconcilerRig } from "./support/forge-rig.ts";
import { type ServiceHarness, startServiceHarness } from "./support/service.ts";
import { all } from "../server/store/index.ts";

/**
 * The reconciler against the forge simulator, with the real worker, on both backends: deliveries the service never received
 * (the forge does not retry them) are recovered by one scan, with the check the worker then publishes.
 */

type Rig = ReconcilerRig;

const startRig = (backend: (typeof BACKENDS)[number], reviewers: string[]) => startReconcilerRig(backend, reviewers);

async function waitForCheck(rig: Rig, repo: string, headSha: string, conclusion: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const runs = rig.sim.control.checkRuns({ owner: rig.scenario.org, repo, headSha }) as Array<{ status: string; conclusion: string | null }>;
    if (runs[0]?.status === "completed" && runs[0].conclusion === conclusion) return runs;
    if (Date.now() > deadline) throw new Error(`check on ${headSha.slice(0, 8)}: wanted ${conclusion}, saw ${JSON.stringify(runs)}\n${rig.logs.slice(-10).join("")}`);
    await Bun.sleep(25);
  }
}

describe.each(BACKENDS)("reconciler against the forge simulator on %s", (backend) => {
  let rig: Rig | undefined;
  afterEach(async () => {
    if (rig) await stopReconcilerRig(rig);
    rig = undefined;
  });

  test("pull requests whose webhooks were never delivered get their correct checks within one scan", async () => {
    rig = await startRig(backend, ["alice", "bob"]);
    const { sim, scenario } = rig;
    // A second pull request, also never delivered, that no owner approved.
    await sim.control.commit({ owner: scenario.org, repo: scenario.repo, branch: "other", files: { "src/other.ts": "export const o = 1;\n" }, sender: "erin" });
    const other = await sim.control.openPullRequest({ owner: scenario.org, repo: scenario.repo, head: "other", author: "erin", title: "Other" });
    expect(sim.control.checkRuns({ owner: scenario.org, repo: scenario.repo, headSha: scenario.headSha })).toHaveLength(0);

    const report = await rig.reconciler.runOnce();
    expect(report).toMatchObject({ result: "success", problems: [], installations: 1, repositories: 1, pullRequests: 2, queued: 2 });
    const approved = await waitForCheck(rig, scenario.repo, scenario.headSha, "success");
    const unapproved = await waitForCheck(rig, scenario.repo, other.headSha, "failure");
    expect(approved).toHaveLength(1);
    expect(unapproved).toHaveLength(1);
    // The organization policy repository was never scanned for pull requests.
    expect(sim.requests.some((r) => r.path.startsWith(`/repos/${scenario.org}/.forge/pulls`))).toBe(false);

    // The next scan finds the work done and re-queues the open pull requests: the checks stay correct.
    const again = await rig.reconciler.runOnce();
    expect(again.result).toBe("success");
    await waitForCheck(rig, scenario.repo, scenario.headSha, "success");
    await waitForCheck(rig, scenario.repo, other.headSha, "failure");
  }, 60_000);

  test("a suspended installation and an archived repository get no work; the scan still succeeds", async () => {
    rig = await startRig(backend, []);
    const { sim, scenario } = rig;
    await sim.control.suspendInstallation({ installationId: scenario.installationId, suspended: true });
    expect(await rig.reconciler.runOnce()).toMatchObject({ result: "success", installations: 0, queued: 0 });
    await sim.control.suspendInstallation({ installationId: scenario.installationId, suspended: false });
    await sim.control.setRepository({ owner: scenario.org, repo: scenario.repo, archived: true });
    expect(await rig.reconciler.runOnce()).toMatchObject({ result: "success", installations: 1, repositories: 0, queued: 0 });
    expect(await rig.store.execute(() => all("select id from jobs"))).toEqual([]);
  }, 60_000);

  test("a forge outage while listing pull requests makes the scan partial; the next scan recovers", async () => {
    rig = await startRig(backend, []);
    const { sim, scenario } = rig;
    sim.injectFault({ kind: "status", status: 502, path: `/repos/${scenario.org}/${scenario.repo}/pulls`, times: 10 });
    // The same outage stops the merge recovery's listing of recently closed pull requests (DESIGN 3.10).
    expect(await rig.reconciler.runOnce()).toMatchObject({ result: "partial", problems: ["pull_requests_unavailable", "closed_pull_requests_unavailable"], queued: 0 });
    sim.faults.clear();
    expect(await rig.reconciler.runOnce()).toMatchObject({ result: "success", queued: 1 });
    await waitForCheck(rig, scenario.repo, scenario.headSha, "failure");
  }, 60_000);

  test("a repositories page served empty makes the scan partial, never a success that missed a repository; the next scan recovers", async () => {
    rig = await startRig(backend, []);
    const { sim, scenario } = rig;
    // 99 more repositories (101 with web and .forge): the newest is alone on page 2, with a pull request never delivered.
    for (let i = 0; i < 99; i++) sim.control.createRepository({ owner: scenario.org, name: `repo-${i}` });
    await sim.control.commit({ owner: scenario.org, repo: "repo-98", branch: "change", files: { "a.txt": "a\n" }, sender: "erin" });
    await sim.control.openPullRequest({ owner: scenario.org, repo: "repo-98", head: "change", author: "erin" });
    sim.injectFault({ kind: "missing_page", path: "/installation/repositories", page: 2 });
    expect(await rig.reconciler.runOnce()).toMatchObject({ result: "partial", problems: ["repositories_unavailable"], queued: 0 });
    expect(rig.logs.some((line) => line.includes('"cause":"transient"'))).toBe(true);
    sim.faults.clear();
    expect(await rig.reconciler.runOnce()).toMatchObject({ result: "success", repositories: 100, pullRequests: 2, queued: 2 });
  }, 60_000);
});

describe.each(BACKENDS)("serve runs the reconciler on %s", (backend) => {
  let h: ServiceHarness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  test("with SERVICE_RECONCILE_ENABLED the startup scan recovers the pull request opened before the service ran; health reports the task", async () => {
    h = await startServiceHarness(backend, { SERVICE_RECONCILE_ENABLED: "true" });
    await h.waitForCheck(h.scenario.headSha, { status: "completed", conclusion: "failure" });
    const live = await (await fetch(`${h.service.url}/health/live`)).json();
    expect(live).toMatchObject({ status: "alive", reconciler_enabled: true, reconciler: true });
    const metrics = await (await fetch(`${h.service.url}/metrics`)).text();
    expect(metrics).toMatch(/service_reconciliations_total\{result="success"\} [1-9]/);
    expect(metrics).not.toMatch(/service_reconciliation_last_success_timestamp_seconds 0\n/);
  }, 60_000);
});
