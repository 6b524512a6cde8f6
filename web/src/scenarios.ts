// Built-in scenarios that teach the rules (issue 10 item 6). Each starts from one base state and tweaks it (STYLE 11), and
// says which conclusion and check title the engine must reach; the unit tests and the Playwright suite hold them to it.
import type { ChangedFile, DirectoryFacts, Evidence, Lookup, Review } from "../../server/evaluation/index.ts";
import { DEFAULT_SETTINGS, foundFile, STATE_VERSION, type PlaygroundState } from "./state.ts";

export const HEAD = "4f2c9e1a7b3d5f60819a2b3c4d5e6f708192a3b4";
export const OLD_HEAD = "9a8b7c6d5e4f30211203f4e5d6c7b8a998877665";
const BASE = "1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e";
export const APP_SLUG = "docs-review-bot";
const APP_ID = 12345;
const BOT_ID = 9001;
const POLICY_PATH = DEFAULT_SETTINGS.policyPath;

export const BASE_CODEOWNERS = `# Everything not matched below belongs to the core team.
*                      @acme/core

# Application code: either Alice or Bob.
/src/                  @alice @bob

# Documentation: the docs team.
/docs/                 @acme/docs

# Deployment: the operations team.
/deploy/               @acme/ops

# Generated files: nobody needs to approve.
/generated/
`;

export const BASE_ORGANIZATION_POLICY = `schema_version = 1

# Only the organization can trust an App.
[[trusted_apps]]
slug = "${APP_SLUG}"
app_id = ${APP_ID}

# No App may ever stand in for people on these paths.
[guardrails]
non_delegable_paths = ["deploy/**", "/Makefile"]
`;

export const BASE_REPOSITORY_POLICY = `schema_version = 1
enabled = true
required_approvals = 1

# The docs bot may approve documentation for the docs team.
[[delegations]]
app = "${APP_SLUG}"
paths = ["docs/**"]
`;

const ok = <T>(value: T): Lookup<T> => ({ kind: "found", value });
const active = ok({ state: "active" });

export const USERS = {
  alice: { id: 101, login: "alice", type: "User" },
  bob: { id: 102, login: "bob", type: "User" },
  erin: { id: 105, login: "erin", type: "User" },
  olga: { id: 106, login: "olga", type: "User" },
  sam: { id: 107, login: "sam", type: "User" },
  pat: { id: 100, login: "pat", type: "User" },
  bot: { id: BOT_ID, login: `${APP_SLUG}[bot]`, type: "Bot" },
} as const;
const AUTHOR = { id: 100, login: "pat" };

function baseDirectory(): DirectoryFacts {
  return {
    collaborators: { alice: ok({ permission: "write" }), bob: ok({ permission: "admin" }), erin: ok({ permission: "write" }), olga: ok({ permission: "maintain" }), pat: ok({ permission: "write" }) },
    organizationMemberships: { alice: active, bob: active, erin: active, olga: active, pat: active },
    teams: {
      "acme/core": { team: ok({ privacy: "closed" }), repository: ok({ push: true }), memberships: { bob: active, alice: { kind: "not_found" }, erin: { kind: "not_found" }, olga: { kind: "not_found" } } },
      "acme/docs": { team: ok({ privacy: "closed" }), repository: ok({ push: true }), memberships: { erin: active, alice: { kind: "not_found" }, bob: { kind: "not_found" }, olga: { kind: "not_found" } } },
      "acme/ops": { team: ok({ privacy: "closed" }), repository: ok({ push: true }), memberships: { olga: active, alice: { kind: "not_found" }, bob: { kind: "not_found" }, erin: { kind: "not_found" } } },
    },
    apps: { [APP_SLUG]: ok({ id: APP_ID, slug: APP_SLUG }) },
    botUsers: { [USERS.bot.login]: ok({ ...USERS.bot }) },
  };
}

let reviewId = 1;
const review = (user: { id: number; login: string; type: string }, state: string, commitId: string = HEAD): Review => ({ id: reviewId++, user: { ...user }, state, commitId });

// Break-glass (DESIGN 3.11): the organization lets its on-call team acme/sre override; sam is on call.
const BREAK_GLASS_ORGANIZATION_POLICY = `${BASE_ORGANIZATION_POLICY}
# Members of these teams may override the approval requirements in an emergency.
[break_glass]
teams = ["sre"]
min_reason_length = 20
`;
const breakGlass = (user: { id: number; login: string; type: string }, reason: string, state = "APPROVED", commitId: string = HEAD): Review => ({ ...review(user, state, commitId), bodyFirstLine: `break-glass: ${reason}` });

