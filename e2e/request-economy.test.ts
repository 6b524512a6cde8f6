import { afterEach, describe, expect, test } from "bun:test";
import { BACKENDS } from "./support/databases.ts";
import { type ReconcilerRig, startReconcilerRig, stopReconcilerRig } from "./support/forge-rig.ts";
import { type ServiceHarness, startServiceHarness, waitUntil } from "./support/service.ts";
import { all, supersedeAndQueue } from "../server/store/index.ts";

/**
 * The forge request economy (issue 18), counted on the simulator's request log, on both backends: a scan evaluates only what
 * may have changed, and a check write that would change nothing is not sent. No webhook reaches the service in the rig
 * (as in e2e/reconciler.test.ts), so every change below is found by a scan.
 */

type Rig = ReconcilerRig;

const startRig = (backend: (typeof BACKENDS)[number], reviewers: string[]) => startReconcilerRig(backend, reviewers, { pollMs: 20, retryCapSeconds: 2 });

const drained = (rig: Rig) => waitUntil(async () => (await rig.store.execute(() => all("select id from jobs"))).length === 0, "the queue to drain", 20_000);
const checkRuns = (rig: Rig, headSha = rig.scenario.headSha) => rig.sim.control.checkRuns({ owner: rig.scenario.org, repo: rig.scenario.repo, headSha }) as Array<{ id: number; status: string; conclusion: string | null }>;
/** The requests the simulator answered since `from`, as "METHOD path-template status". */
const requestsSince = (rig: Rig, from: number) => rig.sim.requests.slice(from).map((r) => `${r.method} ${r.path.replace(/[0-9a-f]{40}/g, "{sha}").replace(/check-runs\/\d+/, "check-runs/{id}")} ${r.status}`);
/** A listing is answered 200 or, when the kept copy is still current, 304: both are one listing. */
const listed = (request: string) => request.replace(/^GET(.*) (200|304)$/, "GET$1 listed");
const checkRequests = (rig: Rig, from: number) => requestsSince(rig, from).filter((r) => r.includes("check-runs"));

async function waitForConclusion(rig: Rig, conclusion: string, headSha = rig.scenario.headSha) {
  await waitUntil(() => checkRuns(rig, headSha)[0]?.conclusion === conclusion, `a ${conclusion} check\n${rig.logs.slice(-8).join("")}`, 20_000);
}
/** One scan, its check at `conclusion`, and the queue drained. */
async function scanAndSettle(rig: Rig, conclusion: string) {
  await rig.reconciler.runOnce();
  await waitForConclusion(rig, conclusion);
  await drained(rig);
}

