import { describe, expect, test } from "bun:test";
import {
  checkRunEvent, checkSuiteEvent, INSTALLATION, installationEvent, installationRepositoriesEvent, labelEvent, mergeGroupEvent, organizationWideEvent, POLICY_REPO,
  pullRequestEvent, pushEvent, repositoryEvent, repositoryJson, reviewEvent, SHA_256, SHA_A, WEB,
} from "../../e2e/support/payloads.ts";
import { mapEvent, metricLabels } from "./event-mapping.ts";

const context = { organizationPolicyRepository: ".forge", checkName: "Service / approval", appId: 12 };
const map = (event: string, payload: Record<string, unknown>) => mapEvent(event, payload.action as string | undefined, payload, context);
const webRef = { installationId: INSTALLATION, repositoryId: WEB.id, owner: "acme", name: "web" };

describe("direct triggers", () => {
  for (const action of ["opened", "reopened", "synchronize", "edited", "ready_for_review", "converted_to_draft", "labeled", "unlabeled", "closed"]) {
    test(`pull_request ${action} is a direct trigger on the payload's head`, () => {
      expect(map("pull_request", pullRequestEvent(action))).toMatchObject({ kind: "direct", repository: webRef, pullNumber: 7, headSha: SHA_A });
    });
  }
  test("opened, reopened, synchronize and edited upsert the pull request's index row with its base ref; closed deletes it; other actions leave it", () => {
    const index = (action: string, payload: Record<string, unknown> = pullRequestEvent(action)) => (map("pull_request", payload) as { index?: unknown }).index;
    for (const action of ["opened", "reopened", "synchronize", "edited"]) expect(index(action)).toEqual({ kind: "upsert", baseRef: "main" });
    expect(index("closed")).toEqual({ kind: "delete" });
    for (const action of ["labeled", "ready_for_review"]) expect(index(action)).toBeUndefined();
    // An edit of a closed pull request does not put it back; an over-long base ref is not kept.
    const closed = pullRequestEvent("edited");
    closed.pull_request = { ...closed.pull_request, state: "closed" };
    expect(index("edited", closed)).toBeUndefined();
    const long = pullRequestEvent("edited");
    long.pull_request = { ...long.pull_request, base: { ...long.pull_request.base, ref: "b".repeat(1_025) } };
    expect(index("edited", long)).toEqual({ kind: "upsert", baseRef: null });
    expect((map("pull_request_review", reviewEvent("submitted")) as { index?: unknown }).index).toBeUndefined();
  });
  test("a merged closed delivery carries its merge: merge commit, who merged and when; an unmerged one, or another action, none", () => {
    const merged = (fields: Record<string, unknown>, action = "closed") => {
      const payload = pullRequestEvent(action);
      payload.pull_request = { ...payload.pull_request, state: "closed", ...fields } as typeof payload.pull_request;
      return (map("pull_request", payload) as { merge?: unknown }).merge;
    };
    const facts = { merged: true, merge_commit_sha: "e".repeat(40), merged_by: { login: "bob", id: 44, type: "User" }, merged_at: "2026-11-22T10:00:00Z" };
    const base = (pullRequestEvent("closed").pull_request as { base: { sha: string } }).base.sha;
    expect(merged(facts)).toEqual({ mergeCommitSha: "e".repeat(40), baseSha: base, mergedBy: { id: 44, login: "bob" }, mergedAtMs: Date.parse("2026-11-22T10:00:00Z") });
    expect(merged({ ...facts, merged: false })).toBeUndefined();
    expect(merged({ merged: false, merge_commit_sha: null, merged_by: null, merged_at: null })).toBeUndefined();
    expect(merged(facts, "edited")).toBeUndefined();
    // What is not of its documented form is not kept (a signed payload is still bounded in what it makes us store).
    expect(merged({ ...facts, merge_commit_sha: "not a sha", merged_by: { login: "x".repeat(65), id: 44 }, merged_at: "yesterday", base: { sha: "not a sha" } }))
      .toEqual({ mergeCommitSha: null, baseSha: null, mergedBy: null, mergedAtMs: null });
    expect(merged({ ...facts, merged_by: { login: "bob", id: -1 }, merged_at: "2".repeat(41) })).toMatchObject({ mergedBy: null, mergedAtMs: null });
  });
  test("a synchronize names the head it left (before), which must be a commit ID", () => {
    const moved = { ...pullRequestEvent("synchronize"), before: "c".repeat(40), after: SHA_A };
    expect(map("pull_request", moved)).toMatchObject({ kind: "direct", headSha: SHA_A, previousHead: "c".repeat(40) });
    expect((map("pull_request", { ...moved, before: SHA_A }) as { previousHead?: string }).previousHead).toBeUndefined();
    expect(map("pull_request", { ...moved, before: "not-a-sha" })).toMatchObject({ kind: "invalid" });
    expect((map("pull_request", { ...pullRequestEvent("opened"), before: "c".repeat(40) }) as { previousHead?: string }).previousHead).toBeUndefined();
  });
  for (const action of ["submitted", "edited", "dismissed"]) {
    test(`pull_request_review ${action} is a direct trigger`, () => {
      expect(map("pull_request_review", reviewEvent(action))).toMatchObject({ kind: "direct", pullNumber: 7, headSha: SHA_A });
    });
  }
  test("a 64-character SHA-256 head is accepted", () => {
    expect(map("pull_request", pullRequestEvent("opened", { headSha: SHA_256 }))).toMatchObject({ kind: "direct", headSha: SHA_256 });
  });
  test("pull_request actions outside the table are unmapped", () => {
    for (const action of ["assigned", "review_requested", "auto_merge_enabled", "milestoned"]) expect(map("pull_request", pullRequestEvent(action)).kind).toBe("unmapped");
  });
  test("a rerequest of our check run maps by head alone", () => {
    expect(map("check_run", checkRunEvent({ appId: 12, name: "Service / approval" }))).toEqual({ kind: "direct", repository: webRef, pullNumber: null, headSha: SHA_A });
    expect(map("check_suite", checkSuiteEvent({ appId: 12 }))).toMatchObject({ kind: "direct", pullNumber: null, headSha: SHA_A });
  });
  test("a rerequest of another App's check or another check name is unmapped", () => {
    expect(map("check_run", checkRunEvent({ appId: 99, name: "Service / approval" })).kind).toBe("unmapped");
    expect(map("check_run", checkRunEvent({ appId: 12, name: "CI / build" })).kind).toBe("unmapped");
    expect(map("check_suite", checkSuiteEvent({ appId: 99 })).kind).toBe("unmapped");
    expect(mapEvent("check_run", "rerequested", checkRunEvent({ appId: 12, name: "Service / approval" }), { ...context, appId: null }).kind).toBe("unmapped");
  });
  test("pull-request work for the organization policy repository is unmapped, even with a malformed head", () => {
    expect(map("pull_request", pullRequestEvent("opened", { repo: POLICY_REPO })).kind).toBe("unmapped");
    expect(map("pull_request", pullRequestEvent("opened", { repo: POLICY_REPO, headSha: "nope" })).kind).toBe("unmapped");
    expect(map("pull_request_review", reviewEvent("submitted", { repo: { ...POLICY_REPO, name: ".Forge" } })).kind).toBe("unmapped");
  });
});

