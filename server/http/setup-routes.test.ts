import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startForgeSimulator, type ForgeSimulator } from "../../e2e/forge/simulator.ts";
import { mintAppJwt } from "../../e2e/forge/scenario.ts";
import type { Config } from "../config/index.ts";
import { createLogger } from "../observability/logger.ts";
import { createExchange, type ExchangeCode, setupStateAudience, signSetupState } from "../setup/index.ts";
import { setupRoutes } from "./setup-routes.ts";

const PUBLIC_URL = "https://approvals.example.com";
const STATE_SECRET = new TextEncoder().encode("a-setup-state-secret-of-32-bytes!!");

let sim: ForgeSimulator;
beforeAll(() => { sim = startForgeSimulator(); sim.control.createOrganization({ login: "acme" }); });
afterAll(async () => { await sim.stop(); });

/** Every log line the routes write, as text. */
function capture() {
  const lines: string[] = [];
  return { lines, log: createLogger("trace", { write: (line: string) => { lines.push(line); } }) };
}

function routes(options: { enabled?: boolean; exchange?: ExchangeCode; now?: () => number; log?: ReturnType<typeof createLogger> } = {}) {
  const config = {
    setup: options.enabled === false ? { enabled: false as const } : { enabled: true as const, publicUrl: PUBLIC_URL, stateSecret: STATE_SECRET },
    forge: { apiUrl: sim.url, webUrl: sim.url },
  } as unknown as Pick<Config, "setup" | "forge">;
  return setupRoutes({ config, ...(options.exchange ? { exchange: options.exchange } : {}), ...(options.now ? { now: options.now } : {}), ...(options.log ? { log: options.log } : {}) });
}
type Routes = ReturnType<typeof routes>;
const get = (app: Routes, path: string) => app.handle(new Request(`http://localhost${path}`));
const validState = (now = Date.now()) => signSetupState(STATE_SECRET, setupStateAudience(PUBLIC_URL), now);
const query = (params: Record<string, string>) => new URLSearchParams(params).toString();

/** The administrator's browser: opens /setup, posts the form to the forge, presses Create, follows the redirect. */
let flows = 0;
async function runFlow(app: Routes, organization = `acme${++flows}`) {
  sim.control.createOrganization({ login: organization }); // App names are unique on the forge: one organization per flow
  const page = await (await get(app, `/setup?organization=${organization}`)).text();
  const action = /<form method="post" action="([^"]+)">/.exec(page)![1]!.replace(/&amp;/g, "&");
  const manifest = /name="manifest" value="([^"]+)"/.exec(page)![1]!.replace(/&quot;/g, '"').replace(/&amp;/g, "&");
  const shown = await fetch(action, { method: "POST", body: new URLSearchParams({ manifest }), redirect: "manual" });
  const pending = /name="pending" value="([0-9a-f]+)"/.exec(await shown.text())![1]!;
  const confirmed = await fetch(`${sim.url}/settings/apps/new/confirm`, { method: "POST", body: new URLSearchParams({ pending }), redirect: "manual" });
  const location = new URL(confirmed.headers.get("location")!);
  expect(`${location.origin}${location.pathname}`).toBe(`${PUBLIC_URL}/setup/callback`);
  return { location, code: location.searchParams.get("code")!, state: location.searchParams.get("state")!, manifest: JSON.parse(manifest) as Record<string, unknown> };
}

function expectSetupHeaders(response: Response, contentType = "text/html; charset=utf-8") {
  expect(response.headers.get("content-type")).toBe(contentType);
  expect(response.headers.get("cache-control")).toBe("no-store, max-age=0");
  expect(response.headers.get("referrer-policy")).toBe("no-referrer");
  expect(response.headers.get("x-frame-options")).toBe("DENY");
  expect(response.headers.get("x-content-type-options")).toBe("nosniff");
  const csp = response.headers.get("content-security-policy")!;
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).not.toContain("unsafe-inline");
  expect(csp).not.toContain("unsafe-eval");
}

