import { afterEach, describe, expect, test } from "bun:test";
import { createHmac, randomUUID } from "node:crypto";
import openapiWebhooks from "@octokit/openapi-webhooks/generated/api.github.com.json" with { type: "json" };
import payloadExamples from "@octokit/webhooks-examples/api.github.com/index.json" with { type: "json" };
import { BACKENDS } from "../../e2e/support/databases.ts";
import { type Harness, ingressHarness, SECRET } from "../../e2e/support/ingress-harness.ts";
import { loadConfig } from "../config/index.ts";
import { createApp } from "../http/app.ts";
import type { WebhookDeps } from "./handle-webhook.ts";
import { EVENT_LABELS } from "./event-mapping.ts";

/**
 * GitHub's own deliveries, as GitHub sends them to an App: its example payloads, its headers (X-GitHub-Event,
 * X-GitHub-Delivery, X-GitHub-Hook-ID, X-GitHub-Hook-Installation-Target-ID/-Type, User-Agent: GitHub-Hookshot/…, no
 * X-Forge-* header), a valid X-Hub-Signature-256, through the service's HTTP application (every route group, as served,
 * at a public host name), and the work each one queued.
 *
 * The payloads: GitHub's webhooks OpenAPI description (@octokit/openapi-webhooks) carries example payloads for check_run and
 * ping only; every other event's examples come from @octokit/webhooks-examples (the payload examples of GitHub's webhook
 * documentation, collected by the Octokit project). Where an example was written for a repository webhook it has no
 * `installation`; GitHub adds `installation: {id, node_id}` to every delivery it sends to an App, and so does this test.
 */

type Json = Record<string, unknown>;

/** The service's HTTP application (every route group, as served), its webhook route given these dependencies. */
function serviceApp(h: Harness, webhook: WebhookDeps) {
  const config = loadConfig({ SERVICE_DATABASE_URL: "sqlite::memory:" });
  return createApp({ config, build: { version: "0.1.0", buildRevision: null }, health: { config, store: h.store, credentials: null, worker: null, reconciler: null }, metrics: h.metrics, webhook });
}
/** The App whose checks GitHub's check_run and check_suite examples are about (their `app.id`): the service is configured as it. */
const APP_ID = 29310;

const described = (openapiWebhooks as unknown as { webhooks: Record<string, { post: { "x-github": { subcategory: string }; requestBody: { content: Record<string, { examples?: Record<string, { $ref: string }> }> } } }>; components: { examples: Record<string, { value: Json }> } });

/** The OpenAPI description's example for a webhook (e.g. `check-run-rerequested`), resolved from its $ref. */
function openapiExample(webhook: string): Json {
  const ref = described.webhooks[webhook]?.post.requestBody.content["application/json"]?.examples?.default?.$ref;
  if (ref === undefined) throw new Error(`the webhooks description has no example for ${webhook}`);
  return described.components.examples[ref.slice(ref.lastIndexOf("/") + 1)]!.value;
}

/**
 * The documented example of an event (and action) that `where` accepts: the first written for an App (with
 * `installation`), else the first.
 */
function documentedExample(event: string, action?: string, where: (example: Json) => boolean = () => true): Json {
  const examples = (payloadExamples as unknown as { name: string; examples: Json[] }[]).find((e) => e.name === event)?.examples ?? [];
  const matching = examples.filter((example) => example.action === action && where(example));
  const example = matching.find((e) => typeof e.installation === "object" && e.installation !== null) ?? matching[0];
  if (example === undefined) throw new Error(`no documented example of ${event}${action ? `.${action}` : ""}`);
  return example;
}

/** As delivered to an App: GitHub adds the installation when the example was written for a repository webhook. */
function asAppDelivery(example: Json, installationId = 1): Json {
  return typeof example.installation === "object" && example.installation !== null ? example : { ...example, installation: { id: installationId, node_id: "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==" } };
}

/** GitHub's delivery of `payload`: compact JSON, signed, with GitHub's header names and nothing else of ours. */
function githubRequest(event: string, payload: Json, deliveryId = randomUUID()): Request {
  const body = JSON.stringify(payload);
  return new Request("http://approvals.example.com/webhooks/forge", {
    method: "POST",
    body,
    headers: {
      "content-type": "application/json",
      "user-agent": "GitHub-Hookshot/a1b2c3d",
      "x-github-event": event,
      "x-github-delivery": deliveryId,
      "x-github-hook-id": "512345678",
      "x-github-hook-installation-target-id": String(APP_ID),
      "x-github-hook-installation-target-type": "integration",
      "x-hub-signature-256": `sha256=${createHmac("sha256", SECRET).update(body).digest("hex")}`,
    },
  });
}

