// The forge GraphQL client against the simulator (which executes queries against the forge's published schema): bounded
// answers, errors and missing nodes as incomplete evidence, the governor's pacing and rate-limit handling, and the one
// review-edits query an evaluation makes only when a break-glass request could override.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { DEFAULT_EVALUATION_SETTINGS } from "../evaluation/evidence.ts";
import { planLookups } from "../evaluation/plan-lookups.ts";
import { createScenario, generateAppKeys, POLICY_PATH, type Scenario } from "../simulator/scenario.ts";
import { startForgeSimulator, type ForgeSimulator } from "../simulator/simulator.ts";
import { createGovernor, DEFAULT_GOVERNOR_SETTINGS, type RequestKind, type RequestOutcome } from "./governor.ts";
import { graphqlQuery, MAX_REVIEW_EDIT_NODES, REVIEW_EDITS_QUERY, reviewEdits } from "./graphql.ts";
import { bufferLogger, clientFor } from "./test-support.ts";
import { createTransport, type Transport } from "./transport.ts";

let sim: ForgeSimulator;
let s: Scenario;
const keys = generateAppKeys();

beforeAll(async () => {
  sim = startForgeSimulator();
  s = await createScenario(sim, { keys });
}, 20000);
afterEach(() => { sim.faults.clear(); });
afterAll(async () => { await sim.stop(); });

/** A transport over the simulator with its own governor, whose every request's kind and outcome is kept. */
function transport(): { t: Transport; counted: [RequestKind, RequestOutcome][] } {
  const counted: [RequestKind, RequestOutcome][] = [];
  const governor = createGovernor({ ...DEFAULT_GOVERNOR_SETTINGS, onRequest: (kind, outcome) => void counted.push([kind, outcome]) });
  const t = createTransport({ apiUrl: sim.url, appId: s.appId, privateKey: s.privateKey, requestTimeoutMs: 2000, logger: bufferLogger().logger, governor });
  return { t, counted };
}
const nodeId = (reviewId: number) => Buffer.from(`PullRequestReview:${reviewId}`).toString("base64");
const submit = (user = "dave", body = "fine by me") => sim.control.submitReview({ owner: s.org, repo: s.repo, number: s.pullNumber, user, state: "APPROVED", body });
const graphqlCount = () => Object.values(sim.counter.snapshot().routes["POST /graphql"] ?? {}).reduce((a, b) => a + b, 0);