describe.each(BACKENDS)("forge request economy on %s", (backend) => {
  let rig: Rig | undefined;
  afterEach(async () => {
    if (rig) await stopReconcilerRig(rig);
    rig = undefined;
  });
  const pr = () => ({ owner: rig!.scenario.org, repo: rig!.scenario.repo, number: rig!.scenario.pullNumber });

  test("a steady scan with nothing changed sends only its listings; a review whose delivery was lost is found by the next scan", async () => {
    rig = await startRig(backend, ["alice"]);
    for (const branch of ["two", "three"]) {
      await rig.sim.control.commit({ owner: rig.scenario.org, repo: rig.scenario.repo, branch, files: { [`src/${branch}.ts`]: "1\n" }, sender: "erin" });
      await rig.sim.control.openPullRequest({ owner: rig.scenario.org, repo: rig.scenario.repo, head: branch, author: "erin" });
    }
    expect(await rig.reconciler.runOnce()).toMatchObject({ result: "success", pullRequests: 3, queued: 3 });
    await drained(rig);
    await waitForConclusion(rig, "failure");

    const from = rig.sim.requests.length;
    expect(await rig.reconciler.runOnce()).toMatchObject({ result: "success", pullRequests: 3, unchanged: 3, queued: 0 });
    // The open pull requests only: no page changed, so no pull request closed, and the merge recovery (DESIGN 3.10) asks nothing.
    expect(requestsSince(rig, from)).toEqual(["GET /app/installations 304", "GET /installation/repositories 304", "GET /repos/acme/web/pulls 304"]);

    await rig.sim.control.submitReview({ ...pr(), user: "bob", state: "APPROVED" });
    expect(await rig.reconciler.runOnce()).toMatchObject({ result: "success", pullRequests: 3, unchanged: 2, queued: 1 });
    await waitForConclusion(rig, "success");
  }, 60_000);

  test("an evaluation whose result is unchanged sends no check write; a changed result sends one PATCH and lists no check runs", async () => {
    rig = await startRig(backend, ["alice"]);
    await scanAndSettle(rig, "failure");
    const [published] = checkRuns(rig);

    let from = rig.sim.requests.length;
    const repository = { installationId: rig.scenario.installationId, repositoryId: rig.sim.control.mustRepo("acme", "web").id, owner: "acme", name: "web" };
    await rig.store.execute(() => supersedeAndQueue(repository, [{ number: rig!.scenario.pullNumber, headSha: rig!.scenario.headSha }], Date.now()));
    rig.worker.wake();
    await drained(rig);
    expect(requestsSince(rig, from)).toContain("GET /repos/acme/web/pulls/1/reviews 304"); // it did evaluate
    expect(checkRequests(rig, from)).toEqual([]);
    expect(checkRuns(rig)).toEqual([published!]);

    from = rig.sim.requests.length;
    await rig.sim.control.submitReview({ ...pr(), user: "bob", state: "APPROVED" });
    expect(await rig.reconciler.runOnce()).toMatchObject({ queued: 1 });
    await waitForConclusion(rig, "success");
    await drained(rig);
    expect(checkRequests(rig, from)).toEqual(["PATCH /repos/acme/web/check-runs/{id} 200"]);
    expect(checkRuns(rig).map((run) => run.id)).toEqual([published!.id]);
  }, 60_000);

  test("a check deleted on the forge is recreated: the write by its remembered ID answers 404, the check is looked up and created again", async () => {
    rig = await startRig(backend, ["alice"]);
    await scanAndSettle(rig, "failure");
    const [gone] = checkRuns(rig);
    rig.sim.control.state.checkRuns.delete(gone!.id);

    const from = rig.sim.requests.length;
    await rig.sim.control.submitReview({ ...pr(), user: "bob", state: "APPROVED" });
    await scanAndSettle(rig, "success");
    expect(checkRequests(rig, from).map(listed)).toEqual([
      "PATCH /repos/acme/web/check-runs/{id} 404",
      "GET /repos/acme/web/commits/{sha}/check-runs listed",
      "POST /repos/acme/web/check-runs 201",
      "PATCH /repos/acme/web/check-runs/{id} 200",
    ]);
    expect(checkRuns(rig)).toHaveLength(1);
    expect(checkRuns(rig)[0]!.id).not.toBe(gone!.id);
  }, 60_000);

  test("a worker whose head had a check created but its ID lost lists the check and completes it, never creating a second", async () => {
    rig = await startRig(backend, ["alice"]);
    const from = rig.sim.requests.length;
    await scanAndSettle(rig, "failure");
    // The head was first seen by the scan: its check was created without a listing, then completed by ID.
    expect(checkRequests(rig, from).filter((r) => !r.startsWith("GET")).map(listed)).toEqual(["POST /repos/acme/web/check-runs 201", "PATCH /repos/acme/web/check-runs/{id} 200"]);
    await rig.store.execute(() => all("delete from head_checks returning head_sha"));

    const again = rig.sim.requests.length;
    await rig.sim.control.submitReview({ ...pr(), user: "bob", state: "APPROVED" });
    await scanAndSettle(rig, "success");
    expect(checkRequests(rig, again).map(listed)).toEqual([
      "GET /repos/acme/web/commits/{sha}/check-runs listed",
      "PATCH /repos/acme/web/check-runs/{id} 200",
    ]);
    expect(checkRuns(rig)).toHaveLength(1);
  }, 60_000);

  test("a completing write that failed leaves no digest behind: the same result is written again after the reset", async () => {
    rig = await startRig(backend, ["alice", "bob"]);
    await scanAndSettle(rig, "success");
    // alice's approval is dismissed (delivery lost); the failure's write fails, so the check is reset to in progress...
    const alice = rig.sim.control.mustPull("acme", "web", rig.scenario.pullNumber).reviews.find((r) => r.userLogin === "alice")!;
    await rig.sim.control.dismissReview({ ...pr(), reviewId: alice.id });
    rig.sim.injectFault({ kind: "status", status: 502, path: "/repos/acme/web/check-runs/\\d+", method: "PATCH", times: 1 });
    await rig.reconciler.runOnce();
    await waitUntil(() => checkRuns(rig!)[0]?.status === "in_progress", "the shielded reset", 20_000);
    // ...and alice approves again before the retry: the result is the success the check showed before the reset.
    await rig.sim.control.submitReview({ ...pr(), user: "alice", state: "APPROVED" });
    await waitForConclusion(rig, "success");
  }, 60_000);
});

