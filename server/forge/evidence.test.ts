import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { addOpenPullRequests, addReviews, createScenario, generateAppKeys, POLICY_PATH, type Scenario } from "../simulator/scenario.ts";
import { startForgeSimulator, type ForgeSimulator } from "../simulator/simulator.ts";
import { MAX_OPEN_PULL_REQUESTS, MAX_PULL_REQUEST_FILES, MAX_RESOLVED_OWNERS, MAX_REVIEW_BODY_LINE_CHARS, MAX_REVIEWS } from "../policy/bounds.ts";
import type { GatherResult } from "./evidence.ts";
import { DEFAULT_EVALUATION_SETTINGS } from "../evaluation/evidence.ts";
import { planLookups } from "../evaluation/plan-lookups.ts";
import { bufferLogger, clientFor, fixturePlan } from "./test-support.ts";
import { gitBlobSha } from "../records/record-fixture.ts";

let sim: ForgeSimulator;
let s: Scenario;
const keys = generateAppKeys();

beforeAll(async () => {
  sim = startForgeSimulator();
  s = await createScenario(sim, { keys, extraFiles: 400, renames: 30, reviewers: ["alice", "dave", "carol"] });
  await sim.control.submitReview({ owner: s.org, repo: s.repo, number: s.pullNumber, user: `${s.botSlug}[bot]`, state: "APPROVED" });
  await sim.control.submitReview({ owner: s.org, repo: s.repo, number: s.pullNumber, user: "bob", state: "CHANGES_REQUESTED" });
}, 20000);
afterEach(() => { sim.faults.clear(); });
afterAll(async () => { await sim.stop(); });

const request = (number = s.pullNumber) => ({ installationId: s.installationId, owner: s.org, repo: s.repo, number, policyPath: POLICY_PATH, organizationPolicyRepository: ".forge", forgeDirectory: ".forge" });
const filesPath = (n = s.pullNumber) => `/repos/acme/web/pulls/${n}/files`;
const reviewsPath = (n = s.pullNumber) => `/repos/acme/web/pulls/${n}/reviews`;

function gathered(result: GatherResult) {
  if (result.kind !== "gathered") throw new Error(`expected evidence, got ${result.kind}`);
  return result;
}

