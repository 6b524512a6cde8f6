import { type BrowserContext, expect, type Page, test } from "@playwright/test";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { newSetupNonce, SETUP_NONCE_COOKIE } from "../server/setup/nonce.ts";
import { setupStateAudience, signSetupState } from "../server/setup/state.ts";
import { control, migrate, type Running, startService, startSimulator } from "./support/setup-processes.ts";
import { makeCertificates, startTlsProxy, type TlsProxy } from "./support/setup-tls.ts";

/**
 * App setup in the browser (issue 11): the compiled binary in setup mode behind a TLS-terminating proxy on loopback (so the public
 * URL is HTTPS, as behind an ingress), the forge simulator as its own process. An administrator creates the App on the simulator's
 * creation page and reads its credentials on the callback page; the spec writes them to files, restarts the service with them,
 * sees readiness report forge_credentials true, and a pull request get its check run from that App. Then the error pages.
 * The setup is bound to the browser that opened /setup by a __Host- nonce cookie (issue 16): Chromium keeps it from the HTTPS
 * proxy's origin (https://127.0.0.1, a secure origin) and sends it on the forge's cross-site redirect back (SameSite=Lax).
 */
test.describe.configure({ mode: "serial" });

let dir: string;
let sim: Running;
let proxy: TlsProxy;
let service: Running | null = null;
let setupOutput = "";
let stateSecret: string;
let context: BrowserContext;
let page: Page;
const dbEnv = () => ({ SERVICE_DATABASE_URL: `sqlite:${join(dir, "service.db")}`, SERVICE_LOG_LEVEL: "debug" });

// What the administrator saw on the callback page, and the address it came back on.
const otherSecrets: string[] = []; // of the second App (tampered-state test)
const created = { appId: 0, slug: "", pem: "", webhookSecret: "", clientId: "", clientSecret: "", callbackUrl: "", code: "", state: "", nonce: "" };

let external: string[] = [];
let consoleErrors: string[] = [];
test.beforeAll(async ({ browser }) => {
  dir = mkdtempSync(join(tmpdir(), "svc-setup-"));
  const certs = makeCertificates(dir);
  sim = await startSimulator(certs.caFile);
  for (const login of ["acme", "acme-labs"]) await control(sim.url, "organizations", { login });
  proxy = await startTlsProxy(certs);
  stateSecret = randomBytes(32).toString("base64url");
  writeFileSync(join(dir, "state-secret"), stateSecret, { mode: 0o400 });
  migrate(dbEnv(), dir);
  service = await startService({
    ...dbEnv(), SERVICE_SETUP_ENABLED: "true", SERVICE_PUBLIC_URL: proxy.url, SERVICE_SETUP_STATE_SECRET_FILE: join(dir, "state-secret"),
    SERVICE_FORGE_WEB_URL: sim.url, SERVICE_FORGE_API_URL: sim.url,
  }, dir);
  proxy.target = service.url;
  context = await browser.newContext({ ignoreHTTPSErrors: true, acceptDownloads: true });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: proxy.url });
  page = await context.newPage();
  await page.route(/^(?!https?:\/\/127\.0\.0\.1[:/])[a-z]+:\/\//, (route) => { external.push(route.request().url()); return route.abort(); });
  // A content-security-policy violation (a blocked style or script) would show here.
  page.on("console", (message) => { if (message.type() === "error") consoleErrors.push(message.text()); });
});

