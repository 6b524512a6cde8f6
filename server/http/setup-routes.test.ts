import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { startForgeSimulator, type ForgeSimulator } from "../simulator/simulator.ts";
import { mintAppJwt } from "../simulator/scenario.ts";
import type { Config } from "../config/index.ts";
import { createBodyBudget } from "../ingress/index.ts";
import { createLogger } from "../observability/logger.ts";
import { createExchange, type ExchangeCode, newSetupNonce, SETUP_NONCE_COOKIE, setupStateAudience, signSetupState, verifySetupState } from "../setup/index.ts";
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

function routes(options: { enabled?: boolean; exchange?: ExchangeCode; now?: () => number; log?: ReturnType<typeof createLogger>; setupUrl?: string } = {}) {
  const config = {
    setup: options.enabled === false ? { enabled: false as const } : { enabled: true as const, publicUrl: PUBLIC_URL, setupUrl: options.setupUrl ?? PUBLIC_URL, stateSecret: STATE_SECRET },
    forge: { apiUrl: sim.url, webUrl: sim.url },
  } as unknown as Pick<Config, "setup" | "forge">;
  return setupRoutes({ config, ...(options.exchange ? { exchange: options.exchange } : {}), ...(options.now ? { now: options.now } : {}), ...(options.log ? { log: options.log } : {}) });
}
type Routes = ReturnType<typeof routes>;
const get = (app: Routes, path: string, cookie?: string) => app.handle(new Request(`http://localhost${path}`, cookie ? { headers: { cookie } } : {}));
/** A state signed as /setup signs it (for `organization`, at `now`), and the cookie of the browser it belongs to. */
function signedSetup(now = Date.now(), organization: string | null = "acme", secret = STATE_SECRET, publicUrl = PUBLIC_URL) {
  const nonce = newSetupNonce();
  return { state: signSetupState(secret, setupStateAudience(publicUrl), now, { nonceHash: nonce.hash, organization }), cookie: `${SETUP_NONCE_COOKIE}=${nonce.nonce}` };
}
const query = (params: Record<string, string>) => new URLSearchParams(params).toString();

/** The `name=value` of the cookie a response sets (what a browser sends back), or "" when it sets none. */
const cookieOf = (response: Response) => (response.headers.get("set-cookie") ?? "").split(";")[0]!;

/** The administrator's browser opens /setup: the state the form carries to the forge, and the cookie the browser keeps. */
async function startSetup(app: Routes, organization: string | null) {
  const response = await get(app, organization === null ? "/setup" : `/setup?organization=${organization}`);
  const page = await response.text();
  const action = new URL(/<form method="post" action="([^"]+)">/.exec(page)![1]!.replace(/&amp;/g, "&"));
  return { response, page, action, state: action.searchParams.get("state")!, cookie: cookieOf(response) };
}

/** The administrator's browser: opens /setup, posts the form to the forge, presses Create, follows the redirect. */
let flows = 0;
async function runFlow(app: Routes, organization = `acme${++flows}`) {
  sim.control.createOrganization({ login: organization }); // App names are unique on the forge: one organization per flow
  const started = await get(app, `/setup?organization=${organization}`);
  const page = await started.text();
  const action = /<form method="post" action="([^"]+)">/.exec(page)![1]!.replace(/&amp;/g, "&");
  const manifest = /name="manifest" value="([^"]+)"/.exec(page)![1]!.replace(/&quot;/g, '"').replace(/&amp;/g, "&");
  const shown = await fetch(action, { method: "POST", body: new URLSearchParams({ manifest }), redirect: "manual" });
  const pending = /name="pending" value="([0-9a-f]+)"/.exec(await shown.text())![1]!;
  const confirmed = await fetch(`${sim.url}/settings/apps/new/confirm`, { method: "POST", body: new URLSearchParams({ pending }), redirect: "manual" });
  const location = new URL(confirmed.headers.get("location")!);
  expect(`${location.origin}${location.pathname}`).toBe(`${PUBLIC_URL}/setup/callback`);
  return {
    organization, location, path: `${location.pathname}${location.search}`, code: location.searchParams.get("code")!,
    state: location.searchParams.get("state")!, cookie: cookieOf(started),
    manifest: JSON.parse(manifest) as Record<string, unknown>,
  };
}

