import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { BACKENDS, openMigratedStore, type TestDatabase } from "../../e2e/support/databases.ts";
import { seedDecision, seedMerge } from "../../e2e/support/decision-records.ts";
import { loadConfig } from "../config/index.ts";
import { type UserClient, UserListingTooLong } from "../forge/user-client.ts";
import { createBodyBudget } from "../ingress/index.ts";
import { createMetrics } from "../observability/metrics.ts";
import type { RecordId } from "../records/schema.ts";
import type { Store } from "../store/index.ts";
import { createApp } from "./app.ts";
import { MAX_READABLE_REPOSITORIES, SESSION_LIFETIME_MS, SessionCipher } from "./decisions-access.ts";

/**
 * Who may read the decision records: a named bearer token reads every record, a person signed in with the forge only the
 * records of repositories the forge says they can read, anyone else nothing; with no credential configured the routes do not
 * exist (404). Every read is logged with its reader and the record IDs, never a token.
 */
const TOKEN = "pipeline-token-0123456789abcdef0123456789";
const OTHER_TOKEN = "second-token-0123456789abcdef0123456789ab";
const CLIENT_SECRET = "client-secret-0123456789abcdef0123456789";
const WEB = { id: 40, full_name: "acme/web" };
const API = { id: 41, full_name: "acme/api" };

/** A forge as people see it: alice reads acme/web only, bob both, carol more than a session filters by. */
function fakeUsers(calls: string[], fail = false): UserClient {
  const people: Record<string, { login: string; id: number; repositories: number[] }> = {
    "alice-token": { login: "alice", id: 1, repositories: [WEB.id] },
    "bob-token": { login: "bob", id: 2, repositories: [WEB.id, API.id] },
    "carol-token": { login: "carol", id: 3, repositories: Array.from({ length: MAX_READABLE_REPOSITORIES + 1 }, (_, i) => 1000 + i) },
    "dan-token": { login: "dan", id: 4, repositories: [WEB.id] },
    "erin-token": { login: "erin", id: 5, repositories: [WEB.id] },
  };
  return {
    authorizationUrl: (state) => `https://forge.example/login/oauth/authorize?client_id=Iv1.abc&state=${state}`,
    exchangeCode: async (code) => {
      calls.push(`exchange ${code}`);
      if (!(code.startsWith("code-") && `${code.slice(5)}-token` in people)) throw new Error("bad_verification_code");
      return `${code.slice(5)}-token`;
    },
    user: async (token) => ({ login: people[token]!.login, id: people[token]!.id }),
    readableRepositoryIds: async (token) => {
      calls.push(`repositories ${people[token]!.login}`);
      if (fail) throw new Error("forge unreachable");
      // dan's token was revoked on the forge (or expired): it answers 401.
      if (token === "dan-token") throw Object.assign(new Error("Bad credentials"), { status: 401 });
      // erin reaches more installations or pages of repositories than the user client reads.
      if (token === "erin-token") throw new UserListingTooLong("GET /user/installations: more than 11 pages");
      return people[token]!.repositories;
    },
  };
}

