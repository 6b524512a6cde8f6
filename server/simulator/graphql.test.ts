// The simulator's GraphQL endpoint: queries executed against the forge's published schema, refused as the forge refuses them.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { createScenario, generateAppKeys, mintAppJwt, type Scenario } from "./scenario.ts";
import { startForgeSimulator, type ForgeSimulator } from "./simulator.ts";

const keys = generateAppKeys();
let sim: ForgeSimulator;
let s: Scenario;
let token = "";

const REVIEW_EDITS = "query ReviewEdits($ids: [ID!]!) { nodes(ids: $ids) { __typename ... on PullRequestReview { id databaseId lastEditedAt editor { login } } } }";
const nodeId = (reviewId: number) => Buffer.from(`PullRequestReview:${reviewId}`).toString("base64");

beforeAll(async () => {
  sim = startForgeSimulator();
  s = await createScenario(sim, { keys });
  const res = await fetch(`${sim.url}/app/installations/${s.installationId}/access_tokens`, {
    method: "POST", headers: { authorization: `Bearer ${mintAppJwt(s.appId, keys.privateKey)}` }, body: JSON.stringify({ permissions: { pull_requests: "read", metadata: "read" } }),
  });
  token = ((await res.json()) as { token: string }).token;
});
afterAll(async () => { await sim.stop(); });
afterEach(() => sim.faults.clear());