/** A one-use code for a new App owned by `owner` (created as an organization unless it exists), as the forge would mint it. */
let minted = 0;
function codeForAppOf(owner: string, type: "Organization" | "User" = "Organization") {
  if (type === "User") sim.control.createUser({ login: owner });
  else sim.control.createOrganization({ login: owner });
  return sim.control.mintManifestCode({ manifest: { name: `minted approval ${++minted}` }, owner }).code;
}

/** Nothing of the App behind `code`, nor the code itself, is in `html`: no key, no secret, no App ID. */
function expectNothingSecret(html: string, code: string) {
  expect(html).not.toContain(code);
  expect(html).not.toContain("BEGIN RSA");
  expect(html).not.toMatch(/id="(app-id|private-key|webhook-secret|client-secret|client-id)"/);
  for (const app of sim.control.state.apps.values()) if (app.webhookSecret) expect(html).not.toContain(app.webhookSecret);
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
    const { path, cookie } = await runFlow(app, "acme");
    const response = await get(app, path, cookie);
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
    // Each state comes with the cookie of the browser it was made for: the state alone is what is wrong.
    const { state, cookie } = signedSetup();
    const [payload, signature] = state.split(".") as [string, string];
    const otherSecret = signedSetup(Date.now(), "acme", new TextEncoder().encode("some-other-secret-that-is-32-bytes!"));
    const otherAudience = signedSetup(Date.now(), "acme", STATE_SECRET, "https://other.example.com");
    const tampered: [string, string][] = [
      [`${payload.slice(0, -2)}${payload.at(-2) === "A" ? "B" : "A"}${payload.at(-1)}.${signature}`, cookie],
      [`${payload}.${signature.slice(0, -3)}${signature.at(-3) === "A" ? "B" : "A"}${signature.slice(-2)}`, cookie],
      [otherSecret.state, otherSecret.cookie],
      [otherAudience.state, otherAudience.cookie],
      ["not-a-state", cookie],
    ];
    for (const [bad, browser] of tampered) {
      const response = await get(app, `/setup/callback?${query({ code: "0123456789abcdef0123", state: bad })}`, browser);
      expect(response.status).toBe(400);
      expectSetupHeaders(response);
      expect(await response.text()).toContain("Invalid setup state");
    }
    expect(exchanges).toBe(0);
  });

  test("/setup/callback expired state: 400, and the code is not exchanged", async () => {
    let exchanges = 0;
    const app = routes({ exchange: async () => { exchanges++; return { kind: "rejected" }; } });
    const { state, cookie } = signedSetup(Date.now() - 11 * 60_000);
    const response = await get(app, `/setup/callback?${query({ code: "0123456789abcdef0123", state })}`, cookie);
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("Setup link expired");
    expect(exchanges).toBe(0);
  });

  test("/setup/callback rejected exchange (reused code, expired code, unknown code): 400", async () => {
    const app = routes();
    const flow = await runFlow(app);
    expect((await get(app, flow.path, flow.cookie)).status).toBe(200);
    // Each code below comes with a fresh, valid state and its cookie: what is refused is the code.
    const refused = async (code: string) => {
      const { state, cookie } = signedSetup(Date.now(), flow.organization);
      const response = await get(app, `/setup/callback?${query({ code, state })}`, cookie);
      expect(response.status).toBe(400);
      expectSetupHeaders(response);
      expect(await response.text()).toContain("Code refused by the forge");
    };
    await refused(flow.code);
    const second = await runFlow(app);
    sim.control.expireManifestCodes();
    await refused(second.code);
    await refused("ffffffffffffffffffff");
    await refused("../../app");
  });

  test("/setup/callback incomplete credential response: 400 and nothing shown", async () => {
    for (const missing of ["id", "slug", "pem", "webhook_secret"]) {
      const body: Record<string, unknown> = { id: 7, slug: "x", name: "x", html_url: "https://forge.example/apps/x", client_id: "Iv1.x", client_secret: "cs", webhook_secret: "ws-secret-value", pem: "-----BEGIN RSA PRIVATE KEY-----" };
      delete body[missing];
      const fakeFetch = (async () => Response.json(body, { status: 201 })) as unknown as typeof fetch;
      const app = routes({ exchange: createExchange({ apiUrl: sim.url, fetch: fakeFetch }) });
      const { state, cookie } = signedSetup();
      const response = await get(app, `/setup/callback?${query({ code: "0123456789abcdef0123", state })}`, cookie);
      expect(response.status).toBe(400);
      const html = await response.text();
      expect(html).toContain("Incomplete credentials");
      expect(html).not.toContain("ws-secret-value");
      expect(html).not.toContain("BEGIN RSA");
    }
  });

  test("/setup/callback without a client secret still shows the App's credentials (spec: any client secret)", async () => {
    for (const clientSecret of [undefined, null, ""]) {
      const body: Record<string, unknown> = { id: 7, slug: "x", name: "x", html_url: "https://forge.example/apps/x", owner: { login: "acme", type: "Organization" }, client_id: "Iv1.x", webhook_secret: "ws-secret-value", pem: "-----BEGIN RSA PRIVATE KEY-----" };
      if (clientSecret !== undefined) body.client_secret = clientSecret;
      const fakeFetch = (async () => Response.json(body, { status: 201 })) as unknown as typeof fetch;
      const app = routes({ exchange: createExchange({ apiUrl: sim.url, fetch: fakeFetch }) });
      const { state, cookie } = signedSetup();
      const response = await get(app, `/setup/callback?${query({ code: "0123456789abcdef0123", state })}`, cookie);
      expect(response.status).toBe(200);
      const html = await response.text();
      expect(html).toContain('<code id="app-id">7</code>');
      expect(html).toContain('<pre id="webhook-secret">ws-secret-value</pre>');
      expect(html).not.toContain('id="client-secret"');
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
    const { state, cookie } = signedSetup();
    const response = await get(app, `/setup/callback?${query({ code: "0123456789abcdef0123", state })}`, cookie);
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

describe("setup through a port-forward (a setup URL of its own)", () => {
  test("the state is signed for the setup URL's callback: one signed for the public URL's callback is refused", async () => {
    const app = routes({ setupUrl: "http://127.0.0.1:8080" });
    const started = await startSetup(app, "acme");
    expect(verifySetupState(STATE_SECRET, started.state, setupStateAudience("http://127.0.0.1:8080"), Date.now()).ok).toBe(true);
    expect(verifySetupState(STATE_SECRET, started.state, setupStateAudience(PUBLIC_URL), Date.now())).toEqual({ ok: false, reason: "audience" });
    const forPublic = signedSetup(Date.now(), "acme", STATE_SECRET, PUBLIC_URL);
    const refused = await get(app, `/setup/callback?${query({ code: "unused-code", state: forPublic.state })}`, forPublic.cookie);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("Invalid setup state");
  });
});

describe("setup is bound to the browser that started it", () => {
  /** An exchange against the simulator that counts its calls. */
  const counted = () => {
    const real = createExchange({ apiUrl: sim.url });
    const counter = { calls: 0, exchange: (async (code: string) => { counter.calls++; return real(code); }) as ExchangeCode };
    return counter;
  };
  const callback = (code: string, state: string) => `/setup/callback?${query({ code, state })}`;
  const payloadOf = (state: string) => JSON.parse(Buffer.from(state.split(".")[0]!, "base64url").toString("utf8")) as Record<string, unknown>;

  test("/setup sets a host-only, HttpOnly, Secure, SameSite=Lax nonce cookie for the state's lifetime; the state holds its hash", async () => {
    const { response, state, cookie } = await startSetup(routes(), "acme");
    const attributes = (response.headers.get("set-cookie") ?? "").split(/;\s*/).slice(1).map((a) => a.toLowerCase());
    expect(cookie).toMatch(/^__Host-setup-nonce=[A-Za-z0-9_-]{43}$/);
    expect(attributes.sort()).toEqual(["httponly", "max-age=600", "path=/", "samesite=lax", "secure"]);
    const nonce = cookie.split("=")[1]!;
    expect(state).not.toContain(nonce);
    expect(payloadOf(state)).toMatchObject({ org: "acme", nh: createHash("sha256").update(nonce).digest("base64url") });
    expect(payloadOf((await startSetup(routes(), null)).state)).toMatchObject({ org: null });
    expect((await startSetup(routes(), "acme")).cookie).not.toBe(cookie);
  });

  test("a callback without the setup cookie is refused with 400, shows nothing, and leaves the code unused", async () => {
    const counter = counted();
    const app = routes({ exchange: counter.exchange });
    const flow = await runFlow(app);
    const refused = await get(app, flow.path);
    expect(refused.status).toBe(400);
    expectSetupHeaders(refused);
    const html = await refused.text();
    expect(html).toContain("Setup started in another browser");
    expectNothingSecret(html, flow.code);
    expect(counter.calls).toBe(0);
    // The browser that started the setup still completes it.
    expect((await get(app, flow.path, flow.cookie)).status).toBe(200);
  });

  test("a callback carrying another setup's cookie, or a forged one, is refused with 400 and the code is not exchanged", async () => {
    const counter = counted();
    const app = routes({ exchange: counter.exchange });
    const first = await runFlow(app);
    const second = await runFlow(app);
    for (const cookie of [second.cookie, `__Host-setup-nonce=${"A".repeat(43)}`, `__Host-setup-nonce=${first.cookie.split("=")[1]!}x`, "__Host-setup-nonce="]) {
      const refused = await get(app, first.path, cookie);
      expect(refused.status).toBe(400);
      const html = await refused.text();
      expect(html).toContain("Setup started in another browser");
      expectNothingSecret(html, first.code);
    }
    expect(counter.calls).toBe(0);
  });

  test("a state is used once: replayed with its cookie and another code, it is refused with 400 and the code is not exchanged", async () => {
    const counter = counted();
    const app = routes({ exchange: counter.exchange });
    const flow = await runFlow(app);
    const first = await get(app, flow.path, flow.cookie);
    expect(first.status).toBe(200);
    // The browser is told to drop the cookie once it was used.
    expect(first.headers.get("set-cookie")).toMatch(/^__Host-setup-nonce=;.*Max-Age=0/i);
    const other = codeForAppOf(flow.organization);
    const replayed = await get(app, callback(other, flow.state), flow.cookie);
    expect(replayed.status).toBe(400);
    expectSetupHeaders(replayed);
    const html = await replayed.text();
    expect(html).toContain("Setup link already used");
    expectNothingSecret(html, other);
    // Reloading the credentials page (the browser dropped its cookie) says the same.
    const reloaded = await get(app, flow.path);
    expect(reloaded.status).toBe(400);
    expect(await reloaded.text()).toContain("Setup link already used");
    expect(counter.calls).toBe(1);
    // Also when the first use was a refused code: the state is spent.
    const again = await runFlow(app);
    expect((await get(app, callback("ffffffffffffffffffff", again.state), again.cookie)).status).toBe(400);
    expect((await get(app, again.path, again.cookie)).status).toBe(400);
  });

  test("an App owned by another organization than the state names is refused with 400, and nothing of it is shown", async () => {
    const app = routes();
    const { state, cookie } = await startSetup(app, "acme");
    const code = codeForAppOf("evil-corp");
    const response = await get(app, callback(code, state), cookie);
    expect(response.status).toBe(400);
    expectSetupHeaders(response);
    const html = await response.text();
    expect(html).toContain("App owned by another account");
    expectNothingSecret(html, code);
    expect(response.headers.get("set-cookie")).toMatch(/Max-Age=0/i);
  });

  test("a personal setup refuses an App owned by an organization, and an organization setup an App owned by a user", async () => {
    const app = routes();
    const personal = await startSetup(app, null);
    const orgCode = codeForAppOf("acme-owned");
    const refused = await get(app, callback(orgCode, personal.state), personal.cookie);
    expect(refused.status).toBe(400);
    const html = await refused.text();
    expect(html).toContain("App owned by another account");
    expectNothingSecret(html, orgCode);

    // An answer naming the state's login as a user, or no owner at all, is refused too (the type and login must both match).
    for (const owner of [{ login: "acme", type: "User" }, null, { login: "acme" }]) {
      const body = { id: 7, slug: "x", name: "x", html_url: "https://forge.example/apps/x", owner, client_id: "Iv1.x", client_secret: "cs-secret-value", webhook_secret: "ws-secret-value", pem: "-----BEGIN RSA PRIVATE KEY-----" };
      const fakeFetch = (async () => Response.json(body, { status: 201 })) as unknown as typeof fetch;
      const faked = routes({ exchange: createExchange({ apiUrl: sim.url, fetch: fakeFetch }) });
      const { state, cookie } = await startSetup(faked, "acme");
      const response = await get(faked, callback("0123456789abcdef0123", state), cookie);
      expect(response.status).toBe(400);
      const text = await response.text();
      expect(text).toContain("App owned by another account");
      for (const secret of ["ws-secret-value", "cs-secret-value", "BEGIN RSA", "Iv1.x"]) expect(text).not.toContain(secret);
    }
  });

  test("the owner's login is compared without regard to case; a personal setup accepts the administrator's own App", async () => {
    const app = routes();
    const { state, cookie } = await startSetup(app, "Acme-Case");
    expect((await get(app, callback(codeForAppOf("acme-case"), state), cookie)).status).toBe(200);
    const personal = await startSetup(app, null);
    expect((await get(app, callback(codeForAppOf("some-admin", "User"), personal.state), personal.cookie)).status).toBe(200);
  });

  test("a state whose organization was changed is refused with 400 even with its own cookie", async () => {
    const counter = counted();
    const app = routes({ exchange: counter.exchange });
    const { state, cookie } = await startSetup(app, "acme");
    const changed = Buffer.from(JSON.stringify({ ...payloadOf(state), org: "evil-corp" })).toString("base64url");
    const response = await get(app, callback(codeForAppOf("evil-corp"), `${changed}.${state.split(".")[1]}`), cookie);
    expect(response.status).toBe(400);
    expect(await response.text()).toContain("Invalid setup state");
    expect(counter.calls).toBe(0);
  });

  test("when the forge does not answer, the state stays usable: the same browser retries and completes", async () => {
    const app = routes({ exchange: createExchange({ apiUrl: sim.url, timeoutMs: 200 }) });
    const flow = await runFlow(app);
    sim.injectFault({ kind: "slow", method: "POST", path: "/app-manifests/[^/]+/conversions", delayMs: 2000, times: 1 });
    const unavailable = await get(app, flow.path, flow.cookie);
    sim.faults.clear();
    expect(unavailable.status).toBe(502);
    expect(unavailable.headers.get("set-cookie")).toBeNull();
    expect((await get(app, flow.path, flow.cookie)).status).toBe(200);
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
    const { state, cookie } = signedSetup();
    const started = performance.now();
    const response = await get(app, `/setup/callback?${query({ code: "0123456789abcdef0123", state })}`, cookie);
    expect(response.status).toBe(502);
    expect(performance.now() - started).toBeLessThan(1500);
    sim.faults.clear();
  });
});

describe("logs", () => {
  test("the full log output after a flow contains neither the code, the state, the nonce nor any credential", async () => {
    const { lines, log } = capture();
    const app = routes({ log });
    const { path, code, state, cookie, organization } = await runFlow(app);
    await get(app, path); // no cookie
    const html = await (await get(app, path, cookie)).text();
    await get(app, path, cookie); // replayed state
    await get(app, `/setup/callback?${query({ code, state: `${state}x` })}`, cookie); // tampered state
    const other = await startSetup(app, organization);
    const foreign = codeForAppOf("foreign-owner");
    await get(app, `/setup/callback?${query({ code: foreign, state: other.state })}`, other.cookie); // App of another account
    const output = lines.join("");
    for (const word of ["cookie_missing", "exchange_ok", "state_replayed", "state_signature", "owner_mismatch"]) expect(output).toContain(`"setup_callback":"${word}"`);
    const appId = /<code id="app-id">(\d+)<\/code>/.exec(html)![1]!;
    const app_ = sim.control.state.apps.get(Number(appId))!;
    const pem = /<pre id="private-key">([^<]+)<\/pre>/.exec(html)![1]!;
    const clientSecret = /<pre id="client-secret">([^<]+)<\/pre>/.exec(html)![1]!;
    const nonces = [cookie, other.cookie].map((c) => c.split("=")[1]!);
    for (const secret of [code, foreign, state, state.split(".")[0]!, state.split(".")[1]!, other.state, ...nonces, app_.webhookSecret!, clientSecret, app_.clientId, ...pem.split("\n").filter((l) => l.length > 20)]) {
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
      const webhook = { secret: null, store, metrics, log, mapping: { organizationPolicyRepository: ".forge", checkName: config.checkName, appId: null }, fastPath: null, invalidationTimeoutMs: 1000, bodyBudget: createBodyBudget(config.webhookUnverifiedBodyBudgetBytes), now: () => Date.now() };
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