describe("spec error table: setup rows", () => {
  test("/setup/callback success: 200 text/html with App ID, slug, private key, webhook secret and client ID/secret", async () => {
    const app = routes();
    const { location } = await runFlow(app, "acme");
    const response = await get(app, `${location.pathname}${location.search}`);
    expect(response.status).toBe(200);
    expectSetupHeaders(response);
    expect(response.headers.get("content-security-policy")).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'/);
    const html = await response.text();
    const appId = Number(/<code id="app-id">(\d+)<\/code>/.exec(html)![1]);
    const created = sim.control.state.apps.get(appId)!;
    expect(created).toMatchObject({ slug: "acme-code-owner-approval", ownerLogin: "acme" });
    expect(html).toContain(`<code id="app-slug">${created.slug}</code>`);
    expect(html).toContain(`<code id="client-id">${created.clientId}</code>`);
    expect(html).toContain(`<pre id="webhook-secret">${created.webhookSecret}</pre>`);
    const pem = /<pre id="private-key">([^<]+)<\/pre>/.exec(html)![1]!;
    expect(pem).toContain("BEGIN RSA PRIVATE KEY");
    expect(/<pre id="client-secret">([0-9a-f]+)<\/pre>/.test(html)).toBe(true);
    // The shown key is the App's key: the forge accepts a JWT signed with it.
    const res = await fetch(`${sim.url}/app`, { headers: { authorization: `Bearer ${mintAppJwt(appId, pem)}` } });
    expect(res.status).toBe(200);
    // The exact settings and file layout to run the service with them.
    expect(html).toContain(`SERVICE_FORGE_APP_ID=${appId}`);
    expect(html).toContain("SERVICE_FORGE_PRIVATE_KEY_FILE=/etc/codeowner-approval/private-key.pem");
    expect(html).toContain("SERVICE_FORGE_WEBHOOK_SECRET_FILE=/etc/codeowner-approval/webhook-secret");
    expect(html).toContain(`SERVICE_FORGE_API_URL=${sim.url}`);
    expect(html).toContain("SERVICE_SETUP_ENABLED=false");
    // Copy (hashed script, no inline handlers) and download controls.
    expect(html).toContain('data-copy="private-key"');
    expect(html).toContain('download="private-key.pem"');
    expect(html).toContain('download="webhook-secret"');
    expect(html).toContain('download="service.env"');
    expect(html).not.toMatch(/\son[a-z]+=/);
  });

  test("/setup/callback invalid state (tampered, wrong secret, other audience, garbage): 400, and the code is not exchanged", async () => {
    let exchanges = 0;
    const app = routes({ exchange: async () => { exchanges++; return { kind: "rejected" }; } });
    const state = validState();
    const [payload, signature] = state.split(".") as [string, string];
    const tampered = [
      `${payload.slice(0, -2)}${payload.at(-2) === "A" ? "B" : "A"}${payload.at(-1)}.${signature}`,
      `${payload}.${signature.slice(0, -3)}${signature.at(-3) === "A" ? "B" : "A"}${signature.slice(-2)}`,
      signSetupState(new TextEncoder().encode("some-other-secret-that-is-32-bytes!"), setupStateAudience(PUBLIC_URL), Date.now()),
      signSetupState(STATE_SECRET, setupStateAudience("https://other.example.com"), Date.now()),
      "not-a-state",
    ];
    for (const bad of tampered) {
      const response = await get(app, `/setup/callback?${query({ code: "0123456789abcdef0123", state: bad })}`);
      expect(response.status).toBe(400);
      expectSetupHeaders(response);
      expect(await response.text()).toContain("Invalid setup state");
    }
    expect(exchanges).toBe(0);
  });

  test("/setup/callback expired state: 400, and the code is not exchanged", async () => {
    let exchanges = 0;
    const app = routes({ exchange: async () => { exchanges++; return { kind: "rejected" }; } });
    const response = await get(app, `/setup/callback?${query({ code: "0123456789abcdef0123", state: validState(Date.now() - 11 * 60_000) })}`);
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("Setup link expired");
    expect(exchanges).toBe(0);
  });

  test("/setup/callback rejected exchange (reused code, expired code, unknown code): 400", async () => {
    const app = routes();
    const { location, code, state } = await runFlow(app);
    expect((await get(app, `${location.pathname}${location.search}`)).status).toBe(200);
    const reused = await get(app, `${location.pathname}${location.search}`);
    expect(reused.status).toBe(400);
    expectSetupHeaders(reused);
    expect(await reused.text()).toContain("Code refused by the forge");

    const second = await runFlow(app);
    sim.control.expireManifestCodes();
    expect((await get(app, `/setup/callback?${query({ code: second.code, state: second.state })}`)).status).toBe(400);
    expect((await get(app, `/setup/callback?${query({ code: "ffffffffffffffffffff", state })}`)).status).toBe(400);
    expect((await get(app, `/setup/callback?${query({ code: "../../app", state })}`)).status).toBe(400);
  });

  test("/setup/callback incomplete credential response: 400 and nothing shown", async () => {
    for (const missing of ["id", "slug", "pem", "webhook_secret", "client_secret"]) {
      const body: Record<string, unknown> = { id: 7, slug: "x", name: "x", html_url: "https://forge.example/apps/x", client_id: "Iv1.x", client_secret: "cs", webhook_secret: "ws-secret-value", pem: "-----BEGIN RSA PRIVATE KEY-----" };
      delete body[missing];
      const fakeFetch = (async () => Response.json(body, { status: 201 })) as unknown as typeof fetch;
      const app = routes({ exchange: createExchange({ apiUrl: sim.url, fetch: fakeFetch }) });
      const response = await get(app, `/setup/callback?${query({ code: "0123456789abcdef0123", state: validState() })}`);
      expect(response.status).toBe(400);
      const html = await response.text();
      expect(html).toContain("Incomplete credentials");
      expect(html).not.toContain("ws-secret-value");
      expect(html).not.toContain("BEGIN RSA");
    }
  });

  test("/setup/callback with code or state missing: 422, whether setup is enabled or not (checked before the 404)", async () => {
    for (const enabled of [true, false]) {
      const app = routes({ enabled });
      for (const q of ["", "?code=abc", "?state=abc", "?code=&state=abc", "?code=abc&state="]) {
        const response = await get(app, `/setup/callback${q}`);
        expect(response.status).toBe(422);
        expectSetupHeaders(response);
      }
    }
  });

  test("/setup/callback with setup disabled and both parameters present: 404", async () => {
    let exchanges = 0;
    const app = routes({ enabled: false, exchange: async () => { exchanges++; return { kind: "rejected" }; } });
    const response = await get(app, `/setup/callback?${query({ code: "0123456789abcdef0123", state: validState() })}`);
    expect(response.status).toBe(404);
    expectSetupHeaders(response, "application/json; charset=utf-8");
    expect(exchanges).toBe(0);
  });

  test("/setup and /setup/complete with setup disabled: 404", async () => {
    const app = routes({ enabled: false });
    for (const path of ["/setup", "/setup?organization=acme", "/setup/complete"]) {
      const response = await get(app, path);
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({ error: "not_found" });
    }
  });
});