describe.each(BACKENDS)("checks and fan-outs under webhooks on %s", (backend) => {
  let h: ServiceHarness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  /** Pushes a commit changing src/ to the scenario's pull request and waits for its failing check. */
  async function pushFailingHead(harness: ServiceHarness) {
    const pr = { owner: harness.scenario.org, repo: harness.scenario.repo, number: harness.scenario.pullNumber };
    const { sha } = await harness.sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "1\n" } });
    await harness.waitForCheck(sha, { status: "completed", conclusion: "failure" });
    return { pr, sha };
  }

  test("an authority fan-out resets the checks it re-evaluates, so an unchanged result is written again, not skipped", async () => {
    h = await startServiceHarness(backend);
    const pr = { owner: h.scenario.org, repo: h.scenario.repo, number: h.scenario.pullNumber };
    const { sha } = await h.sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "1\n" } });
    for (const user of ["alice", "bob"]) await h.sim.control.submitReview({ ...pr, user, state: "APPROVED" });
    await h.waitForCheck(sha, { status: "completed", conclusion: "success" });
    await h.waitForDrainedQueue();
    const before = h.transitions.length;
    await h.sim.control.setTeamMembership({ org: "acme", team: "core", user: "carol", state: "active" });
    await waitUntil(() => h!.transitions.slice(before).some((t) => t.headSha === sha && t.status === "in_progress"), "the fan-out's reset");
    await h.waitForCheck(sha, { status: "completed", conclusion: "success" });
  }, 60_000);

  test("a delivery's evaluation uses its fast path's read of the pull request: the pull request is read once per delivery", async () => {
    h = await startServiceHarness(backend);
    const { pr, sha } = await pushFailingHead(h);
    await h.waitForDrainedQueue();
    const pullReads = (from: number) => h!.sim.requests.slice(from).filter((r) => r.method === "GET" && r.path === `/repos/acme/web/pulls/${pr.number}`).length;
    for (const user of ["alice", "bob"]) {
      const from = h.sim.requests.length;
      const before = h.transitions.length;
      await h.sim.control.submitReview({ ...pr, user, state: "APPROVED" });
      await waitUntil(() => h!.transitions.slice(before).some((t) => t.headSha === sha && t.status === "completed"), `${user}'s approval evaluated`);
      await h.waitForDrainedQueue();
      expect(pullReads(from)).toBe(1);
    }
    await h.waitForCheck(sha, { status: "completed", conclusion: "success" });
  }, 60_000);

  /** Three more pull requests that change only README.md, which only `* @acme/core` owns; each gets its failing check. */
  async function readmePullRequests(harness: ServiceHarness) {
    const pulls: Array<{ number: number; headSha: string }> = [];
    for (const branch of ["readme-1", "readme-2", "readme-3"]) {
      await harness.sim.control.commit({ owner: "acme", repo: "web", branch, files: { "README.md": `# ${branch}\n` }, sender: "erin" });
      pulls.push(await harness.sim.control.openPullRequest({ owner: "acme", repo: "web", head: branch, author: "erin" }));
    }
    for (const pull of pulls) await harness.waitForCheck(pull.headSha, { status: "completed", conclusion: "failure" });
    return pulls;
  }
  const reviewsRead = (harness: ServiceHarness, from: number) => [...new Set(harness.sim.requests.slice(from).flatMap((r) => /^\/repos\/acme\/web\/pulls\/(\d+)\/reviews$/.exec(r.path)?.[1] ?? []).map(Number))].sort();

  test("a team membership change re-evaluates only the pull requests whose owners name the team or the member, or that the member reviewed", async () => {
    // The scenario's pull request changes docs/ (owned by @acme/docs @alice) and src/; the others only README.md.
    h = await startServiceHarness(backend);
    const { pr, sha } = await pushFailingHead(h);
    const readme = await readmePullRequests(h);
    await h.sim.control.submitReview({ owner: "acme", repo: "web", number: readme[1]!.number, user: "frank", state: "COMMENTED" });
    await h.waitForDrainedQueue();

    let from = h.sim.requests.length;
    await h.sim.control.setTeamMembership({ org: "acme", team: "docs", user: "frank", state: "active" });
    await waitUntil(() => reviewsRead(h!, from).length >= 2, "the affected evaluations");
    await h.waitForDrainedQueue();
    // Owners naming @acme/docs, and frank's review: two of the four open pull requests.
    expect(reviewsRead(h, from)).toEqual([pr.number, readme[1]!.number].sort());

    // An organization membership of someone no result depends on re-evaluates nothing.
    from = h.sim.requests.length;
    await h.sim.control.setOrgMembership({ org: "acme", user: "grace", state: "active" });
    await Bun.sleep(300);
    await h.waitForDrainedQueue();
    expect(reviewsRead(h, from)).toEqual([]);
    expect(h.checks(sha)[0]).toMatchObject({ status: "completed", conclusion: "failure" });
  }, 60_000);

  test("a membership change that makes a reviewer's approval count re-evaluates that pull request to success", async () => {
    h = await startServiceHarness(backend);
    const [readme] = await readmePullRequests(h);
    await h.sim.control.submitReview({ owner: "acme", repo: "web", number: readme!.number, user: "frank", state: "APPROVED" });
    await h.waitForCheck(readme!.headSha, { status: "completed", conclusion: "failure" });
    await h.sim.control.setTeamMembership({ org: "acme", team: "core", user: "frank", state: "active" });
    await h.waitForCheck(readme!.headSha, { status: "completed", conclusion: "success" });
  }, 60_000);

  test("a new head's check is created by its fast path and completed by its ID, without a listing of check runs", async () => {
    h = await startServiceHarness(backend);
    const from = h.sim.requests.length;
    const { sha } = await pushFailingHead(h);
    await h.waitForDrainedQueue();
    const onHead = h.sim.requests.slice(from).filter((r) => r.path.endsWith("/check-runs") || r.path.includes("/check-runs/")).map((r) => `${r.method} ${r.status}`);
    expect(onHead).toEqual(["POST 201", "PATCH 200"]);
    expect(h.checks(sha)).toHaveLength(1);
  }, 60_000);

  test("a remembered check is reset by its ID without a listing; one the forge deleted is created again", async () => {
    h = await startServiceHarness(backend);
    const { pr, sha } = await pushFailingHead(h);
    await h.waitForDrainedQueue();

    let from = h.sim.requests.length;
    await h.sim.control.submitReview({ ...pr, user: "alice", state: "APPROVED" });
    await h.waitForCheck(sha, { status: "completed", conclusion: "failure" });
    await h.waitForDrainedQueue();
    const writes = h.sim.requests.slice(from).filter((r) => r.path.includes("check-runs")).map((r) => `${r.method} ${r.status}`);
    expect(writes).toEqual(["PATCH 200", "PATCH 200"]); // the fast path's reset, then the result: no listing
    const [kept] = h.checks(sha);

    h.sim.control.state.checkRuns.delete(kept!.id);
    from = h.sim.requests.length;
    await h.sim.control.submitReview({ ...pr, user: "bob", state: "APPROVED" });
    await h.waitForCheck(sha, { status: "completed", conclusion: "success" });
    expect(h.checks(sha)).toHaveLength(1);
    // The fast path: its reset by ID answers 404 (forgotten), the listing finds no check, and the creation under the head
    // publication guard lists once more (as it always did) before it creates the check.
    const fastPath = h.sim.requests.slice(from).filter((r) => r.path.includes("check-runs")).slice(0, 4).map((r) => listed(`${r.method} ${r.status}`));
    expect(fastPath).toEqual(["PATCH 404", "GET listed", "GET listed", "POST 201"]);
  }, 60_000);
});
