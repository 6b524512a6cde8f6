import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type TestDatabase, openMigratedStore } from "../../e2e/support/databases.ts";
import { RECORD_HEAD, RECORD_MERGE_COMMIT, seedDecision, seedMerge } from "../../e2e/support/decision-records.ts";
import { loadConfig } from "../config/index.ts";
import { parseDecisionsTokens } from "../config/decision-tokens.ts";
import { createBodyBudget } from "../ingress/index.ts";
import { createLogger } from "../observability/logger.ts";
import { createMetrics } from "../observability/metrics.ts";
import type { RecordId } from "../records/schema.ts";
import { type Store, StoreError } from "../store/index.ts";
import { createApp } from "./app.ts";
import { decisionsAccess, ReadableRepositories, SESSION_COOKIE, SessionCipher } from "./decisions-access.ts";
import { parseHistoryQuery, parseHistoryTime } from "./decisions-query.ts";
import { DECISIONS_CSP, decisionsRoutes } from "./decisions-routes.ts";

/** GET /api/decisions, GET /api/decisions/{id} and /decisions/ (issue 28 items 3 and 5), in process on a SQLite store. */
let database: TestDatabase;
let store: Store;
let dir: string;
/** The routes answer only with a credential: these tests read as a token holder (decisions-access.test.ts tests the rest). */
const AUDITOR_TOKEN = "auditor-token-0123456789abcdef0123456789";
const tokenAccess = decisionsAccess({ tokens: parseDecisionsTokens(`auditor:${AUDITOR_TOKEN}`), clientSecret: null });
const ids = {} as Record<"approved" | "merged" | "failed" | "bypass" | "other", RecordId>;
beforeAll(async () => {
  ({ database, store } = await openMigratedStore("sqlite"));
  ids.approved = await seedDecision(store, Date.parse("2026-11-20T10:00:00Z"));
  ids.merged = await seedMerge(store, Date.parse("2026-11-20T11:00:00Z"), { pull: 7 });
  ids.failed = await seedDecision(store, Date.parse("2026-11-21T10:00:00Z"), { pull_request: 8, head_sha: "b".repeat(40), conclusion: "failure", title: "Missing approval", confirmed: false });
  ids.bypass = await seedMerge(store, Date.parse("2026-11-21T11:00:00Z"), { pull: 8, head: "b".repeat(40), mergeCommit: "e".repeat(40) });
  ids.other = await seedDecision(store, Date.parse("2026-11-22T10:00:00Z"), { repository: { id: 41, full_name: "acme/api" }, breakGlass: true });
  dir = mkdtempSync(join(tmpdir(), "decisions-page-"));
  writeFileSync(join(dir, "index.html"), '<!doctype html><head><meta name="forge-web-url" content=""><meta name="playground" content=""><meta name="signed-in" content=""></head><title>decisions</title>');
  writeFileSync(join(dir, "page-abc.js"), "console.log(1)");
  writeFileSync(join(dir, "tokens"), `auditor:${AUDITOR_TOKEN}\n`);
});
afterAll(async () => {
  await store.close();
  await database.drop();
  rmSync(dir, { recursive: true, force: true });
});

function app(env: Record<string, string> = {}, over: Partial<Store> = {}) {
  const config = loadConfig({ SERVICE_DATABASE_URL: database.url, SERVICE_DECISIONS_TOKEN_FILE: join(dir, "tokens"), ...env });
  const metrics = createMetrics({ readQueueGauges: () => store.queueGauges() });
  const log = createLogger("silent");
  const used: Store = { ...bound(store), ...over };
  const webhook = { secret: null, store: used, metrics, log, mapping: { organizationPolicyRepository: ".forge", checkName: config.checkName, appId: null }, fastPath: null, invalidationTimeoutMs: 1000, bodyBudget: createBodyBudget(config.webhookUnverifiedBodyBudgetBytes), now: () => Date.now() };
  return createApp({ config, build: { version: "0.1.0", buildRevision: null }, health: { config, store: used, credentials: null, worker: null, reconciler: null }, metrics, webhook });
}
function bound(s: Store): Store {
  return {
    backend: s.backend, ping: () => s.ping(), schemaIdentity: () => s.schemaIdentity(), execute: (op, options) => s.execute(op, options),
    acquireSharedGuard: (...args) => s.acquireSharedGuard(...args), acquirePublicationGuards: (...args) => s.acquirePublicationGuards(...args),
    queueGauges: () => s.queueGauges(), close: async () => {},
  };
}
const get = (path: string, a = app()) => a.handle(new Request(`http://localhost${path}`, { headers: { authorization: `Bearer ${AUDITOR_TOKEN}` } }));
async function list(query: string): Promise<string[]> {
  const response = await get(`/api/decisions${query}`);
  expect(response.status).toBe(200);
  return ((await response.json()) as { items: { id: string }[] }).items.map((item) => item.id);
}

