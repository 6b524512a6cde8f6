// One base evidence fixture and small tweaks (STYLE 11: start from one base fixture and tweak it). Used by tests, the
// benchmark and as a sample for the playground. The base case: one changed file owned by @alice, no reviews yet.
import { DEFAULT_EVALUATION_SETTINGS, type ChangedFile, type DirectoryFacts, type Evidence, type FileRead, type Lookup, type Review, type TeamFacts } from "./evidence.ts";
import { NO_DIRECTORY_FACTS, planLookups } from "./plan-lookups.ts";

export const HEAD = "a".repeat(40);
export const OLD_HEAD = "b".repeat(40);
export const BASE = "c".repeat(40);
export const AUTHOR = { id: 1, login: "author" } as const;
export const APP_SLUG = "docs-review-bot";
export const APP_ID = 12345;
export const BOT = { id: 9001, login: `${APP_SLUG}[bot]`, type: "Bot" } as const;

export const USERS = {
  alice: { id: 10, login: "alice", type: "User" },
  bob: { id: 11, login: "bob", type: "User" },
  carol: { id: 12, login: "carol", type: "User" },
  dave: { id: 13, login: "dave", type: "User" },
  erin: { id: 14, login: "erin", type: "User" },
  mallory: { id: 15, login: "mallory", type: "User" },
  author: { id: 1, login: "author", type: "User" },
} as const;

export const BASE_CODEOWNERS = `# base fixture
* @acme/core
/src/ @alice
/docs/ @acme/docs
/vendor/
`;

export const found = (path: string, text: string): FileRead => ({ kind: "found", path, text, bytes: new TextEncoder().encode(text).length });
const ok = <T>(value: T): Lookup<T> => ({ kind: "found", value });

export const BASE_ORGANIZATION_POLICY = `schema_version = 1
[[trusted_apps]]
slug = "${APP_SLUG}"
app_id = ${APP_ID}
[guardrails]
non_delegable_paths = ["deploy/**", "/Makefile"]
`;

export const ENABLED_POLICY = `schema_version = 1\nenabled = true\n`;

export function baseDirectory(): DirectoryFacts {
  return {
    collaborators: {
      alice: ok({ permission: "write" }),
      bob: ok({ permission: "admin" }),
      carol: ok({ permission: "read" }),
      dave: ok({ permission: "maintain" }),
      erin: ok({ permission: "write" }),
      mallory: ok({ permission: "write" }),
      author: ok({ permission: "write" }),
    },
    organizationMemberships: {
      alice: ok({ state: "active" }),
      bob: ok({ state: "active" }),
      carol: ok({ state: "active" }),
      dave: ok({ state: "pending" }),
      erin: ok({ state: "active" }),
      mallory: ok({ state: "active" }),
      author: ok({ state: "active" }),
    },
    teams: {
      "acme/core": {
        team: ok({ privacy: "closed" }),
        repository: ok({ push: true }),
        memberships: { bob: ok({ state: "active" }), dave: ok({ state: "active" }), alice: { kind: "not_found" }, carol: { kind: "not_found" }, erin: { kind: "not_found" }, mallory: { kind: "not_found" }, author: ok({ state: "active" }) },
      },
      "acme/docs": {
        team: ok({ privacy: "closed" }),
        repository: ok({ push: true }),
        memberships: { erin: ok({ state: "active" }), alice: { kind: "not_found" }, bob: { kind: "not_found" }, carol: { kind: "not_found" }, dave: { kind: "not_found" }, mallory: { kind: "not_found" }, author: { kind: "not_found" } },
      },
    },
    apps: { [APP_SLUG]: ok({ id: APP_ID, slug: APP_SLUG }) },
    botUsers: { [BOT.login]: ok({ ...BOT }) },
  };
}

export function baseEvidence(): Evidence {
  return {
    evidenceVersion: 1,
    repository: { owner: "acme", name: "widgets", ownerType: "Organization" },
    pullRequest: {
      number: 7,
      headSha: HEAD,
      baseSha: BASE,
      baseRef: "main",
      author: { ...AUTHOR },
      state: "open",
      draft: false,
      labels: [],
      changedFiles: 1,
    },
    files: { complete: true, items: [{ filename: "src/app.ts", status: "modified" }] },
    reviews: { complete: true, items: [] },
    codeowners: { ".forge/CODEOWNERS": { kind: "missing" }, CODEOWNERS: found("CODEOWNERS", BASE_CODEOWNERS) },
    repositoryPolicy: found(".forge/service-policy.toml", ENABLED_POLICY),
    organizationPolicy: found(".forge/service-policy.toml", BASE_ORGANIZATION_POLICY),
    directory: baseDirectory(),
    sameHeadPullRequests: { complete: true, items: [{ number: 7, headSha: HEAD }] },
  };
}

let nextReviewId = 1;

export function review(user: { id: number; login: string; type: string }, state: string, commitId: string | null = HEAD): Review {
  return { id: nextReviewId++, user: { ...user }, state, commitId };
}

/**
 * The evidence with every review answered as never edited (`lastEditedAt: null`), except those whose edits it already holds:
 * what the forge answers for reviews nobody touched after submitting them.
 */
