import { expect, test } from "@playwright/test";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cleanEnv, ROOT } from "./support/setup-processes.ts";
import { readTrialRecipe, withPorts } from "./support/trial-recipe.ts";
import { signInAs } from "./support/sign-in.ts";
import { SessionCipher } from "../server/http/decisions-access.ts";

/**
 * The setup rehearsal of docs/getting-started.md, run as a reader runs it: the document's own shell blocks (its ports swapped
 * for free ones) from a directory laid out like the repository, the browser through the service's plain-HTTP loopback setup
 * page and the simulator's App creation page, the credentials saved where the document says, the service restarted with
 * them, and the document's pull request and approval reaching the service as webhooks signed with the new App's secret. The
 * records are read signed in with the forge: alice and carol, who read different repositories, see different records; no
 * session, a forged or an expired one, sees nothing.
 */
test.describe.configure({ mode: "serial" });

const recipe = readTrialRecipe();
let dir: string;
let ports: { forge: number; service: number };
const running: Array<{ child: ChildProcess; output: () => string }> = [];

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** A shell block of the document, run as in a terminal in the repository's directory (its own process group, to stop it). */
function terminal(script: string): { child: ChildProcess; output: () => string } {
  const child = spawn("sh", ["-ec", withPorts(script, ports)], { cwd: dir, env: cleanEnv(), detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let text = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => { text += chunk; });
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => { text += chunk; });
  const shell = { child, output: () => text };
  running.push(shell);
  return shell;
}