describe("payload validation of mapped events", () => {
  const bad: Array<[string, string, Record<string, unknown>]> = [
    ["uppercase head", "pull_request", pullRequestEvent("opened", { headSha: "A".repeat(40) })],
    ["39-character head", "pull_request", pullRequestEvent("opened", { headSha: "a".repeat(39) })],
    ["41-character head", "pull_request", pullRequestEvent("opened", { headSha: "a".repeat(41) })],
    ["non-hex head", "pull_request", pullRequestEvent("opened", { headSha: "g".repeat(40) })],
    ["missing head", "pull_request", { ...pullRequestEvent("opened"), pull_request: { number: 7 } }],
    ["missing installation", "pull_request", { ...pullRequestEvent("opened"), installation: undefined }],
    ["string installation id", "pull_request", { ...pullRequestEvent("opened"), installation: { id: "77" } }],
    ["zero pull number", "pull_request", { ...pullRequestEvent("opened"), pull_request: { ...pullRequestEvent("opened").pull_request, number: 0 } }],
    ["missing repository", "pull_request_review", { ...reviewEvent("submitted"), repository: undefined }],
    ["malformed check_run head", "check_run", checkRunEvent({ appId: 12, name: "Service / approval", headSha: "xyz" })],
    ["push without ref", "push", { ...pushEvent(), ref: 5 }],
  ];
  for (const [name, event, payload] of bad) {
    test(`${name} is invalid`, () => expect(map(event, payload).kind).toBe("invalid"));
  }
});

