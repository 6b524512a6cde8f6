// The forge's OAuth web flow for an App's users, and what a user's token may read:
//   GET  /login/oauth/authorize?client_id&state[&redirect_uri]   the sign-in page: one button per person (the simulator has no
//                                                                passwords; a test picks who signs in)
//   POST /login/oauth/authorize                                  form fields client_id, state, redirect_uri, login: a one-use
//                                                                code (10 minutes), back to redirect_uri or the App's first
//                                                                callback URL with code and state
//   POST /login/oauth/access_token                               client_id, client_secret, code (JSON or form): the user
//                                                                access token; a refused exchange answers 200 with `error`
//                                                                as the forge does
//   GET  /user                                                   with `Authorization: token <user token>`: the person
//   GET  /user/installations                                     the App's installations the person can reach
//   GET  /user/installations/{id}/repositories                   the repositories of that installation the person can read:
//                                                                a collaborator, a member of a team with access, or an
//                                                                administrator of the owning organization
import { randomBytes } from "node:crypto";
import { esc, html } from "./app-creation.ts";
import type { SimulatorControl } from "./control.ts";
import { type Account, type ForgeApp, installationCovers, type Repository } from "./model.ts";
import { installationJson, privateUserJson, repositoryJson } from "./shapes.ts";

const CODE_LIFETIME_MS = 10 * 60 * 1000;
const TOKEN_LIFETIME_MS = 8 * 60 * 60 * 1000;

export interface OAuthCode { appId: number; login: string; expiresAt: number }
export interface UserToken { appId: number; login: string; expiresAt: number }

const USER_PATH = /^\/user(?:\/installations(?:\/(\d+)\/repositories)?)?$/;