describe("GET /api/decisions", () => {
  test("lists decision and merge records newest first, with the defensive headers", async () => {
    const response = await get("/api/decisions");
    expect(response.status).toBe(200);
    expect(response.headers.get("cache-control")).toBe("no-store, max-age=0");
    expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8");
    const body = await response.json();
    expect(body.schema_version).toBe(1);
    expect(body.next_cursor).toBeNull();
    expect(body.items.map((i: { id: string }) => i.id)).toEqual([ids.other, ids.bypass, ids.failed, ids.merged, ids.approved]);
    expect(body.items[1]).toMatchObject({ kind: "merge", unapproved: true, decision_id: ids.failed, decision_conclusion: "failure", merge_commit_sha: "e".repeat(40) });
    expect(body.items[2]).toMatchObject({ kind: "decision", confirmed: false, conclusion: "failure", title: "Missing approval" });
  });

  test("filters like the commands: repository, pull request, commit, time, unapproved, overrides and kind", async () => {
    expect(await list("?repository=acme/web")).toEqual([ids.bypass, ids.failed, ids.merged, ids.approved]);
    expect(await list("?repository=ACME/WEB&pull=8")).toEqual([ids.bypass, ids.failed]);
    expect(await list(`?commit=${RECORD_MERGE_COMMIT.toUpperCase()}`)).toEqual([ids.merged]);
    expect(await list(`?commit=${RECORD_HEAD}`)).toEqual([ids.other, ids.merged, ids.approved]);
    expect(await list("?since=2026-11-21&until=2026-11-21T10:30:00Z")).toEqual([ids.failed]);
    expect(await list("?since=2026-11-21T12:00:00%2B01:00")).toEqual([ids.other, ids.bypass]);
    expect(await list("?unapproved=true")).toEqual([ids.bypass]);
    expect(await list("?unapproved=false&overrides=true")).toEqual([ids.other]);
    expect(await list("?kind=merge")).toEqual([ids.bypass, ids.merged]);
  });

  test("pages follow next_cursor until it is null", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 10; pages++) {
      const response: Response = await get(`/api/decisions?limit=2${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`);
      const body = (await response.json()) as { items: { id: string }[]; next_cursor: string | null };
      expect(body.items.length).toBeLessThanOrEqual(2);
      seen.push(...body.items.map((i) => i.id));
      cursor = body.next_cursor;
      if (cursor === null) break;
    }
    expect(seen).toEqual([ids.other, ids.bypass, ids.failed, ids.merged, ids.approved]);
  });

  const refused: Array<[string, string]> = [
    ["?limit=0", "limit"], ["?limit=101", "limit"], ["?limit=abc", "limit"], ["?limit=1.5", "limit"], ["?limit=-1", "limit"],
    ["?pull=7", "pull"], ["?repository=acme/web&pull=0", "pull"], ["?repository=acme/web&pull=2147483648", "pull"], ["?repository=acme/web&pull=7x", "pull"],
    ["?repository=acme", "repository"], ["?repository=acme/web/x", "repository"], ["?repository=acme/we%27b", "repository"],
    ["?commit=abc", "commit"], [`?commit=${"g".repeat(40)}`, "commit"], [`?commit=${"a".repeat(41)}`, "commit"],
    ["?since=yesterday", "since"], ["?since=2026-02-30", "since"], ["?until=2026-11-27T10:00:00", "until"], ["?since=2026-11-22&until=2026-11-21", "until"],
    ["?unapproved=yes", "unapproved"], ["?overrides=1", "overrides"], ["?kind=check", "kind"],
    ["?cursor=", "cursor"], ["?cursor=bm90LWEtY3Vyc29y", "cursor"], [`?cursor=${"A".repeat(500)}`, "cursor"], ["?cursor=%27%20or%201%3D1--", "cursor"],
    ["?repo=acme/web", "repo"], ["?limit=1&limit=2", "limit"],
  ];
  for (const [query, parameter] of refused) {
    test(`${query} is refused with 400 naming ${parameter}`, async () => {
      const response = await get(`/api/decisions${query}`);
      expect(response.status).toBe(400);
      const body = await response.json();
      expect(body).toMatchObject({ error: "invalid_parameter", parameter });
      expect(typeof body.detail).toBe("string");
    });
  }

  test("a database that fails answers 503 naming no detail", async () => {
    const failing = app({}, { execute: async () => { throw new StoreError("unreachable", "connection refused at 10.0.0.1"); } });
    const response = await get("/api/decisions", failing);
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ error: "database" });
  });
});

