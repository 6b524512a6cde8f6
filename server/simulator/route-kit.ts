// Shared pieces of the simulator's REST routes: request context, results, auth and pagination helpers.
import type { SimulatorControl } from "./control.ts";
import type { FaultKind, FaultTable } from "./faults.ts";
import { diffCommits } from "./git.ts";
import { installationCovers, type ForgeApp, type Installation, type Repository, type Token } from "./model.ts";

export type Auth = { kind: "jwt"; app: ForgeApp } | { kind: "token"; token: Token; installation: Installation } | { kind: "none" };

export interface Ctx {
  req: Request; url: URL; params: Record<string, string>; auth: Auth; control: SimulatorControl; faults: FaultTable;
  base: string; body: unknown; tokenRequests: TokenRequest[];
}
/** `text`: a body sent as it is (with the content-type in `headers`) instead of JSON; an `etag` in `headers` replaces the computed one. */
export interface Result { status: number; body?: unknown; text?: string; headers?: Record<string, string> }
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

/**
 * One page of a list with the forge's Link header (next and last while a next page exists; first and prev after page 1),
 * or that page broken as a page fault asks (faults.ts): missing_page serves it empty, short_page one item short, end_early one
 * item short and without next/last (the list looks finished early), wrong_last announces one page more than there is,
 * omit_last leaves out rel="last" (as the forge does when it cannot compute it), repeat_item starts the page with the
 * previous page's last item (the list shifted while it was read), extra_page links the last page to one more that repeats
 * the first.
 */
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
  const fault = (kind: FaultKind) => ctx.faults.take(ctx.req.method, ctx.url.pathname, page, [kind]) !== undefined;
  const extra = fault("extra_page");
  const [missing, short, early, wrongLast, omitLast, repeat] = (["missing_page", "short_page", "end_early", "wrong_last", "omit_last", "repeat_item"] as const).map(fault);
  let slice = missing ? [] : items.slice((page - 1) * perPage, page * perPage);
  if (extra && page === last + 1) slice = items.slice(0, perPage);
  if (repeat && page > 1 && slice.length > 0) slice = [items[(page - 1) * perPage - 1]!, ...slice.slice(0, -1)];
  if (short || early) slice = slice.slice(0, -1);
  const links: string[] = [];
  if (!early && (page < last || (extra && page === last))) {
    links.push(link(page + 1, "next"));
    if (!omitLast) links.push(link((extra ? last + 1 : last) + (wrongLast ? 1 : 0), "last"));
  }
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
