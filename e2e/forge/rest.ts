// The forge REST routes the service calls (DESIGN 7.1), on real forge paths, with the forge's auth rules and pagination.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import type { SimulatorControl } from "./control.ts";
import type { FaultTable } from "./faults.ts";
import { diffCommits } from "./git.ts";
import { installationCovers, type ForgeApp, type Installation, type Repository, type Token } from "./model.ts";
import { appJson, checkRunJson, installationJson, organizationJson, privateUserJson, pullJson, repositoryJson, reviewJson, teamJson, userJson } from "./shapes.ts";

export type Auth = { kind: "jwt"; app: ForgeApp } | { kind: "token"; token: Token; installation: Installation } | { kind: "none" };

export interface Ctx {
  req: Request; url: URL; params: Record<string, string>; auth: Auth; control: SimulatorControl; faults: FaultTable;
  base: string; body: unknown; tokenRequests: TokenRequest[];
}
export interface Result { status: number; body?: unknown; headers?: Record<string, string> }
export interface TokenRequest { installationId: number; permissions: Record<string, string> | null; granted: boolean }

export class HttpFail extends Error {
  constructor(readonly status: number, message: string) { super(message); }
}

export interface Route {
  method: "GET" | "POST" | "PATCH"; path: string; auth: "jwt" | "token" | "optional";
  permission?: [string, "read" | "write"]; handle: (ctx: Ctx) => Result | Promise<Result>;
}

const LEVEL: Record<string, number> = { read: 1, write: 2, admin: 3 };
export const MAX_LISTED_PULL_FILES = 3000; // the forge lists at most 3,000 files of a pull request
const BLOB_CONTENT_LIMIT = 1024 * 1024; // contents API omits content over 1 MB

const ok = (body: unknown, headers?: Record<string, string>): Result => ({ status: 200, body, headers });

export function paginate<T>(ctx: Ctx, items: T[]): { items: T[]; headers: Record<string, string> } {
  const perPage = Math.min(100, Math.max(1, Number(ctx.url.searchParams.get("per_page") ?? 30) || 30));
  const page = Math.max(1, Number(ctx.url.searchParams.get("page") ?? 1) || 1);
  const last = Math.max(1, Math.ceil(items.length / perPage));
  const link = (p: number, rel: string) => {
    const u = new URL(ctx.url.pathname + ctx.url.search, ctx.base);
    u.searchParams.set("per_page", String(perPage));
    u.searchParams.set("page", String(p));
    return `<${u.toString()}>; rel="${rel}"`;
  };
  const method = ctx.req.method;
  const extra = ctx.faults.take(method, ctx.url.pathname, page, ["extra_page"]);
  const missing = ctx.faults.take(method, ctx.url.pathname, page, ["missing_page"]);
  let slice = missing ? [] : items.slice((page - 1) * perPage, page * perPage);
  if (extra && page === last + 1) slice = items.slice(0, perPage);
  const links: string[] = [];
  if (page < last || (extra && page === last)) links.push(link(page + 1, "next"), link(extra ? last + 1 : last, "last"));
  if (page > 1) links.push(link(1, "first"), link(page - 1, "prev"));
  return { items: slice, headers: links.length ? { link: links.join(", ") } : {} };
}

function repoFor(ctx: Ctx): Repository {
  const repo = ctx.control.state.repo(ctx.params.owner!, ctx.params.repo!);
  if (!repo || ctx.auth.kind !== "token" || !installationCovers(ctx.auth.installation, repo)) throw new HttpFail(404, "Not Found");
  return repo;
}

function orgFor(ctx: Ctx): string {
  const org = ctx.control.state.account(ctx.params.org!);
  if (!org || org.type !== "Organization" || ctx.auth.kind !== "token" || ctx.auth.installation.accountLogin.toLowerCase() !== org.login.toLowerCase()) {
    throw new HttpFail(404, "Not Found");
  }
  return org.login;
}