describe("GET /setup", () => {
  test("the form posts the manifest to the organization's App creation page with a signed state", async () => {
    const response = await get(routes(), "/setup?organization=acme");
    expect(response.status).toBe(200);
    expectSetupHeaders(response);
    expect(response.headers.get("content-security-policy")).toContain(`form-action ${sim.url}`);
    expect(response.headers.get("content-security-policy")).toContain("script-src 'none'");
    const html = await response.text();
    expect(html).toContain(`action="${sim.url}/organizations/acme/settings/apps/new?state=`);
    expect(html).toContain(`${PUBLIC_URL}/webhooks/forge`);
    expect(html).not.toContain("<script");
  });
  test("without an organization it targets the personal App settings", async () => {
    const html = await (await get(routes(), "/setup")).text();
    expect(html).toContain(`action="${sim.url}/settings/apps/new?state=`);
    expect(html).toContain("your personal account");
  });
  test("a malformed organization is a clear 400 page", async () => {
    for (const bad of ["-acme", "ac%20me", "acme%2F..", "%3Cscript%3E", "x".repeat(40), "a&organization=b"]) {
      const response = await get(routes(), `/setup?organization=${bad}`);
      expect(response.status).toBe(400);
      expectSetupHeaders(response);
      const html = await response.text();
      expect(html).toContain("Malformed organization name");
      expect(html).not.toContain("<script");
    }
  });
});

describe("GET /setup/complete", () => {
  test("a configuration pointer while setup is enabled", async () => {
    const response = await get(routes(), "/setup/complete");
    expect(response.status).toBe(200);
    expectSetupHeaders(response);
    expect(await response.text()).toContain("SERVICE_FORGE_PRIVATE_KEY_FILE");
  });
});

