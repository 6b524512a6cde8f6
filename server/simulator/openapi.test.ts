// Every route the simulator serves exists in the forge's published OpenAPI description (@octokit/openapi, api.github.com) and
// answers with bodies that carry the documented required properties and types.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { checkSchema, type Schema } from "./openapi-check.ts";
import { ROUTES } from "./rest.ts";
import { createScenario, generateAppKeys, mintAppJwt, type Scenario } from "./scenario.ts";
import { startForgeSimulator, type ForgeSimulator } from "./simulator.ts";

type Operation = { responses: Record<string, { content?: Record<string, { schema?: Schema }> }> };
let spec: { paths: Record<string, Record<string, Operation>> };
let sim: ForgeSimulator;
let s: Scenario;
let token = "";
let jwt = "";
let checkRunId = 0;
let manifestCode = "";

beforeAll(async () => {
  const pkg = createRequire(import.meta.url).resolve("@octokit/openapi/package.json");
  spec = await Bun.file(join(dirname(pkg), "generated", "api.github.com.deref.json")).json();
  sim = startForgeSimulator();
  s = await createScenario(sim, { keys: generateAppKeys(), reviewers: ["alice"], renames: 1 });
  // A review with a body (a break-glass request, DESIGN 3.11): the reviews listing carries bodies in the documented shape.
  await sim.control.submitReview({ owner: s.org, repo: s.repo, number: s.pullNumber, user: "dave", state: "APPROVED", body: "break-glass: prod is down, the fix is one line\nsecond line" });
  jwt = mintAppJwt(s.appId, s.privateKey);
  const res = await fetch(`${sim.url}/app/installations/${s.installationId}/access_tokens`, {
    method: "POST", headers: { authorization: `Bearer ${jwt}` },
    body: JSON.stringify({ permissions: { checks: "write", contents: "read", metadata: "read", pull_requests: "read", members: "read" } }),
  });
  token = ((await res.json()) as { token: string }).token;
  manifestCode = sim.control.mintManifestCode({ manifest: { name: "Approval Service", hook_attributes: { url: "https://example.test/webhooks/forge" } }, owner: "acme" }).code;
}, 20000);

afterAll(async () => { await sim.stop(); });

const samples = (): Record<string, { url: string; body?: unknown; accept?: string; status: number; auth: "jwt" | "token" }> => {
  const r = `/repos/${s.org}/${s.repo}`;
  return {
    "GET /app": { url: "/app", status: 200, auth: "jwt" },
    "GET /app/installations": { url: "/app/installations", status: 200, auth: "jwt" },
    "POST /app/installations/{installation_id}/access_tokens": { url: `/app/installations/${s.installationId}/access_tokens`, body: { permissions: { checks: "write" } }, status: 201, auth: "jwt" },
    "GET /installation/repositories": { url: "/installation/repositories", status: 200, auth: "token" },
    "GET /repos/{owner}/{repo}": { url: r, status: 200, auth: "token" },
    "GET /repos/{owner}/{repo}/pulls/{pull_number}": { url: `${r}/pulls/${s.pullNumber}`, status: 200, auth: "token" },
    "GET /repos/{owner}/{repo}/pulls": { url: `${r}/pulls?state=open`, status: 200, auth: "token" },
    "GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls": { url: `${r}/commits/${s.headSha}/pulls`, status: 200, auth: "token" },
    "GET /repos/{owner}/{repo}/pulls/{pull_number}/files": { url: `${r}/pulls/${s.pullNumber}/files`, status: 200, auth: "token" },
    "GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews": { url: `${r}/pulls/${s.pullNumber}/reviews`, status: 200, auth: "token" },
    "GET /repos/{owner}/{repo}/contents/{path}": { url: `${r}/contents/.forge%2FCODEOWNERS?ref=${s.baseSha}`, status: 200, auth: "token" },
    "GET /repos/{owner}/{repo}/git/blobs/{file_sha}": { url: "", status: 200, auth: "token" },
    "GET /repos/{owner}/{repo}/commits/{ref}": { url: `${r}/commits/${s.headSha}`, status: 200, auth: "token" },
    "GET /repos/{owner}/{repo}/collaborators/{username}/permission": { url: `${r}/collaborators/alice/permission`, status: 200, auth: "token" },
    "GET /orgs/{org}/memberships/{username}": { url: `/orgs/${s.org}/memberships/alice`, status: 200, auth: "token" },
    "GET /orgs/{org}/teams/{team_slug}": { url: `/orgs/${s.org}/teams/core`, status: 200, auth: "token" },
    "GET /orgs/{org}/teams/{team_slug}/repos/{owner}/{repo}": { url: `/orgs/${s.org}/teams/core${r}`, accept: "application/vnd.github.v3.repository+json", status: 200, auth: "token" },
    "GET /orgs/{org}/teams/{team_slug}/memberships/{username}": { url: `/orgs/${s.org}/teams/core/memberships/dave`, status: 200, auth: "token" },
    "GET /apps/{app_slug}": { url: `/apps/${s.botSlug}`, status: 200, auth: "token" },
    "GET /users/{username}": { url: `/users/${s.botSlug}%5Bbot%5D`, status: 200, auth: "token" },
    "POST /repos/{owner}/{repo}/check-runs": { url: `${r}/check-runs`, body: { name: "Service / approval", head_sha: s.headSha, status: "in_progress", output: { title: "t", summary: "s" } }, status: 201, auth: "token" },
    "GET /repos/{owner}/{repo}/commits/{ref}/check-runs": { url: `${r}/commits/${s.headSha}/check-runs?check_name=Service%20%2F%20approval&app_id=${s.appId}`, status: 200, auth: "token" },
    "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}": { url: "", body: { status: "completed", conclusion: "success", output: { title: "t", summary: "s", text: "x" } }, status: 200, auth: "token" },
    "POST /app-manifests/{code}/conversions": { url: "", status: 201, auth: "token" },
  };
};