function resolveRef(repo: Repository, ref: string | null): string | undefined {
  if (!ref) return repo.branches.get(repo.defaultBranch);
  return repo.branches.get(ref.replace(/^refs\/heads\//, "")) ?? (/^[0-9a-f]{40}$/.test(ref) ? ref : undefined);
}

function pullCounts(ctx: Ctx, repo: Repository, headSha: string, baseSha: string) {
  const files = diffCommits(ctx.control.state, baseSha, headSha);
  return { changedFiles: files.length, additions: files.reduce((n, f) => n + f.additions, 0), deletions: files.reduce((n, f) => n + f.deletions, 0) };
}

function mustPull(ctx: Ctx, repo: Repository) {
  const pr = repo.pulls.get(Number(ctx.params.pull_number));
  if (!pr) throw new HttpFail(404, "Not Found");
  return pr;
}

const s = (ctx: Ctx) => ctx.control.state;

export const ROUTES: Route[] = [
  { method: "GET", path: "/app", auth: "jwt", handle: (ctx) => ok(appJson(ctx.base, s(ctx), (ctx.auth as { app: ForgeApp }).app)) },
  {
    method: "GET", path: "/app/installations", auth: "jwt", handle: (ctx) => {
      const app = (ctx.auth as { app: ForgeApp }).app;
      const all = [...s(ctx).installations.values()].filter((i) => i.appId === app.id).map((i) => installationJson(ctx.base, s(ctx), i));
      const page = paginate(ctx, all);
      return ok(page.items, page.headers);
    },
  },
  {
    method: "POST", path: "/app/installations/{installation_id}/access_tokens", auth: "jwt", handle: (ctx) => {
      const app = (ctx.auth as { app: ForgeApp }).app;
      const inst = s(ctx).installations.get(Number(ctx.params.installation_id));
      if (!inst || inst.appId !== app.id) throw new HttpFail(404, "Not Found");
      if (inst.suspendedAt) throw new HttpFail(403, "This installation has been suspended");
      const body = (ctx.body ?? {}) as { permissions?: Record<string, string> };
      const requested = body.permissions ?? null;
      const record: TokenRequest = { installationId: inst.id, permissions: requested, granted: false };
      ctx.tokenRequests.push(record);
      if (requested && "statuses" in requested) throw new HttpFail(422, "The service must never request the statuses permission");
      for (const [name, level] of Object.entries(requested ?? {})) {
        if ((LEVEL[inst.permissions[name] ?? ""] ?? 0) < (LEVEL[level] ?? 9)) throw new HttpFail(422, "The permissions requested are not granted to this installation.");
      }
      record.granted = true;
      const token = { token: `ghs_${randomBytes(18).toString("hex")}`, installationId: inst.id, permissions: requested ?? { ...inst.permissions }, expiresAt: Date.now() + 3600_000 };
      s(ctx).tokens.set(token.token, token);
      return { status: 201, body: { token: token.token, expires_at: new Date(token.expiresAt).toISOString().replace(/\.\d+Z$/, "Z"), permissions: token.permissions, repository_selection: inst.repositorySelection } };
    },
  },
  {
    method: "GET", path: "/installation/repositories", auth: "token", permission: ["metadata", "read"], handle: (ctx) => {
      const inst = (ctx.auth as { installation: Installation }).installation;
      const repos = [...s(ctx).repos.values()].filter((r) => installationCovers(inst, r)).sort((a, b) => a.id - b.id);
      const page = paginate(ctx, repos);
      return ok({ total_count: repos.length, repository_selection: inst.repositorySelection, repositories: page.items.map((r) => repositoryJson(ctx.base, s(ctx), r)) }, page.headers);
    },
  },
  { method: "GET", path: "/repos/{owner}/{repo}", auth: "token", permission: ["metadata", "read"], handle: (ctx) => ok(repositoryJson(ctx.base, s(ctx), repoFor(ctx))) },
  {
    method: "GET", path: "/repos/{owner}/{repo}/pulls/{pull_number}", auth: "token", permission: ["pull_requests", "read"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const pr = mustPull(ctx, repo);
      return ok(pullJson(ctx.base, s(ctx), repo, pr, pullCounts(ctx, repo, pr.headSha, pr.baseSha)));
    },
  },
  {
    method: "GET", path: "/repos/{owner}/{repo}/pulls", auth: "token", permission: ["pull_requests", "read"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const q = ctx.url.searchParams;
      const state = q.get("state") ?? "open";
      const head = q.get("head");
      const all = [...repo.pulls.values()]
        .filter((p) => (state === "all" || p.state === state) && (!q.get("base") || p.baseRef === q.get("base")) && (!head || `${repo.ownerLogin}:${p.headRef}` === head))
        .sort((a, b) => (q.get("direction") === "asc" ? a.number - b.number : b.number - a.number));
      const page = paginate(ctx, all);
      return ok(page.items.map((p) => pullJson(ctx.base, s(ctx), repo, p)), page.headers);
    },
  },
  {
    method: "GET", path: "/repos/{owner}/{repo}/pulls/{pull_number}/files", auth: "token", permission: ["pull_requests", "read"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const pr = mustPull(ctx, repo);
      const full = `${repo.ownerLogin}/${repo.name}`;
      const files = diffCommits(s(ctx), pr.baseSha, pr.headSha).slice(0, MAX_LISTED_PULL_FILES);
      const page = paginate(ctx, files);
      return ok(page.items.map((f) => ({
        sha: f.sha, filename: f.filename, status: f.status, additions: f.additions, deletions: f.deletions, changes: f.additions + f.deletions,
        blob_url: `${ctx.base}/html/${full}/blob/${pr.headSha}/${f.filename}`, raw_url: `${ctx.base}/html/${full}/raw/${pr.headSha}/${f.filename}`,
        contents_url: `${ctx.base}/repos/${full}/contents/${f.filename}?ref=${pr.headSha}`, patch: "",
        ...(f.previous_filename ? { previous_filename: f.previous_filename } : {}),
      })), page.headers);
    },
  },
  {
    method: "GET", path: "/repos/{owner}/{repo}/pulls/{pull_number}/reviews", auth: "token", permission: ["pull_requests", "read"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const pr = mustPull(ctx, repo);
      const page = paginate(ctx, pr.reviews);
      return ok(page.items.map((r) => reviewJson(ctx.base, s(ctx), repo, pr, r)), page.headers);
    },
  },
  {
    method: "GET", path: "/repos/{owner}/{repo}/contents/{path}", auth: "token", permission: ["contents", "read"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const sha = resolveRef(repo, ctx.url.searchParams.get("ref"));
      const commit = sha ? s(ctx).commits.get(sha) : undefined;
      const path = ctx.params.path!;
      const blobSha = commit?.tree.get(path);
      if (!commit || !blobSha) throw new HttpFail(404, "Not Found");
      const bytes = s(ctx).blobs.get(blobSha)!;
      const full = `${repo.ownerLogin}/${repo.name}`;
      const self = `${ctx.base}/repos/${full}/contents/${path}?ref=${sha}`;
      const big = bytes.length > BLOB_CONTENT_LIMIT;
      return ok({
        type: "file", encoding: big ? "none" : "base64", size: bytes.length, name: path.split("/").pop(), path, sha: blobSha,
        content: big ? "" : wrap64(Buffer.from(bytes).toString("base64")), url: self, git_url: `${ctx.base}/repos/${full}/git/blobs/${blobSha}`,
        html_url: `${ctx.base}/html/${full}/blob/${sha}/${path}`, download_url: `${ctx.base}/html/${full}/raw/${sha}/${path}`,
        _links: { self, git: `${ctx.base}/repos/${full}/git/blobs/${blobSha}`, html: `${ctx.base}/html/${full}/blob/${sha}/${path}` },
      });
    },
  },
  {
    method: "GET", path: "/repos/{owner}/{repo}/git/blobs/{file_sha}", auth: "token", permission: ["contents", "read"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const bytes = s(ctx).blobs.get(ctx.params.file_sha!);
      if (!bytes) throw new HttpFail(404, "Not Found");
      return ok({
        sha: ctx.params.file_sha, node_id: Buffer.from(`Blob:${ctx.params.file_sha}`).toString("base64"), size: bytes.length,
        url: `${ctx.base}/repos/${repo.ownerLogin}/${repo.name}/git/blobs/${ctx.params.file_sha}`, content: wrap64(Buffer.from(bytes).toString("base64")), encoding: "base64",
      });
    },
  },
  {
    method: "GET", path: "/repos/{owner}/{repo}/collaborators/{username}/permission", auth: "token", permission: ["metadata", "read"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const user = s(ctx).account(ctx.params.username!);
      if (!user) throw new HttpFail(404, "Not Found");
      const role = repo.collaborators.get(user.login.toLowerCase()) ?? (user.login.toLowerCase() === repo.ownerLogin.toLowerCase() ? "admin" : null);
      const permission = role === null ? "none" : role === "maintain" ? "write" : role === "triage" ? "read" : role;
      return ok({ permission, role_name: role ?? "none", user: { ...userJson(ctx.base, user), role_name: role ?? "none" } });
    },
  },
  {
    method: "GET", path: "/orgs/{org}/memberships/{username}", auth: "token", permission: ["members", "read"], handle: (ctx) => {
      const org = orgFor(ctx);
      const user = s(ctx).account(ctx.params.username!);
      const m = user ? s(ctx).memberships.get(org.toLowerCase())?.get(user.login.toLowerCase()) : undefined;
      if (!user || !m) throw new HttpFail(404, "Not Found");
      return ok({
        url: `${ctx.base}/orgs/${org}/memberships/${user.login}`, state: m.state, role: m.role, organization_url: `${ctx.base}/orgs/${org}`,
        organization: organizationJson(ctx.base, s(ctx).account(org)!), user: userJson(ctx.base, user),
      });
    },
  },
  {
    method: "GET", path: "/orgs/{org}/teams/{team_slug}", auth: "token", permission: ["members", "read"], handle: (ctx) => {
      const team = s(ctx).team(orgFor(ctx), ctx.params.team_slug!);
      if (!team) throw new HttpFail(404, "Not Found");
      return ok(teamJson(ctx.base, s(ctx), team));
    },
  },
  {
    method: "GET", path: "/orgs/{org}/teams/{team_slug}/repos/{owner}/{repo}", auth: "token", permission: ["members", "read"], handle: (ctx) => {
      const team = s(ctx).team(orgFor(ctx), ctx.params.team_slug!);
      const repo = repoFor(ctx);
      const level = team?.repos.get(repo.id);
      if (!team || !level) throw new HttpFail(404, "Not Found");
      if (!(ctx.req.headers.get("accept") ?? "").includes("application/vnd.github.v3.repository+json")) return { status: 204 };
      const rank = ["pull", "triage", "push", "maintain", "admin"].indexOf(level);
      return ok({ ...repositoryJson(ctx.base, s(ctx), repo, { pull: rank >= 0, triage: rank >= 1, push: rank >= 2, maintain: rank >= 3, admin: rank >= 4 }), role_name: level });
    },
  },
  {
    method: "GET", path: "/orgs/{org}/teams/{team_slug}/memberships/{username}", auth: "token", permission: ["members", "read"], handle: (ctx) => {
      const org = orgFor(ctx);
      const team = s(ctx).team(org, ctx.params.team_slug!);
      const user = s(ctx).account(ctx.params.username!);
      const m = user ? team?.members.get(user.login.toLowerCase()) : undefined;
      if (!team || !user || !m) throw new HttpFail(404, "Not Found");
      return ok({ url: `${ctx.base}/orgs/${org}/teams/${team.slug}/memberships/${user.login}`, role: m.role, state: m.state });
    },
  },
  {
    method: "GET", path: "/apps/{app_slug}", auth: "optional", handle: (ctx) => {
      const app = s(ctx).appBySlug(ctx.params.app_slug!);
      if (!app) throw new HttpFail(404, "Not Found");
      return ok(appJson(ctx.base, s(ctx), app));
    },
  },
  {
    method: "GET", path: "/users/{username}", auth: "optional", handle: (ctx) => {
      const user = s(ctx).account(ctx.params.username!);
      if (!user) throw new HttpFail(404, "Not Found");
      return ok(privateUserJson(ctx.base, user));
    },
  },
  {
    method: "GET", path: "/repos/{owner}/{repo}/commits/{ref}/check-runs", auth: "token", permission: ["checks", "read"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const sha = resolveRef(repo, ctx.params.ref!);
      const q = ctx.url.searchParams;
      let runs = [...s(ctx).checkRuns.values()].filter((r) => r.repoId === repo.id && r.headSha === sha
        && (!q.get("check_name") || r.name === q.get("check_name")) && (!q.get("app_id") || r.appId === Number(q.get("app_id"))));
      if ((q.get("filter") ?? "latest") === "latest") {
        const latest = new Map<string, (typeof runs)[number]>();
        for (const r of runs) { const k = `${r.appId}/${r.name}`; if ((latest.get(k)?.id ?? 0) < r.id) latest.set(k, r); }
        runs = [...latest.values()];
      }
      runs.sort((a, b) => b.id - a.id);
      const page = paginate(ctx, runs);
      return ok({ total_count: runs.length, check_runs: page.items.map((r) => checkRunJson(ctx.base, s(ctx), repo, r)) }, page.headers);
    },
  },
  {
    method: "POST", path: "/repos/{owner}/{repo}/check-runs", auth: "token", permission: ["checks", "write"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const body = (ctx.body ?? {}) as Record<string, unknown>;
      if (typeof body.name !== "string" || typeof body.head_sha !== "string" || !s(ctx).commits.has(body.head_sha)) throw new HttpFail(422, "Validation Failed");
      const id = s(ctx).nextId("check");
      const run = {
        id, appId: (ctx.auth as { installation: Installation }).installation.appId, repoId: repo.id, name: body.name, headSha: body.head_sha,
        status: "queued" as const, conclusion: null, output: { title: null, summary: null, text: null }, startedAt: new Date().toISOString(),
        completedAt: null, externalId: null, detailsUrl: null, suiteId: s(ctx).nextId("suite"),
      };
      applyCheckUpdate(run, body);
      s(ctx).checkRuns.set(id, run);
      return { status: 201, body: checkRunJson(ctx.base, s(ctx), repo, run) };
    },
  },
  {
    method: "PATCH", path: "/repos/{owner}/{repo}/check-runs/{check_run_id}", auth: "token", permission: ["checks", "write"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const run = s(ctx).checkRuns.get(Number(ctx.params.check_run_id));
      if (!run || run.repoId !== repo.id) throw new HttpFail(404, "Not Found");
      if (run.appId !== (ctx.auth as { installation: Installation }).installation.appId) throw new HttpFail(403, "Invalid app_id `" + run.appId + "` - check run can only be modified by the GitHub App that created it.");
      applyCheckUpdate(run, (ctx.body ?? {}) as Record<string, unknown>);
      return ok(checkRunJson(ctx.base, s(ctx), repo, run));
    },
  },
  {
    method: "POST", path: "/app-manifests/{code}/conversions", auth: "optional", handle: (ctx) => {
      const manifest = s(ctx).manifestCodes.get(ctx.params.code!);
      if (!manifest) throw new HttpFail(404, "Not Found");
      s(ctx).manifestCodes.delete(ctx.params.code!);
      const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048, publicKeyEncoding: { type: "pkcs1", format: "pem" }, privateKeyEncoding: { type: "pkcs1", format: "pem" } });
      const name = typeof manifest.name === "string" ? manifest.name : "Forge App";
      let slug = name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "") || "app";
      while (s(ctx).appBySlug(slug)) slug += "-1";
      const hook = manifest.hook_attributes as { url?: string } | undefined;
      const webhookSecret = randomBytes(32).toString("hex");
      const owner = typeof manifest.__owner === "string" && manifest.__owner ? manifest.__owner : "simulator-admin";
      if (!s(ctx).account(owner)) ctx.control.createUser({ login: owner });
      const app = ctx.control.createApp({
        slug, name, owner, publicKeyPem: publicKey,
        permissions: (manifest.default_permissions as Record<string, string> | undefined) ?? undefined,
        events: (manifest.default_events as string[] | undefined) ?? undefined, webhookUrl: hook?.url, webhookSecret,
      });
      return { status: 201, body: { ...appJson(ctx.base, s(ctx), app), client_secret: randomBytes(20).toString("hex"), webhook_secret: webhookSecret, pem: privateKey } };
    },
  },
];

function applyCheckUpdate(run: import("./model.ts").CheckRun, body: Record<string, unknown>): void {
  const now = new Date().toISOString();
  if (typeof body.name === "string") run.name = body.name;
  if (typeof body.external_id === "string") run.externalId = body.external_id;
  if (typeof body.details_url === "string") run.detailsUrl = body.details_url;
  if (typeof body.started_at === "string") run.startedAt = body.started_at;
  const output = body.output as { title?: string; summary?: string; text?: string } | undefined;
  if (output) run.output = { title: output.title ?? null, summary: output.summary ?? null, text: output.text ?? null };
  if (typeof body.conclusion === "string") {
    run.status = "completed"; run.conclusion = body.conclusion; run.completedAt = typeof body.completed_at === "string" ? body.completed_at : now;
  } else if (body.status === "in_progress" || body.status === "queued") {
    run.status = body.status; run.conclusion = null; run.completedAt = null;
  } else if (body.status === "completed") {
    throw new HttpFail(422, "conclusion is required when status is completed");
  }
}

function wrap64(b64: string): string { return (b64.match(/.{1,60}/g) ?? [""]).join("\n") + (b64 ? "\n" : ""); }
