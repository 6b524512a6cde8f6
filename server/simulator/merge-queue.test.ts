// The simulator's merge queue: groups built on the base, merge_group webhooks in the forge's published shapes, merge on the
// required check's success, ejection on its failure, and the entries GraphQL's mergeQueue answers.
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { MERGE_QUEUE_QUERY, queueAnswerOf } from "../forge/merge-queue.ts";
import { checkSchema, type Schema } from "./openapi-check.ts";
import { createScenario, generateAppKeys, mintAppJwt, type Scenario } from "./scenario.ts";
import { startForgeSimulator, type ForgeSimulator } from "./simulator.ts";

const keys = generateAppKeys();
const CHECK = "Code-owner approval";
let sim: ForgeSimulator;
let s: Scenario;
let schemas: Record<string, Schema>;
let token = "";

beforeEach(async () => {
  sim = startForgeSimulator();
  s = await createScenario(sim, { keys, reviewers: ["alice"] });
  const res = await fetch(`${sim.url}/app/installations/${s.installationId}/access_tokens`, {
    method: "POST", headers: { authorization: `Bearer ${mintAppJwt(s.appId, keys.privateKey)}` }, body: JSON.stringify({ permissions: { checks: "write", contents: "read", metadata: "read" } }),
  });
  token = ((await res.json()) as { token: string }).token;
  schemas ??= await webhookSchemas();
  expect((await control("merge-queue-settings", { owner: s.org, repo: s.repo, branch: "main", requiredChecks: [CHECK] })).status).toBe(200);
});
afterEach(async () => { await sim.stop(); });

/** The request-body schemas of the published webhook descriptions (`x-webhooks`), by name (e.g. `merge-group-destroyed`). */
async function webhookSchemas(): Promise<Record<string, Schema>> {
  const spec = await Bun.file(join(dirname(createRequire(import.meta.url).resolve("@octokit/openapi/package.json")), "generated", "api.github.com.deref.json")).json() as {
    "x-webhooks": Record<string, { post: { requestBody: { content: Record<string, { schema: Schema }> } } }>;
  };
  return Object.fromEntries(Object.entries(spec["x-webhooks"]).map(([name, hook]) => [name, hook.post.requestBody.content["application/json"]!.schema]));
}

function control(operation: string, body: unknown) {
  return fetch(`${sim.url}/_control/${operation}`, { method: "POST", body: JSON.stringify(body) }).then(async (res) => ({ status: res.status, body: await res.json().catch(() => null) }));
}
/** What our App's installation received (the scenario's review-bot App is installed too). */
const ours = (event: string) => sim.control.deliveries.filter((d) => d.event === event && d.installationId === s.installationId);
const groups = () => ours("merge_group").map((d) => JSON.parse(d.body) as { action: string; reason?: string; merge_group: { head_sha: string; base_sha: string; base_ref: string; head_ref: string } });
const entries = () => sim.control.mergeQueues.entriesOf(sim.control.mustRepo(s.org, s.repo), "main")!;
const tip = () => sim.control.mustRepo(s.org, s.repo).branches.get("main")!;

async function openPull(path: string, content: string) {
  const branch = `change-${path.replace(/\W/g, "-")}`;
  await sim.control.commit({ owner: s.org, repo: s.repo, branch, files: { [path]: content } });
  return (await sim.control.openPullRequest({ owner: s.org, repo: s.repo, head: branch, author: "erin" })).number;
}
async function conclude(headSha: string, conclusion: "success" | "failure") {
  const res = await fetch(`${sim.url}/repos/${s.org}/${s.repo}/check-runs`, { method: "POST", headers: { authorization: `token ${token}` }, body: JSON.stringify({ name: CHECK, head_sha: headSha, status: "completed", conclusion }) });
  expect(res.status).toBe(201);
  await sim.control.mergeQueues.idle();
}