type Repo = { id: number; owner: string; name: string };
const repoOf = (payload: Json): Repo => {
  const r = payload.repository as { id: number; name: string; owner: { login: string } };
  return { id: r.id, owner: r.owner.login, name: r.name };
};
const pullOf = (payload: Json) => payload.pull_request as { number: number; head: { sha: string } };
const installationOf = (payload: Json) => (payload.installation as { id: number }).id;

/** A job row as the store keeps it, in the fields that say what work was queued. */
type Job = { kind: string; installation_id: number; repository_id: number | null; repository_owner: string | null; repository_name: string | null; pull_number: number | null; head_sha: string | null; base_ref: string | null; authority_subjects: string | null };
const job = (kind: string, installation: number, fields: Partial<Job> = {}): Job => ({ kind, installation_id: installation, repository_id: null, repository_owner: null, repository_name: null, pull_number: null, head_sha: null, base_ref: null, authority_subjects: null, ...fields });
const inRepo = (repo: Repo) => ({ repository_id: repo.id, repository_owner: repo.owner, repository_name: repo.name });
const subjects = (...names: string[]) => names.sort().map((name) => `${name}\n`).join("");

/** A pull request's direct trigger: its head's invalidation and its evaluation. */
const pullWork = (payload: Json): Job[] => {
  const repo = repoOf(payload);
  const pull = pullOf(payload);
  return [
    job("head_invalidation", installationOf(payload), { ...inRepo(repo), head_sha: pull.head.sha }),
    job("evaluation", installationOf(payload), { ...inRepo(repo), pull_number: pull.number, head_sha: pull.head.sha }),
  ];
};
const installationWide = (payload: Json, ...names: string[]): Job[] => [job("installation_fanout", installationOf(payload), names.length > 0 ? { authority_subjects: subjects(...names) } : {})];
const repositoryWide = (payload: Json, repo: Repo, ...names: string[]): Job[] => [job("repository_fanout", installationOf(payload), { ...inRepo(repo), ...(names.length > 0 ? { authority_subjects: subjects(...names) } : {}) })];

type Case = {
  readonly name: string;
  readonly event: string;
  readonly payload: Json;
  /** The work the delivery queues; [] for an event the service acknowledges without work. */
  readonly work: (payload: Json) => Job[];
  /** The organization policy repository's name in the service's settings (default: `.github`, not in any example). */
  readonly policyRepository?: string;
  readonly checkName?: string;
};

const documented = (event: string, action: string | undefined, work: Case["work"], extra: Partial<Case> & { where?: (example: Json) => boolean } = {}): Case => {
  const { where, ...rest } = extra;
  return {
    name: `${event}${action ? `.${action}` : ""}${extra.policyRepository ? " of the organization policy repository" : ""}`,
    event, payload: asAppDelivery(documentedExample(event, action, where)), work, ...rest,
  };
};
const toBranch = (example: Json) => typeof example.ref === "string" && example.ref.startsWith("refs/heads/");

const checkRunRerequested = asAppDelivery(openapiExample("check-run-rerequested"));

