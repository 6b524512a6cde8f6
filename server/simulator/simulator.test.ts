import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { verify } from "@octokit/webhooks-methods";
import { createScenario, generateAppKeys, mintAppJwt, type Scenario } from "./scenario.ts";
import { startForgeSimulator, type ForgeSimulator } from "./simulator.ts";

const SECRET = "a-webhook-secret-of-at-least-32-bytes!!";
const RUNTIME_PERMISSIONS = { checks: "write", contents: "read", metadata: "read", pull_requests: "read", members: "read" };
const keys = generateAppKeys();
let sim: ForgeSimulator;
let s: Scenario;
let receiver: ReturnType<typeof Bun.serve>;
const received: { headers: Headers; body: string }[] = [];

beforeAll(async () => {
  receiver = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: async (req) => { received.push({ headers: req.headers, body: await req.text() }); return new Response(null, { status: 202 }); } });
  sim = startForgeSimulator({ webhookUrl: `http://127.0.0.1:${receiver.port}/webhooks/forge`, webhookSecret: SECRET });
  s = await createScenario(sim, { keys });
});
afterAll(async () => { await sim.stop(); await receiver.stop(true); });

async function token(permissions: Record<string, string> | undefined = RUNTIME_PERMISSIONS, installationId = s.installationId, appId = s.appId) {
  const res = await fetch(`${sim.url}/app/installations/${installationId}/access_tokens`, {
    method: "POST", headers: { authorization: `Bearer ${mintAppJwt(appId, keys.privateKey)}` }, body: JSON.stringify(permissions ? { permissions } : {}),
  });
  return { status: res.status, body: (await res.json()) as { token: string; permissions: Record<string, string> } };
}
const get = (path: string, auth: string, headers: Record<string, string> = {}) => fetch(`${sim.url}${path}`, { headers: { authorization: auth, ...headers } });

describe("App JWT", () => {
  test("a JWT signed with the App's key is accepted", async () => {
    const res = await get("/app", `Bearer ${mintAppJwt(s.appId, keys.privateKey)}`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { id: number }).id).toBe(s.appId);
  });
  test("a JWT signed with another key, an expired JWT, or an installation token is refused", async () => {
    expect((await get("/app", `Bearer ${mintAppJwt(s.appId, generateAppKeys().privateKey)}`)).status).toBe(401);
    expect((await get("/app", `Bearer ${mintAppJwt(s.appId, keys.privateKey, Math.floor(Date.now() / 1000) - 3600)}`)).status).toBe(401);
    expect((await get("/app", `token ${(await token()).body.token}`)).status).toBe(401);
  });
});

describe("installation tokens", () => {
  test("carry exactly the requested permissions", async () => {
    const t = await token();
    expect(t.status).toBe(201);
    expect(t.body.permissions).toEqual(RUNTIME_PERMISSIONS);
  });
  test("the statuses permission is refused and recorded", async () => {
    const t = await token({ ...RUNTIME_PERMISSIONS, statuses: "write" });
    expect(t.status).toBe(422);
    expect(sim.tokenRequests.at(-1)).toMatchObject({ granted: false, permissions: { statuses: "write" } });
  });
  test("a permission the installation lacks is refused", async () => {
    expect((await token({ administration: "write" })).status).toBe(422);
  });
  test("check-run writes need checks: write", async () => {
    const readOnly = (await token({ checks: "read", metadata: "read" })).body.token;
    const res = await fetch(`${sim.url}/repos/acme/web/check-runs`, { method: "POST", headers: { authorization: `token ${readOnly}` }, body: JSON.stringify({ name: "x", head_sha: s.headSha }) });
    expect(res.status).toBe(403);
  });
  test("a repository outside the installation is not found", async () => {
    const botInstallation = [...sim.control.state.installations.values()].find((i) => i.appId === s.botAppId)!;
    const bot = (await token({ metadata: "read" }, botInstallation.id, s.botAppId)).body.token;
    expect((await get("/repos/acme/web", `token ${bot}`)).status).toBe(200);
    expect((await get("/repos/acme/.forge", `token ${bot}`)).status).toBe(404);
  });
  test("requests without a valid token are refused", async () => {
    expect((await get("/repos/acme/web", "token ghs_nope")).status).toBe(401);
  });
});

