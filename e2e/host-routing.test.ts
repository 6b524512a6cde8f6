import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { connect } from "node:net";
import { join } from "node:path";
import { ensureBinary, type RunningBinary, runBinary, startBinary } from "./support/binary.ts";
import { pullRequestEvent, signedDelivery } from "./support/payloads.ts";
import { waitUntil } from "./support/service.ts";
import { createScenario, generateAppKeys, type Scenario } from "../server/simulator/scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "../server/simulator/simulator.ts";

/**
 * Routing does not depend on the Host header: the compiled binary, reached through its real listener, answers every route
 * the same whatever valid Host a client or proxy sends (short upstream names, with and without a port), and never takes
 * part of the path from the authority.
 */
const SECRET = "host-routing-webhook-secret-0123456789abcdef";
const REFERENCE_HOST = "approvals.example.com";
/** Every request carries a decision-records reader's token (the decision routes answer only with a credential). */
const READER_TOKEN = "host-routing-reader-token-0123456789abcdef";
/** Host lengths 1 to 6, with and without a port (":80" is the default port, which the listener drops from the URL). */
const HOSTS = ["a", "gh", "svc", "app", "abcd", "abcde", "proxy1", "a:80", "gh:80", "svc:80", "app:8080", "abcd:80", "abcde:9", "proxy1:80", "a:1", "[::1]", "[::1]:80"];

let dir: string;
let sim: ForgeSimulator;
let scenario: Scenario;
let service: RunningBinary;
let env: Record<string, string>;
beforeAll(async () => {
  ensureBinary();
  dir = mkdtempSync(join(tmpdir(), "svc-host-"));
  const keys = generateAppKeys();
  sim = startForgeSimulator();
  scenario = await createScenario(sim, { keys });
  writeFileSync(join(dir, "key.pem"), keys.privateKey);
  writeFileSync(join(dir, "webhook"), SECRET);
  writeFileSync(join(dir, "state"), "host-routing-setup-state-secret-0123456789");
  writeFileSync(join(dir, "tokens"), `routing:${READER_TOKEN}\n`);
  env = {
    SERVICE_DATABASE_URL: `sqlite:${join(dir, "service.db")}`,
    SERVICE_FORGE_WEBHOOK_SECRET_FILE: join(dir, "webhook"),
    SERVICE_FORGE_API_URL: sim.url,
    SERVICE_FORGE_APP_ID: String(scenario.appId),
    SERVICE_FORGE_PRIVATE_KEY_FILE: join(dir, "key.pem"),
    SERVICE_RECONCILE_ENABLED: "false",
    SERVICE_SETUP_ENABLED: "true",
    SERVICE_PUBLIC_URL: `https://${REFERENCE_HOST}`,
    SERVICE_SETUP_STATE_SECRET_FILE: join(dir, "state"),
    SERVICE_DECISIONS_TOKEN_FILE: join(dir, "tokens"),
  };
  expect(runBinary(["database", "migrate"], env).exitCode).toBe(0);
  service = await startBinary(env);
  // Ready once the App's credentials were first checked against the forge: every answer below is then a steady one.
  await waitUntil(async () => (await fetch(`${service.url}/health/ready`)).status === 200, "the service to be ready");
});
afterAll(async () => {
  await service?.stop();
  await sim?.stop();
  rmSync(dir, { recursive: true, force: true });
});

type Answer = { status: number; type: string | null; body: string };

/** One request to the listener with the given Host header (Bun's fetch sends the header as given). */
async function send(host: string, method: string, path: string, init: { headers?: Record<string, string>; body?: Uint8Array; url?: string } = {}): Promise<Answer> {
  const response = await fetch(`${init.url ?? service.url}${path}`, { method, headers: { authorization: `Bearer ${READER_TOKEN}`, ...init.headers, host }, ...(init.body ? { body: init.body as BodyInit } : {}) });
  return { status: response.status, type: response.headers.get("content-type"), body: await response.text() };
}

/** A signed `pull_request` delivery about the scenario's open pull request, as the forge sends it. */
const delivery = () => {
  const repo = { id: sim.control.mustRepo(scenario.org, scenario.repo).id, owner: scenario.org, name: scenario.repo };
  const payload = pullRequestEvent("synchronize", { repo, number: scenario.pullNumber, headSha: scenario.headSha, installationId: scenario.installationId });
  return signedDelivery(SECRET, "pull_request", crypto.randomUUID(), payload);
};
const webhook = (host: string, path = "/webhooks/forge", url = service.url) => {
  const signed = delivery();
  return send(host, "POST", path, { headers: signed.headers, body: signed.body, url });
};