function onCall(evidence: Evidence): Evidence {
  const notFound = { kind: "not_found" } as const;
  const teams = evidence.directory.teams;
  // sam is in no owner team; only sam is in acme/sre.
  const outside = (team: string) => ({ ...teams[team]!, memberships: { ...teams[team]!.memberships, sam: notFound } });
  return {
    ...evidence,
    organizationPolicy: foundFile(POLICY_PATH, BREAK_GLASS_ORGANIZATION_POLICY),
    directory: {
      ...evidence.directory,
      teams: { "acme/core": outside("acme/core"), "acme/docs": outside("acme/docs"), "acme/ops": outside("acme/ops"), "acme/sre": { memberships: { sam: active, alice: notFound, bob: notFound, erin: notFound, olga: notFound, pat: active } } },
      // No review's body was edited after it was submitted (the forge's answer the service asks for before an override).
      reviewEdits: Object.fromEntries((evidence.reviews.complete ? evidence.reviews.items : []).map((r) => [String(r.id), { kind: "found", value: { lastEditedAt: null } }] as const)),
    },
  };
}

export function baseEvidence(): Evidence {
  return {
    evidenceVersion: 1,
    repository: { owner: "acme", name: "widgets", ownerType: "Organization" },
    pullRequest: { number: 42, headSha: HEAD, baseSha: BASE, baseRef: "main", author: { ...AUTHOR }, state: "open", draft: false, labels: [], changedFiles: 1 },
    files: { complete: true, items: [{ filename: "src/app.ts", status: "modified" }] },
    reviews: { complete: true, items: [] },
    codeowners: { ".forge/CODEOWNERS": { kind: "missing" }, CODEOWNERS: foundFile("CODEOWNERS", BASE_CODEOWNERS) },
    repositoryPolicy: foundFile(POLICY_PATH, BASE_REPOSITORY_POLICY),
    organizationPolicy: foundFile(POLICY_PATH, BASE_ORGANIZATION_POLICY),
    directory: baseDirectory(),
    sameHeadPullRequests: { complete: true, items: [{ number: 42, headSha: HEAD }] },
  };
}

function state(evidence: Evidence, allowInsecureChanges = false): PlaygroundState {
  return { version: STATE_VERSION, evidence, settings: { ...DEFAULT_SETTINGS, allowInsecureChanges } };
}

function files(evidence: Evidence, items: readonly (string | ChangedFile)[], changedFiles?: number): Evidence {
  const list = items.map((item): ChangedFile => (typeof item === "string" ? { filename: item, status: "modified" } : item));
  return { ...evidence, files: { complete: true, items: list }, pullRequest: { ...evidence.pullRequest, changedFiles: changedFiles ?? list.length } };
}

const reviews = (evidence: Evidence, ...items: Review[]): Evidence => ({ ...evidence, reviews: { complete: true, items } });

const delegating = (evidence: Evidence, paths: readonly string[]): Evidence => ({
  ...evidence,
  repositoryPolicy: foundFile(POLICY_PATH, BASE_REPOSITORY_POLICY.replace('paths = ["docs/**"]', `paths = [${paths.map((p) => JSON.stringify(p)).join(", ")}]`)),
});

export interface Scenario {
  readonly id: string;
  readonly title: string;
  /** The rule it teaches, one sentence. */
  readonly lesson: string;
  /** The check as the forge shows it: its verdict (a conclusion, or "in progress" when the worker leaves it so) and title. */
  readonly expected: { readonly verdict: "success" | "failure" | "in progress"; readonly title: string };
  readonly build: () => PlaygroundState;
}

