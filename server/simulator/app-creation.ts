// The forge's App creation page at the simulator's web origin (the App-manifest flow, as the forge runs it):
//   POST /settings/apps/new?state=S                      form field `manifest` (JSON): the administrator's personal account
//   POST /organizations/{org}/settings/apps/new?state=S  the same for an organization (404 page when it does not exist)
//     → 200 HTML showing the App to be created, or 422 HTML listing what is wrong with the manifest (validated like the forge)
//   POST /settings/apps/new/confirm                      form field `pending` (the "Create" button)
//     → creates the App (fresh RSA key, webhook secret, client ID and secret), then 302 to the manifest's redirect_url with a
//       one-use `code` (expires after MANIFEST_CODE_LIFETIME_MS) and the `state` it was given.
// The conversion endpoint (POST /app-manifests/{code}/conversions, routes-app.ts) returns those credentials once.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import type { SimulatorControl } from "./control.ts";

/** The forge's manifest codes are valid for one hour. */
export const MANIFEST_CODE_LIFETIME_MS = 60 * 60 * 1000;
/** The logged-in administrator of the simulator's web pages (the owner of personal Apps). */
export const WEB_ADMIN_LOGIN = "simulator-admin";
const MAX_APP_NAME = 34;

/** Each subscribable event and the permission it needs (null: none), as the forge checks them when an App is registered. */
export const EVENT_PERMISSIONS: Readonly<Record<string, string | null>> = {
  check_run: "checks", check_suite: "checks", installation_target: null, label: "metadata", member: "members",
  membership: "members", organization: "members", pull_request: "pull_requests", pull_request_review: "pull_requests",
  pull_request_review_comment: "pull_requests", push: "contents", repository: "metadata", team: "members", team_add: "members",
  status: "statuses", merge_group: "merge_queues", issues: "issues", issue_comment: "issues", workflow_run: "actions", workflow_job: "actions",
};
export const KNOWN_PERMISSIONS = new Set([
  "actions", "administration", "checks", "contents", "deployments", "environments", "issues", "metadata", "packages", "pages",
  "pull_requests", "merge_queues", "repository_hooks", "repository_projects", "secret_scanning_alerts", "secrets", "security_events",
  "single_file", "statuses", "vulnerability_alerts", "workflows", "members", "organization_administration", "organization_hooks",
]);
const MANIFEST_KEYS = new Set([
  "name", "url", "hook_attributes", "redirect_url", "callback_urls", "setup_url", "description", "public", "default_events",
  "default_permissions", "request_oauth_on_install", "setup_on_update",
]);

export interface PendingCreation { owner: string; manifest: Record<string, unknown>; state: string | null }
export interface CreatedAppCode { appId: number; expiresAt: number; clientSecret: string; webhookSecret: string; pem: string }

const isHttpUrl = (v: unknown) => {
  if (typeof v !== "string") return false;
  try { const u = new URL(v); return u.protocol === "https:" || u.protocol === "http:"; } catch { return false; }
};

/** The forge's checks of a manifest; each problem is one human-readable line. */
export function validateManifest(control: SimulatorControl, manifest: unknown): string[] {
  if (typeof manifest !== "object" || manifest === null || Array.isArray(manifest)) return ["The manifest must be a JSON object."];
  const m = manifest as Record<string, unknown>;
  const errors: string[] = [];
  for (const key of Object.keys(m)) if (!MANIFEST_KEYS.has(key)) errors.push(`Unknown manifest field: ${key}.`);
  if (typeof m.name !== "string" || m.name.trim() === "") errors.push("Name can't be blank.");
  else if (m.name.length > MAX_APP_NAME) errors.push(`Name is too long (maximum is ${MAX_APP_NAME} characters).`);
  else if (control.state.appBySlug(slugOf(m.name))) errors.push("Name is already in use.");
  if (!isHttpUrl(m.url)) errors.push("Homepage URL (url) must be an http or https URL.");
  if (m.hook_attributes !== undefined) {
    const hook = m.hook_attributes as Record<string, unknown> | null;
    if (typeof hook !== "object" || hook === null) errors.push("hook_attributes must be an object.");
    else if (hook.active !== false && !isHttpUrl(hook.url)) errors.push("Webhook URL (hook_attributes.url) must be an http or https URL.");
  }
  if (m.redirect_url !== undefined && !isHttpUrl(m.redirect_url)) errors.push("redirect_url must be an http or https URL.");
  if (m.public !== undefined && typeof m.public !== "boolean") errors.push("public must be true or false.");
  const permissions = (m.default_permissions ?? {}) as Record<string, unknown>;
  if (typeof permissions !== "object" || permissions === null || Array.isArray(permissions)) errors.push("default_permissions must be an object.");
  else for (const [name, level] of Object.entries(permissions)) {
    if (!KNOWN_PERMISSIONS.has(name)) errors.push(`Unknown permission: ${name}.`);
    else if (level !== "read" && level !== "write" && !(level === "admin" && name === "administration")) errors.push(`Permission ${name} must be read or write.`);
  }
  const events = m.default_events ?? [];
  if (!Array.isArray(events)) errors.push("default_events must be a list.");
  else for (const event of events) {
    if (typeof event !== "string" || !(event in EVENT_PERMISSIONS)) { errors.push(`Unknown event: ${String(event)}.`); continue; }
    const needed = EVENT_PERMISSIONS[event];
    if (needed && !(needed in permissions)) errors.push(`Event ${event} needs the ${needed} permission.`);
  }
  return errors;
}

export function slugOf(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "") || "app";
}