describe("evidence for a realistic pull request", () => {
  test("is complete: hundreds of files with renames, reviews, owners files at the base, teams and the trusted App", async () => {
    const client = clientFor(sim, s);
    sim.requests.length = 0;
    const r = gathered(await client.gatherEvidence(request(), { planLookups: fixturePlan }));
    const e = r.evidence;
    expect(e.pullRequest).toMatchObject({ number: s.pullNumber, headSha: s.headSha, baseSha: s.baseSha, baseRef: "main", state: "open", draft: false, changedFiles: 432 });
    expect(e.repository).toEqual({ owner: "acme", name: "web", ownerType: "Organization" });
    if (!e.files.complete) throw new Error(e.files.detail);
    expect(e.files.items).toHaveLength(432);
    const renames = e.files.items.filter((f) => f.status === "renamed");
    expect(renames).toHaveLength(30);
    expect(renames[0]).toEqual({ filename: "src/new/module-0.ts", status: "renamed", previousFilename: "src/old/module-0.ts" });
    if (!e.reviews.complete) throw new Error(e.reviews.detail);
    expect(e.reviews.items.map((v) => [v.user?.login, v.state, v.commitId])).toEqual([
      ["alice", "APPROVED", s.headSha], ["dave", "APPROVED", s.headSha], ["carol", "APPROVED", s.headSha],
      [`${s.botSlug}[bot]`, "APPROVED", s.headSha], ["bob", "CHANGES_REQUESTED", s.headSha],
    ]);
    expect(e.codeowners[".forge/CODEOWNERS"]).toMatchObject({ kind: "found", path: ".forge/CODEOWNERS" });
    expect(Object.keys(e.codeowners)).toEqual([".forge/CODEOWNERS"]);
    expect(e.repositoryPolicy).toMatchObject({ kind: "found", path: POLICY_PATH });
    expect(e.organizationPolicy).toMatchObject({ kind: "found" });
    expect(e.sameHeadPullRequests).toEqual({ complete: true, items: [{ number: s.pullNumber, headSha: s.headSha }] });
    const d = e.directory;
    expect(d.collaborators.alice).toEqual({ kind: "found", value: { permission: "write" } });
    expect(d.collaborators.carol).toEqual({ kind: "found", value: { permission: "read" } });
    expect(d.organizationMemberships.bob).toEqual({ kind: "found", value: { state: "active" } });
    expect(d.teams["acme/core"]).toEqual({
      team: { kind: "found", value: { privacy: "closed" } }, repository: { kind: "found", value: { push: true } },
      memberships: { alice: { kind: "not_found" }, dave: { kind: "found", value: { state: "active" } }, carol: { kind: "not_found" }, bob: { kind: "not_found" } },
    });
    expect(d.teams["acme/docs"]!.team).toEqual({ kind: "found", value: { privacy: "secret" } });
    expect(d.teams["acme/docs"]!.repository).toEqual({ kind: "found", value: { push: false } });
    expect(d.apps["docs-review-bot"]).toEqual({ kind: "found", value: { id: s.botAppId, slug: "docs-review-bot" } });
    expect(d.botUsers["docs-review-bot[bot]"]).toMatchObject({ kind: "found", value: { login: "docs-review-bot[bot]", type: "Bot" } });
    expect(r.retryAfterMs).toBeNull();

    // Request count of a first evaluation: 1 pull + 5 file pages + 1 reviews + 1 CODEOWNERS + 1 policy + 2 org policy
    // (the policy repository's head, then the file at it) + 1 pull requests of the head (after the files: it names this
    // pull request, so it proves the file list too) + 4 users × (permission + membership) + 2 teams × (team + repository +
    // 4 memberships) + App + bot user = 34.
    const api = sim.requests.filter((q) => !q.path.endsWith("/access_tokens"));
    expect(r.requests).toBe(34);
    expect(api).toHaveLength(34);
    expect(api.filter((q) => q.path === `/repos/acme/web/pulls/${s.pullNumber}`).map((q) => q.status)).toEqual([200]);
    expect(api.filter((q) => q.path === filesPath())).toHaveLength(5);
    expect(sim.requests.filter((q) => q.path.endsWith("/access_tokens"))).toHaveLength(1);
    expect(sim.tokenRequests.at(-1)).toEqual({ installationId: s.installationId, permissions: { checks: "write", contents: "read", metadata: "read", pull_requests: "read", members: "read" }, granted: true });
  });

  test("names what a decision record keeps without one more request: each review's submitted time, each file's blob SHA, the organization policy's commit", async () => {
    const client = clientFor(sim, s);
    const first = gathered(await client.gatherEvidence(request(), { planLookups: fixturePlan }));
    const e = first.evidence;
    if (!e.reviews.complete) throw new Error(e.reviews.detail);
    const listed = sim.control.state.repo("acme", "web")!.pulls.get(s.pullNumber)!.reviews;
    expect(e.reviews.items.map((v) => v.submittedAt)).toEqual(listed.map((v) => v.submittedAt));
    expect(e.reviews.items.every((v) => typeof v.submittedAt === "string" && !Number.isNaN(Date.parse(v.submittedAt)))).toBe(true);
    for (const read of [e.codeowners[".forge/CODEOWNERS"], e.repositoryPolicy, e.organizationPolicy]) {
      if (read?.kind !== "found") throw new Error("expected a found file");
      expect(read.blobSha).toBe(gitBlobSha(Buffer.from(read.text)));
    }
    const policyRepository = sim.control.state.repo("acme", ".forge")!;
    expect(e.organizationPolicy).toMatchObject({ commitSha: policyRepository.branches.get(policyRepository.defaultBranch) });
    expect(e.repositoryPolicy).not.toHaveProperty("commitSha");
    // From the caches and the 304 of the policy repository's head, the second evaluation names the same.
    sim.requests.length = 0;
    const second = gathered(await client.gatherEvidence(request(), { planLookups: fixturePlan }));
    expect(second.evidence.organizationPolicy).toEqual(e.organizationPolicy);
    expect(second.evidence.codeowners).toEqual(e.codeowners);
  });

  test("a second evaluation reads the files fixed by commits from cache and revalidates everything else with conditional requests", async () => {
    const client = clientFor(sim, s);
    const first = gathered(await client.gatherEvidence(request(), { planLookups: fixturePlan }));
    sim.requests.length = 0;
    const r = gathered(await client.gatherEvidence(request(), { planLookups: fixturePlan }));
    expect(r.evidence).toEqual(first.evidence);
    // 35 less the five file pages (kept for this head and base) and the read that proved them, the code-owners and policy
    // files at the base commit, and the organization policy file (kept for the policy repository's head, which one conditional request finds unchanged).
    expect(r.requests).toBe(26);
    // Every 200 is revalidated with 304; the six team-membership lookups of non-members answer 404 again.
    expect(r.notModified).toBe(20);
    expect(sim.requests.filter((q) => q.status !== 304).map((q) => q.status)).toEqual([404, 404, 404, 404, 404, 404]);
    expect(sim.requests.some((q) => q.path.includes("/contents/"))).toBe(false);
    expect(sim.requests.some((q) => q.path === filesPath())).toBe(false);
    expect(sim.requests.filter((q) => q.path.includes("/collaborators/"))).toHaveLength(4);

    await sim.control.setCollaborator({ owner: s.org, repo: s.repo, user: "alice", permission: "read" });
    const third = gathered(await client.gatherEvidence(request(), { planLookups: fixturePlan }));
    expect(third.evidence.directory.collaborators.alice).toEqual({ kind: "found", value: { permission: "read" } });
    expect(third.notModified).toBe(19);
    await sim.control.setCollaborator({ owner: s.org, repo: s.repo, user: "alice", permission: "write" });
  });
});

