import { afterAll, afterEach, beforeAll, expect, spyOn, test } from "bun:test";
import { App } from "@octokit/app";
import { Octokit } from "@octokit/core";
import githubAppJwt from "universal-github-app-jwt";
import { createScenario, generateAppKeys, type Scenario } from "../simulator/scenario.ts";
import { startForgeSimulator, type ForgeSimulator } from "../simulator/simulator.ts";
import { APP_JWT_MIN_VALIDITY_MS, APP_JWT_REUSE_MS, createAppJwtSource, type MintAppJwt, withAppJwt } from "./app-jwt.ts";
import { bufferLogger, clientFor } from "./test-support.ts";

const keys = generateAppKeys();
const T0 = Date.UTC(2026, 10, 27, 1, 0, 0);

/** The real minting, counted; `at` is the clock the source reads. */
function counted() {
  const minted: string[] = [];
  const clock = { at: T0 };
  const mint: MintAppJwt = async (options) => {
    const result = await githubAppJwt({ ...options, now: options.now ?? Math.floor(clock.at / 1000) });
    minted.push(result.token);
    return result;
  };
  return { minted, clock, source: createAppJwtSource({ appId: 42, privateKey: keys.privateKey, now: () => clock.at, mint }) };
}

const claims = (jwt: string) => JSON.parse(Buffer.from(jwt.split(".")[1]!, "base64url").toString()) as { iat: number; exp: number; iss: number };

test("the App JWT is minted once for every request within the reuse window, and again after it", async () => {
  const { minted, clock, source } = counted();
  const first = await source(42);
  for (let i = 0; i < 50; i++) {
    clock.at = T0 + Math.floor((i * (APP_JWT_REUSE_MS - 1)) / 49);
    expect((await source(42)).jwt).toBe(first.jwt);
  }
  expect(minted).toHaveLength(1);
  clock.at = T0 + APP_JWT_REUSE_MS;
  const second = await source(42);
  expect(minted).toHaveLength(2);
  expect(claims(second.jwt).iat).toBeGreaterThan(claims(first.jwt).iat);
});

test("a JWT handed out always has at least the minimum validity left, well inside its own expiry", async () => {
  const { clock, source } = counted();
  for (let at = T0; at < T0 + 5 * APP_JWT_REUSE_MS; at += 7_000) {
    clock.at = at;
    const { jwt, expiresAt } = await source(42);
    expect(claims(jwt).exp * 1000).toBe(Date.parse(expiresAt));
    expect(Date.parse(expiresAt) - at).toBeGreaterThanOrEqual(APP_JWT_MIN_VALIDITY_MS);
    // The forge's own bound: an App JWT expires at most 10 minutes after it was issued.
    expect(claims(jwt).exp - claims(jwt).iat).toBeLessThanOrEqual(600);
  }
});

test("a kept JWT that would be handed out with too little validity left is minted again", async () => {
  const clock = { at: T0 };
  let mints = 0;
  // A minting whose JWT expires soon (as a forge-imposed shorter lifetime would make it): kept, it must not be handed out
  // once less than the minimum validity is left, even inside the reuse window.
  const mint: MintAppJwt = async () => ({ token: `jwt-${++mints}`, expiration: Math.floor((clock.at + APP_JWT_MIN_VALIDITY_MS + 10_000) / 1000) });
  const source = createAppJwtSource({ appId: 42, privateKey: keys.privateKey, now: () => clock.at, mint });
  expect((await source(42)).jwt).toBe("jwt-1");
  clock.at += 5_000;
  expect((await source(42)).jwt).toBe("jwt-1");
  clock.at += 10_000;
  expect((await source(42)).jwt).toBe("jwt-2");
});

test("requests arriving while a JWT is minted share that one minting", async () => {
  const { minted, source } = counted();
  const answers = await Promise.all(Array.from({ length: 20 }, () => source(42)));
  expect(minted).toHaveLength(1);
  expect(new Set(answers.map((a) => a.jwt)).size).toBe(1);
});