describe("base-ref and authority work", () => {
  test("a push to a target repository branch is base-ref work", () => {
    expect(map("push", pushEvent({ ref: "refs/heads/release/1.x" }))).toEqual({ kind: "base_ref", repository: webRef, baseRef: "release/1.x" });
  });
  test("a tag push is unmapped", () => expect(map("push", pushEvent({ ref: "refs/tags/v1" })).kind).toBe("unmapped"));
  test("a push to the policy repository's default branch is installation-wide", () => {
    expect(map("push", pushEvent({ repo: POLICY_REPO, ref: "refs/heads/main" }))).toEqual({ kind: "authority", installationId: INSTALLATION, scope: { kind: "installation" } });
  });
  test("a push to another branch of the policy repository is unmapped", () => {
    expect(map("push", pushEvent({ repo: POLICY_REPO, ref: "refs/heads/draft" })).kind).toBe("unmapped");
  });
  for (const action of ["deleted", "renamed", "transferred"]) {
    test(`policy repository ${action} is installation-wide`, () => expect(map("repository", repositoryEvent(action, { repo: POLICY_REPO }))).toMatchObject({ kind: "authority", scope: { kind: "installation" } }));
  }
  test("a rename away from the policy repository name is installation-wide", () => {
    const event = repositoryEvent("renamed", { repo: { ...POLICY_REPO, name: "old-policy" }, changes: { repository: { name: { from: ".forge" } } } });
    expect(map("repository", event)).toMatchObject({ kind: "authority" });
  });
  test("a default-branch change of the policy repository is installation-wide; another edit is not", () => {
    expect(map("repository", repositoryEvent("edited", { repo: POLICY_REPO, changes: { default_branch: { from: "master" } } })).kind).toBe("authority");
    expect(map("repository", repositoryEvent("edited", { repo: POLICY_REPO, changes: { description: { from: "" } } })).kind).toBe("unmapped");
  });
  for (const action of ["renamed", "transferred", "unarchived"]) {
    test(`target repository ${action} is installation-wide`, () => expect(map("repository", repositoryEvent(action)).kind).toBe("authority"));
  }
  test("target repository archived or deleted is unmapped", () => {
    expect(map("repository", repositoryEvent("archived")).kind).toBe("unmapped");
    expect(map("repository", repositoryEvent("deleted")).kind).toBe("unmapped");
  });
  test("removing the policy repository from the App's selection is installation-wide", () => {
    expect(map("installation_repositories", installationRepositoriesEvent("removed", [POLICY_REPO]))).toMatchObject({ kind: "authority", scope: { kind: "installation" } });
  });
  test("missing or malformed repositories_removed is treated as possible policy-source loss", () => {
    for (const removed of [undefined, null, "web", [{ id: "x" }], [null], [{ id: 5 }]]) {
      const payload = { ...installationRepositoriesEvent("removed", []), repositories_removed: removed };
      expect(map("installation_repositories", payload)).toMatchObject({ kind: "authority", scope: { kind: "installation" } });
    }
  });
  test("a well-formed removal of ordinary target repositories is acknowledged without work", () => {
    expect(map("installation_repositories", installationRepositoriesEvent("removed", [WEB])).kind).toBe("unmapped");
  });
  test("added target repositories are repository-scoped fan-out; the policy repository among them makes it installation-wide", () => {
    expect(map("installation_repositories", installationRepositoriesEvent("added", [WEB]))).toEqual({ kind: "authority", installationId: INSTALLATION, scope: { kind: "repositories", repositories: [webRef] } });
    expect(map("installation_repositories", installationRepositoriesEvent("added", [WEB, POLICY_REPO]))).toMatchObject({ scope: { kind: "installation" } });
  });
  for (const action of ["created", "edited", "deleted"]) {
    test(`label ${action} is repository-scoped fan-out`, () => expect(map("label", labelEvent(action))).toEqual({ kind: "authority", installationId: INSTALLATION, scope: { kind: "repositories", repositories: [webRef] } }));
  }
  // Payloads that do not pin down whom they are about stay installation-wide and unscoped (every open pull request).
  for (const [event, action, payload] of [
    ["organization", "member_added", organizationWideEvent("organization", "member_added")], // no membership object
    ["organization", "renamed", { ...organizationWideEvent("organization", "renamed"), membership: { user: { login: "dave" } } }],
    ["membership", "removed", { ...organizationWideEvent("membership", "removed"), scope: "organization" }],
    ["membership", "added", { ...organizationWideEvent("membership", "added"), member: { login: "dave\nteam:acme/core" } }],
    ["member", "added", { ...organizationWideEvent("member", "added"), repository: { id: "1001", name: "web" } }],
    ["member", "added", { ...organizationWideEvent("member", "added"), repository: { ...repositoryJson(WEB), name: ".forge" } }],
    ["team", "edited", organizationWideEvent("team", "edited")], // no changes named
    ["team", "edited", { ...organizationWideEvent("team", "edited"), changes: { name: { from: "old" } } }],
    ["team", "edited", { ...organizationWideEvent("team", "edited"), changes: { parent_team: { from: null } } }],
    ["team", "deleted", organizationWideEvent("team", "deleted")],
    ["team_add", "added", organizationWideEvent("team_add", "added")], // no repository
    ["installation_target", "renamed", organizationWideEvent("installation_target", "renamed")],
  ] as const) {
    test(`${event} ${action} that does not pin down its subjects is installation-wide`, () =>
      expect(map(event, payload as Record<string, unknown>)).toEqual({ kind: "authority", installationId: INSTALLATION, scope: { kind: "installation" } }));
  }
  test("a team membership change is scoped to the member and the team (lower case)", () => {
    const payload = { ...organizationWideEvent("membership", "added"), member: { login: "Dave" }, team: { slug: "Core" } };
    expect(map("membership", payload)).toEqual({ kind: "authority", installationId: INSTALLATION, scope: { kind: "installation", subjects: "team:acme/core\nuser:dave\n" } });
  });
  test("an organization membership change is scoped to the member", () => {
    const payload = { ...organizationWideEvent("organization", "member_removed"), membership: { state: "inactive", user: { login: "dave" } } };
    expect(map("organization", payload)).toEqual({ kind: "authority", installationId: INSTALLATION, scope: { kind: "installation", subjects: "user:dave\n" } });
  });
  test("an organization invitation is scoped to the invited user, named as GitHub names it (user, or the invitation's login)", () => {
    const invited = organizationWideEvent("organization", "member_invited");
    expect(map("organization", { ...invited, user: { login: "Dave" }, invitation: { login: "Dave" } })).toEqual({ kind: "authority", installationId: INSTALLATION, scope: { kind: "installation", subjects: "user:dave\n" } });
    expect(map("organization", { ...invited, user: null, invitation: { login: "dave" } })).toMatchObject({ scope: { kind: "installation", subjects: "user:dave\n" } });
    // An invitation by e-mail names no account, and a payload whose two names disagree pins down no one: installation-wide.
    expect(map("organization", { ...invited, user: null, invitation: { login: null, email: "x@example.com" } })).toEqual({ kind: "authority", installationId: INSTALLATION, scope: { kind: "installation" } });
    expect(map("organization", { ...invited, user: { login: "dave" }, invitation: { login: "erin" } })).toEqual({ kind: "authority", installationId: INSTALLATION, scope: { kind: "installation" } });
  });
  test("a collaborator change is scoped to the member on that repository", () => {
    expect(map("member", organizationWideEvent("member", "edited"))).toEqual({ kind: "authority", installationId: INSTALLATION, scope: { kind: "repositories", repositories: [webRef], subjects: "user:dave\n" } });
  });
  test("a team created, or its privacy or description changed, is scoped to the team", () => {
    expect(map("team", organizationWideEvent("team", "created"))).toMatchObject({ scope: { kind: "installation", subjects: "team:acme/core\n" } });
    const edited = { ...organizationWideEvent("team", "edited"), changes: { privacy: { from: "secret" }, description: { from: "x" } } };
    expect(map("team", edited)).toMatchObject({ scope: { kind: "installation", subjects: "team:acme/core\n" } });
  });
  test("a team's repository access changed re-evaluates that whole repository (child teams inherit it)", () => {
    const withRepository = (event: string, action: string, extra: Record<string, unknown> = {}) => ({ ...organizationWideEvent(event, action), repository: repositoryJson(WEB), ...extra });
    for (const [event, action, extra] of [["team", "added_to_repository", {}], ["team", "removed_from_repository", {}], ["team", "edited", { changes: { repository: { permissions: { from: { push: false } } } } }], ["team_add", "added", {}]] as const) {
      expect(map(event, withRepository(event, action, extra))).toEqual({ kind: "authority", installationId: INSTALLATION, scope: { kind: "repositories", repositories: [webRef] } });
    }
  });
  for (const action of ["created", "new_permissions_accepted", "unsuspend"]) {
    test(`installation ${action} is installation-wide`, () => expect(map("installation", installationEvent(action)).kind).toBe("authority"));
  }
  test("installation deleted or suspend is unmapped", () => {
    expect(map("installation", installationEvent("deleted")).kind).toBe("unmapped");
    expect(map("installation", installationEvent("suspend")).kind).toBe("unmapped");
  });
  test("ping and unknown events are unmapped", () => {
    expect(map("ping", { zen: "hi", hook_id: 1 }).kind).toBe("unmapped");
    expect(map("star", { action: "created" }).kind).toBe("unmapped");
  });
});

