import { afterEach, describe, expect, test } from "bun:test";
import { addOpenPullRequests, addReviews } from "../server/simulator/scenario.ts";
import { BACKENDS } from "./support/databases.ts";
import { type ServiceHarness, startServiceHarness, waitUntil } from "./support/service.ts";

/** The worker under races and faults (issue 6 item 8): never a false or stale success. */
describe.each(BACKENDS)("worker under races and faults on %s", (backend) => {
  let h: ServiceHarness;
  afterEach(async () => h?.stop());
  const prOf = (h: ServiceHarness) => ({ owner: h.scenario.org, repo: h.scenario.repo, number: h.scenario.pullNumber });
  const successes = (headSha: string) => h.transitions.filter((t) => t.headSha === headSha && t.status === "completed" && t.conclusion === "success").length;

  test("a push landing during an evaluation never leaves a success on the old or the new head", async () => {
    h = await startServiceHarness(backend);
    const pr = prOf(h);
    const { sha: head1 } = await h.sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "1\n" } });
    await h.waitForCheck(head1, { status: "completed", conclusion: "failure" });
    await h.sim.control.submitReview({ ...pr, user: "alice", state: "APPROVED" });
    await h.waitForCheck(head1, { status: "completed", conclusion: "failure" });
    // The evaluation triggered by bob's approval would succeed, but it stalls while reading reviews...
    const reviewsPath = `/repos/acme/web/pulls/${pr.number}/reviews`;
    h.sim.injectFault({ kind: "slow", delayMs: 1_500, path: reviewsPath, times: 1 });
    const before = h.sim.requests.length;
    await h.sim.control.submitReview({ ...pr, user: "bob", state: "APPROVED" });
    await waitUntil(() => h.sim.requests.slice(before).some((r) => r.path === reviewsPath), "the stalled evaluation");
    // ...and a new commit lands meanwhile.
    const { sha: head2 } = await h.sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "2\n" } });
    await h.waitForCheck(head2, { status: "completed", conclusion: "failure" });
    await Bun.sleep(2_000); // the stalled evaluation has finished by now
    expect(successes(head1)).toBe(0);
    expect(successes(head2)).toBe(0);
    expect(h.checks(head1)[0]!.conclusion).not.toBe("success");
    expect(h.checks(head2)[0]).toMatchObject({ status: "completed", conclusion: "failure" });
  }, 60_000);

  test("an authority event during a check write waits for the write, is recorded, and the result is evaluated again", async () => {
    h = await startServiceHarness(backend);
    const pr = prOf(h);
    const { sha: head } = await h.sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "1\n" } });
    await h.waitForCheck(head, { status: "completed", conclusion: "failure" });
    await h.sim.control.submitReview({ ...pr, user: "alice", state: "APPROVED" });
    await h.waitForCheck(head, { status: "completed", conclusion: "failure" });
    // Hold bob's evaluation while it reads reviews; then slow down the next check write: its final completion write.
    const reviewsPath = `/repos/acme/web/pulls/${pr.number}/reviews`;
    h.sim.injectFault({ kind: "slow", delayMs: 400, path: reviewsPath, times: 1 });
    const before = h.sim.requests.length;
    await h.sim.control.submitReview({ ...pr, user: "bob", state: "APPROVED" });
    await waitUntil(() => h.sim.requests.slice(before).some((r) => r.path === reviewsPath), "bob's evaluation");
    const beforeWrite = h.sim.requests.length;
    h.sim.injectFault({ kind: "slow", delayMs: 1_500, path: "/repos/acme/web/check-runs/\\d+", method: "PATCH", times: 1 });
    await waitUntil(() => h.sim.requests.slice(beforeWrite).some((r) => r.method === "PATCH"), "the final check write in flight");
    const started = performance.now();
    await h.sim.control.setTeamMembership({ org: "acme", team: "core", user: "frank", state: "active" }).catch(async () => {
      h.sim.control.createUser({ login: "frank" });
      await h.sim.control.setTeamMembership({ org: "acme", team: "core", user: "frank", state: "active" });
    });
    const waited = performance.now() - started;
    const delivered = h.sim.control.deliveries.filter((d) => d.event === "membership");
    expect(delivered.at(-1)?.status).toBe(202);
    expect(waited).toBeGreaterThan(200); // it had to wait for the in-flight write
    await h.waitForCheck(head, { status: "completed", conclusion: "success" });
  }, 60_000);

  test("a failed fast path leaves the invalidation to the worker, which counts each attempt's outcome", async () => {
    h = await startServiceHarness(backend);
    const pr = prOf(h);
    // The fast path's pull-request read fails; the invalidation job's first check lookup is rate limited; then all is well.
    h.sim.injectFault({ kind: "status", status: 502, path: `/repos/acme/web/pulls/${pr.number}`, times: 1 });
    // (two uses: the fast path reads the check in parallel with the pull request and takes the first one)
    h.sim.injectFault({ kind: "rate_limit", status: 403, resetInSeconds: 1, path: "/repos/acme/web/commits/[0-9a-f]+/check-runs", times: 2 });
    const { sha } = await h.sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "1\n" } });
    await h.waitForCheck(sha, { status: "completed", conclusion: "failure" }, 30_000);
    const metrics = await (await fetch(`${h.service.url}/metrics`)).text();
    const count = (outcome: string) => Number(metrics.match(new RegExp(`service_shared_head_invalidations_total\\{outcome="${outcome}"\\} (\\d+)`))?.[1] ?? -1);
    expect(count("rate_limited")).toBeGreaterThanOrEqual(1);
    expect(count("completed")).toBeGreaterThanOrEqual(1);
    expect(metrics).toMatch(/^service_shared_head_invalidation_depth 0$/m);
  }, 60_000);

  test("forge faults cause retries and never a false success", async () => {
    h = await startServiceHarness(backend);
    const pr = prOf(h);
    h.sim.injectFault({ kind: "status", status: 503, path: "/repos/acme/web/pulls/\\d+/files", times: 2 });
    h.sim.injectFault({ kind: "rate_limit", status: 429, retryAfterSeconds: 1, path: "/repos/acme/web/collaborators/.*", times: 1 });
    h.sim.injectFault({ kind: "reset", path: "/orgs/acme/teams/core", times: 1 });
    const { sha: head } = await h.sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "1\n" } });
    await h.sim.control.submitReview({ ...pr, user: "alice", state: "APPROVED" });
    await h.waitForCheck(head, { status: "completed", conclusion: "failure" }, 30_000);
    expect(successes(head)).toBe(0);
    await h.sim.control.submitReview({ ...pr, user: "bob", state: "APPROVED" });
    await h.waitForCheck(head, { status: "completed", conclusion: "success" }, 30_000);
    const retried = h.logs.filter((line) => line.includes("job will be retried")).length;
    expect(retried).toBeGreaterThan(0);
  }, 60_000);

  /** Waits until no job is pending or leased (an evaluation whose work merged while it ran may publish once more). */
  const drained = () => h.waitForDrainedQueue();
  /** Waits until an evaluation that began after log line `logsBefore` was retried for incomplete evidence, or a success appeared. */
  const retriedOrSucceeded = (logsBefore: number, headSha: string, transitionsBefore: number) => waitUntil(
    () => h.logs.slice(logsBefore).some((line) => line.includes("job will be retried") && line.includes('"code":"evidence_incomplete"'))
      || h.transitions.slice(transitionsBefore).some((t) => t.headSha === headSha && t.conclusion === "success"),
    "a retried evaluation or a success", 30_000,
  );

  test("a change request on a reviews page served empty is never lost: no success, retried, and it counts once the page is served", async () => {
    h = await startServiceHarness(backend, { SERVICE_WORKER_RETRY_MAX_SECONDS: "1" });
    const pr = prOf(h);
    const { sha: head } = await h.sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "1\n" } });
    await h.sim.control.submitReview({ ...pr, user: "alice", state: "APPROVED" });
    await h.sim.control.submitReview({ ...pr, user: "bob", state: "APPROVED" });
    await h.waitForCheck(head, { status: "completed", conclusion: "success" });
    await drained();
    // Comments fill the first page of reviews (100 a page); alice's change request is the first review on page 2.
    addReviews(h.sim, { ...pr, count: 100 - h.sim.control.mustPull(pr.owner, pr.repo, pr.number).reviews.length });
    const reviewsPath = `/repos/acme/web/pulls/${pr.number}/reviews`;
    h.sim.injectFault({ kind: "missing_page", path: reviewsPath, page: 2 });
    const transitionsBefore = h.transitions.length;
    await h.sim.control.submitReview({ ...pr, user: "alice", state: "CHANGES_REQUESTED" });
    await retriedOrSucceeded(h.logs.length, head, transitionsBefore);
    expect(h.transitions.slice(transitionsBefore).filter((t) => t.headSha === head && t.status === "completed")).toEqual([]);
    expect(h.checks(head)[0]).toMatchObject({ status: "in_progress" });
    expect(h.logs.some((line) => line.includes("page 2 is empty although page 1 linked to it"))).toBe(true);
    h.sim.faults.clear();
    await h.waitForCheck(head, { status: "completed", conclusion: "failure" }, 30_000);
    expect(h.checks(head)[0]!.output.text).toContain("Owner set 2\\: changes requested");
  }, 60_000);

  test("a shared head on a page of the head's pull requests served empty is never hidden: no success, retried, and held once the page is served", async () => {
    h = await startServiceHarness(backend, { SERVICE_WORKER_RETRY_MAX_SECONDS: "1" });
    const pr = prOf(h);
    const { sha: head } = await h.sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "1\n" } });
    await h.waitForCheck(head, { status: "completed", conclusion: "failure" });
    await drained();
    // 100 other open pull requests on the same head (silent fixtures): the forge's list of the head spans two pages.
    const repo = h.sim.control.mustRepo(pr.owner, pr.repo);
    for (const number of addOpenPullRequests(h.sim, { owner: pr.owner, repo: pr.repo, count: 100 })) repo.pulls.get(number)!.headSha = head;
    const pullsPath = `/repos/acme/web/commits/${head}/pulls`;
    h.sim.injectFault({ kind: "missing_page", path: pullsPath, page: 2 });
    const transitionsBefore = h.transitions.length;
    // A twin from the same branch shares the head too, and both owners approve it: no success while the list is incomplete.
    const twin = await h.sim.control.openPullRequest({ owner: pr.owner, repo: pr.repo, head: "feature", author: "erin", title: "Twin" });
    expect(twin.headSha).toBe(head);
    for (const user of ["alice", "bob"]) await h.sim.control.submitReview({ ...pr, number: twin.number, user, state: "APPROVED" });
    await retriedOrSucceeded(h.logs.length, head, transitionsBefore);
    expect(h.transitions.slice(transitionsBefore).filter((t) => t.headSha === head && t.status === "completed")).toEqual([]);
    expect(h.checks(head)[0]).toMatchObject({ status: "in_progress" });
    h.sim.faults.clear();
    await waitUntil(() => /also the head of #\d+/.test(h.checks(head)[0]?.output.title ?? ""), "the check naming the other pull request on the head", 30_000);
    await Bun.sleep(500);
    expect(h.checks(head)[0]).toMatchObject({ status: "in_progress" });
    expect(h.transitions.slice(transitionsBefore).filter((t) => t.headSha === head && t.status === "completed")).toEqual([]);
  }, 60_000);
});