describe("pagination", () => {
  test("per_page and page with Link headers; the forge lists at most 3,000 files of a pull request", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 3001; i++) files[`many/${i}.txt`] = `${i}\n`;
    await sim.control.commit({ owner: "acme", repo: "web", branch: "many", files });
    const pr = await sim.control.openPullRequest({ owner: "acme", repo: "web", head: "many", author: "erin" });
    const auth = `token ${(await token()).body.token}`;
    const detail = (await (await get(`/repos/acme/web/pulls/${pr.number}`, auth)).json()) as { changed_files: number };
    expect(detail.changed_files).toBe(3001);
    const first = await get(`/repos/acme/web/pulls/${pr.number}/files?per_page=100&page=1`, auth);
    expect(first.headers.get("link")).toContain('page=2>; rel="next"');
    expect(first.headers.get("link")).toContain('page=30>; rel="last"');
    const last = await get(`/repos/acme/web/pulls/${pr.number}/files?per_page=100&page=30`, auth);
    expect(((await last.json()) as unknown[]).length).toBe(100);
    expect(last.headers.get("link")).not.toContain('rel="next"');
    expect(((await (await get(`/repos/acme/web/pulls/${pr.number}/files?per_page=100&page=31`, auth)).json()) as unknown[]).length).toBe(0);
    await sim.control.setPullRequestState({ owner: "acme", repo: "web", number: pr.number, state: "closed" });
  });
});