describe("GET /api/decisions/{id}", () => {
  test("answers the whole record: a decision with its confirmation, a merge with its installation", async () => {
    const decision = await get(`/api/decisions/${ids.failed}`);
    expect(decision.status).toBe(200);
    expect(await decision.json()).toMatchObject({ id: ids.failed, kind: "decision", confirmed: false, base_sha: "f".repeat(40), owner_sets: [], inputs: null });
    const merge = await get(`/api/decisions/${ids.bypass}`);
    expect(await merge.json()).toMatchObject({ id: ids.bypass, kind: "merge", installation_id: 4, unapproved: true });
  });

  test("an id of no record is 404; a malformed one is 400", async () => {
    for (const id of ["d999999", "m999999"]) {
      const response = await get(`/api/decisions/${id}`);
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({ error: "not_found" });
    }
    for (const id of ["x1", "d0", "d01", "d-1", "d1.5", "D1", "d99999999999999999", "d1%20or%201%3D1", "1"]) {
      const response = await get(`/api/decisions/${id}`);
      expect({ id, status: response.status }).toEqual({ id, status: 400 });
      expect(await response.json()).toMatchObject({ error: "invalid_id" });
    }
  });
});

describe("records stay off the public webhook route", () => {
  test("no path or method under /webhooks/forge answers a record", async () => {
    const a = app();
    for (const [method, path] of [["GET", "/webhooks/forge"], ["GET", `/webhooks/forge?id=${ids.approved}`], ["GET", "/webhooks/forge/decisions"], ["GET", `/webhooks/forge/api/decisions/${ids.approved}`], ["POST", "/webhooks/forge/decisions"], ["GET", "/webhooks/decisions"]] as const) {
      const response = await a.handle(new Request(`http://localhost${path}`, { method }));
      const text = await response.text();
      expect({ method, path, ok: response.status < 300 }).toEqual({ method, path, ok: false });
      expect(text).not.toContain(ids.approved);
      expect(text).not.toContain("decision");
    }
  });

  test("the deployed ingress passes only the webhook route, so the decision routes stay on the operator network", async () => {
    const manifest = await Bun.file(join(import.meta.dir, "../../deploy/kubernetes/codeowner-approval.yaml")).text();
    const paths = [...manifest.matchAll(/- path: (\S+)/g)].map((m) => m[1]);
    expect(paths).toEqual(["/webhooks/forge"]);
    expect(manifest).toMatch(/- path: \/webhooks\/forge\s+pathType: Exact/);
  });

  test("the OpenAPI document lists both routes under the operator tag, with their parameters and errors", async () => {
    const doc = await (await get("/api/openapi.json")).json();
    const listRoute = doc.paths["/api/decisions"].get;
    expect(listRoute.tags).toEqual(["operator"]);
    expect(listRoute.parameters.map((p: { name: string }) => p.name)).toEqual(["repository", "pull", "commit", "since", "until", "unapproved", "overrides", "kind", "cursor", "limit"]);
    expect(Object.keys(listRoute.responses).sort()).toEqual(["200", "400", "401", "403", "404", "503"]);
    const one = doc.paths["/api/decisions/{id}"].get;
    expect(one.tags).toEqual(["operator"]);
    expect(Object.keys(one.responses).sort()).toEqual(["200", "400", "401", "403", "404", "503"]);
    expect(doc.paths["/decisions/"].get.tags).toEqual(["operator"]);
    expect(Object.keys(doc.paths).filter((p) => p.startsWith("/webhooks"))).toEqual(["/webhooks/forge"]);
  });
});