describe("graphqlQuery", () => {
  test("answers the query's data: one POST /graphql, counted by the governor as kind graphql", async () => {
    const { t, counted } = transport();
    const review = await submit();
    const before = graphqlCount();
    const answer = await graphqlQuery(t, s.installationId, { query: REVIEW_EDITS_QUERY, variables: { ids: [nodeId(review.id)] } });
    expect(answer).toEqual({ complete: true, data: { nodes: [{ __typename: "PullRequestReview", id: nodeId(review.id), databaseId: review.id, lastEditedAt: null }] } });
    expect(graphqlCount()).toBe(before + 1);
    expect(counted).toEqual([["graphql", "ok"]]);
  });

  test("an answer over its bound is cut off unread: incomplete, never a prefix", async () => {
    const { t } = transport();
    const review = await submit();
    const ids = Array.from({ length: 10 }, () => nodeId(review.id));
    expect(await graphqlQuery(t, s.installationId, { query: REVIEW_EDITS_QUERY, variables: { ids }, maxBytes: 200 })).toEqual({ complete: false, cause: "inconsistent", detail: "POST /graphql: response body over 200 bytes" });
    expect((await graphqlQuery(t, s.installationId, { query: REVIEW_EDITS_QUERY, variables: { ids }, maxBytes: 4096 })).complete).toBe(true);
  });

  test("GraphQL errors are incomplete evidence, partial data never used: NOT_FOUND alone is permanent, any other error transient", async () => {
    const { t } = transport();
    const review = await submit();
    const ids = [nodeId(review.id), nodeId(987_654)];
    expect(await graphqlQuery(t, s.installationId, { query: REVIEW_EDITS_QUERY, variables: { ids } })).toEqual({ complete: false, cause: "inconsistent", detail: "POST /graphql: the forge answered with errors (NOT_FOUND)" });
    sim.injectFault({ kind: "graphql_partial", path: "/graphql", errorType: "SERVICE_UNAVAILABLE", times: 1 });
    expect(await graphqlQuery(t, s.installationId, { query: REVIEW_EDITS_QUERY, variables: { ids: [nodeId(review.id)] } })).toEqual({ complete: false, cause: "transient", detail: "POST /graphql: the forge answered with errors (SERVICE_UNAVAILABLE)" });
    // A query the forge's schema refuses is an error answer too.
    expect(await graphqlQuery(t, s.installationId, { query: "query { nodes(ids: []) { ... on PullRequestReview { editedAt } } }", variables: {} })).toMatchObject({ complete: false, cause: "transient" });
  });

  test("an answer carrying errors is counted as the failure it is, though its HTTP status is 200: error, or rate_limited for RATE_LIMITED", async () => {
    const { t, counted } = transport();
    const review = await submit();
    await graphqlQuery(t, s.installationId, { query: REVIEW_EDITS_QUERY, variables: { ids: [nodeId(review.id), nodeId(987_655)] } });
    sim.injectFault({ kind: "graphql_partial", path: "/graphql", errorType: "RATE_LIMITED", times: 1 });
    await graphqlQuery(t, s.installationId, { query: REVIEW_EDITS_QUERY, variables: { ids: [nodeId(review.id)] } });
    await graphqlQuery(t, s.installationId, { query: REVIEW_EDITS_QUERY, variables: { ids: [nodeId(review.id)] } });
    expect(counted).toEqual([["graphql", "error"], ["graphql", "rate_limited"], ["graphql", "ok"]]);
  });

  test("a 5xx, a reset and a truncated body are transient", async () => {
    const { t } = transport();
    const query = { query: REVIEW_EDITS_QUERY, variables: { ids: [] } };
    for (const kind of ["status", "reset", "truncate"] as const) {
      sim.injectFault({ kind, path: "/graphql", times: 1 });
      expect({ kind, answer: await graphqlQuery(t, s.installationId, query) }).toMatchObject({ kind, answer: { complete: false, cause: "transient" } });
    }
    expect((await graphqlQuery(t, s.installationId, query)).complete).toBe(true);
  });

  test("a rate limit: transient with the provider delay told; the governor holds the installation's next query unsent, and its REST budget is its own", async () => {
    const { t, counted } = transport();
    sim.injectFault({ kind: "rate_limit", path: "/graphql", resetInSeconds: 600, times: 1 });
    const delays: number[] = [];
    const query = { query: REVIEW_EDITS_QUERY, variables: { ids: [] } };
    expect(await graphqlQuery(t, s.installationId, query, { onRateLimit: (ms) => void delays.push(ms) })).toMatchObject({ complete: false, cause: "transient" });
    expect(delays.length).toBe(1);
    expect(delays[0]!).toBeGreaterThan(590_000);
    const before = graphqlCount();
    expect(await graphqlQuery(t, s.installationId, query, { onRateLimit: (ms) => void delays.push(ms) })).toMatchObject({ complete: false, cause: "transient" });
    expect(graphqlCount()).toBe(before); // not sent
    expect(counted).toEqual([["graphql", "rate_limited"], ["graphql", "deferred"]]);
    // REST requests of the same installation are not held: the forge keeps GraphQL's budget apart.
    expect((await t.installation(s.installationId, "GET /repos/{owner}/{repo}", { owner: s.org, repo: s.repo })).status).toBe(200);
  });
});