describe("exchange", () => {
  test("a forge that does not answer in time is a 502 page, and the exchange is bounded", async () => {
    sim.injectFault({ kind: "slow", method: "POST", path: "/app-manifests/[^/]+/conversions", delayMs: 2000, times: 1 });
    const app = routes({ exchange: createExchange({ apiUrl: sim.url, timeoutMs: 200 }) });
    const started = performance.now();
    const response = await get(app, `/setup/callback?${query({ code: "0123456789abcdef0123", state: validState() })}`);
    expect(response.status).toBe(502);
    expect(performance.now() - started).toBeLessThan(1500);
    sim.faults.clear();
  });
});

describe("logs", () => {
  test("the full log output after a flow contains neither the code, the state nor any credential", async () => {
    const { lines, log } = capture();
    const app = routes({ log });
    const { location, code, state } = await runFlow(app);
    const html = await (await get(app, `${location.pathname}${location.search}`)).text();
    await get(app, `${location.pathname}${location.search}`); // reused code
    await get(app, `/setup/callback?${query({ code, state: `${state}x` })}`); // tampered state
    const output = lines.join("");
    expect(lines.length).toBeGreaterThanOrEqual(3);
    const appId = /<code id="app-id">(\d+)<\/code>/.exec(html)![1]!;
    const app_ = sim.control.state.apps.get(Number(appId))!;
    const pem = /<pre id="private-key">([^<]+)<\/pre>/.exec(html)![1]!;
    const clientSecret = /<pre id="client-secret">([^<]+)<\/pre>/.exec(html)![1]!;
    for (const secret of [code, state, state.split(".")[0]!, state.split(".")[1]!, app_.webhookSecret!, clientSecret, app_.clientId, ...pem.split("\n").filter((l) => l.length > 20)]) {
      expect(output).not.toContain(secret);
    }
    expect(output).not.toContain("/setup/callback?");
    expect(output).not.toContain(`"app_id":${appId}`);
  });
});

describe("in the application", () => {
  test("createApp mounts the setup routes: 422 before 404 when disabled, the form when enabled", async () => {
    const { createApp } = await import("./app.ts");
    const { loadConfig } = await import("../config/index.ts");
    const { createMetrics } = await import("../observability/metrics.ts");
    const build = (env: Record<string, string>) => {
      const config = loadConfig({ SERVICE_DATABASE_URL: "sqlite::memory:", ...env });
      const metrics = createMetrics({ readQueueGauges: async () => ({ queueDepth: 0, sharedHeadInvalidationDepth: 0, deadJobs: 0 }) } as never);
      const log = createLogger("silent");
      const store = {} as never;
      const webhook = { secret: null, store, metrics, log, mapping: { organizationPolicyRepository: ".forge", checkName: config.checkName, appId: null }, fastPath: null, invalidationTimeoutMs: 1000, now: () => Date.now() };
      return createApp({ config, build: { version: "0.1.0", buildRevision: null }, health: { config, store, credentials: null, worker: null, reconciler: null } as never, metrics, webhook, log });
    };
    const disabled = build({});
    const at = (a: ReturnType<typeof build>, path: string) => a.handle(new Request(`http://localhost${path}`));
    expect((await at(disabled, "/setup/callback")).status).toBe(422);
    expect((await at(disabled, "/setup/callback?code=a&state=b")).status).toBe(404);
    expect((await at(disabled, "/setup")).status).toBe(404);
    expect((await at(disabled, "/setup/complete")).status).toBe(404);
    const enabled = build({ SERVICE_SETUP_ENABLED: "true", SERVICE_PUBLIC_URL: PUBLIC_URL, SERVICE_SETUP_STATE_SECRET: "s".repeat(40), SERVICE_FORGE_WEB_URL: sim.url, SERVICE_FORGE_API_URL: sim.url });
    const form = await at(enabled, "/setup?organization=acme");
    expect(form.status).toBe(200);
    expect(await form.text()).toContain(`${sim.url}/organizations/acme/settings/apps/new?state=`);
    expect((await at(enabled, "/setup/callback?code=a&state=b")).status).toBe(400);
    expect((await at(enabled, "/setup/complete")).status).toBe(200);
  });
});