export const esc = (t: string) => t.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
export const html = (status: number, title: string, body: string) => new Response(
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(title)} · Forge simulator</title></head><body><h1>${esc(title)}</h1>${body}</body></html>`,
  { status, headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" } },
);

const CREATE_PATH = /^\/(?:organizations\/([^/]+)\/)?settings\/apps\/new$/;
const CONFIRM_PATH = "/settings/apps/new/confirm";

export function isAppCreationPath(pathname: string): boolean {
  return pathname === CONFIRM_PATH || CREATE_PATH.test(pathname);
}

/** Handles the creation page's requests (see the header); `req` is a browser form post. */
export async function handleAppCreation(control: SimulatorControl, req: Request, url: URL): Promise<Response> {
  if (req.method !== "POST") return html(405, "Method not allowed", "<p>Post the manifest form.</p>");
  const form = new URLSearchParams(await req.text());
  const state = control.state;
  if (url.pathname === CONFIRM_PATH) {
    const id = form.get("pending") ?? "";
    const pending = state.pendingAppCreations.get(id);
    if (!pending) return html(404, "Not found", "<p>This App creation request is unknown or was already used.</p>");
    state.pendingAppCreations.delete(id);
    const errors = validateManifest(control, pending.manifest);
    if (errors.length) return html(422, "Invalid App manifest", `<ul id="errors">${errors.map((e) => `<li>${esc(e)}</li>`).join("")}</ul>`);
    const { code, redirect } = createAppFromManifest(control, pending);
    if (!redirect) return html(200, "App created", `<p>Code: <code id="code">${esc(code)}</code></p>`);
    return new Response(null, { status: 302, headers: { location: redirect, "cache-control": "no-store" } });
  }
  const org = CREATE_PATH.exec(url.pathname)![1];
  const owner = org ? decodeURIComponent(org) : WEB_ADMIN_LOGIN;
  if (org && state.account(owner)?.type !== "Organization") return html(404, "Not found", "<p>No such organization.</p>");
  let manifest: unknown;
  try { manifest = JSON.parse(form.get("manifest") ?? ""); } catch { manifest = undefined; }
  const errors = manifest === undefined ? ["The manifest is missing or is not valid JSON."] : validateManifest(control, manifest);
  if (errors.length) return html(422, "Invalid App manifest", `<ul id="errors">${errors.map((e) => `<li>${esc(e)}</li>`).join("")}</ul>`);
  const m = manifest as Record<string, unknown>;
  const id = randomBytes(12).toString("hex");
  state.pendingAppCreations.set(id, { owner, manifest: m, state: url.searchParams.get("state") });
  const hook = (m.hook_attributes ?? {}) as { url?: string };
  const permissions = Object.entries((m.default_permissions ?? {}) as Record<string, string>).map(([k, v]) => `<li>${esc(k)}: ${esc(v)}</li>`).join("");
  return html(200, `Create GitHub App for ${owner}`, `
<dl>
<dt>Owner</dt><dd id="owner">${esc(owner)}</dd>
<dt>Name</dt><dd id="name">${esc(String(m.name))}</dd>
<dt>Public</dt><dd id="public">${m.public === true ? "yes" : "no"}</dd>
<dt>Webhook URL</dt><dd id="webhook-url">${esc(hook.url ?? "")}</dd>
<dt>Redirect URL</dt><dd id="redirect-url">${esc(String(m.redirect_url ?? ""))}</dd>
</dl>
<h2>Permissions</h2><ul id="permissions">${permissions}</ul>
<h2>Events</h2><p id="events">${esc(((m.default_events ?? []) as string[]).join(", "))}</p>
<form method="post" action="${CONFIRM_PATH}"><input type="hidden" name="pending" value="${id}"><button type="submit">Create GitHub App for ${esc(owner)}</button></form>`);
}

/** Creates the App with fresh credentials and mints its one-use code; returns the redirect (code and state appended), if any. */
export function createAppFromManifest(control: SimulatorControl, pending: PendingCreation, nowMs = Date.now()): { code: string; appId: number; redirect: string | null } {
  const m = pending.manifest;
  const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048, publicKeyEncoding: { type: "pkcs1", format: "pem" }, privateKeyEncoding: { type: "pkcs1", format: "pem" } });
  if (!control.state.account(pending.owner)) control.createUser({ login: pending.owner });
  const hook = (m.hook_attributes ?? {}) as { url?: string; active?: boolean };
  const webhookSecret = randomBytes(32).toString("hex");
  const app = control.createApp({
    slug: slugOf(String(m.name)), name: String(m.name), owner: pending.owner, publicKeyPem: publicKey,
    permissions: { ...((m.default_permissions ?? {}) as Record<string, string>) }, events: [...((m.default_events ?? []) as string[])],
    webhookUrl: hook.active === false ? undefined : hook.url, webhookSecret,
    callbackUrls: Array.isArray(m.callback_urls) ? (m.callback_urls as unknown[]).filter((u): u is string => typeof u === "string") : [],
  });
  const code = randomBytes(10).toString("hex");
  control.state.createdAppCodes.set(code, { appId: app.id, expiresAt: nowMs + MANIFEST_CODE_LIFETIME_MS, clientSecret: app.clientSecret, webhookSecret, pem: privateKey });
  if (typeof m.redirect_url !== "string") return { code, appId: app.id, redirect: null };
  const target = new URL(m.redirect_url);
  target.searchParams.set("code", code);
  if (pending.state !== null) target.searchParams.set("state", pending.state);
  return { code, appId: app.id, redirect: target.toString() };
}
