import { afterEach, describe, expect, test } from "bun:test";
import { MAX_OPEN_PULL_REQUESTS } from "../server/policy/bounds.ts";
import { addOpenPullRequests, POLICY_PATH } from "../server/simulator/scenario.ts";
import { openStore, run } from "../server/store/index.ts";
import { BACKENDS } from "./support/databases.ts";
import { type ServiceHarness, startServiceHarness } from "./support/service.ts";

/**
 * A repository with more open pull requests than the listing bound (MAX_OPEN_PULL_REQUESTS, the real one: the filler pull
 * requests are silent bulk fixtures). Authority fan-out, exact-head invalidation and base-ref work never list it (issue 26: the
 * index, the recorded evaluations and the forge's list of a head). Anyone can put
 * a public repository there by opening pull requests, so neither may then drop its work: the pull requests the store knows
 * could hold a success (a recorded evaluation, a remembered check) are superseded, reset and evaluated again.
 */
describe.each(BACKENDS)("a repository over the open-pull-request bound on %s", (backend) => {
  let h: ServiceHarness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  /** The scenario's pull request on a new head approved by `approvers` to success, then the repository pushed over the bound. */
  async function succeedThenOverflow(approvers: string[]) {
    h = await startServiceHarness(backend);
    const pr = { owner: h.scenario.org, repo: h.scenario.repo, number: h.scenario.pullNumber };
    const { sha } = await h.sim.control.pushToPullRequest({ ...pr, files: { "src/a.ts": "1\n" } });
    for (const user of approvers) await h.sim.control.submitReview({ ...pr, user, state: "APPROVED" });
    await h.waitForCheck(sha, { status: "completed", conclusion: "success" });
    await h.waitForDrainedQueue();
    addOpenPullRequests(h.sim, { owner: pr.owner, repo: pr.repo, count: MAX_OPEN_PULL_REQUESTS });
    return { harness: h, pr, sha };
  }

  /** The structured log lines whose message starts with `prefix`. */
  const logged = (harness: ServiceHarness, prefix: string) =>
    harness.logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => String(line.msg).startsWith(prefix));

  test("a membership removal still resets and re-evaluates an earlier success (a fan-out scoped to the member)", async () => {
    const { harness, sha } = await succeedThenOverflow(["alice", "bob"]);
    await harness.sim.control.setOrgMembership({ org: "acme", user: "bob", state: null });
    await harness.waitForCheck(sha, { status: "completed", conclusion: "failure" });
    await harness.waitForDrainedQueue();
    expect(harness.transitions.some((t) => t.headSha === sha && t.status === "in_progress")).toBe(true);
    expect(logged(harness, "fan-out from the store")).toEqual([
      expect.objectContaining({ scoped: true, pull_requests: 1, indexed: 1, other_checks: 0, checks_reset: 1 }),
    ]);
  }, 60_000);

  test("an App un-enrolment by the organization policy resets and re-evaluates an earlier success (a wide fan-out)", async () => {
    const { harness, sha } = await succeedThenOverflow(["docs-review-bot[bot]", "bob"]);
    await harness.sim.control.commit({ owner: "acme", repo: ".forge", branch: "main", files: { [POLICY_PATH]: "schema_version = 1\n" } });
    await harness.waitForCheck(sha, { status: "completed", conclusion: "failure" });
    await harness.waitForDrainedQueue();
    expect(logged(harness, "fan-out from the store")).toEqual([
      expect.objectContaining({ scoped: false, pull_requests: 1, indexed: 1, other_checks: 0 }),
    ]);
  }, 60_000);

  test("a success whose evaluation record was lost is still reset and evaluated again: the open-pull-request index names its pull request", async () => {
    const { harness, sha } = await succeedThenOverflow(["docs-review-bot[bot]", "bob"]);
    const store = openStore(harness.database.target);
    try {
      expect(await store.execute(() => run("delete from pull_evaluations"))).toBe(1);
    } finally {
      await store.close();
    }
    await harness.sim.control.commit({ owner: "acme", repo: ".forge", branch: "main", files: { [POLICY_PATH]: "schema_version = 1\n" } });
    await harness.waitForCheck(sha, { status: "completed", conclusion: "failure" });
    await harness.waitForDrainedQueue();
    expect(logged(harness, "fan-out from the store")).toEqual([
      expect.objectContaining({ scoped: false, pull_requests: 1, indexed: 1, other_checks: 0, checks_reset: 1 }),
    ]);
  }, 60_000);

  // Over the listing bound the evaluation itself still decides (issue 26: the shared-head check asks only for the head's pull
  // requests), so a re-evaluation that changes nothing publishes the same success.
  test("a push to the base re-evaluates the pull requests the index names on it, without listing the forge", async () => {
    const { harness, pr, sha } = await succeedThenOverflow(["alice", "bob"]);
    const evaluations = () => logged(harness, "job finished").filter((line) => line.kind === "evaluation").length;
    const before = evaluations();
    const requestsFrom = harness.sim.requests.length;
    await harness.sim.control.commit({ owner: "acme", repo: "web", branch: "main", files: { "NOTES.md": "base moved\n" } });
    await harness.waitForDrainedQueue();
    await harness.waitForCheck(sha, { status: "completed", conclusion: "success" });
    // The earlier push to the pull request's own branch was base-ref work too, on a base no pull request targets: nothing.
    expect(logged(harness, "base-ref work from the store")).toEqual([
      expect.objectContaining({ pull_requests: 0, indexed: 0, unknown_base: 0, recorded: 0 }),
      expect.objectContaining({ pull_requests: 1, indexed: 1, unknown_base: 0, recorded: 0 }),
    ]);
    expect(evaluations()).toBeGreaterThan(before);
    expect(harness.sim.requests.slice(requestsFrom).filter((q) => q.path === `/repos/${pr.owner}/${pr.repo}/pulls`)).toEqual([]);
  }, 60_000);

  test("a re-requested check is reset and its pull request evaluated again, not left in progress", async () => {
    const { harness, sha } = await succeedThenOverflow(["alice", "bob"]);
    const [check] = harness.checks(sha);
    const before = harness.transitions.length;
    await harness.sim.control.rerequestCheckRun({ checkRunId: check!.id });
    await harness.waitForDrainedQueue();
    await harness.waitForCheck(sha, { status: "completed", conclusion: "success" });
    expect(harness.transitions.slice(before).some((t) => t.headSha === sha && t.status === "in_progress")).toBe(true);
    // The head's pull requests come from the forge's list of the head, never a listing of the repository.
    expect(logged(harness, "open pull requests on the head not listed")).toEqual([]);
  }, 60_000);
});