describe("webhooks", () => {
  const deliveries = (event: string, action?: string) => received.filter((r) => r.headers.get("x-github-event") === event && (action === undefined || JSON.parse(r.body).action === action));

  test("each state change sends a signed delivery shaped like the forge's", async () => {
    received.length = 0;
    await sim.control.commit({ owner: "acme", repo: "web", branch: "second", files: { "docs/second.md": "2\n" } });
    const pr = await sim.control.openPullRequest({ owner: "acme", repo: "web", head: "second", base: "main", author: "erin", title: "Second" });
    const openedHead = pr.headSha;
    const pushed = await sim.control.pushToPullRequest({ owner: "acme", repo: "web", number: pr.number, files: { "docs/more.md": "more\n" } });
    const review = await sim.control.submitReview({ owner: "acme", repo: "web", number: pr.number, user: "alice", state: "APPROVED" });
    await sim.control.dismissReview({ owner: "acme", repo: "web", number: pr.number, reviewId: review.id });
    await sim.control.label({ owner: "acme", repo: "web", number: pr.number, name: "bot-review" });
    await sim.control.label({ owner: "acme", repo: "web", number: pr.number, name: "bot-review", remove: true });
    await sim.control.setPullRequestState({ owner: "acme", repo: "web", number: pr.number, state: "closed" });

    for (const r of received) {
      expect(await verify(SECRET, r.body, r.headers.get("x-hub-signature-256")!)).toBe(true);
      // GitHub's headers, as it sends them to an App; none of the neutral ones.
      expect(r.headers.get("x-github-delivery")).toMatch(/^[0-9a-f-]{36}$/);
      expect(r.headers.get("user-agent")).toMatch(/^GitHub-Hookshot\/[0-9a-f]+$/);
      expect(r.headers.get("x-github-hook-installation-target-type")).toBe("integration");
      expect(r.headers.get("x-github-hook-installation-target-id")).toMatch(/^[1-9]\d*$/);
      expect(r.headers.get("x-github-hook-id")).toMatch(/^[1-9]\d*$/);
      expect([r.headers.get("x-forge-event"), r.headers.get("x-forge-delivery")]).toEqual([null, null]);
    }
    const opened = JSON.parse(deliveries("pull_request", "opened").at(-1)!.body);
    expect(opened).toMatchObject({
      action: "opened", number: pr.number, installation: { id: expect.any(Number) },
      repository: { id: expect.any(Number), name: "web", full_name: "acme/web", owner: { login: "acme" } },
      pull_request: { number: pr.number, state: "open", head: { sha: openedHead, ref: "second" }, base: { sha: pr.baseSha, ref: "main" } },
    });
    // Both Apps installed on acme/web receive it, each with its own installation.
    expect(new Set(deliveries("pull_request", "opened").map((r) => JSON.parse(r.body).installation.id)).size).toBe(2);
    const sync = JSON.parse(deliveries("pull_request", "synchronize").at(-1)!.body);
    expect(sync).toMatchObject({ before: openedHead, after: pushed.sha, pull_request: { head: { sha: pushed.sha } } });
    expect(JSON.parse(deliveries("push").at(-1)!.body)).toMatchObject({ ref: "refs/heads/second", after: pushed.sha });
    expect(JSON.parse(deliveries("pull_request_review", "submitted").at(-1)!.body)).toMatchObject({ review: { id: review.id, state: "APPROVED", commit_id: pushed.sha, user: { login: "alice" } } });
    expect(JSON.parse(deliveries("pull_request_review", "dismissed").at(-1)!.body).review.state).toBe("DISMISSED");
    expect(JSON.parse(deliveries("pull_request", "labeled").at(-1)!.body).label.name).toBe("bot-review");
    expect(deliveries("pull_request", "unlabeled")).toHaveLength(2);
    expect(JSON.parse(deliveries("pull_request", "closed").at(-1)!.body).pull_request.state).toBe("closed");
    expect(sim.control.deliveries.every((d) => d.status === 202)).toBe(true);
  });

  test("with webhookNeutralHeaders, a delivery also carries X-Forge-Event and X-Forge-Delivery, equal to GitHub's (for older builds)", async () => {
    const both = startForgeSimulator({ webhookUrl: `http://127.0.0.1:${receiver.port}/webhooks/forge`, webhookSecret: SECRET, webhookNeutralHeaders: true });
    try {
      const scenario = await createScenario(both, { keys: generateAppKeys() });
      received.length = 0;
      await both.control.label({ owner: "acme", repo: "web", number: scenario.pullNumber, name: "x" });
      expect(received.length).toBeGreaterThan(0);
      for (const r of received) {
        expect(r.headers.get("x-forge-event")).toBe(r.headers.get("x-github-event"));
        expect(r.headers.get("x-forge-delivery")).toBe(r.headers.get("x-github-delivery"));
        expect(r.headers.get("x-forge-delivery")).toMatch(/^[0-9a-f-]{36}$/);
      }
    } finally {
      await both.stop();
    }
  });

  test("every change to a pull request moves its updated_at, as the forge's does (the reconciler compares it)", async () => {
    await sim.control.commit({ owner: "acme", repo: "web", branch: "touched", files: { "docs/touched.md": "1\n" } });
    const pr = await sim.control.openPullRequest({ owner: "acme", repo: "web", head: "touched", author: "erin" });
    const t = (await token()).body.token;
    const listed = async () => {
      const pulls = (await (await get("/repos/acme/web/pulls?state=all&per_page=100", `token ${t}`)).json()) as Array<{ number: number; updated_at: string }>;
      return pulls.find((p) => p.number === pr.number)!.updated_at;
    };
    const ref = { owner: "acme", repo: "web", number: pr.number };
    const changes: Array<[string, () => Promise<unknown>]> = [
      ["push to its head", () => sim.control.pushToPullRequest({ ...ref, files: { "docs/touched.md": "2\n" } })],
      ["review submitted", () => sim.control.submitReview({ ...ref, user: "alice", state: "APPROVED" })],
      ["review dismissed", () => sim.control.dismissReview({ ...ref, reviewId: sim.control.mustPull("acme", "web", pr.number).reviews.at(-1)!.id })],
      ["labeled", () => sim.control.label({ ...ref, name: "bot-review" })],
      ["converted to draft", () => sim.control.setPullRequestState({ ...ref, state: "open", draft: true })],
      ["closed", () => sim.control.setPullRequestState({ ...ref, state: "closed" })],
      ["reopened", () => sim.control.setPullRequestState({ ...ref, state: "open" })],
    ];
    for (const [what, change] of changes) {
      const before = await listed();
      await change();
      expect({ what, moved: Date.parse(await listed()) > Date.parse(before) }).toEqual({ what, moved: true });
    }
  });

  test("directory, repository, label and installation changes send their events", async () => {
    received.length = 0;
    await sim.control.setCollaborator({ owner: "acme", repo: "web", user: "carol", permission: "write" });
    await sim.control.setOrgMembership({ org: "acme", user: "carol", state: null });
    await sim.control.setTeam({ org: "acme", team: "docs", privacy: "closed" });
    await sim.control.setTeamRepository({ org: "acme", team: "docs", owner: "acme", repo: "web", permission: "push" });
    await sim.control.setTeamMembership({ org: "acme", team: "docs", user: "alice", state: "active" });
    await sim.control.setRepository({ owner: "acme", repo: ".forge", archived: true });
    await sim.control.defineLabel({ owner: "acme", repo: "web", name: "bot-review", action: "edited" });
    await sim.control.suspendInstallation({ installationId: s.installationId, suspended: true });
    await sim.control.suspendInstallation({ installationId: s.installationId, suspended: false });
    const ours = received.map((r) => JSON.parse(r.body)).filter((p) => p.installation.id === s.installationId).map((p) => p.action);
    const events = received.filter((r) => JSON.parse(r.body).installation.id === s.installationId).map((r) => r.headers.get("x-github-event"));
    expect(events.map((e, i) => `${e}.${ours[i]}`)).toEqual([
      "member.edited", "organization.member_removed", "team.edited", "team.edited", "membership.added", "repository.archived",
      "label.edited", "installation.suspend", "installation.unsuspend",
    ]);
    await sim.control.setRepository({ owner: "acme", repo: ".forge", archived: false });
  });

  test("a check run rerequest goes only to the App that owns the run", async () => {
    const t = (await token()).body.token;
    const run = (await (await fetch(`${sim.url}/repos/acme/web/check-runs`, { method: "POST", headers: { authorization: `token ${t}` }, body: JSON.stringify({ name: "Service / approval", head_sha: s.headSha }) })).json()) as { id: number };
    received.length = 0;
    await sim.control.rerequestCheckRun({ checkRunId: run.id });
    expect(received).toHaveLength(1);
    expect(JSON.parse(received[0]!.body)).toMatchObject({ action: "rerequested", check_run: { id: run.id, head_sha: s.headSha, app: { id: s.appId } }, installation: { id: s.installationId } });
    received.length = 0;
    await sim.control.rerequestCheckSuite({ owner: "acme", repo: "web", headSha: s.headSha, appId: s.appId });
    expect(received.map((r) => r.headers.get("x-github-event"))).toEqual(["check_suite"]);
    expect(JSON.parse(received[0]!.body)).toMatchObject({ action: "rerequested", check_suite: { head_sha: s.headSha, app: { id: s.appId } } });
  });
});