describe("reviewEdits", () => {
  test("says which reviews were edited, by review ID, in one query", async () => {
    const { t } = transport();
    const [plain, touched] = [await submit("dave"), await submit("alice")];
    const edit = await sim.control.editReview({ owner: s.org, repo: s.repo, number: s.pullNumber, reviewId: touched.id, body: "break-glass: not what alice wrote, at all", by: "bob" });
    const before = graphqlCount();
    expect(await reviewEdits(t, s.installationId, [{ reviewId: plain.id, nodeId: nodeId(plain.id) }, { reviewId: touched.id, nodeId: nodeId(touched.id) }])).toEqual({
      [String(plain.id)]: { kind: "found", value: { lastEditedAt: null } },
      [String(touched.id)]: { kind: "found", value: { lastEditedAt: edit.lastEditedAt! } },
    });
    expect(graphqlCount()).toBe(before + 1);
  });

  test("a missing node, a partial answer or a node that is not the review makes every answer incomplete", async () => {
    const { t } = transport();
    const [a, b] = [await submit("dave"), await submit("alice")];
    const asked = [{ reviewId: a.id, nodeId: nodeId(a.id) }, { reviewId: b.id, nodeId: nodeId(b.id) }];
    const incomplete = (cause: string) => ({ [String(a.id)]: expect.objectContaining({ kind: "incomplete", cause }), [String(b.id)]: expect.objectContaining({ kind: "incomplete", cause }) });
    sim.injectFault({ kind: "graphql_missing_node", path: "/graphql", times: 1 });
    expect(await reviewEdits(t, s.installationId, asked)).toEqual(incomplete("inconsistent"));
    sim.injectFault({ kind: "graphql_partial", path: "/graphql", times: 1 });
    expect(await reviewEdits(t, s.installationId, asked)).toEqual(incomplete("transient"));
    // The node ID of review a asked for as review b: the answer's databaseId is not b's.
    expect(await reviewEdits(t, s.installationId, [{ reviewId: b.id, nodeId: nodeId(a.id) }])).toEqual({ [String(b.id)]: { kind: "incomplete", cause: "inconsistent", detail: `POST /graphql: the node answered for review ${b.id} is not that review` } });
  });

  test(`asks about at most ${MAX_REVIEW_EDIT_NODES} reviews, and nothing for none`, async () => {
    const { t } = transport();
    const reviews = [];
    for (let i = 0; i < MAX_REVIEW_EDIT_NODES + 2; i++) reviews.push(await submit("dave"));
    const before = graphqlCount();
    expect(await reviewEdits(t, s.installationId, [])).toEqual({});
    expect(graphqlCount()).toBe(before);
    const answer = await reviewEdits(t, s.installationId, reviews.map((r) => ({ reviewId: r.id, nodeId: nodeId(r.id) })));
    expect(Object.keys(answer)).toHaveLength(MAX_REVIEW_EDIT_NODES);
    expect(graphqlCount()).toBe(before + 1);
  });
});

describe("evidence gathering asks GraphQL only for a break-glass request that could override", () => {
  const request = () => ({ installationId: s.installationId, owner: s.org, repo: s.repo, number: s.pullNumber, policyPath: POLICY_PATH, organizationPolicyRepository: ".forge", forgeDirectory: ".forge" });
  const plan = { planLookups: (evidence: Parameters<typeof planLookups>[0], known: Parameters<typeof planLookups>[2]) => planLookups(evidence, DEFAULT_EVALUATION_SETTINGS, known) };

  test("without [break_glass], and with it but no request that could override, no GraphQL request; with one, exactly one", async () => {
    const client = clientFor(sim, s);
    const before = graphqlCount();
    const gathered = await client.gatherEvidence(request(), plan);
    expect(gathered.kind).toBe("gathered");
    expect(graphqlCount()).toBe(before);

    await sim.control.commit({ owner: s.org, repo: ".forge", branch: "main", files: { [POLICY_PATH]: `schema_version = 1\n[[trusted_apps]]\nslug = "docs-review-bot"\napp_id = ${s.botAppId}\n[break_glass]\nteams = ["core"]\n` } });
    await sim.control.submitReview({ owner: s.org, repo: s.repo, number: s.pullNumber, user: "dave", state: "APPROVED", body: "break-glass: too short" });
    await client.gatherEvidence(request(), plan);
    expect(graphqlCount()).toBe(before);

    const override = await sim.control.submitReview({ owner: s.org, repo: s.repo, number: s.pullNumber, user: "dave", state: "APPROVED", body: "break-glass: the payment service is down and this is the fix" });
    const result = await client.gatherEvidence(request(), plan);
    expect(graphqlCount()).toBe(before + 1);
    if (result.kind !== "gathered") throw new Error(result.kind);
    expect(result.evidence.directory.reviewEdits).toEqual({ [String(override.id)]: { kind: "found", value: { lastEditedAt: null } } });
  });
});