describe("evidence is marked incomplete, never partial", () => {
  test("a missing page of files", async () => {
    sim.injectFault({ kind: "missing_page", path: filesPath(), page: 3 });
    const e = gathered(await clientFor(sim, s).gatherEvidence(request(), { planLookups: fixturePlan })).evidence;
    expect(e.files).toMatchObject({ complete: false, cause: "transient", detail: expect.stringContaining("page 3 is empty although page 2 linked to it") });
  });

  test("an extra page of reviews", async () => {
    sim.injectFault({ kind: "extra_page", path: reviewsPath() });
    const e = gathered(await clientFor(sim, s).gatherEvidence(request(), { planLookups: fixturePlan })).evidence;
    expect(e.reviews).toMatchObject({ complete: false, cause: "transient", detail: expect.stringContaining("page 1 has 5 items but links to a next page") });
    expect(e.files.complete).toBe(true);
  });

  test("an extra page of files beyond changed_files", async () => {
    sim.injectFault({ kind: "extra_page", path: filesPath() });
    const e = gathered(await clientFor(sim, s).gatherEvidence(request(), { planLookups: fixturePlan })).evidence;
    expect(e.files).toMatchObject({ complete: false, cause: "transient", detail: expect.stringContaining("page 5 has 32 items but links to a next page") });
  });

  test("a truncated body", async () => {
    sim.injectFault({ kind: "truncate", path: filesPath(), page: 2 });
    const e = gathered(await clientFor(sim, s).gatherEvidence(request(), { planLookups: fixturePlan })).evidence;
    expect(e.files).toMatchObject({ complete: false, cause: "transient" });
  });

  test("a rate limit, with the provider delay", async () => {
    sim.injectFault({ kind: "rate_limit", status: 403, path: reviewsPath(), resetInSeconds: 120 });
    const r = gathered(await clientFor(sim, s).gatherEvidence(request(), { planLookups: fixturePlan }));
    expect(r.evidence.reviews).toMatchObject({ complete: false, cause: "transient" });
    expect(r.retryAfterMs).toBeGreaterThan(110_000);
    expect(r.retryAfterMs).toBeLessThanOrEqual(120_000);
  });

  test("a timeout", async () => {
    sim.injectFault({ kind: "slow", path: filesPath(), page: 2, delayMs: 400 });
    const e = gathered(await clientFor(sim, s, { requestTimeoutMs: 150 }).gatherEvidence(request(), { planLookups: fixturePlan })).evidence;
    expect(e.files).toMatchObject({ complete: false, cause: "transient" });
  });

  test("a connection reset in a directory lookup", async () => {
    sim.injectFault({ kind: "reset", path: "/orgs/acme/teams/core" });
    const e = gathered(await clientFor(sim, s).gatherEvidence(request(), { planLookups: fixturePlan })).evidence;
    expect(e.directory.teams["acme/core"]!.team).toMatchObject({ kind: "incomplete", cause: "transient" });
  });

  test("a 5xx on the code-owners file", async () => {
    sim.injectFault({ kind: "status", status: 503, path: "/repos/acme/web/contents/.*CODEOWNERS" });
    const e = gathered(await clientFor(sim, s).gatherEvidence(request(), { planLookups: fixturePlan })).evidence;
    expect(e.codeowners[".forge/CODEOWNERS"]).toMatchObject({ kind: "incomplete", cause: "transient" });
    expect(e.codeowners.CODEOWNERS).toBeUndefined();
  });

  test("the open pull requests on the head, when one page fails", async () => {
    sim.injectFault({ kind: "status", status: 502, path: `/repos/acme/web/commits/${s.headSha}/pulls` });
    const e = gathered(await clientFor(sim, s).gatherEvidence(request(), { planLookups: fixturePlan })).evidence;
    expect(e.sameHeadPullRequests).toMatchObject({ complete: false, cause: "transient" });
  });

  test("the pull request itself unreadable makes the evidence unavailable", async () => {
    sim.injectFault({ kind: "status", status: 500, path: `/repos/acme/web/pulls/${s.pullNumber}` });
    const r = await clientFor(sim, s).gatherEvidence(request(), { planLookups: fixturePlan });
    expect(r.kind).toBe("unavailable");
    if (r.kind === "unavailable") expect(r.error.kind).toBe("transient");
  });
});