describe.each(BACKENDS)("who may read the decision records on %s", (backend) => {
  let database: TestDatabase;
  let store: Store;
  let dir: string;
  const ids = {} as Record<"web" | "webMerge" | "api", RecordId>;
  beforeAll(async () => {
    ({ database, store } = await openMigratedStore(backend));
    ids.web = await seedDecision(store, Date.parse("2026-11-20T10:00:00Z"), { repository: WEB });
    ids.webMerge = await seedMerge(store, Date.parse("2026-11-20T11:00:00Z"), { pull: 7 });
    ids.api = await seedDecision(store, Date.parse("2026-11-21T10:00:00Z"), { repository: API });
    dir = mkdtempSync(join(tmpdir(), "decisions-access-"));
    writeFileSync(join(dir, "tokens"), `# readers\npipeline:${TOKEN}\nauditor:${OTHER_TOKEN}\n`);
    writeFileSync(join(dir, "client-secret"), `${CLIENT_SECRET}\n`);
  });
  afterAll(async () => {
    await store.close();
    await database.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  function rig(options: { tokens?: boolean; signIn?: boolean; failForge?: boolean; now?: () => number } = {}) {
    const env: Record<string, string> = { SERVICE_DATABASE_URL: database.url };
    if (options.tokens !== false) env.SERVICE_DECISIONS_TOKEN_FILE = join(dir, "tokens");
    if (options.signIn) Object.assign(env, { SERVICE_FORGE_CLIENT_ID: "Iv1.abc", SERVICE_FORGE_CLIENT_SECRET_FILE: join(dir, "client-secret") });
    const config = loadConfig(env);
    const lines: string[] = [];
    const log = pino({ level: "info" }, new Writable({ write(chunk, _enc, done) { lines.push(String(chunk)); done(); } }));
    const metrics = createMetrics({ readQueueGauges: () => store.queueGauges() });
    const webhook = { secret: null, store, metrics, log, mapping: { organizationPolicyRepository: ".forge", checkName: config.checkName, appId: null }, fastPath: null, invalidationTimeoutMs: 1000, bodyBudget: createBodyBudget(config.webhookUnverifiedBodyBudgetBytes), now: () => Date.now() };
    const calls: string[] = [];
    const app = createApp({
      config, build: { version: "0.1.0", buildRevision: null }, health: { config, store, credentials: null, worker: null, reconciler: null }, metrics, webhook, log,
      users: options.signIn ? fakeUsers(calls, options.failForge) : null, ...(options.now ? { now: options.now } : {}),
    });
    const get = (path: string, headers: Record<string, string> = {}) => app.handle(new Request(`http://localhost${path}`, { headers }));
    return { app, get, lines, calls };
  }
  const listed = async (response: Response) => ((await response.json()) as { items: { id: string }[] }).items.map((item) => item.id);
  const session = (login: "alice" | "bob" | "carol" | "dan" | "erin", id: number, at = Date.now(), secret = CLIENT_SECRET) =>
    `__Host-decisions-session=${new SessionCipher(secret).seal({ login, id, accessToken: `${login}-token` }, at)}`;

  test("with no credential configured the routes and the page answer 404, as if they did not exist", async () => {
    const { get } = rig({ tokens: false });
    for (const path of ["/api/decisions", `/api/decisions/${ids.web}`, "/decisions/", "/auth/sign-in", "/auth/callback?code=x&state=y"]) {
      const response = await get(path, { authorization: `Bearer ${TOKEN}` });
      expect({ path, status: response.status }).toEqual({ path, status: 404 });
      expect(await response.text()).not.toContain(ids.web);
    }
  });

  test("without a credential, or with a wrong, malformed or unconfigured one, nothing is read: 401 and a Bearer challenge", async () => {
    const { get, lines } = rig();
    const attempts: Record<string, string>[] = [
      {}, { authorization: "Bearer wrong-token-0123456789abcdef0123456789" }, { authorization: `Basic ${TOKEN}` }, { authorization: `Bearer ${TOKEN}x` },
      { authorization: `bearer${TOKEN}` }, { authorization: `Bearer ${TOKEN.slice(0, -1)}` },
      // Sign-in is not configured here: a session cookie, even a well-made one, is no credential.
      { cookie: session("bob", 2) },
    ];
    for (const headers of attempts) {
      for (const path of ["/api/decisions", `/api/decisions/${ids.web}`, "/decisions/"]) {
        const response = await get(path, headers);
        expect({ path, headers, status: response.status }).toEqual({ path, headers, status: 401 });
        expect(response.headers.get("www-authenticate")).toBe('Bearer realm="decision records"');
        const text = await response.text();
        for (const id of Object.values(ids)) expect(text).not.toContain(id);
      }
    }
    expect(lines.filter((line) => line.includes("decision records read"))).toEqual([]);
  });

  test("a token holder reads every record, and each read is logged with the token's name and the record IDs, never the token", async () => {
    const { get, lines } = rig();
    expect(await listed(await get("/api/decisions", { authorization: `Bearer ${TOKEN}` }))).toEqual([ids.api, ids.webMerge, ids.web]);
    const one = await get(`/api/decisions/${ids.api}`, { authorization: `Bearer ${OTHER_TOKEN}` });
    expect(one.status).toBe(200);
    const reads = lines.filter((line) => line.includes("decision records read")).map((line) => JSON.parse(line) as { reader: string; records: string[] });
    expect(reads.map(({ reader, records }) => ({ reader, records }))).toEqual([
      { reader: "token:pipeline", records: [ids.api, ids.webMerge, ids.web] },
      { reader: "token:auditor", records: [ids.api] },
    ]);
    expect(lines.join("\n")).not.toContain(TOKEN);
    expect(lines.join("\n")).not.toContain(OTHER_TOKEN);
  });

  test("a signed-in person reads only the records of repositories the forge says they can read; another's record is 404", async () => {
    const { get, lines, calls } = rig({ signIn: true });
    expect(await listed(await get("/api/decisions", { cookie: session("alice", 1) }))).toEqual([ids.webMerge, ids.web]);
    expect(await listed(await get("/api/decisions?repository=acme/api", { cookie: session("alice", 1) }))).toEqual([]);
    expect((await get(`/api/decisions/${ids.web}`, { cookie: session("alice", 1) })).status).toBe(200);
    const hidden = await get(`/api/decisions/${ids.api}`, { cookie: session("alice", 1) });
    expect(hidden.status).toBe(404);
    expect(await hidden.json()).toEqual({ error: "not_found" });
    expect(await listed(await get("/api/decisions", { cookie: session("bob", 2) }))).toEqual([ids.api, ids.webMerge, ids.web]);
    // The forge's answer is kept a few minutes: alice's four reads asked it once.
    expect(calls).toEqual(["repositories alice", "repositories bob"]);
    const reads = lines.filter((line) => line.includes("decision records read")).map((line) => JSON.parse(line) as { reader: string; records: string[] });
    expect(reads.map(({ reader, records }) => ({ reader, records }))).toEqual([
      { reader: "login:alice", records: [ids.webMerge, ids.web] },
      { reader: "login:alice", records: [ids.web] },
      { reader: "login:bob", records: [ids.api, ids.webMerge, ids.web] },
    ]);
    expect(lines.join("\n")).not.toContain("alice-token");
  });

  test("a forged, altered, foreign or expired session cookie gets nothing", async () => {
    const now = Date.now();
    const { get } = rig({ signIn: true });
    const good = session("bob", 2, now).split("=")[1]!;
    const flipped = `${good.slice(0, -2)}${good.at(-2) === "A" ? "B" : "A"}${good.at(-1)}`;
    for (const cookie of [
      `__Host-decisions-session=${flipped}`,
      "__Host-decisions-session=v1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
      `__Host-decisions-session=${Buffer.from(JSON.stringify({ login: "bob", id: 2, token: "bob-token", exp: now + 1e9 })).toString("base64url")}`,
      session("bob", 2, now, "another-secret-0123456789abcdef0123456789"),
      session("bob", 2, now - SESSION_LIFETIME_MS - 1),
    ]) {
      const response = await get("/api/decisions", { cookie });
      expect({ cookie, status: response.status }).toEqual({ cookie, status: 401 });
    }
  });

  test("when the forge does not answer what a person may read, nothing is read (503); more than a session filters by is 403; a revoked token is no session", async () => {
    const failing = rig({ signIn: true, failForge: true });
    const refused = await failing.get("/api/decisions", { cookie: session("alice", 1) });
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ error: "forge" });
    const { get } = rig({ signIn: true });
    const many = await get("/api/decisions", { cookie: session("carol", 3) });
    expect(many.status).toBe(403);
    expect(await many.json()).toMatchObject({ error: "too_many_repositories" });
    // A session whose forge token the forge no longer accepts is over: 401, and the page sends the person to sign in again.
    expect((await get("/api/decisions", { cookie: session("dan", 4) })).status).toBe(401);
    expect((await get("/decisions/", { cookie: session("dan", 4) })).headers.get("location")).toStartWith("/auth/sign-in");
  });

  test("a person whose repositories the forge lists at more length than a session reads is told to use a bearer token (403), not to try again", async () => {
    const { get, lines } = rig({ signIn: true });
    const refused = await get("/api/decisions", { cookie: session("erin", 5) });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ error: "too_many_repositories" });
    expect(lines.join("")).not.toContain("decision records read");
  });

  test("a person who declines on the forge's sign-in page is told so, and no code is exchanged", async () => {
    const { get, calls } = rig({ signIn: true });
    const start = await get("/auth/sign-in");
    const state = new URL(start.headers.get("location")!).searchParams.get("state")!;
    const declined = await get(`/auth/callback?error=access_denied&error_description=declined&state=${state}`, { cookie: start.headers.get("set-cookie")!.split(";")[0]! });
    expect(declined.status).toBe(400);
    expect(await declined.text()).toContain("The sign-in was declined on the forge");
    expect(declined.headers.getSetCookie()).toEqual(["__Host-decisions-sign-in=; Path=/; Max-Age=0; Secure; HttpOnly; SameSite=Lax"]);
    expect(calls).toEqual([]);
  });

  test("the page sends a person without a session to sign in, and signing in sets a session cookie that is HttpOnly, Secure, SameSite=Lax and 8 hours long", async () => {
    const { app, get, calls } = rig({ signIn: true });
    const page = await get("/decisions/?repository=acme/web");
    expect(page.status).toBe(303);
    expect(page.headers.get("location")).toBe(`/auth/sign-in?next=${encodeURIComponent("/decisions/?repository=acme/web")}`);
    const start = await get(page.headers.get("location")!);
    expect(start.status).toBe(303);
    const state = new URL(start.headers.get("location")!).searchParams.get("state")!;
    const stateCookie = start.headers.get("set-cookie")!;
    expect(stateCookie).toMatch(/^__Host-decisions-sign-in=[^;]+; Path=\/; Max-Age=600; Secure; HttpOnly; SameSite=Lax$/);
    const cookie = stateCookie.split(";")[0]!;
    // Another state, or no state cookie (another browser), is refused before the code is used.
    expect((await get(`/auth/callback?code=code-alice&state=${state}x`, { cookie })).status).toBe(400);
    expect((await get(`/auth/callback?code=code-alice&state=${state}`)).status).toBe(400);
    expect(calls).toEqual([]);
    // A code the forge refuses: 502, no session.
    const refused = await get(`/auth/callback?code=code-mallory&state=${state}`, { cookie });
    expect(refused.status).toBe(502);
    expect(refused.headers.getSetCookie().some((c) => c.startsWith("__Host-decisions-session=v1."))).toBe(false);
    const done = await get(`/auth/callback?code=code-alice&state=${state}`, { cookie });
    expect(done.status).toBe(303);
    expect(done.headers.get("location")).toBe("/decisions/?repository=acme/web");
    const set = done.headers.getSetCookie();
    const sessionCookie = set.find((c) => c.startsWith("__Host-decisions-session="))!;
    expect(sessionCookie).toMatch(/^__Host-decisions-session=v1\.[A-Za-z0-9_-]+; Path=\/; Max-Age=28800; Secure; HttpOnly; SameSite=Lax$/);
    expect(set).toContain("__Host-decisions-sign-in=; Path=/; Max-Age=0; Secure; HttpOnly; SameSite=Lax");
    expect(await listed(await get("/api/decisions", { cookie: sessionCookie.split(";")[0]! }))).toEqual([ids.webMerge, ids.web]);
    expect((await get("/decisions/", { cookie: sessionCookie.split(";")[0]! })).status).not.toBe(303);
    // Signing out is a POST from the service's own page; a link or another site's form signs nobody out.
    const signOut = (headers: Record<string, string>) => app.handle(new Request("http://localhost/auth/sign-out", { method: "POST", headers }));
    expect((await get("/auth/sign-out")).headers.get("set-cookie")).toBeNull();
    const foreign: Record<string, string>[] = [
      { "sec-fetch-site": "cross-site", origin: "https://evil.example" }, { origin: "https://evil.example", host: "localhost" }, { "sec-fetch-site": "same-site", host: "localhost" },
      { origin: "null", host: "localhost" },
    ];
    for (const headers of foreign) {
      const refused = await signOut(headers);
      expect({ headers, status: refused.status, cookie: refused.headers.get("set-cookie") }).toEqual({ headers, status: 403, cookie: null });
    }
    // A browser posting from the page itself: same-origin, and the page's no-referrer policy makes its Origin "null".
    const out = await signOut({ "sec-fetch-site": "same-origin", origin: "null", host: "localhost" });
    expect(out.status).toBe(200);
    expect(out.headers.get("set-cookie")).toBe("__Host-decisions-session=; Path=/; Max-Age=0; Secure; HttpOnly; SameSite=Lax");
  });

  test("sign-in never sends a person elsewhere than the decisions page", async () => {
    const { get } = rig({ signIn: true });
    for (const next of ["https://evil.example/", "//evil.example/decisions/", "/decisions//evil.example", "/api/decisions", "/decisionsx", "javascript:alert(1)"]) {
      const start = await get(`/auth/sign-in?next=${encodeURIComponent(next)}`);
      const state = new URL(start.headers.get("location")!).searchParams.get("state")!;
      const done = await get(`/auth/callback?code=code-bob&state=${state}`, { cookie: start.headers.get("set-cookie")!.split(";")[0]! });
      expect({ next, location: done.headers.get("location") }).toEqual({ next, location: "/decisions/" });
    }
  });
});

