// Shared pieces of the simulator's REST routes: request context, results, auth and pagination helpers.
import type { SimulatorControl } from "./control.ts";
import type { FaultTable } from "./faults.ts";
import { diffCommits } from "./git.ts";
import { installationCovers, type ForgeApp, type Installation, type Repository, type Token } from "./model.ts";

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

export const LEVEL: Record<string, number> = { read: 1, write: 2, admin: 3 };
export const MAX_LISTED_PULL_FILES = 3000; // the forge lists at most 3,000 files of a pull request
export const BLOB_CONTENT_LIMIT = 1024 * 1024; // contents API omits content over 1 MB

export const ok = (body: unknown, headers?: Record<string, string>): Result => ({ status: 200, body, headers });

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

export function repoFor(ctx: Ctx): Repository {
  const repo = ctx.control.state.repo(ctx.params.owner!, ctx.params.repo!);
  if (!repo || ctx.auth.kind !== "token" || !installationCovers(ctx.auth.installation, repo)) throw new HttpFail(404, "Not Found");
  return repo;
}

export function orgFor(ctx: Ctx): string {
  const org = ctx.control.state.account(ctx.params.org!);
  if (!org || org.type !== "Organization" || ctx.auth.kind !== "token" || ctx.auth.installation.accountLogin.toLowerCase() !== org.login.toLowerCase()) {
    throw new HttpFail(404, "Not Found");
  }
  return org.login;
}

export function resolveRef(repo: Repository, ref: string | null): string | undefined {
  if (!ref) return repo.branches.get(repo.defaultBranch);
  return repo.branches.get(ref.replace(/^refs\/heads\//, "")) ?? (/^[0-9a-f]{40}$/.test(ref) ? ref : undefined);
}

export function pullCounts(ctx: Ctx, repo: Repository, headSha: string, baseSha: string) {
  const files = diffCommits(ctx.control.state, baseSha, headSha);
  return { changedFiles: files.length, additions: files.reduce((n, f) => n + f.additions, 0), deletions: files.reduce((n, f) => n + f.deletions, 0) };
}

export function mustPull(ctx: Ctx, repo: Repository) {
  const pr = repo.pulls.get(Number(ctx.params.pull_number));
  if (!pr) throw new HttpFail(404, "Not Found");
  return pr;
}

export const s = (ctx: Ctx) => ctx.control.state;