describe("bounds", () => {
  test(`a pull request with ${MAX_PULL_REQUEST_FILES} files is over the bound before any file is listed`, async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < MAX_PULL_REQUEST_FILES; i++) files[`big/f${i}.txt`] = `${i}\n`;
    await sim.control.commit({ owner: s.org, repo: s.repo, branch: "huge", files });
    const pr = await sim.control.openPullRequest({ owner: s.org, repo: s.repo, head: "huge", author: "erin" });
    sim.requests.length = 0;
    const e = gathered(await clientFor(sim, s).gatherEvidence(request(pr.number), { planLookups: fixturePlan })).evidence;
    expect(e.pullRequest.changedFiles).toBe(MAX_PULL_REQUEST_FILES);
    expect(e.files).toMatchObject({ complete: false, cause: "over_bound" });
    expect(sim.requests.filter((q) => q.path === filesPath(pr.number))).toHaveLength(0);
  });

  test(`more than ${MAX_REVIEWS} reviews are over the bound`, async () => {
    await sim.control.commit({ owner: s.org, repo: s.repo, branch: "busy", files: { "docs/busy.md": "x\n" } });
    const pr = await sim.control.openPullRequest({ owner: s.org, repo: s.repo, head: "busy", author: "erin" });
    addReviews(sim, { owner: s.org, repo: s.repo, number: pr.number, count: MAX_REVIEWS + 1, user: "alice" });
    sim.requests.length = 0;
    const e = gathered(await clientFor(sim, s).gatherEvidence(request(pr.number), { planLookups: fixturePlan })).evidence;
    expect(e.reviews).toMatchObject({ complete: false, cause: "over_bound" });
    expect(sim.requests.filter((q) => q.path === reviewsPath(pr.number))).toHaveLength(11);
  });
});

test("a review body's first line is kept, at most MAX_REVIEW_BODY_LINE_CHARS characters of it, and no more of the body", async () => {
  await sim.control.commit({ owner: s.org, repo: s.repo, branch: "bodies", files: { "docs/bodies.md": "x\n" } });
  const pr = await sim.control.openPullRequest({ owner: s.org, repo: s.repo, head: "bodies", author: "erin" });
  const long = `break-glass: ${"r".repeat(60_000)}`;
  await sim.control.submitReview({ owner: s.org, repo: s.repo, number: pr.number, user: "alice", state: "APPROVED", body: "break-glass: prod is down, the fix is one line\r\nsecond line\nthird" });
  await sim.control.submitReview({ owner: s.org, repo: s.repo, number: pr.number, user: "dave", state: "APPROVED", body: long });
  await sim.control.submitReview({ owner: s.org, repo: s.repo, number: pr.number, user: "carol", state: "COMMENTED" });
  const e = gathered(await clientFor(sim, s).gatherEvidence(request(pr.number), { planLookups: fixturePlan })).evidence;
  if (!e.reviews.complete) throw new Error(e.reviews.detail);
  expect(e.reviews.items.map((v) => v.bodyFirstLine)).toEqual(["break-glass: prod is down, the fix is one line", long.slice(0, MAX_REVIEW_BODY_LINE_CHARS), undefined]);
});