type Answer = { data?: { nodes?: (Record<string, unknown> | null)[] } | null; errors?: { type?: string; message: string; path?: unknown[] }[] };
async function query(body: unknown, auth: string | null = `token ${token}`): Promise<{ status: number; answer: Answer }> {
  const res = await fetch(`${sim.url}/graphql`, { method: "POST", headers: auth === null ? {} : { authorization: auth }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, answer: (text ? JSON.parse(text) : {}) as Answer };
}
const review = (body = "looks good") => sim.control.submitReview({ owner: s.org, repo: s.repo, number: s.pullNumber, user: "dave", state: "APPROVED", body });

describe("POST /graphql", () => {
  test("a review's lastEditedAt is null until someone edits its body, then the time and the editor", async () => {
    const r = await review();
    const before = await query({ query: REVIEW_EDITS, variables: { ids: [nodeId(r.id)] } });
    expect(before).toEqual({ status: 200, answer: { data: { nodes: [{ __typename: "PullRequestReview", id: nodeId(r.id), databaseId: r.id, lastEditedAt: null, editor: null }] } } });
    const edited = await sim.control.editReview({ owner: s.org, repo: s.repo, number: s.pullNumber, reviewId: r.id, body: "break-glass: something else entirely", by: "erin" });
    const after = await query({ query: REVIEW_EDITS, variables: { ids: [nodeId(r.id)] } });
    expect(after.answer.data?.nodes).toEqual([{ __typename: "PullRequestReview", id: nodeId(r.id), databaseId: r.id, lastEditedAt: edited.lastEditedAt!, editor: { login: "erin" } }]);
    // REST shows only the current body.
    const listed = await fetch(`${sim.url}/repos/${s.org}/${s.repo}/pulls/${s.pullNumber}/reviews`, { headers: { authorization: `token ${token}` } });
    const rest = ((await listed.json()) as { id: number; body: string }[]).find((x) => x.id === r.id)!;
    expect(rest.body).toBe("break-glass: something else entirely");
    expect(Object.keys(rest)).not.toContain("last_edited_at");
  });

  test("a query the forge's schema does not validate is refused with errors and no data", async () => {
    for (const bad of [
      "query { nodes(ids: [\"x\"]) { ... on PullRequestReview { lastEdited } } }", // no such field
      "query { nodes(ids: true) { id } }", // wrong argument type
      "query ($ids: [ID!]!) { nodes(ids: $ids) { ... on PullRequestReview { lastEditedAt } } }", // a variable not given
      "query { nodes(ids: [\"x\"]) { ... on PullRequestReview { lastEditedAt } }", // not GraphQL
    ]) {
      const { status, answer } = await query({ query: bad });
      expect({ bad, status, data: answer.data }).toEqual({ bad, status: 200, data: undefined });
      expect(answer.errors!.length).toBeGreaterThan(0);
    }
  });

  test("a node ID that names nothing the installation can see answers null with a NOT_FOUND error", async () => {
    const r = await review();
    const { answer } = await query({ query: REVIEW_EDITS, variables: { ids: [nodeId(r.id), nodeId(999_999), "not-a-node-id", Buffer.from(`PullRequest:${s.pullNumber}`).toString("base64")] } });
    expect(answer.data?.nodes?.[0]).toMatchObject({ databaseId: r.id });
    expect(answer.data?.nodes?.slice(1)).toEqual([null, null, null]);
    expect(answer.errors?.map((e) => [e.type, e.path])).toEqual([["NOT_FOUND", ["nodes", 1]], ["NOT_FOUND", ["nodes", 2]], ["NOT_FOUND", ["nodes", 3]]]);
  });

  test("it needs an installation token, and is counted as POST /graphql", async () => {
    const before = sim.counter.snapshot().routes["POST /graphql"]?.["200"] ?? 0;
    expect((await query({ query: REVIEW_EDITS, variables: { ids: [] } }, null)).status).toBe(401);
    expect((await query({ query: REVIEW_EDITS, variables: { ids: [] } }, `Bearer ${mintAppJwt(s.appId, keys.privateKey)}`)).status).toBe(401);
    expect((await query({ query: REVIEW_EDITS, variables: { ids: [] } })).status).toBe(200);
    expect(sim.counter.snapshot().routes["POST /graphql"]).toMatchObject({ "200": before + 1, "401": 2 });
    expect((await query({ variables: {} })).status).toBe(400);
  });

  test("faults: a partial answer (errors and partial data) and a missing node without an error; REST faults apply too", async () => {
    const [a, b] = [await review(), await review()];
    const ids = [nodeId(a.id), nodeId(b.id)];
    sim.injectFault({ kind: "graphql_partial", path: "/graphql", errorType: "SERVICE_UNAVAILABLE", times: 1 });
    const partial = await query({ query: REVIEW_EDITS, variables: { ids } });
    expect(partial.answer.data?.nodes?.[0]).toBeNull();
    expect(partial.answer.data?.nodes?.[1]).toMatchObject({ databaseId: b.id });
    expect(partial.answer.errors).toMatchObject([{ type: "SERVICE_UNAVAILABLE", path: ["nodes", 0] }]);
    sim.injectFault({ kind: "graphql_missing_node", path: "/graphql", times: 1 });
    const missing = await query({ query: REVIEW_EDITS, variables: { ids } });
    expect(missing.answer).toEqual({ data: { nodes: [null, expect.objectContaining({ databaseId: b.id })] } });
    sim.injectFault({ kind: "status", path: "/graphql", status: 502, times: 1 });
    expect((await query({ query: REVIEW_EDITS, variables: { ids } })).status).toBe(502);
    expect((await query({ query: REVIEW_EDITS, variables: { ids } })).answer.errors).toBeUndefined();
  });

  test("editing a review sends pull_request_review edited, with the old body, from the editor", async () => {
    const r = await review("an ordinary approval");
    await sim.control.editReview({ owner: s.org, repo: s.repo, number: s.pullNumber, reviewId: r.id, body: "break-glass: edited by someone else", by: "erin" });
    const delivery = sim.control.deliveries.at(-1)!;
    expect(delivery).toMatchObject({ event: "pull_request_review" });
    const payload = JSON.parse(delivery.body) as { action: string; changes: { body: { from: string } }; sender: { login: string }; review: { id: number; body: string } };
    expect(payload).toMatchObject({ action: "edited", changes: { body: { from: "an ordinary approval" } }, sender: { login: "erin" }, review: { id: r.id, body: "break-glass: edited by someone else" } });
  });
});