describe("metric labels", () => {
  test("labels come from the mapping table; anything else is other, no action is none", () => {
    expect(metricLabels("pull_request", "opened")).toEqual({ event: "pull_request", action: "opened" });
    expect(metricLabels("acme/secret-repo", "x")).toEqual({ event: "other", action: "other" });
    expect(metricLabels("ping", undefined)).toEqual({ event: "other", action: "none" });
  });
});

describe("merge groups", () => {
  const group = { headSha: SHA_A, baseSha: "b".repeat(40), baseRef: "main", headRef: `refs/heads/gh-readonly-queue/main/pr-7-${"b".repeat(40)}` };
  test("checks_requested is merge-group work keyed by the group's head, on the branch its base ref names", () => {
    expect(map("merge_group", mergeGroupEvent("checks_requested"))).toEqual({ kind: "merge_group", repository: webRef, action: "checks_requested", group, reason: null });
  });
  test("destroyed cancels it, with the reason the delivery gives", () => {
    expect(map("merge_group", mergeGroupEvent("destroyed", { reason: "dequeued" }))).toEqual({ kind: "merge_group", repository: webRef, action: "destroyed", group, reason: "dequeued" });
    const unexplained = mergeGroupEvent("destroyed") as Record<string, unknown>;
    delete unexplained.reason;
    expect(map("merge_group", unexplained)).toMatchObject({ kind: "merge_group", action: "destroyed", reason: null });
  });
  test("a 64-character SHA-256 group head and a branch with slashes are accepted", () => {
    expect(map("merge_group", mergeGroupEvent("checks_requested", { headSha: SHA_256, baseRef: "refs/heads/release/2.x" }))).toMatchObject({ group: { headSha: SHA_256, baseRef: "release/2.x" } });
  });
  test("other actions and the organization policy repository are unmapped", () => {
    expect(map("merge_group", { ...mergeGroupEvent("checks_requested"), action: "created" })).toEqual({ kind: "unmapped" });
    expect(map("merge_group", mergeGroupEvent("checks_requested", { repo: POLICY_REPO }))).toEqual({ kind: "unmapped" });
  });
  test("a group without a commit ID, a parent commit, a branch ref or with an over-long ref is invalid", () => {
    const broken = (change: Record<string, unknown>) => {
      const payload = mergeGroupEvent("checks_requested");
      return map("merge_group", { ...payload, merge_group: { ...payload.merge_group, ...change } });
    };
    expect(broken({ head_sha: "ABC" })).toMatchObject({ kind: "invalid", problem: expect.stringContaining("merge_group.head_sha") });
    expect(broken({ base_sha: undefined })).toMatchObject({ kind: "invalid", problem: expect.stringContaining("merge_group.base_sha") });
    expect(broken({ base_ref: "main" })).toMatchObject({ kind: "invalid", problem: expect.stringContaining("refs/heads/") });
    expect(broken({ base_ref: "refs/heads/" })).toMatchObject({ kind: "invalid" });
    expect(broken({ head_ref: "r".repeat(1_025) })).toMatchObject({ kind: "invalid", problem: expect.stringContaining("merge_group.head_ref") });
    expect(map("merge_group", { ...mergeGroupEvent("checks_requested"), merge_group: null })).toMatchObject({ kind: "invalid" });
    expect(map("merge_group", { ...mergeGroupEvent("checks_requested"), installation: undefined })).toMatchObject({ kind: "invalid" });
  });
  test("merge_group and its actions are metric labels of their own", () => {
    expect(metricLabels("merge_group", "checks_requested")).toEqual({ event: "merge_group", action: "checks_requested" });
    expect(metricLabels("merge_group", "destroyed")).toEqual({ event: "merge_group", action: "destroyed" });
  });
});