test("another open pull request on the same head commit is in the shared-head evidence", async () => {
  const other = await sim.control.openPullRequest({ owner: s.org, repo: s.repo, head: "feature-copy", headSha: s.headSha, author: "bob" });
  try {
    const e = gathered(await clientFor(sim, s).gatherEvidence(request(), { planLookups: fixturePlan })).evidence;
    expect(e.sameHeadPullRequests).toEqual({ complete: true, items: [{ number: s.pullNumber, headSha: s.headSha }, { number: other.number, headSha: s.headSha }] });
  } finally {
    await sim.control.setPullRequestState({ owner: s.org, repo: s.repo, number: other.number, state: "closed" });
  }
});

test("a push between two pages of the files list makes the list incomplete, though its count still matches", async () => {
  const files = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`lib/moving-${String(i).padStart(3, "0")}.ts`, `export const m = ${i};\n`]));
  await sim.control.commit({ owner: s.org, repo: s.repo, branch: "moving", files, sender: "erin" });
  const pr = await sim.control.openPullRequest({ owner: s.org, repo: s.repo, head: "moving", author: "erin" });
  const first = pr.headSha; // the model's pull request moves with the push
  try {
    // Page 2 is answered at a new head that drops the first file and adds a last one: still 150 files, so page 1 of the
    // old head and page 2 of the new one add up to the count (lib/moving-100.ts is on neither).
    sim.injectFault({ kind: "push", path: filesPath(pr.number), page: 2, times: 1, files: { "lib/moving-000.ts": null, "lib/zz-late.ts": "1\n" } });
    const client = clientFor(sim, s);
    const moved = gathered(await client.gatherEvidence(request(pr.number), { planLookups: fixturePlan }));
    expect(moved.pullRequest.headSha).toBe(first);
    expect(moved.evidence.files).toMatchObject({ complete: false, cause: "transient", detail: expect.stringContaining("while its files were listed") });

    const again = gathered(await client.gatherEvidence(request(pr.number), { planLookups: fixturePlan }));
    expect(again.pullRequest.headSha).not.toBe(first);
    if (!again.evidence.files.complete) throw new Error(again.evidence.files.detail);
    const listed = again.evidence.files.items.map((f) => f.filename);
    expect(listed).toHaveLength(150);
    expect(listed).toContain("lib/moving-100.ts");
    expect(listed).not.toContain("lib/moving-000.ts");
  } finally {
    await sim.control.setPullRequestState({ owner: s.org, repo: s.repo, number: pr.number, state: "closed" });
  }
});

describe("more bounds", () => {
  test(`more than ${MAX_OPEN_PULL_REQUESTS} open pull requests in the repository leave the shared-head evidence complete: only the head's are asked for`, async () => {
    const repo = sim.control.mustRepo(s.org, s.repo);
    const added = addOpenPullRequests(sim, { owner: s.org, repo: s.repo, count: MAX_OPEN_PULL_REQUESTS + 1 });
    sim.requests.length = 0;
    try {
      const e = gathered(await clientFor(sim, s).gatherEvidence(request(), { planLookups: fixturePlan })).evidence;
      expect(e.sameHeadPullRequests).toEqual({ complete: true, items: [{ number: s.pullNumber, headSha: s.headSha }] });
      expect(sim.requests.some((q) => q.path === "/repos/acme/web/pulls")).toBe(false);
    } finally {
      for (const n of added) repo.pulls.delete(n);
    }
  });

  test(`more than ${MAX_OPEN_PULL_REQUESTS} pull requests on one head make the shared-head evidence over the bound`, async () => {
    const repo = sim.control.mustRepo(s.org, s.repo);
    const added = addOpenPullRequests(sim, { owner: s.org, repo: s.repo, count: MAX_OPEN_PULL_REQUESTS });
    for (const n of added) repo.pulls.get(n)!.headSha = s.headSha;
    try {
      const e = gathered(await clientFor(sim, s).gatherEvidence(request(), { planLookups: fixturePlan })).evidence;
      expect(e.sameHeadPullRequests).toMatchObject({ complete: false, cause: "over_bound" });
    } finally {
      for (const n of added) repo.pulls.delete(n);
    }
  });

  test(`directory lookups stop at ${MAX_RESOLVED_OWNERS} owners; the rest stay absent so evaluation fails closed`, async () => {
    const many = Array.from({ length: MAX_RESOLVED_OWNERS + 50 }, (_, i) => `user-${i}`);
    sim.requests.length = 0;
    const e = gathered(await clientFor(sim, s).gatherEvidence(request(), {
      planLookups: () => ({ collaborators: many, organizationMemberships: [], teams: [{ team: "acme/core", members: ["dave"], info: true }], apps: [], botUsers: [] }),
    })).evidence;
    expect(e.directory.teams["acme/core"]).toBeUndefined();
    expect(Object.keys(e.directory.collaborators)).toHaveLength(MAX_RESOLVED_OWNERS);
    expect(e.directory.collaborators[`user-${MAX_RESOLVED_OWNERS}`]).toBeUndefined();
    expect(sim.requests.filter((q) => q.path.includes("/collaborators/"))).toHaveLength(MAX_RESOLVED_OWNERS);
  });
});

