import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DecisionRecord } from "../server/records/schema.ts";
import { createScenario, generateAppKeys, onlyFirstAppReceivesWebhooks, POLICY_PATH, type Scenario } from "../server/simulator/scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "../server/simulator/simulator.ts";
import { ensureBinary, type RunningBinary, runBinary, simulatorEnv, startForSimulator } from "./support/binary.ts";
import { createTestDatabase, type TestDatabase } from "./support/databases.ts";

/**
 * An edited review is not an override, on the compiled executable against the forge simulator. The organization lets its team
 * sre override; frank of sre approves the pull request with an ordinary review. erin, the pull request's author, who can
 * write to the repository, edits frank's review so that its first line reads `break-glass: <reason>`: the forge's REST API
 * shows only the new body, so without asking GraphQL whether the body was edited the check turned green. It stays red, says
 * `edited`, and the decision record (`service history`) says so; the service asked GraphQL once, and not before a request
 * could override.
 */
const WEBHOOK_SECRET = "break-glass-edited-webhook-secret-0123456789";
const REASON = "payments are down; the fix is one line and the owners are asleep";

let dir: string;
beforeAll(() => {
  ensureBinary();
  dir = mkdtempSync(join(tmpdir(), "svc-edited-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Check = { status: string; conclusion: string | null; output: { title: string | null; summary: string | null } };

describe("compiled binary: an edited review is not a break-glass override", () => {
  let sim: ForgeSimulator | undefined;
  let database: TestDatabase | undefined;
  let service: RunningBinary | undefined;
  afterEach(async () => {
    await service?.stop();
    await sim?.stop();
    await database?.drop();
  });

  async function start(): Promise<{ scenario: Scenario; env: Record<string, string> }> {
    const keys = generateAppKeys();
    sim = startForgeSimulator({ webhookSecret: WEBHOOK_SECRET });
    onlyFirstAppReceivesWebhooks(sim);
    const scenario = await createScenario(sim, { keys });
    database = await createTestDatabase("sqlite");
    const env = simulatorEnv({ simUrl: sim.url, appId: scenario.appId, privateKey: keys.privateKey, webhookSecret: WEBHOOK_SECRET, databaseUrl: database.url, dir });
    service = await startForSimulator(sim, scenario.appId, env);
    return { scenario, env };
  }

  const check = (scenario: Scenario, sha: string) => (sim!.control.checkRuns({ owner: scenario.org, repo: scenario.repo, headSha: sha }) as Check[])[0];
  async function until(what: string, done: () => boolean): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${service!.output().split("\n").slice(-20).join("\n")}`);
      await Bun.sleep(50);
    }
  }
  const graphqlRequests = () => Object.values(sim!.counter.snapshot().routes["POST /graphql"] ?? {}).reduce((a, b) => a + b, 0);

  test("the author edits an ordinary approval by a break-glass team member into an override: the check stays red with edited, and the record says so", async () => {
    const { scenario, env } = await start();
    const pr = { owner: scenario.org, repo: scenario.repo, number: scenario.pullNumber };
    const c = sim!.control;
    c.createUser({ login: "frank" });
    await c.setOrgMembership({ org: scenario.org, user: "frank", state: "active" });
    c.createTeam({ org: scenario.org, slug: "sre", privacy: "secret" });
    await c.setTeamMembership({ org: scenario.org, team: "sre", user: "frank", state: "active" });
    const author = c.mustPull(pr.owner, pr.repo, pr.number).authorLogin;
    await c.setCollaborator({ owner: pr.owner, repo: pr.repo, user: author, permission: "write" });
    await c.commit({ owner: scenario.org, repo: ".forge", branch: "main", files: { [POLICY_PATH]: `schema_version = 1\n[[trusted_apps]]\nslug = "docs-review-bot"\napp_id = ${scenario.botAppId}\n[break_glass]\nteams = ["sre"]\nmin_reason_length = 30\n` } });
    const { sha: head } = await c.pushToPullRequest({ ...pr, files: { "src/a.ts": "export const a = 1;\n" } });
    await until("the failing check of the new head", () => check(scenario, head)?.status === "completed");
    expect(check(scenario, head)!.conclusion).toBe("failure");
    // No request could override yet: no GraphQL request was made.
    expect(graphqlRequests()).toBe(0);

    const approval = await c.submitReview({ ...pr, user: "frank", state: "APPROVED", body: "Looks fine to me." });
    await c.editReview({ ...pr, reviewId: approval.id, body: `break-glass: ${REASON}`, by: author });
    await until("an evaluation that reads the edited review", () => {
      const now = check(scenario, head);
      return now?.status === "completed" && (now.conclusion === "success" || (now.output.summary ?? "").includes("edited after it was submitted"));
    });
    const decided = check(scenario, head)!;
    expect(decided.conclusion).toBe("failure");
    expect(decided.output.title).not.toBe("Approved by break-glass override");
    expect(decided.output.summary).toContain("<code>frank</code>: the review\\'s body was edited after it was submitted");
    expect(graphqlRequests()).toBeGreaterThanOrEqual(1);

    // The decision record says so: `service history --json` and in plain words.
    const json = runBinary(["history", "--repository", `${pr.owner}/${pr.repo}`, "--pull", String(pr.number), "--json"], env);
    expect(json.exitCode).toBe(0);
    const records = (JSON.parse(json.stdout) as { records: DecisionRecord[] }).records.filter((r) => r.kind === "decision" && r.head_sha === head);
    const last = records.at(-1)!;
    expect(last).toMatchObject({ conclusion: "failure", break_glass: null, break_glass_refusals: [{ review_id: approval.id, reviewer_login: "frank", code: "edited" }] });
    expect(records.some((r) => r.conclusion === "success")).toBe(false);
    expect(last.inputs?.directory.reviewEdits?.[String(approval.id)]).toMatchObject({ kind: "found", value: { lastEditedAt: expect.any(String) } });
    const words = runBinary(["history", "--repository", `${pr.owner}/${pr.repo}`, "--pull", String(pr.number)], env);
    expect(words.stdout).toContain(`break-glass request by @frank (review ${approval.id}) refused: edited`);

    // The query is counted by the service's own metric with its own kind.
    const metrics = await (await fetch(`${service!.url}/metrics`)).text();
    expect(Number(/^service_forge_requests_total\{kind="graphql",outcome="ok"\} (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(1);
  }, 120_000);
});
