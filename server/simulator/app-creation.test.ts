import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mintAppJwt } from "./scenario.ts";
import { startForgeSimulator, type ForgeSimulator } from "./simulator.ts";

let sim: ForgeSimulator;
beforeAll(() => { sim = startForgeSimulator(); sim.control.createOrganization({ login: "acme" }); });
afterAll(async () => { await sim.stop(); });

let counter = 0;
function manifest(overrides: Record<string, unknown> = {}) {
  counter += 1;
  return {
    name: `Approval ${counter}`, url: "https://svc.example", hook_attributes: { url: "https://svc.example/webhooks/forge", active: true },
    redirect_url: "https://svc.example/setup/callback", public: false,
    default_permissions: { checks: "write", statuses: "write", contents: "read", metadata: "read", pull_requests: "read", members: "read" },
    default_events: ["check_run", "pull_request", "pull_request_review", "push", "team"],
    ...overrides,
  };
}

const post = (path: string, form: Record<string, string>) =>
  fetch(`${sim.url}${path}`, { method: "POST", body: new URLSearchParams(form), redirect: "manual" });

/** Posts the manifest form, then presses "Create"; returns the confirmation response. */
async function create(path: string, m: unknown, state = "the-state") {
  const shown = await post(`${path}?state=${encodeURIComponent(state)}`, { manifest: JSON.stringify(m) });
  expect(shown.status).toBe(200);
  const page = await shown.text();
  const pending = /name="pending" value="([0-9a-f]+)"/.exec(page)![1]!;
  return { page, pending, confirmed: await post("/settings/apps/new/confirm", { pending }) };
}

const convert = (code: string) => fetch(`${sim.url}/app-manifests/${code}/conversions`, { method: "POST" });

describe("App creation page", () => {
  test("shows the posted manifest and, on Create, redirects to the redirect URL with a one-use code and the state", async () => {
    const m = manifest();
    const { page, confirmed } = await create("/organizations/acme/settings/apps/new", m, "s.t-a_te");
    expect(page).toContain('<dd id="owner">acme</dd>');
    expect(page).toContain("https://svc.example/webhooks/forge");
    expect(page).toContain("checks: write");
    expect(confirmed.status).toBe(302);
    const location = new URL(confirmed.headers.get("location")!);
    expect(`${location.origin}${location.pathname}`).toBe("https://svc.example/setup/callback");
    expect(location.searchParams.get("state")).toBe("s.t-a_te");
    const code = location.searchParams.get("code")!;
    expect(code).toMatch(/^[0-9a-f]{20}$/);

    const first = await convert(code);
    expect(first.status).toBe(201);
    const credentials = (await first.json()) as { id: number; slug: string; pem: string; webhook_secret: string; client_id: string; client_secret: string; owner: { login: string }; permissions: Record<string, string>; events: string[] };
    expect(credentials).toMatchObject({ slug: `approval-${counter}`, owner: { login: "acme" }, permissions: m.default_permissions, events: m.default_events });
    expect(credentials.pem).toContain("BEGIN RSA PRIVATE KEY");
    expect(credentials.webhook_secret.length).toBeGreaterThanOrEqual(32);
    expect(credentials.client_id).toMatch(/^Iv1\./);
    expect(credentials.client_secret.length).toBeGreaterThan(0);
    // The key is the App's: the forge accepts a JWT signed with it.
    const app = await fetch(`${sim.url}/app`, { headers: { authorization: `Bearer ${mintAppJwt(credentials.id, credentials.pem)}` } });
    expect(((await app.json()) as { id: number }).id).toBe(credentials.id);
    // The App sends its webhooks to the manifest's URL with the new secret.
    expect(sim.control.state.apps.get(credentials.id)).toMatchObject({ webhookUrl: "https://svc.example/webhooks/forge", webhookSecret: credentials.webhook_secret });

    expect((await convert(code)).status).toBe(404);
  });

  test("a personal App belongs to the logged-in administrator", async () => {
    const { page, confirmed } = await create("/settings/apps/new", manifest());
    expect(page).toContain('<dd id="owner">simulator-admin</dd>');
    const code = new URL(confirmed.headers.get("location")!).searchParams.get("code")!;
    expect(((await (await convert(code)).json()) as { owner: { login: string } }).owner.login).toBe("simulator-admin");
  });

  test("an unknown organization is a 404 page", async () => {
    expect((await post("/organizations/nobody/settings/apps/new?state=x", { manifest: JSON.stringify(manifest()) })).status).toBe(404);
  });

  test("the manifest is validated like the forge: problems are listed on a 422 page and nothing is created", async () => {
    const apps = sim.control.state.apps.size;
    const cases: [unknown, RegExp][] = [
      [manifest({ name: "" }), /Name can&#39;t be blank/],
      [manifest({ name: "x".repeat(35) }), /Name is too long/],
      [manifest({ url: "ftp://x" }), /Homepage URL/],
      [manifest({ hook_attributes: { url: "not a url" } }), /Webhook URL/],
      [manifest({ default_events: ["push", "nonsense"] }), /Unknown event: nonsense/],
      [manifest({ default_permissions: { metadata: "read" }, default_events: ["push"] }), /Event push needs the contents permission/],
      [manifest({ default_permissions: { checks: "owner" } }), /Permission checks must be read or write/],
      [manifest({ surprise: true }), /Unknown manifest field: surprise/],
      [manifest({ public: "no" }), /public must be true or false/],
    ];
    for (const [m, message] of cases) {
      const res = await post("/settings/apps/new?state=x", { manifest: JSON.stringify(m) });
      expect(res.status).toBe(422);
      expect(await res.text()).toMatch(message);
    }
    expect((await post("/settings/apps/new", { manifest: "{not json" })).status).toBe(422);
    expect(sim.control.state.apps.size).toBe(apps);
  });

  test("a name already in use is refused", async () => {
    const m = manifest();
    await create("/settings/apps/new", m);
    const again = await post("/settings/apps/new", { manifest: JSON.stringify(m) });
    expect(again.status).toBe(422);
    expect(await again.text()).toContain("Name is already in use");
  });

  test("each pending creation is confirmed once", async () => {
    const { pending } = await create("/settings/apps/new", manifest());
    expect((await post("/settings/apps/new/confirm", { pending })).status).toBe(404);
  });
});

describe("manifest codes", () => {
  test("an expired code is refused, and stays refused", async () => {
    const { confirmed } = await create("/settings/apps/new", manifest());
    const code = new URL(confirmed.headers.get("location")!).searchParams.get("code")!;
    const control = await fetch(`${sim.url}/_control/manifest-codes-expire`, { method: "POST" });
    expect(((await control.json()) as { expired: number }).expired).toBeGreaterThanOrEqual(1);
    expect((await convert(code)).status).toBe(404);
    expect((await convert(code)).status).toBe(404);
  });

  test("a minted code can be given a lifetime; past it, conversion is refused", async () => {
    const { code } = sim.control.mintManifestCode({ manifest: { name: "Short lived" }, owner: "acme", expiresInSeconds: 0 });
    expect((await convert(code)).status).toBe(404);
    const { code: fresh } = sim.control.mintManifestCode({ manifest: { name: "Long lived" }, owner: "acme" });
    expect((await convert(fresh)).status).toBe(201);
  });
});