test.afterAll(async () => {
  await context?.close();
  if (service) setupOutput += service.output();
  await service?.stop();
  await proxy?.close();
  await sim?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test.afterEach(() => {
  expect(external, "requests that left loopback").toEqual([]);
  // Error pages log their status as a failed resource load; anything else (a CSP violation) is a defect.
  expect(consoleErrors.filter((m) => !/Failed to load resource: the server responded with a status of (400|422|404)/.test(m)), "console errors").toEqual([]);
  consoleErrors = [];
});

test("the administrator creates the App on the forge and reads its credentials on the callback page", async () => {
  const response = await page.goto(`${proxy.url}/setup?organization=acme`);
  expect(response!.status()).toBe(200);
  expect(response!.headers()["cache-control"]).toBe("no-store, max-age=0");
  await expect(page.getByRole("heading", { name: "Create the code-owner approval App" })).toBeVisible();
  await expect(page.locator("#webhook-url")).toHaveText(`${proxy.url}/webhooks/forge`);
  await expect(page.locator("#permissions")).toContainText("Checks");
  // The browser keeps the setup's nonce: HttpOnly, Secure, SameSite=Lax, for the state's 10 minutes.
  const [nonce] = (await context.cookies(proxy.url)).filter((c) => c.name === SETUP_NONCE_COOKIE);
  expect(nonce).toMatchObject({ httpOnly: true, secure: true, sameSite: "Lax", path: "/" });
  expect(nonce!.expires - Date.now() / 1000).toBeGreaterThan(590);
  expect(nonce!.expires - Date.now() / 1000).toBeLessThanOrEqual(600);
  expect(await page.evaluate(() => document.cookie)).toBe("");

  await page.getByRole("button", { name: "Create App on the forge" }).click();
  await expect(page.getByRole("heading", { name: "Create GitHub App for acme" })).toBeVisible();
  await expect(page.locator("#webhook-url")).toHaveText(`${proxy.url}/webhooks/forge`);
  await expect(page.locator("#redirect-url")).toHaveText(`${proxy.url}/setup/callback`);
  await expect(page.locator("#public")).toHaveText("no");

  await page.getByRole("button", { name: "Create GitHub App for acme" }).click();
  await expect(page.getByRole("heading", { name: /^App created: / })).toBeVisible();
  const landed = new URL(page.url());
  expect(`${landed.origin}${landed.pathname}`).toBe(`${proxy.url}/setup/callback`);
  created.callbackUrl = page.url();
  created.code = landed.searchParams.get("code")!;
  created.state = landed.searchParams.get("state")!;
  // The nonce went back with the forge's redirect (the page shows credentials) and is dropped now that it was used.
  expect((await context.cookies(proxy.url)).filter((c) => c.name === SETUP_NONCE_COOKIE)).toEqual([]);
  created.nonce = nonce!.value;

  created.appId = Number(await page.locator("#app-id").textContent());
  created.slug = (await page.locator("#app-slug").textContent())!;
  created.pem = (await page.locator("#private-key").textContent())!;
  created.webhookSecret = (await page.locator("#webhook-secret").textContent())!;
  created.clientId = (await page.locator("#client-id").textContent())!;
  created.clientSecret = (await page.locator("#client-secret").textContent())!;
  expect(created.appId).toBeGreaterThan(0);
  expect(created.slug).toBe("acme-code-owner-approval");
  expect(created.pem).toContain("BEGIN RSA PRIVATE KEY");
  expect(created.webhookSecret.length).toBeGreaterThanOrEqual(32);
  expect(created.clientId).toMatch(/^Iv1\./);
  expect(created.clientSecret.length).toBeGreaterThan(0);
  await expect(page.locator("#service-settings")).toContainText(`SERVICE_FORGE_APP_ID=${created.appId}`);
  await expect(page.locator("#file-layout")).toContainText("private-key.pem");

  // The copy control (hashed script) and the download control both give the exact key.
  await page.locator('button[data-copy="private-key"]').click();
  await expect(page.locator("#private-key-status")).toHaveText("Copied");
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(created.pem);
  const [download] = await Promise.all([page.waitForEvent("download"), page.locator("#private-key-download").click()]);
  expect(download.suggestedFilename()).toBe("private-key.pem");
  expect(readFileSync((await download.path())!, "utf8")).toBe(created.pem);
});

test("reloading the credentials page shows a clear error page with status 400, and no credential", async () => {
  const response = await page.goto(created.callbackUrl);
  expect(response!.status()).toBe(400);
  await expect(page.getByRole("heading", { name: "Setup link already used" })).toBeVisible();
  await expect(page.locator("body")).not.toContainText("BEGIN RSA");
  await expect(page.locator("body")).not.toContainText(created.webhookSecret);
});

test("an expired state shows a clear error page with status 400", async () => {
  const claims = { nonceHash: newSetupNonce().hash, organization: "acme" };
  const expired = signSetupState(new TextEncoder().encode(stateSecret), setupStateAudience(proxy.url), Date.now() - 11 * 60_000, claims);
  const response = await page.goto(`${proxy.url}/setup/callback?${new URLSearchParams({ code: created.code, state: expired })}`);
  expect(response!.status()).toBe(400);
  await expect(page.getByRole("heading", { name: "Setup link expired" })).toBeVisible();
});

test("a tampered state, or the address opened in another browser, shows a clear 400 page, and its code is not used", async ({ browser }) => {
  // A second App, for acme-labs: the forge's redirect is held back (Playwright routes only the first request of a redirect
  // chain, so the "Create" post is fetched here without following it) so that the tampered address reaches the service first.
  let held = "";
  const confirm = (url: URL) => url.origin === sim.url && url.pathname === "/settings/apps/new/confirm";
  await page.route(confirm, async (route) => {
    const response = await route.fetch({ maxRedirects: 0 });
    held = response.headers()["location"] ?? "";
    await route.fulfill({ status: 200, contentType: "text/html", body: "<!doctype html><title>held</title><p>redirect held</p>" });
  });
  await page.goto(`${proxy.url}/setup?organization=acme-labs`);
  otherSecrets.push(...(await context.cookies(proxy.url)).filter((c) => c.name === SETUP_NONCE_COOKIE).map((c) => c.value));
  await page.getByRole("button", { name: "Create App on the forge" }).click();
  await page.getByRole("button", { name: "Create GitHub App for acme-labs" }).click();
  await expect.poll(() => held).not.toBe("");
  await page.unroute(confirm);
  const genuine = new URL(held);
  const [payload, signature] = genuine.searchParams.get("state")!.split(".") as [string, string];
  for (const tampered of [
    `${payload}.${signature.slice(0, 4)}${signature[4] === "A" ? "B" : "A"}${signature.slice(5)}`,
    `${payload.slice(0, 4)}${payload[4] === "A" ? "B" : "A"}${payload.slice(5)}.${signature}`,
  ]) {
    const url = new URL(genuine);
    url.searchParams.set("state", tampered);
    const response = await page.goto(url.toString());
    expect(response!.status()).toBe(400);
    await expect(page.getByRole("heading", { name: "Invalid setup state" })).toBeVisible();
  }
  // Another browser (no setup cookie) cannot use the genuine address either.
  const elsewhere = await browser.newContext({ ignoreHTTPSErrors: true });
  const other = await elsewhere.newPage();
  const refused = await other.goto(held);
  expect(refused!.status()).toBe(400);
  await expect(other.getByRole("heading", { name: "Setup started in another browser" })).toBeVisible();
  await expect(other.locator("body")).not.toContainText("BEGIN RSA");
  await elsewhere.close();
  // The state and cookie were checked before any exchange: the genuine address in the administrator's browser still converts
  // the (unused) code.
  const response = await page.goto(held);
  expect(response!.status()).toBe(200);
  await expect(page.locator("#app-slug")).toHaveText("acme-labs-code-owner-approval");
  const genuineState = genuine.searchParams.get("state")!;
  otherSecrets.push(genuine.searchParams.get("code")!, genuineState, ...genuineState.split("."), (await page.locator("#webhook-secret").textContent())!,
    (await page.locator("#client-secret").textContent())!, ...(await page.locator("#private-key").textContent())!.split("\n").filter((l) => l.length > 20));
});

test("a callback without code or state shows an error page with status 422", async () => {
  const response = await page.goto(`${proxy.url}/setup/callback`);
  expect(response!.status()).toBe(422);
  await expect(page.getByRole("heading", { name: "Missing code or state" })).toBeVisible();
});

test("restarted with the credentials, the service is ready and that App publishes the check run of a pull request", async () => {
  test.setTimeout(60_000);
  // The service's log over the whole setup flow holds neither the code, the state nor any credential.
  setupOutput += service!.output();
  await service!.stop();
  service = null;
  const secrets = [created.code, created.state, ...created.state.split("."), created.nonce, created.webhookSecret, created.clientSecret, created.clientId, ...created.pem.split("\n").filter((l) => l.length > 20)];
  expect(setupOutput).toContain('"msg":"listening"');
  // Each callback left one fixed outcome word, and nothing else about the request.
  for (const word of ["exchange_ok", "state_replayed", "state_expired", "state_signature", "cookie_missing"]) expect(setupOutput).toContain(`"setup_callback":"${word}"`);
  expect(otherSecrets.length).toBeGreaterThan(5);
  for (const secret of [...secrets, ...otherSecrets]) expect(setupOutput).not.toContain(secret);

  // The files and settings the callback page described.
  writeFileSync(join(dir, "private-key.pem"), created.pem, { mode: 0o400 });
  writeFileSync(join(dir, "webhook-secret"), created.webhookSecret, { mode: 0o400 });
  chmodSync(dir, 0o700);
  service = await startService({
    ...dbEnv(), SERVICE_FORGE_APP_ID: String(created.appId), SERVICE_FORGE_PRIVATE_KEY_FILE: join(dir, "private-key.pem"),
    SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(dir, "webhook-secret"), SERVICE_FORGE_API_URL: sim.url, SERVICE_FORGE_WEB_URL: sim.url,
    SERVICE_SETUP_ENABLED: "false",
  }, dir);
  proxy.target = service.url;

  await expect.poll(async () => (await (await context.request.get(`${proxy.url}/health/ready`)).json()).forge_credentials, { timeout: 15_000 }).toBe(true);
  expect((await context.request.get(`${proxy.url}/setup`)).status()).toBe(404);

  // A repository of acme with an owner and the policy opt-in; the App installed; a pull request from someone else.
  for (const login of ["alice", "bob"]) {
    await control(sim.url, "users", { login });
    await control(sim.url, "org-memberships", { org: "acme", user: login, state: "active" });
  }
  await control(sim.url, "repositories", { owner: "acme", name: "web", files: { ".forge/CODEOWNERS": "* @alice\n", ".forge/service-policy.toml": "schema_version = 1\nenabled = true\n", "README.md": "# web\n" } });
  for (const user of ["alice", "bob"]) await control(sim.url, "collaborators", { owner: "acme", repo: "web", user, permission: "write" });
  await control(sim.url, "installations", { appId: created.appId, account: "acme" });
  await control(sim.url, "commits", { owner: "acme", repo: "web", branch: "feature", files: { "src/index.ts": "export const x = 1;\n" }, sender: "bob" });
  const pr = await control<{ number: number; head_sha: string }>(sim.url, "pulls", { owner: "acme", repo: "web", head: "feature", author: "bob", title: "Feature" });

  type Run = { app: { id: number }; status: string; conclusion: string | null; name: string };
  const runs = () => control<Run[]>(sim.url, "check-runs", { owner: "acme", repo: "web", headSha: pr.head_sha });
  await expect.poll(async () => (await runs()).map((r) => `${r.app.id}:${r.status}:${r.conclusion}`), { timeout: 20_000 }).toEqual([`${created.appId}:completed:failure`]);
  await control(sim.url, "reviews", { owner: "acme", repo: "web", number: pr.number, user: "alice", state: "APPROVED" });
  await expect.poll(async () => (await runs()).map((r) => `${r.app.id}:${r.status}:${r.conclusion}`), { timeout: 20_000 }).toEqual([`${created.appId}:completed:success`]);
  expect((await runs())[0]!.name).toBe("Service / approval");

  // Every webhook reached the service through the HTTPS proxy, signed with the new App's secret.
  const deliveries = await control<{ url: string; status: number | null }[]>(sim.url, "deliveries");
  expect(deliveries.length).toBeGreaterThan(0);
  for (const d of deliveries) expect(d).toMatchObject({ url: `${proxy.url}/webhooks/forge`, status: 202 });
  for (const secret of [created.webhookSecret, ...created.pem.split("\n").filter((l) => l.length > 20)]) expect(service.output()).not.toContain(secret);
});
