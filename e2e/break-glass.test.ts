import { afterEach, describe, expect, test } from "bun:test";
import { POLICY_PATH } from "../server/simulator/scenario.ts";
import { BACKENDS } from "./support/databases.ts";
import { type ServiceHarness, startServiceHarness, waitUntil } from "./support/service.ts";

/**
 * Break-glass override end to end (issue 29 item 5, DESIGN 3.11), in-process on both backends against the forge simulator:
 * the organization policy lists the team sre; frank, an active member who owns nothing, overrides with an approving review
 * whose first line is `break-glass: <reason>`. The override turns the failing check green; a dismissal and a push turn it
 * back; on a shared head the check is never completed.
 */
const REASON = "payments are down; the fix is one line and the owners are asleep";

describe.each(BACKENDS)("break-glass override on %s", (backend) => {
  let h: ServiceHarness;
  afterEach(async () => h?.stop());
  const pullRequest = () => ({ owner: h.scenario.org, repo: h.scenario.repo, number: h.scenario.pullNumber });
  const metric = async () => Number(/^service_break_glass_total (\d+)$/m.exec(await (await fetch(`${h.service.url}/metrics`)).text())?.[1]);

  /** The organization enables overrides for its team sre, with frank as an active member; a push gives a failing head. */
  async function failingHeadWithBreakGlass(): Promise<string> {
    h = await startServiceHarness(backend);
    const { sim, scenario } = h;
    sim.control.createUser({ login: "frank" });
    await sim.control.setOrgMembership({ org: scenario.org, user: "frank", state: "active" });
    sim.control.createTeam({ org: scenario.org, slug: "sre", privacy: "secret" });
    await sim.control.setTeamMembership({ org: scenario.org, team: "sre", user: "frank", state: "active" });
    const organizationPolicy = `schema_version = 1\n[[trusted_apps]]\nslug = "docs-review-bot"\napp_id = ${scenario.botAppId}\n[break_glass]\nteams = ["sre"]\nmin_reason_length = 30\n`;
    await sim.control.commit({ owner: scenario.org, repo: ".forge", branch: "main", files: { [POLICY_PATH]: organizationPolicy } });
    const { sha } = await sim.control.pushToPullRequest({ ...pullRequest(), files: { "src/a.ts": "export const a = 1;\n" } });
    await h.waitForCheck(sha, { status: "completed", conclusion: "failure" });
    return sha;
  }

  const overrideBy = (user: string, body = `break-glass: ${REASON}\n\nIncident INC-42.`) => h.sim.control.submitReview({ ...pullRequest(), user, state: "APPROVED", body });

  test("an override turns a failing check green, counted and logged with identifiers only; a dismissal turns it back", async () => {
    const head = await failingHeadWithBreakGlass();
    expect(await metric()).toBe(0);
    const review = await overrideBy("frank");
    await h.waitForCheck(head, { status: "completed", conclusion: "success" });
    const check = h.checks(head)[0] as unknown as { output: { title: string; summary: string } };
    expect(check.output.title).toBe("Approved by break-glass override");
    expect(check.output.summary).toContain("<code>frank</code>");
    expect(check.output.summary).toContain("payments are down; the fix is one line and the owners are asleep");
    expect(check.output.summary).toContain("Owner sets not satisfied by their owners\\: 2");

    // Counted and logged once the publication returns, which is just after the forge shows the check.
    await waitUntil(async () => (await metric()) >= 1, "the override to be counted");
    const warned = h.logs.filter((line) => line.includes("check approved by a break-glass override"));
    expect(warned.length).toBeGreaterThanOrEqual(1);
    const line = JSON.parse(warned[0]!) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 40, review_id: review.id, head_sha: head, pull_number: h.scenario.pullNumber });
    for (const leaked of ["frank", "payments", "sre", "acme"]) expect(warned.join("\n")).not.toContain(leaked);
    const metrics = await (await fetch(`${h.service.url}/metrics`)).text();
    for (const leaked of ["frank", "acme", head]) expect(metrics).not.toContain(leaked);

    await h.sim.control.dismissReview({ ...pullRequest(), reviewId: review.id });
    await h.waitForCheck(head, { status: "completed", conclusion: "failure" });
  }, 60_000);

  test("a push turns it back: the override is bound to the head it approved", async () => {
    const head = await failingHeadWithBreakGlass();
    await overrideBy("frank");
    await h.waitForCheck(head, { status: "completed", conclusion: "success" });
    const { sha: next } = await h.sim.control.pushToPullRequest({ ...pullRequest(), files: { "src/b.ts": "export const b = 2;\n" } });
    await h.waitForCheck(next, { status: "completed", conclusion: "failure" });
    const check = h.checks(next)[0] as unknown as { output: { title: string; summary: string } };
    expect(check.output.title).toBe("2 of 2 owner sets not yet approved");
    expect(check.output.summary).toContain("not the current head");
  }, 60_000);

  test("a refused override leaves the check failing and says why: a short reason, the author, a non-member", async () => {
    const head = await failingHeadWithBreakGlass();
    await overrideBy("frank", "break-glass: too short");
    await overrideBy("carol", `break-glass: ${REASON}`);
    await overrideBy("erin", `break-glass: ${REASON}`);
    await h.waitForDrainedQueue();
    await h.waitForCheck(head, { status: "completed", conclusion: "failure" });
    const summary = (h.checks(head)[0] as unknown as { output: { summary: string } }).output.summary;
    expect(summary).toContain("the reason has 8 visible characters; the organization requires at least 30"); // "too short": the space does not count
    expect(summary).toContain("<code>carol</code> is not an active member of a team the organization lists");
    expect(summary).toContain("<code>erin</code>: the author cannot override for their own pull request");
  }, 60_000);

  test("an override whose edits the forge does not answer fails closed: a missing node leaves the check failing with membership_incomplete", async () => {
    const head = await failingHeadWithBreakGlass();
    h.sim.injectFault({ kind: "graphql_missing_node", path: "/graphql" });
    await overrideBy("frank");
    await h.waitForDrainedQueue();
    await h.waitForCheck(head, { status: "completed", conclusion: "failure" });
    const summary = (h.checks(head)[0] as unknown as { output: { summary: string } }).output.summary;
    expect(summary).toContain("whether the review of <code>frank</code> was edited could not be established");
    expect(h.transitions.filter((t) => t.headSha === head && t.conclusion === "success")).toEqual([]);
    expect(await metric()).toBe(0);
  }, 60_000);

  test("a shared head stays unfinished: an override never completes a check on a commit two pull requests share", async () => {
    const head = await failingHeadWithBreakGlass();
    await h.sim.control.openPullRequest({ owner: h.scenario.org, repo: h.scenario.repo, head: "feature-twin", headSha: head, author: "bob" });
    await h.waitForCheck(head, { status: "in_progress" });
    await overrideBy("frank");
    await h.waitForDrainedQueue();
    await h.waitForCheck(head, { status: "in_progress" });
    expect(h.transitions.filter((t) => t.headSha === head && t.conclusion === "success")).toEqual([]);
    expect(await metric()).toBe(0);
  }, 60_000);
});
