import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createUserClient } from "../forge/user-client.ts";
import { createScenario, generateAppKeys, type Scenario } from "./scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "./simulator.ts";

/**
 * The simulator's OAuth web flow and a user's reads, driven through the service's own user client (@octokit/oauth-methods):
 * the same requests the service sends to the forge when a person signs in to read decision records.
 */
let sim: ForgeSimulator;
let scenario: Scenario;
const CALLBACK = "http://127.0.0.1:9/auth/callback";
beforeAll(async () => {
  sim = startForgeSimulator();
  scenario = await createScenario(sim, { keys: generateAppKeys() });
  const c = sim.control;
  c.mustApp(scenario.appId).callbackUrls = [CALLBACK];
  // frank is no member of acme and reads only acme/web, as a collaborator; gina is an outside person reading nothing.
  c.createUser({ login: "frank" });
  c.createUser({ login: "gina" });
  await c.setCollaborator({ owner: "acme", repo: "web", user: "frank", permission: "read" });
  c.createRepository({ owner: "acme", name: "secret-plans" });
  await c.setOrgMembership({ org: "acme", user: "erin", state: "active", role: "admin" });
});
afterAll(async () => {
  await sim?.stop();
});

/** Signs `login` in through the authorization page as a browser would (the form's button), answering the code. */
async function signIn(authorizationUrl: string, login: string): Promise<{ code: string; state: string | null; location: string }> {
  const pageResponse = await fetch(authorizationUrl);
  expect(pageResponse.status).toBe(200);
  const html = await pageResponse.text();
  expect(html).toContain(`Sign in as ${login}`);
  const hidden = Object.fromEntries([...html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1]!, m[2]!.replaceAll("&amp;", "&")]));
  const confirm = await fetch(`${sim.url}/login/oauth/authorize`, { method: "POST", body: new URLSearchParams({ ...hidden, login }), redirect: "manual" });
  expect(confirm.status).toBe(302);
  const location = confirm.headers.get("location")!;
  const back = new URL(location);
  return { code: back.searchParams.get("code")!, state: back.searchParams.get("state"), location };
}

describe("signing in with the forge simulator", () => {
  test("a person signs in, the code becomes a user token once, and the token names them", async () => {
    const users = createUserClient({ apiUrl: sim.url, clientId: sim.control.mustApp(scenario.appId).clientId, clientSecret: sim.control.mustApp(scenario.appId).clientSecret });
    const url = users.authorizationUrl("state-123");
    expect(url.startsWith(`${sim.url}/login/oauth/authorize?`)).toBe(true);
    const { code, state, location } = await signIn(url, "alice");
    expect(location.startsWith(`${CALLBACK}?`)).toBe(true);
    expect(state).toBe("state-123");
    const token = await users.exchangeCode(code);
    expect(await users.user(token)).toMatchObject({ login: "alice" });
    // A code is good once.
    await expect(users.exchangeCode(code)).rejects.toThrow("bad_verification_code");
  });

  test("a wrong client secret is refused", async () => {
    const app = sim.control.mustApp(scenario.appId);
    const { code } = await signIn(createUserClient({ apiUrl: sim.url, clientId: app.clientId, clientSecret: app.clientSecret }).authorizationUrl("s"), "bob");
    const wrong = createUserClient({ apiUrl: sim.url, clientId: app.clientId, clientSecret: "not-the-secret-0123456789abcdef" });
    await expect(wrong.exchangeCode(code)).rejects.toThrow("incorrect_client_credentials");
  });

  test("each person's token lists only the repositories they can read in the App's installations", async () => {
    const app = sim.control.mustApp(scenario.appId);
    const users = createUserClient({ apiUrl: sim.url, clientId: app.clientId, clientSecret: app.clientSecret });
    const idOf = (name: string) => sim.control.state.repo("acme", name)!.id;
    const readable = async (login: string) => {
      const token = await users.exchangeCode((await signIn(users.authorizationUrl("s"), login)).code);
      return (await users.readableRepositoryIds(token)).sort((a, b) => a - b);
    };
    expect(await readable("frank")).toEqual([idOf("web")]);
    expect(await readable("gina")).toEqual([]);
    // An administrator of the organization reads every repository the App is installed on, the new one too.
    expect(await readable("erin")).toContain(idOf("secret-plans"));
    expect(await readable("erin")).toContain(idOf("web"));
  });

  test("a missing or unknown user token reads nothing", async () => {
    for (const authorization of [undefined, "token ghu_unknown"]) {
      const response = await fetch(`${sim.url}/user/installations`, { headers: authorization === undefined ? {} : { authorization } });
      expect(response.status).toBe(401);
    }
  });
});