describe("sign-in settings", () => {
  test("the client ID and the client secret file come together, and a malformed one stops the service naming the setting", () => {
    const dir = mkdtempSync(join(tmpdir(), "sign-in-config-"));
    try {
      writeFileSync(join(dir, "secret"), `${CLIENT_SECRET}\n`);
      writeFileSync(join(dir, "short"), "short\n");
      const base = { SERVICE_DATABASE_URL: "sqlite::memory:" };
      expect(loadConfig({ ...base, SERVICE_FORGE_CLIENT_ID: "Iv1.abc", SERVICE_FORGE_CLIENT_SECRET_FILE: join(dir, "secret") }).signIn).toEqual({ clientId: "Iv1.abc", clientSecret: CLIENT_SECRET });
      expect(loadConfig(base).signIn).toBeNull();
      expect(() => loadConfig({ ...base, SERVICE_FORGE_CLIENT_ID: "Iv1.abc" })).toThrow("SERVICE_FORGE_CLIENT_SECRET_FILE: is required with SERVICE_FORGE_CLIENT_ID");
      expect(() => loadConfig({ ...base, SERVICE_FORGE_CLIENT_SECRET_FILE: join(dir, "secret") })).toThrow("SERVICE_FORGE_CLIENT_ID: is required");
      expect(() => loadConfig({ ...base, SERVICE_FORGE_CLIENT_ID: "Iv1.abc", SERVICE_FORGE_CLIENT_SECRET_FILE: join(dir, "short") })).toThrow("SERVICE_FORGE_CLIENT_SECRET_FILE: must hold");
      expect(() => loadConfig({ ...base, SERVICE_FORGE_CLIENT_ID: "Iv1 abc", SERVICE_FORGE_CLIENT_SECRET_FILE: join(dir, "secret") })).toThrow("SERVICE_FORGE_CLIENT_ID: must be");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