export function unedited(evidence: Evidence): Evidence {
  const items = evidence.reviews.complete ? evidence.reviews.items : [];
  const never = Object.fromEntries(items.map((r) => [String(r.id), { kind: "found", value: { lastEditedAt: null } } as const]));
  return { ...evidence, directory: { ...evidence.directory, reviewEdits: { ...never, ...evidence.directory.reviewEdits } } };
}

/** The evidence with `review`'s body answered as edited at `at`. */
export function edited(evidence: Evidence, review: Pick<Review, "id">, at = "2026-11-28T12:00:00Z"): Evidence {
  return { ...evidence, directory: { ...evidence.directory, reviewEdits: { ...evidence.directory.reviewEdits, [String(review.id)]: { kind: "found", value: { lastEditedAt: at } } } } };
}

export const approve = (user: { id: number; login: string; type: string }, commitId: string | null = HEAD) => review(user, "APPROVED", commitId);

export function withFiles(evidence: Evidence, files: readonly (string | ChangedFile)[]): Evidence {
  const items = files.map((file): ChangedFile => (typeof file === "string" ? { filename: file, status: "modified" } : file));
  return { ...evidence, files: { complete: true, items }, pullRequest: { ...evidence.pullRequest, changedFiles: items.length } };
}

export const withReviews = (evidence: Evidence, ...reviews: Review[]): Evidence => ({ ...evidence, reviews: { complete: true, items: reviews } });

export const withCodeowners = (evidence: Evidence, text: string): Evidence => ({
  ...evidence,
  codeowners: { ".forge/CODEOWNERS": { kind: "missing" }, CODEOWNERS: found("CODEOWNERS", text) },
});

export const withRepositoryPolicy = (evidence: Evidence, text: string): Evidence => ({
  ...evidence,
  repositoryPolicy: found(".forge/service-policy.toml", text),
});

export const withOrganizationPolicy = (evidence: Evidence, text: string): Evidence => ({
  ...evidence,
  organizationPolicy: found(".forge/service-policy.toml", text),
});

/**
 * Adversarial path matching (issue 16 item 2): rule `i` has five `**`, is filed in the rule index under `test` (so it is a
 * candidate for every path below) and owns `*.r<i>`; a path is sixty directories of `src/test/lib/main`, where each `**` can
 * resume almost anywhere. 100 such rules cost about 57,000 matching steps per path that none of them owns.
 */
export const fiveStarRule = (i: number): string => `/**/src/**/test/**/lib/**/main/**/*.r${i}`;
export const sixtyDeepPath = (file: string): string => "src/test/lib/main/".repeat(15) + file;

/** Repository policy delegating `paths` to the fixture App. */
export function delegationPolicy(paths: readonly string[], extra = "", requiredApprovals = 1): string {
  return `schema_version = 1
enabled = true
required_approvals = ${requiredApprovals}
[[delegations]]
app = "${APP_SLUG}"
paths = [${paths.map((path) => JSON.stringify(path)).join(", ")}]
${extra}`;
}

/**
 * Keeps only the directory facts the plan names: what a fetcher following the plan would have, round after round (each
 * round planned with the facts of the rounds before), until the plan asks for nothing more.
 */
export function directoryFromPlan(evidence: Evidence): Evidence {
  const full = evidence.directory;
  // A fact the fixture lacks stays absent (as a lookup of it would be incomplete); the rounds end when nothing new is added.
  const pick = <T>(record: Readonly<Record<string, T>>, keys: readonly string[]) => Object.fromEntries(keys.filter((key) => Object.hasOwn(record, key)).map((key) => [key, record[key]!]));
  let known: DirectoryFacts = NO_DIRECTORY_FACTS;
  for (;;) {
    const plan = planLookups(evidence, DEFAULT_EVALUATION_SETTINGS, known);
    const before = JSON.stringify(known);
    known = {
      collaborators: { ...known.collaborators, ...pick(full.collaborators, plan.collaborators) },
      organizationMemberships: { ...known.organizationMemberships, ...pick(full.organizationMemberships, plan.organizationMemberships) },
      teams: {
        ...known.teams,
        ...Object.fromEntries(plan.teams.filter(({ team }) => Object.hasOwn(full.teams, team)).map(({ team, members, info }) => {
          // The team itself only when asked for (once a reviewer is an active member), as the forge fetcher does.
          const source: Partial<TeamFacts> = info ? full.teams[team]! : (known.teams[team] ?? {});
          const itself = { ...(source.team ? { team: source.team } : {}), ...(source.repository ? { repository: source.repository } : {}) };
          return [team, { ...itself, memberships: { ...known.teams[team]?.memberships, ...pick(full.teams[team]!.memberships, members) } }];
        })),
      },
      apps: { ...known.apps, ...pick(full.apps, plan.apps) },
      botUsers: { ...known.botUsers, ...pick(full.botUsers, plan.botUsers) },
      ...(plan.reviewEdits || known.reviewEdits
        ? { reviewEdits: { ...known.reviewEdits, ...pick(full.reviewEdits ?? {}, (plan.reviewEdits ?? []).map((asked) => String(asked.reviewId))) } }
        : {}),
    };
    if (JSON.stringify(known) === before) return { ...evidence, directory: known };
  }
}