/** Ctrl-C in that terminal: SIGINT to its process group, then wait for the shell to end. */
async function interrupt(shell: { child: ChildProcess }): Promise<void> {
  if (shell.child.exitCode !== null || shell.child.signalCode !== null) return;
  const exited = new Promise((resolve) => shell.child.once("exit", resolve));
  process.kill(-shell.child.pid!, "SIGINT");
  const timer = setTimeout(() => process.kill(-shell.child.pid!, "SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, shell: { output: () => string }): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen; output:\n${shell.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const serviceUrl = () => `http://127.0.0.1:${ports.service}`;

test.beforeAll(async () => {
  ports = { forge: await freePort(), service: await freePort() };
  // The repository's layout as `npm start` leaves it (the document's paths are relative to it); trial/ is the reader's own.
  dir = mkdtempSync(join(tmpdir(), "svc-trial-"));
  for (const entry of ["dist", ".tools", "server", "node_modules", "package.json", "tsconfig.json", "bunfig.toml"]) symlinkSync(join(ROOT, entry), join(dir, entry));
});

test.afterAll(async () => {
  for (const shell of running.reverse()) await interrupt(shell);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("the documented rehearsal: setup over loopback HTTP, the App created on the simulator, then a webhook reaches the service", async ({ browser }) => {
  test.setTimeout(120_000);
  expect(recipe.setupPage.startsWith("http://127.0.0.1:8080/")).toBe(true);
  const forge = terminal(recipe.forge);
  await until("the forge simulator to start", async () => (/^\{"url":"http:\/\/127\.0\.0\.1:\d+"/m.test(forge.output()) ? true : undefined), forge);

  const setup = terminal(recipe.setup);
  await until("the service in setup mode to answer", async () => ((await fetch(`${serviceUrl()}/health/live`)).ok ? true : undefined), setup);

  const context = await browser.newContext({ acceptDownloads: true });
  const page = await context.newPage();
  const external: string[] = [];
  await page.route((url) => url.hostname !== "127.0.0.1", (route) => { external.push(route.request().url()); return route.abort(); });

  // The setup page over plain HTTP: the public URL is the loopback address, and the setup cookie still binds this browser.
  const response = await page.goto(withPorts(recipe.setupPage, ports));
  expect(response!.status()).toBe(200);
  await expect(page.locator("#webhook-url")).toHaveText(`${serviceUrl()}/webhooks/forge`);
  expect((await context.cookies(serviceUrl())).map((c) => c.name)).toContain("__Host-setup-nonce");
  await page.getByRole("button", { name: recipe.buttons[0] }).click();
  // The simulator's creation page, then back to the service with the code.
  await expect(page.locator("#redirect-url")).toHaveText(`${serviceUrl()}/setup/callback`);
  await page.getByRole("button", { name: recipe.buttons[1] }).click();
  await expect(page.getByRole("heading", { name: /^App created: / })).toBeVisible();
  expect(new URL(page.url()).origin).toBe(serviceUrl());

  // Saved where the document says: the App ID as text, the key and the secret with the page's download buttons.
  mkdirSync(join(dir, "trial"), { recursive: true });
  const appId = (await page.locator("#app-id").textContent())!;
  expect(appId).toMatch(/^[1-9]\d*$/);
  execFileSync("sh", ["-c", `printf '%s\\n' "$1" > "$2"`, "sh", appId, recipe.files.appId], { cwd: dir });
  const clientId = (await page.locator("#client-id").textContent())!;
  execFileSync("sh", ["-c", `printf '%s\\n' "$1" > "$2"`, "sh", clientId, recipe.files.clientId], { cwd: dir });
  for (const [control, file] of [["#private-key-download", recipe.files.privateKey], ["#webhook-secret-download", recipe.files.webhookSecret], ["#client-secret-download", recipe.files.clientSecret]] as const) {
    const [download] = await Promise.all([page.waitForEvent("download"), page.locator(control).click()]);
    await download.saveAs(join(dir, file));
  }
  expect(readFileSync(join(dir, recipe.files.privateKey), "utf8")).toContain("BEGIN RSA PRIVATE KEY");

  // Ctrl-C, then the same terminal's settings with the App's credentials.
  await interrupt(setup);
  const exports = recipe.setup.split("\n").filter((line) => line.startsWith("export "));
  expect(exports).toHaveLength(1);
  const serve = terminal(`${exports.join("\n")}\n${recipe.serve}`);
  await until("the service to confirm the App's identity", async () => {
    const ready = (await (await fetch(`${serviceUrl()}/health/ready`)).json()) as { forge_credentials?: boolean };
    return ready.forge_credentials === true ? true : undefined;
  }, serve);

  // The document's pull request, then its approval, sent by the simulator as webhooks to the App's URL, signed with its secret.
  // The records are read signed in with the forge, as alice (who reads acme/web), through the simulator's sign-in page.
  type Summary = { kind: string; conclusion?: string; pull_request: number; repository: { full_name: string } };
  const alice = await signInAs(serviceUrl(), "alice");
  const recorded = (conclusion: string) => until(`a ${conclusion} to be recorded`, async () => {
    const found = (await (await fetch(`${serviceUrl()}/api/decisions?repository=acme/web`, { headers: { cookie: alice } })).json()) as { items: Summary[] };
    return found.items.some((d) => d.kind === "decision" && d.conclusion === conclusion) ? found.items : undefined;
  }, serve);
  const run = (block: string) => execFileSync("sh", ["-ec", withPorts(block, ports)], { cwd: dir, env: cleanEnv(), stdio: "pipe" });
  run(recipe.pullRequest);
  expect((await recorded("failure")).map((d) => [d.kind, d.pull_request, d.conclusion])).toEqual([["decision", 1, "failure"]]);
  run(recipe.approve);
  expect((await recorded("success")).map((d) => [d.kind, d.pull_request, d.conclusion])).toEqual([["decision", 1, "success"], ["decision", 1, "failure"]]);

  // The decisions page sends the browser to the forge's sign-in page, and back once alice signed in there.
  await page.goto(withPorts(recipe.decisionsPage, ports));
  expect(new URL(page.url()).pathname).toBe("/login/oauth/authorize");
  await page.getByRole("button", { name: "Sign in as alice" }).click();
  await expect(page).toHaveURL(withPorts(recipe.decisionsPage, ports));
  const session = (await context.cookies(serviceUrl())).find((c) => c.name === "__Host-decisions-session")!;
  expect({ httpOnly: session.httpOnly, secure: session.secure, sameSite: session.sameSite }).toEqual({ httpOnly: true, secure: true, sameSite: "Lax" });
  expect(session.expires * 1000 - Date.now()).toBeGreaterThan(8 * 3600_000 - 120_000);
  expect(session.expires * 1000 - Date.now()).toBeLessThanOrEqual(8 * 3600_000);
  await expect(page.getByTestId("results").locator("tbody tr")).toHaveCount(2);
  await expect(page.getByTestId("results")).toContainText("success");
  await expect(page.getByTestId("results")).toContainText("failure");
  await expect(page.getByTestId("session")).toHaveText("Signed in as alice · Sign out");

  const deliveries = (await (await fetch(`http://127.0.0.1:${ports.forge}/_control/deliveries`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })).json()) as Array<{ url: string; status: number | null; event: string }>;
  const toService = deliveries.filter((d) => d.url === `${serviceUrl()}/webhooks/forge`);
  expect(toService.map((d) => `${d.event}:${d.status}`)).toEqual(["pull_request:202", "pull_request_review:202"]);

  // carol reads only acme/api: a pull request there is recorded, and each person sees their own repository's records only.
  await fetch(`http://127.0.0.1:${ports.forge}/_control/pulls`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ owner: "acme", repo: "api", head: "fix", author: "bob", title: "Fix" }) });
  const carol = await signInAs(serviceUrl(), "carol");
  await until("acme/api's decision to be recorded", async () => {
    const found = (await (await fetch(`${serviceUrl()}/api/decisions`, { headers: { cookie: carol } })).json()) as { items: Summary[] };
    return found.items.length > 0 ? true : undefined;
  }, serve);
  const carolContext = await browser.newContext();
  const carolPage = await carolContext.newPage();
  await carolPage.route((url) => url.hostname !== "127.0.0.1", (route) => { external.push(route.request().url()); return route.abort(); });
  await carolPage.goto(`${serviceUrl()}/decisions/`);
  await carolPage.getByRole("button", { name: "Sign in as carol" }).click();
  await expect(carolPage.getByTestId("results").locator("tbody tr")).toHaveCount(1);
  await expect(carolPage.getByTestId("results")).toContainText("acme/api");
  await expect(carolPage.getByTestId("results")).not.toContainText("acme/web");
  await page.goto(`${serviceUrl()}/decisions/`);
  await expect(page.getByTestId("results").locator("tbody tr")).toHaveCount(2);
  await expect(page.getByTestId("results")).not.toContainText("acme/api");
  await expect(carolPage.getByTestId("session")).toContainText("Signed in as carol");

  // alice signs out from the page: her session cookie is gone, and the page sends her to sign in again.
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page.locator("#message")).toHaveText("You are signed out of the decision records.");
  expect((await context.cookies(serviceUrl())).some((c) => c.name === "__Host-decisions-session")).toBe(false);
  await page.goto(`${serviceUrl()}/decisions/`);
  expect(new URL(page.url()).pathname).toBe("/login/oauth/authorize");

  // Without a session, with a forged one, or with one past its 8 hours (sealed with the App's real client secret), nothing.
  const secret = readFileSync(join(dir, recipe.files.clientSecret), "utf8").trim();
  const expired = new SessionCipher(secret).seal({ login: "alice", id: 1, accessToken: "ghu_old" }, Date.now() - 8 * 3600_000 - 1000);
  for (const cookie of [undefined, "__Host-decisions-session=v1.Zm9yZ2VkLXNlc3Npb24tdGhhdC1uZXZlci1kZWNyeXB0cw", `__Host-decisions-session=${expired}`]) {
    const answer = await fetch(`${serviceUrl()}/api/decisions`, { headers: cookie === undefined ? {} : { cookie } });
    expect({ cookie, status: answer.status }).toEqual({ cookie, status: 401 });
    expect(await answer.text()).not.toContain("acme/");
  }
  const stranger = await browser.newContext();
  const strangerPage = await stranger.newPage();
  // The browser's devtools protocol refuses a __Host- cookie for an http:// address (addCookies), though the page's origin, a
  // loopback one, may set it: the expired session is planted by the page itself, as a script on this origin could.
  await strangerPage.goto(`${serviceUrl()}/health/live`);
  await strangerPage.evaluate((value) => { document.cookie = `__Host-decisions-session=${value}; Path=/; Secure; SameSite=Lax`; }, expired);
  expect((await stranger.cookies(serviceUrl())).map((c) => c.name)).toEqual(["__Host-decisions-session"]);
  await strangerPage.goto(`${serviceUrl()}/decisions/`);
  expect(new URL(strangerPage.url()).pathname).toBe("/login/oauth/authorize");
  expect(external).toEqual([]);
  await stranger.close();
  await carolContext.close();
  await context.close();
});