/** The routes an operator or the forge reaches, with what each answers at a full host name. */
const ROUTES: Array<{ path: string; status: number; type: string }> = [
  { path: "/metrics", status: 200, type: "text/plain" },
  { path: "/health/live", status: 200, type: "application/json" },
  { path: "/health/ready", status: 200, type: "application/json" },
  { path: "/api/runtime-identity", status: 200, type: "application/json" },
  { path: "/setup", status: 200, type: "text/html" },
  { path: "/playground/", status: 200, type: "text/html" },
  { path: "/api/decisions", status: 200, type: "application/json" },
  { path: "/api/decisions?limit=0", status: 400, type: "application/json" }, // the query is read too
  { path: "/api/openapi.json", status: 200, type: "application/json" },
];

describe("routing whatever the Host", () => {
  test("at a full host name every route answers as documented (the reference for the short hosts)", async () => {
    for (const route of ROUTES) {
      const answer = await send(REFERENCE_HOST, "GET", route.path);
      expect({ path: route.path, status: answer.status }).toEqual({ path: route.path, status: route.status });
      expect(answer.type).toContain(route.type);
    }
    expect((await webhook(REFERENCE_HOST)).status).toBe(202);
  });

  test("a signed delivery is accepted (202) whatever the Host's length and port", async () => {
    for (const host of HOSTS) {
      const answer = await webhook(host);
      expect({ host, status: answer.status }).toEqual({ host, status: 202 });
    }
  });

  test("every operator route answers the same whatever the Host's length and port", async () => {
    for (const route of ROUTES) {
      const reference = await send(REFERENCE_HOST, "GET", route.path);
      for (const host of HOSTS) {
        const answer = await send(host, "GET", route.path);
        expect({ host, path: route.path, status: answer.status, type: answer.type }).toEqual({ host, path: route.path, status: reference.status, type: reference.type });
      }
    }
  });

  test("health answers the same body at every Host", async () => {
    const reference = await send(REFERENCE_HOST, "GET", "/health/live");
    for (const host of HOSTS) expect({ host, body: (await send(host, "GET", "/health/live")).body }).toEqual({ host, body: reference.body });
  });

  test("a path is never read from the authority: GET /ab/metrics at Host a is not /metrics", async () => {
    for (const [host, path] of [["a", "/ab/metrics"], ["a", "/abc/metrics"], ["gh", "/x/metrics"], ["a", "/b/health/live"], ["a:80", "/ab/metrics"], ["a", "/ab/webhooks/forge"]] as const) {
      const answer = await send(host, "GET", path);
      expect({ host, path, status: answer.status }).toEqual({ host, path, status: 404 });
    }
    expect((await webhook("a", "/ab/webhooks/forge")).status).toBe(404);
  });
});

describe("routing under Elysia's other request handler", () => {
  test("with ELYSIA_AOT=false in the environment, short Hosts still reach every route and no path is read from the authority", async () => {
    const other = await startBinary({ ...env, ELYSIA_AOT: "false" });
    try {
      expect((await webhook("svc", "/webhooks/forge", other.url)).status).toBe(202);
      expect((await send("a", "GET", "/metrics", { url: other.url })).status).toBe(200);
      expect((await send("svc:80", "GET", "/health/live", { url: other.url })).status).toBe(200);
      expect((await send("a", "GET", "/ab/metrics", { url: other.url })).status).toBe(404);
    } finally {
      await other.stop();
    }
  });
});

/** The status line and body of one raw HTTP/1.1 request, for Host values a client library would not send. */
function rawRequest(port: number, request: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(request));
    let received = "";
    socket.on("data", (chunk) => { received += chunk.toString("latin1"); });
    socket.on("end", () => resolve({ status: Number(received.match(/^HTTP\/1\.1 (\d{3})/)?.[1] ?? 0), body: received.slice(received.indexOf("\r\n\r\n") + 4) }));
    socket.on("error", reject);
  });
}

describe("a Host that is no address", () => {
  test("is refused with 400 on every route, never routed by a guessed path", async () => {
    const port = Number(new URL(service.url).port);
    for (const host of ["", "user@a", "a/b", "a?b"]) {
      for (const path of ["/", "/metrics", "/health/live", "/setup", "/webhooks/forge"]) {
        const { status, body } = await rawRequest(port, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
        expect({ host, path, status, body }).toEqual({ host, path, status: 400, body: '{"error":"bad_host"}' });
      }
    }
  });
});