test("a team's privacy and repository access are fetched only once an approver is an active member of it", async () => {
  await sim.control.commit({ owner: s.org, repo: s.repo, branch: "team-facts", files: { "src/team-facts.ts": "x\n" } });
  const pr = await sim.control.openPullRequest({ owner: s.org, repo: s.repo, head: "team-facts", author: "erin" });
  const plan = (evidence: Parameters<typeof planLookups>[0], known: Parameters<typeof planLookups>[2]) => planLookups(evidence, DEFAULT_EVALUATION_SETTINGS, known);
  const teamRequests = (from: number) => sim.requests.slice(from).map((r) => r.path).filter((path) => path.startsWith("/orgs/acme/teams/core")).sort();
  // alice is no member of @acme/core (the src/ owners with @bob): her membership answers it, nothing else about the team.
  await sim.control.submitReview({ owner: s.org, repo: s.repo, number: pr.number, user: "alice", state: "APPROVED" });
  let from = sim.requests.length;
  const first = gathered(await clientFor(sim, s).gatherEvidence(request(pr.number), { planLookups: plan })).evidence;
  expect(teamRequests(from)).toEqual(["/orgs/acme/teams/core/memberships/alice"]);
  expect(first.directory.teams["acme/core"]).toEqual({ memberships: { alice: { kind: "not_found" } } });
  // dave is an active member: then the team's privacy and its access to the repository decide, and both are fetched.
  await sim.control.submitReview({ owner: s.org, repo: s.repo, number: pr.number, user: "dave", state: "APPROVED" });
  from = sim.requests.length;
  const second = gathered(await clientFor(sim, s).gatherEvidence(request(pr.number), { planLookups: plan })).evidence;
  expect(teamRequests(from)).toEqual(["/orgs/acme/teams/core", "/orgs/acme/teams/core/memberships/alice", "/orgs/acme/teams/core/memberships/dave", "/orgs/acme/teams/core/repos/acme/web"]);
  expect(second.directory.teams["acme/core"]).toMatchObject({ team: { kind: "found" }, repository: { kind: "found" } });
});

test("logins, teams and slugs named __proto__ or constructor are looked up and kept as their own entries", async () => {
  const names = ["__proto__", "constructor", "hasOwnProperty"];
  const e = gathered(await clientFor(sim, s).gatherEvidence(request(), {
    planLookups: () => ({ collaborators: names, organizationMemberships: names, teams: [{ team: "acme/__proto__", members: names, info: true }], apps: ["__proto__"], botUsers: ["__proto__"] }),
  })).evidence;
  const d = e.directory;
  for (const record of [d.collaborators, d.organizationMemberships, d.teams["acme/__proto__"]!.memberships]) {
    expect(Object.keys(record).sort()).toEqual(names);
    expect(Object.getPrototypeOf(record)).toBe(Object.prototype);
  }
  expect(Object.keys(d.apps)).toEqual(["__proto__"]);
  expect(Object.keys(d.botUsers)).toEqual(["__proto__"]);
  expect(JSON.parse(JSON.stringify(e.directory))).toEqual(e.directory);
});