const CASES: Case[] = [
  // GitHub's webhooks description's own examples.
  { name: "check_run.rerequested of our check (OpenAPI example)", event: "check_run", payload: checkRunRerequested, checkName: (checkRunRerequested.check_run as { name: string }).name,
    work: (p) => [job("head_invalidation", installationOf(p), { ...inRepo(repoOf(p)), head_sha: (p.check_run as { head_sha: string }).head_sha })] },
  { name: "check_run.rerequested of another check name (OpenAPI example)", event: "check_run", payload: checkRunRerequested, checkName: "Service / approval", work: () => [] },
  ...["check-run-created", "check-run-completed", "check-run-requested-action"].map((webhook): Case => ({ name: `${webhook.replace("check-run-", "check_run.").replace("-", "_")} (OpenAPI example)`, event: "check_run", payload: asAppDelivery(openapiExample(webhook)), work: () => [] })),
  { name: "ping (OpenAPI example)", event: "ping", payload: openapiExample("ping"), work: () => [] },
  // pull_request: every documented mapped action is a direct trigger; the others are acknowledged without work.
  // synchronize: the head the pull request left (`before`) is invalidated too (another pull request may share it).
  documented("pull_request", "synchronize", (p) => {
    const [head, evaluation] = pullWork(p);
    return [head!, job("head_invalidation", installationOf(p), { ...inRepo(repoOf(p)), head_sha: p.before as string }), evaluation!];
  }),
  ...["opened", "reopened", "ready_for_review", "converted_to_draft", "labeled", "unlabeled", "closed"].map((action) => documented("pull_request", action, pullWork)),
  ...["assigned", "locked", "review_requested"].map((action) => documented("pull_request", action, () => [])),
  ...["submitted", "dismissed"].map((action) => documented("pull_request_review", action, pullWork)),
  documented("pull_request", "opened", () => [], { policyRepository: "Hello-World" }),
  documented("check_suite", "rerequested", (p) => [job("head_invalidation", installationOf(p), { ...inRepo(repoOf(p)), head_sha: (p.check_suite as { head_sha: string }).head_sha })]),
  documented("check_suite", "requested", () => []),
  // push: a branch of a target repository is base-ref work; of the policy repository's default branch, installation-wide.
  documented("push", undefined, (p) => [job("base_ref", installationOf(p), { ...inRepo(repoOf(p)), base_ref: (p.ref as string).slice("refs/heads/".length) })], { where: toBranch }),
  documented("push", undefined, (p) => installationWide(p), { where: (example) => example.ref === "refs/heads/master", policyRepository: "Hello-World" }),
  { ...documented("push", undefined, () => [], { where: (example) => !toBranch(example) }), name: "push of a tag" },
  // repository
  ...["renamed", "transferred"].map((action) => documented("repository", action, (p) => installationWide(p))),
  ...["created", "edited", "publicized", "privatized"].map((action) => documented("repository", action, () => [])),
  // installation and its repositories
  ...["created", "new_permissions_accepted", "unsuspend"].map((action) => documented("installation", action, (p) => installationWide(p))),
  ...["deleted", "suspend"].map((action) => documented("installation", action, () => [])),
  documented("installation_repositories", "added", (p) => {
    const added = (p.repositories_added as { id: number; full_name: string; name: string }[])[0]!;
    return repositoryWide(p, { id: added.id, owner: added.full_name.split("/")[0]!, name: added.name });
  }),
  documented("installation_repositories", "removed", () => []),
  documented("installation_repositories", "removed", (p) => installationWide(p), { policyRepository: "Hello-World" }),
  // labels and the directory
  ...["created", "edited", "deleted"].map((action) => documented("label", action, (p) => repositoryWide(p, repoOf(p)))),
  ...["added", "edited"].map((action) => documented("member", action, (p) => repositoryWide(p, repoOf(p), `user:${(p.member as { login: string }).login.toLowerCase()}`))),
  ...["added", "removed"].map((action) => documented("membership", action, (p) => (p.scope === "team"
    ? installationWide(p, `user:${(p.member as { login: string }).login.toLowerCase()}`, `team:${(p.organization as { login: string }).login.toLowerCase()}/${(p.team as { slug: string }).slug}`)
    : installationWide(p)))),
  documented("organization", "member_added", (p) => installationWide(p, `user:${((p.membership as { user: { login: string } }).user.login).toLowerCase()}`)),
  documented("organization", "member_invited", (p) => installationWide(p, `user:${((p.invitation as { login: string }).login).toLowerCase()}`)),
  documented("organization", "renamed", (p) => installationWide(p)),
  documented("team", "created", (p) => installationWide(p, `team:${(p.organization as { login: string }).login.toLowerCase()}/${(p.team as { slug: string }).slug}`)),
  ...["added_to_repository", "removed_from_repository"].map((action) => documented("team", action, (p) => repositoryWide(p, repoOf(p)))),
  ...["deleted", "edited"].map((action) => documented("team", action, (p) => installationWide(p))),
  documented("team_add", undefined, (p) => repositoryWide(p, repoOf(p))),
  // A merge queue's group: its judgement, keyed by the group's head commit, on the branch it merges into.
  documented("merge_group", "checks_requested", (p) => {
    const group = p.merge_group as { head_sha: string; base_ref: string };
    return [job("merge_group", installationOf(p), { ...inRepo(repoOf(p)), head_sha: group.head_sha, base_ref: group.base_ref.slice("refs/heads/".length) })];
  }),
];