describe("merge queue", () => {
  test("each queued pull request gets a group commit built on the one ahead of it, announced by checks_requested in the published shape", async () => {
    const first = await openPull("docs/a.md", "a\n");
    const second = await openPull("src/b.ts", "b\n");
    const base = tip();
    expect((await control("merge-queue-entries", { owner: s.org, repo: s.repo, number: first })).status).toBe(200);
    await control("merge-queue-entries", { owner: s.org, repo: s.repo, number: second });
    const [one, two] = entries();
    expect(one).toMatchObject({ position: 1, state: "AWAITING_CHECKS", baseCommit: { oid: base }, pullRequest: { number: first } });
    expect(two).toMatchObject({ position: 2, baseCommit: { oid: one!.headCommit.oid }, pullRequest: { number: second } });
    // The second group holds both pull requests' changes on the base.
    const tree = sim.control.state.commits.get(two!.headCommit.oid)!.tree;
    expect([tree.has("docs/a.md"), tree.has("src/b.ts"), sim.control.state.commits.get(two!.headCommit.oid)!.parent]).toEqual([true, true, one!.headCommit.oid]);
    const requested = groups();
    expect(requested.map((g) => [g.action, g.merge_group.head_sha, g.merge_group.base_sha, g.merge_group.base_ref])).toEqual([
      ["checks_requested", one!.headCommit.oid, base, "refs/heads/main"],
      ["checks_requested", two!.headCommit.oid, one!.headCommit.oid, "refs/heads/main"],
    ]);
    const delivered = JSON.parse(ours("merge_group")[0]!.body);
    expect(checkSchema(schemas["merge-group-checks-requested"], delivered)).toEqual([]);
  });

  test("a group whose required check succeeds merges from the front: the branch moves to the group commit and the pull request is merged", async () => {
    const first = await openPull("docs/a.md", "a\n");
    const second = await openPull("src/b.ts", "b\n");
    await control("merge-queue-entries", { owner: s.org, repo: s.repo, number: first });
    await control("merge-queue-entries", { owner: s.org, repo: s.repo, number: second });
    const [one, two] = entries();
    // The second group passes first: it waits for the one ahead of it.
    await conclude(two!.headCommit.oid, "success");
    expect(entries().map((e) => e.state)).toEqual(["AWAITING_CHECKS", "MERGEABLE"]);
    await conclude(one!.headCommit.oid, "success");
    expect(entries()).toEqual([]);
    expect(tip()).toBe(two!.headCommit.oid);
    const pulls = sim.control.mustRepo(s.org, s.repo).pulls;
    expect([pulls.get(first)!.merged?.commitSha, pulls.get(second)!.merged?.commitSha]).toEqual([one!.headCommit.oid, two!.headCommit.oid]);
    const destroyed = groups().filter((g) => g.action === "destroyed");
    expect(destroyed.map((g) => [g.reason, g.merge_group.head_sha])).toEqual([["merged", one!.headCommit.oid], ["merged", two!.headCommit.oid]]);
    const body = JSON.parse(ours("merge_group").at(-1)!.body);
    expect(checkSchema(schemas["merge-group-destroyed"], body)).toEqual([]);
    const closed = ours("pull_request").map((d) => JSON.parse(d.body)).filter((b) => b.action === "closed");
    expect(closed.map((b) => [b.number, b.pull_request.merged, b.pull_request.merge_commit_sha])).toEqual([[first, true, one!.headCommit.oid], [second, true, two!.headCommit.oid]]);
  });

  test("a failing required check ejects its pull request and rebuilds the groups behind it on what is ahead of them", async () => {
    const first = await openPull("docs/a.md", "a\n");
    const second = await openPull("src/b.ts", "b\n");
    const base = tip();
    await control("merge-queue-entries", { owner: s.org, repo: s.repo, number: first });
    await control("merge-queue-entries", { owner: s.org, repo: s.repo, number: second });
    const [one, two] = entries();
    await conclude(one!.headCommit.oid, "failure");
    const [rebuilt] = entries();
    expect(entries()).toHaveLength(1);
    expect(rebuilt).toMatchObject({ position: 1, baseCommit: { oid: base }, pullRequest: { number: second } });
    expect(rebuilt!.headCommit.oid).not.toBe(two!.headCommit.oid);
    expect(sim.control.state.commits.get(rebuilt!.headCommit.oid)!.tree.has("docs/a.md")).toBe(false);
    expect(groups().slice(2).map((g) => [g.action, g.reason ?? null, g.merge_group.head_sha])).toEqual([
      ["destroyed", "dequeued", one!.headCommit.oid], ["destroyed", "invalidated", two!.headCommit.oid], ["checks_requested", null, rebuilt!.headCommit.oid],
    ]);
    expect(sim.control.mustRepo(s.org, s.repo).pulls.get(first)!.state).toBe("open");
    expect(tip()).toBe(base);
  });

  test("a push to the base branch rebuilds every group on the new tip", async () => {
    const first = await openPull("docs/a.md", "a\n");
    await control("merge-queue-entries", { owner: s.org, repo: s.repo, number: first });
    const [before] = entries();
    const { sha } = await sim.control.commit({ owner: s.org, repo: s.repo, branch: "main", files: { "CHANGELOG.md": "x\n" } });
    const [after] = entries();
    expect(after!.baseCommit.oid).toBe(sha);
    expect(groups().slice(1).map((g) => [g.action, g.reason ?? null, g.merge_group.head_sha])).toEqual([["destroyed", "invalidated", before!.headCommit.oid], ["checks_requested", null, after!.headCommit.oid]]);
  });

  test("a removal dequeues; the control API refuses what the forge refuses", async () => {
    const first = await openPull("docs/a.md", "a\n");
    expect((await control("merge-queue-removals", { owner: s.org, repo: s.repo, number: first })).status).toBe(422);
    await control("merge-queue-entries", { owner: s.org, repo: s.repo, number: first });
    expect((await control("merge-queue-entries", { owner: s.org, repo: s.repo, number: first })).status).toBe(422);
    expect((await control("merge-queue-removals", { owner: s.org, repo: s.repo, number: first })).status).toBe(200);
    expect(entries()).toEqual([]);
    expect(groups().at(-1)).toMatchObject({ action: "destroyed", reason: "dequeued" });
    expect((await control("merge-queue-settings", { owner: s.org, repo: s.repo, branch: "nope", requiredChecks: [CHECK] })).status).toBe(422);
    expect((await control("merge-queue-settings", { owner: s.org, repo: s.repo, branch: "main", requiredChecks: [] })).status).toBe(422);
    await sim.control.commit({ owner: s.org, repo: s.repo, branch: "release", files: { "x.md": "x\n" } });
    const other = await sim.control.openPullRequest({ owner: s.org, repo: s.repo, head: "change-docs-a-md", base: "release", author: "erin" });
    expect((await control("merge-queue-entries", { owner: s.org, repo: s.repo, number: other.number })).status).toBe(422);
  });
});