describe("the decisions page", () => {
  const assets = () => new Map([["index.html", join(dir, "index.html")], ["assets/page-abc.js", join(dir, "page-abc.js")]]);
  test("is served with its content security policy, never cached, with the forge web origin and the playground's state written in", async () => {
    const routes = decisionsRoutes({ store, forgeWebUrl: "https://forge.example", playgroundEnabled: true, assets: assets(), access: tokenAccess, readable: null });
    const response = await routes.handle(new Request("http://localhost/decisions/", { headers: { authorization: `Bearer ${AUDITOR_TOKEN}` } }));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-security-policy")).toBe(DECISIONS_CSP);
    expect(DECISIONS_CSP).toContain("connect-src 'self'");
    expect(DECISIONS_CSP).not.toContain("unsafe-inline");
    expect(response.headers.get("cache-control")).toBe("no-store, max-age=0");
    const html = await response.text();
    expect(html).toContain('<meta name="forge-web-url" content="https://forge.example">');
    expect(html).toContain('<meta name="playground" content="enabled">');
    const off = await decisionsRoutes({ store, forgeWebUrl: '"><script>', playgroundEnabled: false, assets: assets(), access: tokenAccess, readable: null }).handle(new Request("http://localhost/decisions/", { headers: { authorization: `Bearer ${AUDITOR_TOKEN}` } }));
    const offHtml = await off.text();
    expect(offHtml).toContain('<meta name="playground" content="disabled">');
    expect(offHtml).toContain('content="&quot;&gt;&lt;script&gt;"');
  });

  test("the page names the person signed in, so it can offer them sign-out; a token holder's page names nobody", async () => {
    const secret = "client-secret-0123456789abcdef0123456789";
    const access = decisionsAccess({ tokens: parseDecisionsTokens(`auditor:${AUDITOR_TOKEN}`), clientSecret: secret });
    const routes = decisionsRoutes({ store, forgeWebUrl: "", playgroundEnabled: true, assets: assets(), access, readable: new ReadableRepositories(async () => []) });
    const cookie = `${SESSION_COOKIE}=${new SessionCipher(secret).seal({ login: "alice", id: 1, accessToken: "alice-token" }, Date.now())}`;
    const person = await (await routes.handle(new Request("http://localhost/decisions/", { headers: { cookie } }))).text();
    expect(person).toContain('<meta name="signed-in" content="alice">');
    const holder = await (await routes.handle(new Request("http://localhost/decisions/", { headers: { authorization: `Bearer ${AUDITOR_TOKEN}` } }))).text();
    expect(holder).toContain('<meta name="signed-in" content="">');
  });

  test("hashed assets are cached; an unknown path is 404, never the page; the bare path redirects", async () => {
    const routes = decisionsRoutes({ store, forgeWebUrl: "", playgroundEnabled: true, assets: assets(), access: tokenAccess, readable: null });
    const asset = await routes.handle(new Request("http://localhost/decisions/assets/page-abc.js", { headers: { authorization: `Bearer ${AUDITOR_TOKEN}` } }));
    expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect((await routes.handle(new Request("http://localhost/decisions/assets/other.js", { headers: { authorization: `Bearer ${AUDITOR_TOKEN}` } }))).status).toBe(404);
    const bare = await routes.handle(new Request("http://localhost/decisions", { headers: { authorization: `Bearer ${AUDITOR_TOKEN}` } }));
    expect(bare.status).toBe(308);
    expect(bare.headers.get("location")).toBe("/decisions/");
  });
});

describe("the query's times", () => {
  test("a day is UTC midnight; an RFC 3339 time keeps its offset; a day that does not exist is refused", () => {
    expect(parseHistoryTime("2026-11-27")).toBe(Date.UTC(2026, 10, 27));
    expect(parseHistoryTime("2026-11-27T23:30:00-05:00")).toBe(Date.UTC(2026, 10, 28, 4, 30));
    expect(parseHistoryTime("2026-11-27T10:00:00.123Z")).toBe(Date.UTC(2026, 10, 27, 10, 0, 0, 123));
    for (const bad of ["2026-02-30", "2026-13-01", "2026-11-27T25:00:00Z", "27/11/2026", "2026-11-27 10:00", "1764201600000", ""]) expect(parseHistoryTime(bad)).toBeNull();
  });

  test("a query without parameters lists everything, 50 at a time", () => {
    expect(parseHistoryQuery(new URLSearchParams())).toEqual({ filter: {}, cursor: null, limit: 50 });
  });
});