describe.each(BACKENDS)("GitHub's deliveries on %s", (backend) => {
  let h: Harness;
  afterEach(async () => h?.close());

  for (const c of CASES) {
    test(`${c.name} is accepted with GitHub's headers and queues ${c.work(c.payload).length === 0 ? "no work" : c.work(c.payload).map((j) => j.kind).join(" and ")}`, async () => {
      h = await ingressHarness(backend, { appId: APP_ID });
      const route = serviceApp(h, { ...h.deps, mapping: { ...h.deps.mapping, organizationPolicyRepository: c.policyRepository ?? ".github", checkName: c.checkName ?? h.deps.mapping.checkName } });
      const deliveryId = randomUUID();
      const response = await route.handle(githubRequest(c.event, c.payload, deliveryId));
      const expected = c.work(c.payload);
      expect({ status: response.status, body: await response.json() }).toEqual({ status: 202, body: { accepted: true, queued: expected.length > 0 } });
      const jobs = await h.rows<Job>("select kind, installation_id, repository_id, repository_owner, repository_name, pull_number, head_sha, base_ref, authority_subjects from jobs order by priority, head_sha, pull_number");
      expect(jobs.map((row) => ({ ...row, installation_id: Number(row.installation_id), repository_id: row.repository_id === null ? null : Number(row.repository_id) }))).toEqual(expected);
      // Retained work remembers GitHub's delivery ID (a redelivery is recognised by it); nothing else is retained.
      const retained = await h.rows<{ delivery_id: string }>("select delivery_id from webhook_deliveries");
      if (expected.length > 0) expect(retained).toEqual([{ delivery_id: deliveryId }]);
      else expect(retained).toEqual([]);
    });
  }

  test("a redelivery of a GitHub delivery (same X-GitHub-Delivery) is recognised and queues nothing more", async () => {
    h = await ingressHarness(backend, { appId: APP_ID });
    const route = serviceApp(h, h.deps);
    const payload = asAppDelivery(documentedExample("pull_request", "opened"));
    expect(await (await route.handle(githubRequest("pull_request", payload, "72d3162e-cc78-11e3-81ab-4c9367dc0958"))).json()).toEqual({ accepted: true, queued: true });
    expect(await (await route.handle(githubRequest("pull_request", payload, "72d3162e-cc78-11e3-81ab-4c9367dc0958"))).json()).toEqual({ accepted: false, queued: false });
    expect(await h.count("jobs")).toBe(2);
  });
});

test("every event the service maps is an event GitHub's webhooks description documents, with an example tested above", () => {
  const documentedEvents = new Set(Object.values(described.webhooks).map((w) => w.post["x-github"].subcategory));
  const tested = new Set(CASES.filter((c) => c.work(c.payload).length > 0).map((c) => c.event));
  for (const event of EVENT_LABELS) expect({ event, documented: documentedEvents.has(event) }).toEqual({ event, documented: true });
  // installation_target has no example payload in either package; its mapping is tested with a hand-written one in event-mapping.test.ts.
  expect([...EVENT_LABELS].filter((event) => !tested.has(event)).sort()).toEqual(["installation_target"]);
});

// GitHub's webhooks description declares, for each event and action, the payload's schema. Every field the mapping reads
// (event-mapping.ts) must be one GitHub declares for that delivery: a misspelt or invented field would never be sent, and
// the mapping would then refuse the delivery, or take its wider fallback, for every real one. This covers the mapped
// actions no example payload shows (pull_request.edited, repository.unarchived, installation_target, …).
type Schema = { $ref?: string; properties?: Record<string, Schema>; items?: Schema; allOf?: Schema[]; anyOf?: Schema[]; oneOf?: Schema[] };
const schemas = (openapiWebhooks as unknown as { components: { schemas: Record<string, Schema> } }).components.schemas;
const resolve = (schema: Schema): Schema => (schema.$ref === undefined ? schema : resolve(schemas[schema.$ref.slice(schema.$ref.lastIndexOf("/") + 1)]!));
/** The schemas `name` may have inside `schema` (in any branch of allOf, anyOf, oneOf; an array's items stand for the array). */
function property(schema: Schema, name: string): Schema[] {
  const s = resolve(schema);
  if (s.items !== undefined) return property(s.items, name);
  return [...(s.properties?.[name] ? [s.properties[name]] : []), ...[...(s.allOf ?? []), ...(s.anyOf ?? []), ...(s.oneOf ?? [])].flatMap((branch) => property(branch, name))];
}
const declares = (schema: Schema, path: string): boolean => {
  const [name, ...rest] = path.split(".");
  return property(schema, name!).some((inner) => rest.length === 0 || declares(inner, rest.join(".")));
};
const payloadSchema = (webhook: string): Schema => {
  const schema = described.webhooks[webhook]?.post.requestBody.content["application/json"] as { schema?: Schema } | undefined;
  if (schema?.schema === undefined) throw new Error(`GitHub's webhooks description has no ${webhook}`);
  return schema.schema;
};

