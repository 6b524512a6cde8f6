import { afterEach, describe, expect, test } from "bun:test";
import { all, openStore } from "../server/store/index.ts";
import { BACKENDS } from "./support/databases.ts";
import { POLICY_PATH } from "../server/simulator/scenario.ts";
import { type ServiceHarness, startServiceHarness, waitUntil } from "./support/service.ts";

/**
 * The product's job end to end, in-process on both backends against the forge simulator: a pull request changing two owned
 * paths fails until every owner set approved the exact head; a new commit makes the old approvals stop counting.
 */
describe.each(BACKENDS)("worker lifecycle on %s", (backend) => {
  let h: ServiceHarness;
  afterEach(async () => h?.stop());
  const pullRequest = (number = h.scenario.pullNumber) => ({ owner: h.scenario.org, repo: h.scenario.repo, number });
  /** Pushes a commit to the pull request and waits for its failing check (no one approved that head yet). */
  const pushFailingHead = async (content: string) => {
    const { sha } = await h.sim.control.pushToPullRequest({ ...pullRequest(), files: { "src/a.ts": content } });
    await h.waitForCheck(sha, { status: "completed", conclusion: "failure" });
    return sha;
  };
  /** alice (docs owner) and bob (src/ owner) approve; together they satisfy both owner sets. */
  const approveByBothOwners = async (number?: number, commitId?: string) => {
    for (const user of ["alice", "bob"]) await h.sim.control.submitReview({ ...pullRequest(number), user, state: "APPROVED", ...(commitId ? { commitId } : {}) });
  };

  test("fail, approve, succeed, new commit fails, approve the new head, succeed", async () => {
    h = await startServiceHarness(backend);
    const { sim, scenario } = h;
    const pr = { owner: scenario.org, repo: scenario.repo, number: scenario.pullNumber };
    // The pull request was opened before the service ran (that delivery was lost): a new commit is the first event it sees.
    const { sha: head1 } = await sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "export const a = 1;\n" } });
    await h.waitForCheck(head1, { status: "completed", conclusion: "failure" });
    expect(h.checks(head1)[0]!.output.title).toBe("2 of 2 owner sets not yet approved");

    await sim.control.submitReview({ ...pr, user: "alice", state: "APPROVED" });
    await h.waitForCheck(head1, { status: "completed", conclusion: "failure" });
    await sim.control.submitReview({ ...pr, user: "bob", state: "APPROVED" });
    await h.waitForCheck(head1, { status: "completed", conclusion: "success" });

    const { sha: head2 } = await sim.control.pushToPullRequest({ ...pr, files: { "src/b.ts": "export const b = 2;\n" } });
    await h.waitForCheck(head2, { status: "completed", conclusion: "failure" });
    expect(h.checks(head2)[0]!.output.summary ?? "").not.toBe("");

    await sim.control.submitReview({ ...pr, user: "alice", state: "APPROVED" });
    await sim.control.submitReview({ ...pr, user: "bob", state: "APPROVED" });
    await h.waitForCheck(head2, { status: "completed", conclusion: "success" });
    // One managed check per head, ours only.
    expect(h.checks(head1)).toHaveLength(1);
    expect(h.checks(head2)).toHaveLength(1);
    // Let the queue drain first: an approval's evaluation may run again (work merged while it ran) and publish once more.
    let metrics = "";
    await waitUntil(async () => {
      metrics = await (await fetch(`${h.service.url}/metrics`)).text();
      return /^service_queue_depth 0$/m.test(metrics);
    }, "the queue to drain");
    const completed = h.transitions.filter((t) => t.status === "completed").map((t) => t.conclusion);
    expect(completed).toContain("success");
    expect(completed).toContain("failure");
    // Metrics: conclusions counted; the queue drained; no label carries a repository, actor or path.
    expect(metrics).toMatch(new RegExp(`^service_evaluations_total\\{conclusion="success"\\} ${completed.filter((c) => c === "success").length}$`, "m"));
    expect(metrics).toMatch(/^service_queue_depth 0$/m);
    expect(metrics).toMatch(/^service_evaluation_seconds_count [1-9]/m);
    for (const leaked of ["acme", "alice", "src/", head1]) expect(metrics).not.toContain(leaked);
    // Every published conclusion has an audit row with identifiers and outcome only.
    const store = openStore(h.database.target);
    try {
      const audit = await store.execute(function* () { return yield* all<{ kind: string; outcome: string; head_sha: string; detail: unknown }>("select kind, outcome, head_sha, detail from audit_events where kind = 'conclusion' order by id"); });
      expect(audit.map((a) => a.outcome)).toEqual(completed as string[]);
      expect(audit.map((a) => a.head_sha)).toContain(head2);
      const text = JSON.stringify(audit);
      for (const leaked of ["alice", "bob", "erin", "Feature", "BEGIN", "token"]) expect(text).not.toContain(leaked);
    } finally {
      await store.close();
    }
  }, 60_000);

  test("closing a pull request leaves its head with a completed result, not a check in progress", async () => {
    h = await startServiceHarness(backend);
    const head = await pushFailingHead("1\n");
    await approveByBothOwners();
    await h.waitForCheck(head, { status: "completed", conclusion: "success" });
    const before = h.transitions.length;
    await h.sim.control.setPullRequestState({ ...pullRequest(), state: "closed" });
    // The closing event resets the check (spec: any direct trigger), then the closed pull request's evaluation completes it.
    const reset = () => h.transitions.findIndex((t, i) => i >= before && t.headSha === head && t.status === "in_progress");
    await waitUntil(() => reset() !== -1, "the closing event's reset");
    await waitUntil(() => h.transitions.some((t, i) => i > reset() && t.headSha === head && t.status === "completed"), "the closed pull request's result");
    // The head's invalidation job may reset the check once more after that result; what stands once all work is done counts.
    await h.waitForDrainedQueue(30_000);
    expect(h.checks(head)[0]).toMatchObject({ status: "completed", conclusion: "success" });
  }, 60_000);

  test("a closed pull request's evaluation that meets its head's invalidation still in flight runs again and completes the check", async () => {
    h = await startServiceHarness(backend);
    const head = await pushFailingHead("1\n");
    await approveByBothOwners();
    await h.waitForCheck(head, { status: "completed", conclusion: "success" });
    await h.waitForDrainedQueue();
    // The closing event's fast path and then the head's invalidation job each reset the check (by its remembered ID) for 1.5 s,
    // so the closed pull request's evaluation reaches publication while the invalidation is still running (I < S).
    const { id } = h.checks(head)[0]!;
    h.sim.injectFault({ kind: "slow", delayMs: 1_500, method: "PATCH", path: `/repos/acme/web/check-runs/${id}`, times: 2 });
    const logged = h.logs.length;
    await h.sim.control.setPullRequestState({ ...pullRequest(), state: "closed" });
    await h.waitForCheck(head, { status: "in_progress" });
    // Once all work is done, what stands is the closed pull request's result, not the invalidation's check in progress.
    await h.waitForDrainedQueue(30_000);
    expect(h.checks(head)[0]).toMatchObject({ status: "completed", conclusion: "success" });
    // The race did happen: the evaluation's publication was refused and it ran again.
    expect(h.logs.slice(logged).some((line) => line.includes('"code":"publication_fenced"'))).toBe(true);
  }, 60_000);

  test("closing one of two pull requests on a shared head lets the open one publish, and the closed one never overrides it", async () => {
    h = await startServiceHarness(backend);
    const head = await pushFailingHead("1\n");
    const twin = await h.sim.control.openPullRequest({ owner: h.scenario.org, repo: h.scenario.repo, head: "feature", author: "erin", title: "Twin" });
    await approveByBothOwners();
    await h.waitForCheck(head, { status: "in_progress" });
    await h.sim.control.setPullRequestState({ ...pullRequest(twin.number), state: "closed" });
    await h.waitForCheck(head, { status: "completed", conclusion: "success" });
    await Bun.sleep(500); // the closed twin's own evaluation has run by now
    expect(h.checks(head)[0]).toMatchObject({ status: "completed", conclusion: "success" });
  }, 60_000);

  test("an evaluation of a pull request closed while it ran never turns its open twin's result back to waiting", async () => {
    h = await startServiceHarness(backend);
    const head = await pushFailingHead("1\n");
    const twin = await h.sim.control.openPullRequest({ owner: h.scenario.org, repo: h.scenario.repo, head: "feature", author: "erin", title: "Twin" });
    await approveByBothOwners();
    await h.waitForCheck(head, { status: "in_progress" });
    // The twin's next evaluation reads the twin open, then stalls on its reviews...
    const reviewsPath = `/repos/acme/web/pulls/${twin.number}/reviews`;
    h.sim.injectFault({ kind: "slow", delayMs: 2_000, path: reviewsPath, times: 1 });
    const before = h.sim.requests.length;
    await h.sim.control.submitReview({ ...pullRequest(twin.number), user: "carol", state: "COMMENTED" });
    await waitUntil(() => h.sim.requests.slice(before).some((r) => r.path === reviewsPath), "the twin's stalled evaluation");
    // ...while the twin closes and the open pull request publishes its success.
    await h.sim.control.setPullRequestState({ ...pullRequest(twin.number), state: "closed" });
    await h.waitForCheck(head, { status: "completed", conclusion: "success" });
    await Bun.sleep(2_500); // the stalled evaluation has finished by now
    expect(h.checks(head)[0]).toMatchObject({ status: "completed", conclusion: "success" });
  }, 60_000);

  test("an approval of an older head does not count for the new head", async () => {
    h = await startServiceHarness(backend);
    const head1 = await pushFailingHead("1\n");
    const { sha: head2 } = await h.sim.control.pushToPullRequest({ ...pullRequest(), files: { "src/a.ts": "2\n" } });
    await approveByBothOwners(undefined, head1);
    await h.waitForCheck(head2, { status: "completed", conclusion: "failure" });
    await Bun.sleep(300);
    expect(h.checks(head2)[0]!.conclusion).toBe("failure");
  }, 60_000);

  test("an organization policy change counts for the evaluations it triggers, though the policy was confirmed moments before", async () => {
    h = await startServiceHarness(backend);
    const { sim, scenario } = h;
    const pr = pullRequest();
    // The App's delegation covers docs/ and bob owns src/: together they satisfy both owner sets.
    await sim.control.submitReview({ ...pr, user: `${scenario.botSlug}[bot]`, state: "APPROVED" });
    await sim.control.submitReview({ ...pr, user: "bob", state: "APPROVED" });
    await h.waitForCheck(scenario.headSha, { status: "completed", conclusion: "success" });
    // The organization stops trusting the App: a push to its policy repository's default branch, moments after the
    // evaluations above confirmed the policy's head. The evaluation it triggers must read the new policy.
    await sim.control.commit({ owner: scenario.org, repo: ".forge", branch: "main", files: { [POLICY_PATH]: "schema_version = 1\n" } });
    await h.waitForCheck(scenario.headSha, { status: "completed", conclusion: "failure" });
    expect(h.checks(scenario.headSha)[0]!.output.title).toContain("not enrolled");
  }, 60_000);

  test("a head shared by two open pull requests never succeeds", async () => {
    h = await startServiceHarness(backend);
    const head = await pushFailingHead("1\n");
    // A second pull request from the same branch: its head is the same commit.
    const twin = await h.sim.control.openPullRequest({ owner: h.scenario.org, repo: h.scenario.repo, head: "feature", author: "erin", title: "Twin" });
    expect(twin.headSha).toBe(head);
    await approveByBothOwners();
    await approveByBothOwners(twin.number);
    await h.waitForCheck(head, { status: "in_progress" });
    await Bun.sleep(500);
    const run = h.checks(head)[0]!;
    expect(run.status).toBe("in_progress");
    expect(run.output.title).toContain(`#`);
  }, 60_000);
});