describe("two service processes on one PostgreSQL", () => {
  test("never publish conflicting results", async () => {
    const h = await startServiceHarness("postgresql", {}, { replicas: 2 });
    try {
      const pr = { owner: h.scenario.org, repo: h.scenario.repo, number: h.scenario.pullNumber };
      const heads: string[] = [];
      for (let round = 0; round < 3; round++) {
        const { sha } = await h.sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": `${round}\n` } });
        heads.push(sha);
        await h.waitForCheck(sha, { status: "completed", conclusion: "failure" });
        await Promise.all([
          h.sim.control.submitReview({ ...pr, user: "alice", state: "APPROVED" }),
          h.sim.control.submitReview({ ...pr, user: "bob", state: "APPROVED" }),
          h.sim.control.submitReview({ ...pr, user: "dave", state: "COMMENTED" }),
        ]);
        await h.waitForCheck(sha, { status: "completed", conclusion: "success" });
      }
      await Bun.sleep(500);
      // Every head ends with exactly one check, and each head's last published result is success (all approved).
      for (const sha of heads) {
        expect(h.checks(sha)).toHaveLength(1);
        const published = h.transitions.filter((t) => t.headSha === sha && t.status === "completed");
        expect(published.at(-1)!.conclusion).toBe("success");
        // A success is never followed by a failure for the same head: approvals only accumulated.
        const firstSuccess = published.findIndex((t) => t.conclusion === "success");
        expect(published.slice(firstSuccess).every((t) => t.conclusion === "success")).toBe(true);
      }
    } finally {
      await h.stop();
    }
  }, 90_000);
});