describe("GraphQL mergeQueue", () => {
  const graphql = async (variables: Record<string, unknown>) => {
    const res = await fetch(`${sim.url}/graphql`, { method: "POST", headers: { authorization: `token ${token}` }, body: JSON.stringify({ query: MERGE_QUEUE_QUERY, variables }) });
    return { status: res.status, body: await res.json() as { data?: unknown; errors?: { type?: string }[] } };
  };
  test("the service's query validates against the published schema and answers the queue's entries as the forge's data", async () => {
    const first = await openPull("docs/a.md", "a\n");
    const second = await openPull("src/b.ts", "b\n");
    await control("merge-queue-entries", { owner: s.org, repo: s.repo, number: first });
    await control("merge-queue-entries", { owner: s.org, repo: s.repo, number: second });
    const { status, body } = await graphql({ owner: s.org, repo: s.repo, branch: "main" });
    expect([status, body.errors]).toEqual([200, undefined]);
    const answer = queueAnswerOf(body.data);
    expect(answer).toEqual({ complete: true, entries: entries().map((e) => ({ position: e.position, state: e.state, headCommit: e.headCommit.oid, baseCommit: e.baseCommit.oid, pullNumber: e.pullRequest.number, headRefOid: e.pullRequest.headRefOid })) });
    expect(answer!.entries.map((e) => e.pullNumber)).toEqual([first, second]);
  });
  test("a branch without a queue answers no queue; another repository is NOT_FOUND; a query the schema refuses is refused", async () => {
    expect(queueAnswerOf((await graphql({ owner: s.org, repo: s.repo, branch: "release" })).body.data)).toBeNull();
    const missing = await graphql({ owner: s.org, repo: "nope", branch: "main" });
    expect(missing.body.errors?.map((e) => e.type)).toEqual(["NOT_FOUND"]);
    const res = await fetch(`${sim.url}/graphql`, { method: "POST", headers: { authorization: `token ${token}` }, body: JSON.stringify({ query: "{ repository(owner: \"acme\", name: \"web\") { mergeQueue(branch: \"main\") { entries(first: 1) { nodes { mergedBy } } } } }" }) });
    expect(((await res.json()) as { errors?: unknown[] }).errors?.length).toBeGreaterThan(0);
  });
});