export function isOAuthPath(pathname: string): boolean {
  return pathname === "/login/oauth/authorize" || pathname === "/login/oauth/access_token" || USER_PATH.test(pathname);
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8", ...headers } });

function appByClientId(control: SimulatorControl, clientId: string | null): ForgeApp | undefined {
  for (const app of control.state.apps.values()) if (app.clientId === clientId) return app;
  return undefined;
}

/** Whether `login` may read `repo`: a collaborator, an active member of a team with access, or an admin of its organization. */
export function userCanRead(control: SimulatorControl, login: string, repo: Repository): boolean {
  const who = login.toLowerCase();
  if (repo.ownerLogin.toLowerCase() === who) return true;
  for (const name of repo.collaborators.keys()) if (name.toLowerCase() === who) return true;
  for (const team of control.state.teams.values()) {
    if (team.orgLogin.toLowerCase() !== repo.ownerLogin.toLowerCase() || !team.repos.has(repo.id)) continue;
    for (const [member, m] of team.members) if (member.toLowerCase() === who && m.state === "active") return true;
  }
  const membership = control.state.memberships.get(repo.ownerLogin.toLowerCase())?.get(who);
  return membership?.state === "active" && membership.role === "admin";
}

function page<T>(url: URL, items: T[]): { items: T[]; headers: Record<string, string> } {
  const perPage = Math.min(100, Math.max(1, Number(url.searchParams.get("per_page") ?? 30) || 30));
  const number = Math.max(1, Number(url.searchParams.get("page") ?? 1) || 1);
  const last = Math.max(1, Math.ceil(items.length / perPage));
  const headers: Record<string, string> = {};
  if (number < last) {
    const next = new URL(url);
    next.searchParams.set("page", String(number + 1));
    headers.link = `<${next}>; rel="next"`;
  }
  return { items: items.slice((number - 1) * perPage, number * perPage), headers };
}

export async function handleOAuth(control: SimulatorControl, req: Request, url: URL, base: string): Promise<Response> {
  const state = control.state;
  const now = Date.now();
  if (url.pathname === "/login/oauth/authorize") {
    if (req.method === "GET") {
      const app = appByClientId(control, url.searchParams.get("client_id"));
      if (app === undefined) return html(404, "Not found", "<p>No App has this client ID.</p>");
      const people = [...state.accounts.values()].filter((a: Account) => a.type === "User").sort((a, b) => a.login.localeCompare(b.login));
      const hidden = (name: string, value: string | null) => `<input type="hidden" name="${name}" value="${esc(value ?? "")}">`;
      const buttons = people.map((a) => `<li><button type="submit" name="login" value="${esc(a.login)}">Sign in as ${esc(a.login)}</button></li>`).join("");
      return html(200, `Authorize ${app.name}`, `<form method="post" action="/login/oauth/authorize">${hidden("client_id", app.clientId)}${hidden("state", url.searchParams.get("state"))}${hidden("redirect_uri", url.searchParams.get("redirect_uri"))}<ul id="people">${buttons}</ul></form>`);
    }
    if (req.method !== "POST") return html(405, "Method not allowed", "");
    const form = new URLSearchParams(await req.text());
    const app = appByClientId(control, form.get("client_id"));
    const login = form.get("login") ?? "";
    if (app === undefined || state.account(login)?.type !== "User") return html(422, "Cannot authorize", "<p>Unknown App or person.</p>");
    const target = form.get("redirect_uri") || app.callbackUrls[0];
    if (target === undefined) return html(422, "Cannot authorize", "<p>The App has no callback URL.</p>");
    if (form.get("redirect_uri") && !app.callbackUrls.some((callback) => form.get("redirect_uri")!.startsWith(callback))) {
      return html(422, "Cannot authorize", "<p>The redirect_uri is not one of the App's callback URLs.</p>");
    }
    const code = randomBytes(10).toString("hex");
    state.oauthCodes.set(code, { appId: app.id, login: state.account(login)!.login, expiresAt: now + CODE_LIFETIME_MS });
    const back = new URL(target);
    back.searchParams.set("code", code);
    if (form.get("state")) back.searchParams.set("state", form.get("state")!);
    return new Response(null, { status: 302, headers: { location: back.toString(), "cache-control": "no-store" } });
  }
  if (url.pathname === "/login/oauth/access_token") {
    if (req.method !== "POST") return json(404, { message: "Not Found" });
    const text = await req.text();
    let fields: Record<string, unknown>;
    try {
      fields = (req.headers.get("content-type") ?? "").includes("json") ? JSON.parse(text) as Record<string, unknown> : Object.fromEntries(new URLSearchParams(text));
    } catch {
      return json(400, { message: "Problems parsing JSON" });
    }
    const app = appByClientId(control, typeof fields.client_id === "string" ? fields.client_id : null);
    if (app === undefined || fields.client_secret !== app.clientSecret) {
      return json(200, { error: "incorrect_client_credentials", error_description: "The client_id and/or client_secret passed are incorrect.", error_uri: "https://docs.github.com/apps" });
    }
    const code = typeof fields.code === "string" ? state.oauthCodes.get(fields.code) : undefined;
    if (code === undefined || code.appId !== app.id || code.expiresAt < now) {
      return json(200, { error: "bad_verification_code", error_description: "The code passed is incorrect or expired.", error_uri: "https://docs.github.com/apps" });
    }
    state.oauthCodes.delete(fields.code as string);
    const token = `ghu_${randomBytes(18).toString("hex")}`;
    state.userTokens.set(token, { appId: app.id, login: code.login, expiresAt: now + TOKEN_LIFETIME_MS });
    return json(200, { access_token: token, token_type: "bearer", scope: "", expires_in: TOKEN_LIFETIME_MS / 1000 });
  }
  // The user's own reads.
  const presented = /^(?:token|bearer) (\S+)$/i.exec(req.headers.get("authorization") ?? "")?.[1];
  const user = presented === undefined ? undefined : state.userTokens.get(presented);
  if (user === undefined || user.expiresAt < now) return json(401, { message: "Bad credentials", status: "401" });
  if (req.method !== "GET") return json(404, { message: "Not Found" });
  const account = state.account(user.login)!;
  if (url.pathname === "/user") return json(200, privateUserJson(base, account));
  const repositories = (installationId: number) => {
    const installation = state.installations.get(installationId);
    if (installation === undefined || installation.appId !== user.appId) return undefined;
    return [...state.repos.values()].filter((repo) => installationCovers(installation, repo) && userCanRead(control, user.login, repo)).sort((a, b) => a.id - b.id);
  };
  const match = USER_PATH.exec(url.pathname)!;
  if (match[1] === undefined) {
    const reachable = [...state.installations.values()].filter((i) => i.appId === user.appId && (repositories(i.id)?.length ?? 0) > 0).sort((a, b) => a.id - b.id);
    const { items, headers } = page(url, reachable);
    return json(200, { total_count: reachable.length, installations: items.map((i) => installationJson(base, state, i)) }, headers);
  }
  const listed = repositories(Number(match[1]));
  if (listed === undefined) return json(404, { message: "Not Found", status: "404" });
  const { items, headers } = page(url, listed);
  return json(200, { total_count: listed.length, repositories: items.map((repo) => repositoryJson(base, state, repo)) }, headers);
}