describe("the simulator against the published OpenAPI description", () => {
  test("a merged pull request, alone and among the recently closed, carries the documented merge fields", async () => {
    await sim.control.commit({ owner: s.org, repo: s.repo, branch: "to-merge", files: { "src/merged.ts": "export {};\n" } });
    const pr = await sim.control.openPullRequest({ owner: s.org, repo: s.repo, head: "to-merge", author: "erin" });
    await sim.control.mergePullRequest({ owner: s.org, repo: s.repo, number: pr.number, by: "bob" });
    const get = async (url: string) => (await fetch(`${sim.url}${url}`, { headers: { authorization: `token ${token}` } })).json();
    const schemaOf = (path: string) => spec.paths[path]!.get!.responses["200"]!.content!["application/json"]!.schema;
    const single = await get(`/repos/${s.org}/${s.repo}/pulls/${pr.number}`) as Record<string, unknown>;
    expect(checkSchema(schemaOf("/repos/{owner}/{repo}/pulls/{pull_number}"), single)).toEqual([]);
    expect(single).toMatchObject({ state: "closed", merged: true, merged_by: { login: "bob" }, merge_commit_sha: expect.stringMatching(/^[0-9a-f]{40}$/), merged_at: expect.any(String) });
    const closed = await get(`/repos/${s.org}/${s.repo}/pulls?state=closed&sort=updated&direction=desc&per_page=100`) as Array<Record<string, unknown>>;
    expect(checkSchema(schemaOf("/repos/{owner}/{repo}/pulls"), closed)).toEqual([]);
    expect(closed[0]).toMatchObject({ number: pr.number, merge_commit_sha: single.merge_commit_sha, merged_at: single.merged_at });
    // The webhook's pull request is the full one.
    const delivered = sim.control.deliveries.filter((d) => d.event === "pull_request").map((d) => JSON.parse(d.body)).find((b) => b.action === "closed" && b.number === pr.number);
    expect(delivered?.pull_request).toMatchObject({ merged: true, merged_by: { login: "bob" }, merge_commit_sha: single.merge_commit_sha });
  });

  test("every served route exists in the description with its method", () => {
    for (const route of ROUTES) expect({ route: `${route.method} ${route.path}`, found: Boolean(spec.paths[route.path]?.[route.method.toLowerCase()]) }).toEqual({ route: `${route.method} ${route.path}`, found: true });
  });

  test("every served route's success body carries the documented required properties", async () => {
    const table = samples();
    expect(Object.keys(table).sort()).toEqual(ROUTES.map((r) => `${r.method} ${r.path}`).sort());
    for (const route of ROUTES) {
      const key = `${route.method} ${route.path}`;
      const sample = table[key]!;
      let url = sample.url;
      if (key === "GET /repos/{owner}/{repo}/git/blobs/{file_sha}") {
        const contents = await (await fetch(`${sim.url}/repos/${s.org}/${s.repo}/contents/README.md`, { headers: { authorization: `token ${token}` } })).json() as { sha: string };
        url = `/repos/${s.org}/${s.repo}/git/blobs/${contents.sha}`;
      }
      if (key === "PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}") url = `/repos/${s.org}/${s.repo}/check-runs/${checkRunId}`;
      if (key === "POST /app-manifests/{code}/conversions") url = `/app-manifests/${manifestCode}/conversions`;
      const headers: Record<string, string> = { authorization: sample.auth === "jwt" ? `Bearer ${jwt}` : `token ${token}` };
      if (sample.accept) headers.accept = sample.accept;
      const res = await fetch(`${sim.url}${url}`, { method: route.method, headers, ...(sample.body ? { body: JSON.stringify(sample.body) } : {}) });
      expect({ key, status: res.status }).toEqual({ key, status: sample.status });
      const body = await res.json();
      if (key === "POST /repos/{owner}/{repo}/check-runs") checkRunId = (body as { id: number }).id;
      const content = spec.paths[route.path]![route.method.toLowerCase()]!.responses[String(sample.status)]!.content!;
      const schema = (content["application/json"] ?? Object.values(content)[0])!.schema;
      expect({ key, errors: checkSchema(schema, body) }).toEqual({ key, errors: [] });
    }
  }, 20000);
});