test("a failed minting is not kept: the next request mints again", async () => {
  let calls = 0;
  const mint: MintAppJwt = async (options) => {
    calls++;
    if (calls === 1) throw new Error("bad key");
    return githubAppJwt(options);
  };
  const source = createAppJwtSource({ appId: 42, privateKey: keys.privateKey, mint });
  await expect(source(42)).rejects.toThrow("bad key");
  expect((await source(42)).jwt.split(".")).toHaveLength(3);
  expect(calls).toBe(2);
});

test("a JWT for a corrected clock (the forge said ours is off) is minted for that request and not kept", async () => {
  const { minted, source } = counted();
  const ordinary = await source(42);
  const corrected = await source(42, 120);
  expect(claims(corrected.jwt).iat).toBe(claims(ordinary.jwt).iat + 120);
  expect((await source(42)).jwt).toBe(ordinary.jwt);
  expect(minted).toHaveLength(2);
});

test("a clock that went back mints again instead of trusting the kept JWT's age", async () => {
  const { minted, clock, source } = counted();
  await source(42);
  clock.at = T0 - 1_000;
  await source(42);
  expect(minted).toHaveLength(2);
});

test("@octokit/app's Octokit, given withAppJwt as its Octokit option, signs with the kept JWT instead of minting its own", async () => {
  const { minted, source } = counted();
  const app = new App({ appId: 42, privateKey: keys.privateKey, Octokit: withAppJwt(Octokit, source) });
  const first = (await app.octokit.auth({ type: "app" })) as { token: string };
  for (let i = 0; i < 10; i++) expect(((await app.octokit.auth({ type: "app" })) as { token: string }).token).toBe(first.token);
  expect(minted).toEqual([first.token]);
});

test("withAppJwt leaves options without a private key as they are", () => {
  const seen: unknown[] = [];
  const Recording = class extends Octokit {
    constructor(options: ConstructorParameters<typeof Octokit>[0] = {}) {
      seen.push(options.auth);
      super({});
    }
  } as typeof Octokit;
  const { source } = counted();
  const Wrapped = withAppJwt(Recording, source);
  new Wrapped({ auth: { appId: 42, privateKey: keys.privateKey, clientId: "c" } });
  new Wrapped({ auth: { appId: 42, installationId: 7, token: "t" } });
  new Wrapped({});
  expect(seen).toEqual([{ appId: 42, clientId: "c", createJwt: source }, { appId: 42, installationId: 7, token: "t" }, undefined]);
});

let sim: ForgeSimulator;
let s: Scenario;
beforeAll(async () => {
  sim = startForgeSimulator();
  s = await createScenario(sim, { keys });
});
afterEach(() => sim.faults.clear());
afterAll(async () => {
  await sim.stop();
});

test("while the forge refuses installation tokens, many requests sign one App JWT, and no JWT is logged", async () => {
  const log = bufferLogger();
  const client = clientFor(sim, s, { logger: log.logger });
  sim.injectFault({ kind: "status", status: 503, path: `/app/installations/${s.installationId}/access_tokens` });
  const sign = spyOn(crypto.subtle, "sign");
  try {
    for (let i = 0; i < 20; i++) await expect(client.getPullRequest(s.installationId, "acme", "web", s.pullNumber)).rejects.toMatchObject({ kind: "transient" });
    expect(sim.requests.filter((r) => r.path === `/app/installations/${s.installationId}/access_tokens`).length).toBeGreaterThanOrEqual(20);
    expect(sign).toHaveBeenCalledTimes(1);
  } finally {
    sign.mockRestore();
  }
  expect(log.lines().length).toBeGreaterThan(0);
  expect(log.lines().some((line) => /eyJ[\w-]+\.[\w-]+\.[\w-]+/.test(line))).toBe(false);
});

test("App requests and token exchanges share the kept JWT, and the forge accepts it", async () => {
  const client = clientFor(sim, s);
  const sign = spyOn(crypto.subtle, "sign");
  try {
    for (let i = 0; i < 5; i++) expect(await client.getApp()).toMatchObject({ id: s.appId });
    expect(await client.getRepository(s.installationId, "acme", "web")).toMatchObject({ name: "web" });
    expect(sign).toHaveBeenCalledTimes(1);
  } finally {
    sign.mockRestore();
  }
});
