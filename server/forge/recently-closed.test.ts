import { afterAll, beforeAll, expect, test } from "bun:test";
import { createScenario, generateAppKeys, type Scenario } from "../simulator/scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "../simulator/simulator.ts";
import { RECENTLY_CLOSED_PAGE } from "./client.ts";
import { clientFor } from "./test-support.ts";

/** The merge recovery's one conditional request per repository (DESIGN 3.10): recently closed pull requests, merged ones kept. */
let sim: ForgeSimulator;
let s: Scenario;
beforeAll(async () => {
  sim = startForgeSimulator();
  s = await createScenario(sim, { keys: generateAppKeys() });
}, 20_000);
afterAll(async () => {
  await sim.stop();
});

test("one page of the most recently updated closed pull requests, merged ones only with what the recovery reads; 304 while nothing changed", async () => {
  const client = clientFor(sim, s);
  const open = async (branch: string) => {
    await sim.control.commit({ owner: s.org, repo: s.repo, branch, files: { [`src/${branch}.ts`]: "1\n" }, sender: "erin" });
    return sim.control.openPullRequest({ owner: s.org, repo: s.repo, head: branch, author: "erin" });
  };
  const merged = await open("merged");
  await sim.control.mergePullRequest({ owner: s.org, repo: s.repo, number: merged.number, by: "bob" });
  const closed = await open("closed");
  await sim.control.setPullRequestState({ owner: s.org, repo: s.repo, number: closed.number, state: "closed" });

  const from = sim.requests.length;
  const first = await client.listRecentlyClosedPullRequests(s.installationId, s.org, s.repo);
  expect(first.notModified).toBe(false);
  expect(first.items).toEqual([{ number: merged.number, merged_at: merged.merged!.at, merge_commit_sha: merged.merged!.commitSha, head: { sha: merged.headSha }, base: { sha: merged.baseSha } }]);
  const asked = sim.requests.slice(from).filter((r) => r.path.endsWith("/pulls"));
  expect(asked).toHaveLength(1);
  const query = new URLSearchParams(asked[0]!.query);
  expect(Object.fromEntries(query)).toMatchObject({ state: "closed", sort: "updated", direction: "desc", per_page: String(RECENTLY_CLOSED_PAGE) });

  const again = await client.listRecentlyClosedPullRequests(s.installationId, s.org, s.repo);
  expect(again).toEqual({ notModified: true, items: first.items });
  expect(sim.requests.at(-1)!.status).toBe(304);

  const later = await open("later");
  await sim.control.mergePullRequest({ owner: s.org, repo: s.repo, number: later.number, by: "bob" });
  const changed = await client.listRecentlyClosedPullRequests(s.installationId, s.org, s.repo);
  expect(changed.notModified).toBe(false);
  expect((changed.items as Array<{ number: number }>).map((p) => p.number)).toEqual([later.number, merged.number]);
});