describe("control API over HTTP", () => {
  const control = async (op: string, body: unknown = {}) => {
    const res = await fetch(`${sim.url}/_control/${op}`, { method: "POST", body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as any };
  };

  test("builds a repository, a pull request and a review, and reads check runs and request logs", async () => {
    expect((await control("users", { login: "frank" })).status).toBe(200);
    const repo = await control("repositories", { owner: "acme", name: "api", files: { "CODEOWNERS": "* @frank\n" } });
    expect(repo.body).toMatchObject({ full_name: "acme/api", default_branch: "main", head: expect.stringMatching(/^[0-9a-f]{40}$/) });
    const commit = await control("commits", { owner: "acme", repo: "api", branch: "topic", files: { "a.txt": "a\n" } });
    expect(commit.body.sha).toMatch(/^[0-9a-f]{40}$/);
    const pr = await control("pulls", { owner: "acme", repo: "api", head: "topic", author: "frank" });
    expect(pr.body).toMatchObject({ number: 1, head_sha: commit.body.sha, base_sha: repo.body.head, state: "open" });
    expect((await control("reviews", { owner: "acme", repo: "api", number: 1, user: "alice", state: "APPROVED" })).body).toMatchObject({ commit_id: commit.body.sha });
    expect((await control("collaborators", { owner: "acme", repo: "api", user: "frank", permission: "maintain" })).status).toBe(200);
    expect((await control("check-runs", { owner: "acme", repo: "api" })).body).toEqual([]);
    expect((await control("faults", { kind: "status", status: 503, path: "/repos/acme/api" })).body.id).toBeGreaterThan(0);
    expect((await get("/repos/acme/api", `token ${(await token()).body.token}`)).status).toBe(503);
    await control("faults-clear");
    expect((await control("requests")).body.at(-1)).toMatchObject({ path: "/repos/acme/api", status: 503 });
    expect((await control("no-such-operation")).status).toBe(404);
    expect((await control("pulls", { owner: "acme", repo: "nope", head: "x", author: "frank" })).status).toBe(404);
  });
});

describe("App-manifest conversion", () => {
  test("a code converts once into App credentials that the forge then accepts", async () => {
    const { code } = sim.control.mintManifestCode({ manifest: { name: "My Approval", hook_attributes: { url: "https://svc.example/webhooks/forge" }, default_permissions: { checks: "write" } }, owner: "acme" });
    const first = await fetch(`${sim.url}/app-manifests/${code}/conversions`, { method: "POST" });
    expect(first.status).toBe(201);
    const app = (await first.json()) as { id: number; slug: string; pem: string; webhook_secret: string; client_secret: string; owner: { login: string } };
    expect(app).toMatchObject({ slug: "my-approval", owner: { login: "acme" } });
    expect(app.pem).toContain("BEGIN RSA PRIVATE KEY");
    expect((await get("/app", `Bearer ${mintAppJwt(app.id, app.pem)}`)).status).toBe(200);
    expect((await fetch(`${sim.url}/app-manifests/${code}/conversions`, { method: "POST" })).status).toBe(404);
  });
});

describe("request counts", () => {
  test("every answer is counted by route template and status, 304s apart, for as long as the simulator runs", async () => {
    const auth = `token ${(await token()).body.token}`;
    sim.counter.reset();
    const first = await get("/repos/acme/web", auth);
    const etag = first.headers.get("etag")!;
    expect((await get("/repos/acme/web", auth, { "if-none-match": etag })).status).toBe(304);
    expect((await get("/repos/acme/nope", auth)).status).toBe(404);
    expect((await get("/no/such/route", auth)).status).toBe(404);
    const counts = sim.counter.snapshot();
    expect(counts.routes).toEqual({ "GET /repos/{owner}/{repo}": { "200": 1, "304": 1, "404": 1 }, "GET (unmatched)": { "404": 1 } });
    expect([counts.total, counts.counted, counts.notModified]).toEqual([4, 3, 1]);
    sim.requests.length = 0; // the bounded log is no part of the counts
    expect(sim.counter.snapshot().total).toBe(4);
  });
});

describe("a branch head by the SHA media type", () => {
  test("answers the bare SHA, and 304 to If-None-Match with that SHA until the branch moves", async () => {
    const auth = `token ${(await token()).body.token}`;
    const sha = { accept: "application/vnd.github.sha" };
    const head = sim.control.state.repo("acme", ".forge")!.branches.get("main")!;
    const res = await get("/repos/acme/.forge/commits/HEAD", auth, sha);
    expect([res.status, await res.text(), res.headers.get("etag")]).toEqual([200, head, `"${head}"`]);
    expect((await get("/repos/acme/.forge/commits/HEAD", auth, { ...sha, "if-none-match": `"${head}"` })).status).toBe(304);
    const moved = await sim.control.commit({ owner: "acme", repo: ".forge", branch: "main", files: { "README.md": "moved\n" } });
    const after = await get("/repos/acme/.forge/commits/HEAD", auth, { ...sha, "if-none-match": `"${head}"` });
    expect([after.status, await after.text()]).toEqual([200, moved.sha]);
    expect((await get("/repos/acme/.forge/commits/main", auth, sha)).status).toBe(200);
    expect((await get("/repos/acme/.forge/commits/no-such-branch", auth, sha)).status).toBe(404);
  });
});

describe("pull requests of a commit", () => {
  const pullsOf = async (sha: string, auth: string) => {
    const res = await get(`/repos/${s.org}/${s.repo}/commits/${sha}/pulls?per_page=100`, auth);
    return { status: res.status, numbers: ((await res.json()) as { number: number; head: { sha: string } }[]).map((p) => [p.number, p.head.sha === sha]) };
  };
  test("lists the pull requests whose head is the commit, and one opened within the lag fault only once the lag has passed", async () => {
    const auth = `token ${(await token()).body.token}`;
    expect(await pullsOf(s.headSha, auth)).toEqual({ status: 200, numbers: [[s.pullNumber, true]] });
    sim.control.setCommitPullsLag({ ms: 300 });
    try {
      const second = await sim.control.openPullRequest({ owner: s.org, repo: s.repo, head: "lagging", headSha: s.headSha, author: "erin" });
      expect(await pullsOf(s.headSha, auth)).toEqual({ status: 200, numbers: [[s.pullNumber, true]] });
      // The pull request itself and the repository's listing show it at once: only this list lags.
      expect((await get(`/repos/${s.org}/${s.repo}/pulls/${second.number}`, auth)).status).toBe(200);
      await Bun.sleep(350);
      expect(await pullsOf(s.headSha, auth)).toEqual({ status: 200, numbers: [[s.pullNumber, true], [second.number, true]] });
      await sim.control.setPullRequestState({ owner: s.org, repo: s.repo, number: second.number, state: "closed" });
    } finally {
      sim.control.setCommitPullsLag({ ms: 0 });
    }
    expect(() => sim.control.setCommitPullsLag({ ms: -1 })).toThrow();
  });
});

describe("the forge's clock", () => {
  test("by default starts at a fixed time and steps one second per event (the same times every run)", async () => {
    const fixed = startForgeSimulator();
    try {
      expect([fixed.control.now(), fixed.control.now()]).toEqual(["2026-01-01T00:00:01.000Z", "2026-01-01T00:00:02.000Z"]);
    } finally {
      await fixed.stop();
    }
  });
  test("with realClock follows the real time, each event strictly later than the one before", async () => {
    const real = startForgeSimulator({ realClock: true });
    try {
      const before = Date.now();
      const times = Array.from({ length: 50 }, () => Date.parse(real.control.now()));
      expect(times[0]!).toBeGreaterThanOrEqual(before);
      expect(times.at(-1)!).toBeLessThan(Date.now() + 1000);
      for (let i = 1; i < times.length; i++) expect(times[i]!).toBeGreaterThan(times[i - 1]!);
    } finally {
      await real.stop();
    }
  });
});