test("no token, private key or JWT appears in any log line, even when requests fail", async () => {
  const { logger, lines } = bufferLogger();
  const client = clientFor(sim, s, { logger, requestTimeoutMs: 150 });
  sim.injectFault({ kind: "status", status: 502, path: filesPath() });
  sim.injectFault({ kind: "rate_limit", status: 429, path: reviewsPath(), retryAfterSeconds: 30 });
  sim.injectFault({ kind: "slow", path: "/repos/acme/web/pulls", delayMs: 300 });
  sim.injectFault({ kind: "status", status: 401, path: "/orgs/acme/teams/core" });
  await client.gatherEvidence(request(), { planLookups: fixturePlan });
  const tokens = [...sim.control.state.tokens.keys()];
  const output = lines().join("\n");
  expect(lines().length).toBeGreaterThan(3);
  for (const token of tokens) expect(output).not.toContain(token);
  expect(output).not.toContain("PRIVATE KEY");
  expect(output).not.toContain(s.privateKey.split("\n")[1]!);
  expect(output).not.toMatch(/eyJ[\w-]+\.[\w-]+\.[\w-]+/);
  expect(output).not.toMatch(/ghs_/);
  expect(output).not.toMatch(/authorization/i);
});

describe("shared head: the forge's pull requests of the head united with the open-pull-request index (DESIGN 3.9)", () => {
  test("a pull request the index names on the head is a sharer though the forge's list lags", async () => {
    sim.control.setCommitPullsLag({ ms: 60_000 });
    const other = await sim.control.openPullRequest({ owner: s.org, repo: s.repo, head: "index-only", headSha: s.headSha, author: "bob" });
    try {
      const asked: string[] = [];
      const indexedOnHead = async (headSha: string) => { asked.push(headSha); return [other.number, s.pullNumber]; };
      const without = gathered(await clientFor(sim, s).gatherEvidence(request(), { planLookups: fixturePlan })).evidence;
      expect(without.sameHeadPullRequests).toEqual({ complete: true, items: [{ number: s.pullNumber, headSha: s.headSha }] });
      const e = gathered(await clientFor(sim, s).gatherEvidence(request(), { planLookups: fixturePlan, indexedOnHead })).evidence;
      expect(asked).toEqual([s.headSha]);
      expect(e.sameHeadPullRequests).toEqual({ complete: true, items: [{ number: s.pullNumber, headSha: s.headSha }, { number: other.number, headSha: s.headSha }] });
    } finally {
      sim.control.setCommitPullsLag({ ms: 0 });
      await sim.control.setPullRequestState({ owner: s.org, repo: s.repo, number: other.number, state: "closed" });
    }
  });

  test("an index that cannot be read makes the shared-head evidence incomplete (transient)", async () => {
    const e = gathered(await clientFor(sim, s).gatherEvidence(request(), { planLookups: fixturePlan, indexedOnHead: () => Promise.reject(new Error("database down")) })).evidence;
    expect(e.sameHeadPullRequests).toMatchObject({ complete: false, cause: "transient" });
  });

  test("a closed pull request, or one whose head moved on, of the commit's list is no sharer", async () => {
    const closed = await sim.control.openPullRequest({ owner: s.org, repo: s.repo, head: "closed-copy", headSha: s.headSha, author: "bob" });
    await sim.control.setPullRequestState({ owner: s.org, repo: s.repo, number: closed.number, state: "closed" });
    const e = gathered(await clientFor(sim, s).gatherEvidence(request(), { planLookups: fixturePlan })).evidence;
    expect(e.sameHeadPullRequests).toEqual({ complete: true, items: [{ number: s.pullNumber, headSha: s.headSha }] });
  });

  test("a fresh files list is proven by the head's pull-request list when it names the pull request, else by reading the pull request", async () => {
    const pullPath = `/repos/acme/web/pulls/${s.pullNumber}`;
    sim.requests.length = 0;
    const proven = gathered(await clientFor(sim, s).gatherEvidence(request(), { planLookups: fixturePlan }));
    expect(proven.evidence.files.complete).toBe(true);
    expect(sim.requests.filter((q) => q.path === pullPath)).toHaveLength(1);
    // The list lags (it does not name the pull request): the pull request is read again after the files.
    const repo = sim.control.mustRepo(s.org, s.repo);
    sim.control.commitPullsVisibleAt.set(repo.pulls.get(s.pullNumber)!.id, Date.now() + 60_000);
    sim.requests.length = 0;
    try {
      const read = gathered(await clientFor(sim, s).gatherEvidence(request(), { planLookups: fixturePlan }));
      expect(read.evidence.files.complete).toBe(true);
      expect(sim.requests.filter((q) => q.path === pullPath)).toHaveLength(2);
      expect(read.requests).toBe(proven.requests + 1);
    } finally {
      sim.control.commitPullsVisibleAt.clear();
    }
  });
});