export const SCENARIOS: readonly Scenario[] = [
  {
    id: "owner-approves-head",
    title: "An owner approves the head",
    lesson: "An approval counts when it is the owner's latest review and it was given on the current head commit.",
    expected: { verdict: "success", title: "All 1 owner set approved" },
    build: () => state(reviews(baseEvidence(), review(USERS.alice, "APPROVED"))),
  },
  {
    id: "older-head",
    title: "Approval of an older head",
    lesson: "A new commit makes earlier approvals stale: an approval of any other commit never counts.",
    expected: { verdict: "failure", title: "1 of 1 owner set not yet approved" },
    build: () => state(reviews(baseEvidence(), review(USERS.alice, "APPROVED", OLD_HEAD))),
  },
  {
    id: "two-owner-sets",
    title: "Two owner sets, one approved",
    lesson: "Paths are grouped by their exact owners, and every distinct owner set needs its own approvals.",
    expected: { verdict: "failure", title: "1 of 2 owner sets not yet approved" },
    build: () => state(reviews(files(baseEvidence(), ["src/app.ts", "docs/guide.md"]), review(USERS.alice, "APPROVED"))),
  },
  {
    id: "changes-requested",
    title: "Request changes blocks",
    lesson: "An eligible owner whose latest review requests changes blocks every owner set they belong to, whatever others approved.",
    expected: { verdict: "failure", title: "1 of 1 owner set not yet approved" },
    build: () => state(reviews(baseEvidence(), review(USERS.alice, "APPROVED"), review(USERS.bob, "CHANGES_REQUESTED"))),
  },
  {
    id: "app-docs",
    title: "App approval on a delegated docs path",
    lesson: "An App enrolled by the organization may stand in for the owners of paths the repository policy delegates to it.",
    expected: { verdict: "success", title: "All 1 owner set approved" },
    build: () => state(reviews(files(baseEvidence(), ["docs/guide.md"]), review(USERS.bot, "APPROVED"))),
  },
  {
    id: "app-workflows",
    title: "App approval on .forge/workflows/** refused",
    lesson: "Workflow and code-owner files are non-delegable: even a delegation that names them cannot let an App approve them.",
    expected: { verdict: "failure", title: "1 of 1 owner set not yet approved" },
    build: () => state(reviews(delegating(files(baseEvidence(), [".forge/workflows/ci.yml"]), ["docs/**", ".forge/workflows/**"]), review(USERS.bot, "APPROVED"))),
  },
  {
    id: "guardrail-insecure",
    title: "Organization guardrail survives the insecure switch",
    lesson: "SERVICE_ALLOW_INSECURE_CHANGES removes only the built-in non-delegable paths; the organization's guardrails still hold.",
    expected: { verdict: "failure", title: "1 of 1 owner set not yet approved" },
    build: () => state(reviews(delegating(files(baseEvidence(), ["deploy/prod.yml"]), ["docs/**", "deploy/**"]), review(USERS.bot, "APPROVED")), true),
  },
  {
    id: "rename-across-owners",
    title: "Rename across owners",
    lesson: "A rename changes two paths: the owners of the old path and of the new path must both approve.",
    expected: { verdict: "failure", title: "1 of 2 owner sets not yet approved" },
    build: () => state(reviews(files(baseEvidence(), [{ filename: "docs/architecture.md", status: "renamed", previousFilename: "src/ARCHITECTURE.md" }]), review(USERS.alice, "APPROVED"))),
  },
  {
    id: "shared-head",
    title: "Shared head",
    lesson: "When another open pull request has the same head commit, approvals could be reused across them: never success. The check stays in progress until one of them closes or moves.",
    expected: { verdict: "in progress", title: "Waiting: this commit is also the head of #43" },
    build: () => {
      const evidence = reviews(baseEvidence(), review(USERS.alice, "APPROVED"));
      return state({ ...evidence, sameHeadPullRequests: { complete: true, items: [{ number: 42, headSha: HEAD }, { number: 43, headSha: HEAD }] } });
    },
  },
  {
    id: "three-thousand-files",
    title: "3,000 files",
    lesson: "The forge lists at most 3,000 files, so at 3,000 changed files completeness cannot be proved: split the pull request.",
    expected: { verdict: "failure", title: "Too many changed files: split the pull request" },
    build: () => state(reviews(files(baseEvidence(), ["src/app.ts", "docs/guide.md"], 3000), review(USERS.alice, "APPROVED"), review(USERS.erin, "APPROVED"))),
  },
  {
    id: "break-glass",
    title: "Break-glass override",
    lesson: "In an emergency an active member of a team the organization lists may override: an approval of the head whose first line is 'break-glass: <reason>'.",
    expected: { verdict: "success", title: "Approved by break-glass override" },
    build: () => state(onCall(reviews(baseEvidence(), breakGlass(USERS.sam, "checkout is down; reverting the bad flag (INC-1234)")))),
  },
  {
    id: "break-glass-refused",
    title: "Break-glass requests refused",
    lesson: "An override must be an approval of the head by a listed team's member other than the author, with a long enough reason; anything else is refused and says why.",
    expected: { verdict: "failure", title: "1 of 1 owner set not yet approved" },
    build: () =>
      state(onCall(reviews(
        baseEvidence(),
        breakGlass(USERS.sam, "checkout is down; reverting the bad flag (INC-1234)", "APPROVED", OLD_HEAD),
        breakGlass(USERS.erin, "urgent fix"),
        breakGlass(USERS.pat, "my own change, trust me, it is urgent"),
        breakGlass(USERS.olga, "deploys are blocked and I am on call today"),
        breakGlass(USERS.bob, "the login page is down for every customer", "COMMENTED"),
      ))),
  },
];

export const DEFAULT_SCENARIO = SCENARIOS[0]!;