const REPOSITORY = ["installation.id", "repository.id", "repository.name", "repository.owner.login"];
const PULL = [...REPOSITORY, "pull_request.number", "pull_request.head.sha"];
const FIELDS_READ: Record<string, string[]> = {
  ...Object.fromEntries(["opened", "reopened", "edited", "ready-for-review", "converted-to-draft", "labeled", "unlabeled"].map((action) => [`pull-request-${action}`, [...PULL, "pull_request.state", "pull_request.base.ref"]])),
  "pull-request-synchronize": [...PULL, "pull_request.state", "pull_request.base.ref", "before"],
  "pull-request-closed": [...PULL, "pull_request.merged", "pull_request.merged_at", "pull_request.merged_by.id", "pull_request.merged_by.login", "pull_request.merge_commit_sha"],
  ...Object.fromEntries(["submitted", "edited", "dismissed"].map((action) => [`pull-request-review-${action}`, PULL])),
  "check-run-rerequested": [...REPOSITORY, "check_run.app.id", "check_run.name", "check_run.head_sha"],
  "check-suite-rerequested": [...REPOSITORY, "check_suite.app.id", "check_suite.head_sha"],
  push: [...REPOSITORY, "repository.default_branch", "ref"],
  "repository-renamed": [...REPOSITORY, "changes.repository.name.from"],
  "repository-edited": [...REPOSITORY, "changes.default_branch"],
  ...Object.fromEntries(["deleted", "transferred", "unarchived"].map((action) => [`repository-${action}`, REPOSITORY])),
  "installation-repositories-added": ["installation.id", "installation.account.login", "repositories_added.id", "repositories_added.name", "repositories_added.full_name"],
  "installation-repositories-removed": ["installation.id", "repositories_removed.id", "repositories_removed.name"],
  ...Object.fromEntries(["created", "edited", "deleted"].map((action) => [`label-${action}`, REPOSITORY])),
  ...Object.fromEntries(["created", "new-permissions-accepted", "unsuspend"].map((action) => [`installation-${action}`, ["installation.id"]])),
  "installation-target-renamed": ["installation.id"],
  ...Object.fromEntries(["added", "removed"].map((action) => [`membership-${action}`, ["installation.id", "scope", "member.login", "team.slug", "organization.login"]])),
  ...Object.fromEntries(["member-added", "member-removed"].map((action) => [`organization-${action}`, ["installation.id", "organization.login", "membership.user.login"]])),
  "organization-member-invited": ["installation.id", "organization.login", "user.login", "invitation.login"],
  ...Object.fromEntries(["added", "edited", "removed"].map((action) => [`member-${action}`, [...REPOSITORY, "member.login"]])),
  "team-created": ["installation.id", "organization.login", "team.slug"],
  "team-edited": ["installation.id", "organization.login", "team.slug", "changes.privacy", "changes.description", "changes.notification_setting", "changes.repository"],
  ...Object.fromEntries(["added-to-repository", "removed-from-repository"].map((action) => [`team-${action}`, [...REPOSITORY, "organization.login", "team.slug"]])),
  "team-add": [...REPOSITORY, "organization.login", "team.slug"],
};

test("every field the mapping reads is one GitHub's webhooks description declares for that event and action", () => {
  const undeclared = Object.entries(FIELDS_READ).flatMap(([webhook, paths]) => paths.filter((path) => !declares(payloadSchema(webhook), path)).map((path) => `${webhook}: ${path}`));
  expect(undeclared).toEqual([]);
  // The check can fail: a field GitHub does not send is not declared.
  expect(declares(payloadSchema("pull-request-opened"), "pull_request.head.commit")).toBe(false);
});
