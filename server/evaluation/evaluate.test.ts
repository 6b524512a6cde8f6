import { describe, expect, test } from "bun:test";
import { DEFAULT_EVALUATION_SETTINGS, type Evidence, type EvaluationSettings } from "./evidence.ts";
import { evaluate } from "./evaluate.ts";
import { planLookups } from "./plan-lookups.ts";
import { plain, type Decision } from "./decision.ts";
import {
  APP_SLUG,
  BOT,
  HEAD,
  OLD_HEAD,
  USERS,
  approve,
  baseEvidence,
  delegationPolicy,
  found,
  review,
  withCodeowners,
  withFiles,
  withOrganizationPolicy,
  withRepositoryPolicy,
  withReviews,
} from "./evidence-fixture.ts";

const settings = DEFAULT_EVALUATION_SETTINGS;
const run = (evidence: Evidence, overrides: Partial<EvaluationSettings> = {}) => evaluate(evidence, { ...settings, ...overrides });
const outcome = (decision: Decision) => (decision.kind === "conclusive" ? decision.conclusion : decision.kind);
const codes = (decision: Decision) => decision.reasons.map((reason) => reason.code);
const alice = USERS.alice;

describe("outcomes", () => {
  test("an owned path without approval fails", () => {
    const decision = run(baseEvidence());
    expect(outcome(decision)).toBe("failure");
    expect(decision.ownerSets.map((set) => set.status)).toEqual(["missing"]);
    expect(decision.suggestedReviewers).toEqual(["@alice"]);
  });
  test("an eligible owner's approval of the current head succeeds", () => {
    expect(outcome(run(withReviews(baseEvidence(), approve(alice))))).toBe("success");
  });
  test("a repository without a policy file is not enabled", () => {
    const decision = run({ ...baseEvidence(), repositoryPolicy: { kind: "missing" } });
    expect(decision.kind).toBe("not_enabled");
    expect(decision.conclusion).toBeNull();
  });
  test("enabled = false is not enabled, even when other fields are invalid", () => {
    expect(run(withRepositoryPolicy(baseEvidence(), "schema_version = 1\nenabled = false\n")).kind).toBe("not_enabled");
    expect(run(withRepositoryPolicy(baseEvidence(), "schema_version = 9\nenabled = false\nbogus = 1\n")).kind).toBe("not_enabled");
  });
  test("a policy that does not say enabled = true is not enabled", () => {
    expect(run(withRepositoryPolicy(baseEvidence(), "schema_version = 1\n")).kind).toBe("not_enabled");
  });
  test("a transient failure reading the repository policy retries", () => {
    const decision = run({ ...baseEvidence(), repositoryPolicy: { kind: "incomplete", cause: "transient", detail: "502" } });
    expect(decision.kind).toBe("retry");
  });
  test("transient incompleteness retries instead of publishing", () => {
    const decision = run({ ...baseEvidence(), reviews: { complete: false, cause: "transient", detail: "timeout" } });
    expect(decision.kind).toBe("retry");
    expect(decision.reasons.every((reason) => reason.transient)).toBe(true);
  });
  test("a permanent fail-closed reason publishes failure even when something else is transient", () => {
    const evidence = { ...withCodeowners(baseEvidence(), "!x @a\n"), reviews: { complete: false as const, cause: "transient" as const, detail: "timeout" } };
    const decision = run(evidence);
    expect(outcome(decision)).toBe("failure");
    expect(codes(decision)).toContain("codeowners_invalid");
  });
});

describe("rule 1: the code-owners file", () => {
  test(".forge/CODEOWNERS takes precedence over CODEOWNERS and docs/CODEOWNERS", () => {
    const evidence: Evidence = {
      ...baseEvidence(),
      codeowners: { ".forge/CODEOWNERS": found(".forge/CODEOWNERS", "* @bob\n"), CODEOWNERS: found("CODEOWNERS", "* @alice\n") },
    };
    const decision = run(evidence);
    expect(decision.codeownersPath).toBe(".forge/CODEOWNERS");
    expect(decision.ownerSets[0]!.owners).toEqual(["@bob"]);
  });
  test("CODEOWNERS at the root comes before docs/CODEOWNERS", () => {
    const evidence: Evidence = {
      ...baseEvidence(),
      codeowners: { ".forge/CODEOWNERS": { kind: "missing" }, CODEOWNERS: found("CODEOWNERS", "* @alice\n"), "docs/CODEOWNERS": found("docs/CODEOWNERS", "* @bob\n") },
    };
    expect(run(evidence).ownerSets[0]!.owners).toEqual(["@alice"]);
  });
  test("docs/CODEOWNERS is used when the other locations are missing", () => {
    const evidence: Evidence = {
      ...baseEvidence(),
      codeowners: { ".forge/CODEOWNERS": { kind: "missing" }, CODEOWNERS: { kind: "missing" }, "docs/CODEOWNERS": found("docs/CODEOWNERS", "* @bob\n") },
    };
    expect(run(evidence).codeownersPath).toBe("docs/CODEOWNERS");
  });
  test("a failed read of an earlier location never lets a later file win", () => {
    const evidence: Evidence = {
      ...baseEvidence(),
      codeowners: { ".forge/CODEOWNERS": { kind: "incomplete", cause: "transient", detail: "503" }, CODEOWNERS: found("CODEOWNERS", "* @alice\n") },
    };
    expect(run(evidence).kind).toBe("retry");
  });
  test("a location the fetcher never read fails closed", () => {
    const evidence: Evidence = { ...baseEvidence(), codeowners: { CODEOWNERS: found("CODEOWNERS", "* @alice\n") } };
    const decision = run(withReviews(evidence, approve(alice)));
    expect(outcome(decision)).toBe("failure");
    expect(codes(decision)).toEqual(["codeowners_incomplete"]);
  });
  test("no code-owners file at all means nothing is owned", () => {
    const evidence: Evidence = { ...baseEvidence(), codeowners: { ".forge/CODEOWNERS": { kind: "missing" }, CODEOWNERS: { kind: "missing" }, "docs/CODEOWNERS": { kind: "missing" } } };
    const decision = run(evidence);
    expect(outcome(decision)).toBe("success");
    expect(decision.unownedPathCount).toBe(1);
  });
  test("an invalid line blocks and the output names its line number", () => {
    const decision = run(withReviews(withCodeowners(baseEvidence(), "* @alice\n\n*.[ch] @bob\n"), approve(alice)));
    expect(outcome(decision)).toBe("failure");
    const reason = decision.reasons.find((r) => r.code === "codeowners_invalid")!;
    expect(plain(reason.details![0]!)).toContain("line 3");
  });
  test("a file reported as too large loads nothing and fails", () => {
    const evidence: Evidence = { ...baseEvidence(), codeowners: { ".forge/CODEOWNERS": { kind: "too_large", path: ".forge/CODEOWNERS", bytes: 5_000_000 } } };
    expect(codes(run(evidence))).toEqual(["codeowners_too_large"]);
  });
  test("a rule without owners makes its paths unowned: no requirement", () => {
    const decision = run(withFiles(baseEvidence(), ["vendor/lib.js"]));
    expect(outcome(decision)).toBe("success");
    expect(decision.ownerSets).toEqual([]);
  });
  test("matching is case-sensitive", () => {
    const decision = run(withFiles(baseEvidence(), ["SRC/app.ts"]));
    expect(decision.ownerSets[0]!.owners).toEqual(["@acme/core"]);
  });
});

describe("rule 2: owner sets", () => {
  test("every distinct owner set needs its own approval", () => {
    const evidence = withFiles(baseEvidence(), ["src/app.ts", "docs/guide.md"]);
    expect(outcome(run(withReviews(evidence, approve(alice))))).toBe("failure");
    expect(outcome(run(withReviews(evidence, approve(alice), approve(USERS.erin))))).toBe("success");
  });
  test("paths with the same owner set are grouped together", () => {
    const decision = run(withFiles(baseEvidence(), ["src/a.ts", "src/b/c.ts", "README.md"]));
    expect(decision.ownerSets.map((set) => [set.owners, set.paths])).toEqual([
      [["@acme/core"], ["README.md"]],
      [["@alice"], ["src/a.ts", "src/b/c.ts"]],
    ]);
  });
  test("an owner set names the CODEOWNERS patterns of the rules that gave it its paths, once each", () => {
    const evidence = withFiles(withCodeowners(baseEvidence(), "/a/ @Alice @bob\n/b/ @bob @alice\n*.md @carol\n/c/ @bob @alice\n"), ["b/y", "a/x", "a/z", "n.md"]);
    expect(run(evidence).ownerSets.map((set) => [set.owners, set.patterns])).toEqual([[["@Alice", "@bob"], ["/a/", "/b/"]], [["@carol"], ["*.md"]]]);
  });
  test("a counted approval names its review, reviewer, commit, submitted time and the rule that made it count", () => {
    const evidence = withFiles(baseEvidence(), ["src/a.ts", "README.md"]);
    const byAlice = { ...approve(alice), submittedAt: "2026-11-01T10:00:00Z" };
    const byBob = approve(USERS.bob); // the forge said no time
    const decision = run(withReviews(evidence, byAlice, byBob));
    expect(decision.ownerSets.map((set) => set.counted)).toEqual([
      [{ reviewer: "bob", via: { kind: "team", owner: "@acme/core" }, reviewId: byBob.id, reviewerId: USERS.bob.id, commitId: HEAD, submittedAt: null, rule: "team_membership" }],
      [{ reviewer: "alice", via: { kind: "user", owner: "@alice" }, reviewId: byAlice.id, reviewerId: alice.id, commitId: HEAD, submittedAt: "2026-11-01T10:00:00Z", rule: "direct_owner" }],
    ]);
  });
  test("owner sets differing only in case or order are the same set", () => {
    const evidence = withFiles(withCodeowners(baseEvidence(), "/a/ @Alice @bob\n/b/ @bob @alice\n"), ["a/x", "b/y"]);
    expect(run(evidence).ownerSets.length).toBe(1);
  });
  test("required_approvals applies to each owner set", () => {
    const evidence = withRepositoryPolicy(withCodeowners(baseEvidence(), "* @alice @bob\n"), "schema_version = 1\nenabled = true\nrequired_approvals = 2\n");
    expect(outcome(run(withReviews(evidence, approve(alice))))).toBe("failure");
    expect(outcome(run(withReviews(evidence, approve(alice), approve(USERS.bob))))).toBe("success");
  });
  test("both the old and the new path of a rename are evaluated", () => {
    const evidence = withFiles(baseEvidence(), [{ filename: "lib/app.ts", status: "renamed", previousFilename: "src/app.ts" }]);
    const decision = run(withReviews(evidence, approve(USERS.bob)));
    expect(decision.ownerSets.flatMap((set) => set.paths).sort()).toEqual(["lib/app.ts", "src/app.ts"]);
    expect(outcome(decision)).toBe("failure");
    expect(outcome(run(withReviews(evidence, approve(USERS.bob), approve(alice))))).toBe("success");
  });
  test("a renamed file without its previous path fails closed", () => {
    const evidence = withFiles(baseEvidence(), [{ filename: "lib/app.ts", status: "renamed" }]);
    const decision = run(withReviews(evidence, approve(USERS.bob), approve(alice)));
    expect(outcome(decision)).toBe("failure");
    expect(codes(decision)).toEqual(["rename_incomplete"]);
  });
  test("a copied file without its previous path fails closed", () => {
    expect(codes(run(withFiles(baseEvidence(), [{ filename: "x", status: "copied", previousFilename: null }])))).toEqual(["rename_incomplete"]);
  });
  test("an unknown file status fails closed", () => {
    expect(codes(run(withFiles(baseEvidence(), [{ filename: "x", status: "exploded" }])))).toEqual(["rename_incomplete"]);
  });
  test("a removed owned file still needs approval", () => {
    expect(outcome(run(withFiles(baseEvidence(), [{ filename: "src/old.ts", status: "removed" }])))).toBe("failure");
  });
});

describe("rule 3: which reviews count", () => {
  test("an approval of an older head does not count", () => {
    const decision = run(withReviews(baseEvidence(), approve(alice, OLD_HEAD)));
    expect(outcome(decision)).toBe("failure");
    expect(plain(decision.ownerSets[0]!.notCounted[0]!.why)).toContain("not the current head");
  });
  test("an approval without a commit does not count", () => {
    expect(outcome(run(withReviews(baseEvidence(), approve(alice, null))))).toBe("failure");
  });
  test("an approval followed by a request for changes blocks", () => {
    const decision = run(withReviews(baseEvidence(), approve(alice), review(alice, "CHANGES_REQUESTED")));
    expect(decision.ownerSets[0]!.status).toBe("blocked");
    expect(outcome(decision)).toBe("failure");
  });
  test("a request for changes followed by an approval of the head counts", () => {
    expect(outcome(run(withReviews(baseEvidence(), review(alice, "CHANGES_REQUESTED"), approve(alice))))).toBe("success");
  });
  test("a comment after an approval does not undo it", () => {
    expect(outcome(run(withReviews(baseEvidence(), approve(alice), review(alice, "COMMENTED"))))).toBe("success");
  });
  test("a pending review is ignored", () => {
    expect(outcome(run(withReviews(baseEvidence(), approve(alice), review(alice, "PENDING"))))).toBe("success");
  });
  test("a dismissed latest review neither approves nor blocks", () => {
    expect(run(withReviews(baseEvidence(), approve(alice), review(alice, "DISMISSED"))).ownerSets[0]!.status).toBe("missing");
    const evidence = withCodeowners(baseEvidence(), "* @alice @bob\n");
    expect(outcome(run(withReviews(evidence, review(alice, "CHANGES_REQUESTED"), review(alice, "DISMISSED"), approve(USERS.bob))))).toBe("success");
  });
  test("changes requested on an older commit still block", () => {
    const evidence = withCodeowners(baseEvidence(), "* @alice @bob\n");
    const decision = run(withReviews(evidence, review(alice, "CHANGES_REQUESTED", OLD_HEAD), approve(USERS.bob)));
    expect(decision.ownerSets[0]!.status).toBe("blocked");
  });
  test("an eligible owner requesting changes blocks every set they belong to, including through a team", () => {
    const evidence = withFiles(withCodeowners(baseEvidence(), "/a/ @bob\n/b/ @acme/core @alice\n"), ["a/x", "b/y"]);
    const decision = run(withReviews(evidence, review(USERS.bob, "CHANGES_REQUESTED"), approve(alice)));
    expect(decision.ownerSets.map((set) => set.status)).toEqual(["blocked", "blocked"]);
  });
  test("changes requested by a non-owner do not block", () => {
    expect(outcome(run(withReviews(baseEvidence(), review(USERS.mallory, "CHANGES_REQUESTED"), approve(alice))))).toBe("success");
  });
  test("the author never approves, even as an owner", () => {
    const evidence = withCodeowners(baseEvidence(), "* @author\n");
    const decision = run(withReviews(evidence, approve(USERS.author)));
    expect(outcome(decision)).toBe("failure");
    expect(decision.suggestedReviewers).toEqual([]);
  });
  test("an approval by a non-owner does not count", () => {
    expect(outcome(run(withReviews(baseEvidence(), approve(USERS.mallory))))).toBe("failure");
  });
  test("an approval by an account that is neither a user nor a bot never counts and needs no lookup", () => {
    const organization = { id: 77, login: "acme", type: "Organization" };
    const decision = run(withReviews(withCodeowners(baseEvidence(), "* @acme/core @acme\n"), approve(organization)));
    expect(outcome(decision)).toBe("failure");
    expect(codes(decision)).toEqual([]);
  });
  test("a review by a deleted account never counts", () => {
    const evidence = withReviews(baseEvidence(), { id: 99, user: null, state: "APPROVED", commitId: HEAD });
    expect(outcome(run(evidence))).toBe("failure");
  });
  test("two approvals by the same reviewer count once", () => {
    const evidence = withRepositoryPolicy(withCodeowners(baseEvidence(), "* @alice @bob\n"), "schema_version = 1\nenabled = true\nrequired_approvals = 2\n");
    expect(outcome(run(withReviews(evidence, approve(alice), approve(alice))))).toBe("failure");
  });
});

describe("rule 4: human eligibility", () => {
  const directory = baseEvidence().directory;
  test("a user owner with read permission is not eligible", () => {
    const evidence = withCodeowners(baseEvidence(), "* @carol\n");
    expect(outcome(run(withReviews(evidence, approve(USERS.carol))))).toBe("failure");
  });
  test("maintain permission counts as write", () => {
    const evidence = { ...withCodeowners(baseEvidence(), "* @dave\n"), repository: { owner: "dave", name: "w", ownerType: "User" as const } };
    expect(outcome(run(withReviews(evidence, approve(USERS.dave))))).toBe("success");
  });
  test("a user owner with a pending organization membership is not eligible", () => {
    const evidence = withCodeowners(baseEvidence(), "* @dave\n");
    expect(outcome(run(withReviews(evidence, approve(USERS.dave))))).toBe("failure");
  });
  test("on a user-owned repository organization membership is not required", () => {
    const evidence: Evidence = { ...withCodeowners(baseEvidence(), "* @dave\n"), repository: { owner: "dave", name: "w", ownerType: "User" } };
    expect(outcome(run(withReviews(evidence, approve(USERS.dave))))).toBe("success");
  });
  test("a 404 for the permission lookup means not eligible", () => {
    const evidence: Evidence = { ...baseEvidence(), directory: { ...directory, collaborators: { ...directory.collaborators, alice: { kind: "not_found" } } } };
    expect(outcome(run(withReviews(evidence, approve(alice))))).toBe("failure");
  });
  test("logins are compared case-insensitively", () => {
    const evidence = withCodeowners(baseEvidence(), "* @ALICE\n");
    expect(outcome(run(withReviews(evidence, approve({ ...alice, login: "Alice" }))))).toBe("success");
  });
  test("a team owner counts for an active member of a visible team with write access", () => {
    expect(outcome(run(withReviews(withFiles(baseEvidence(), ["README.md"]), approve(USERS.bob))))).toBe("success");
  });
  test("a secret team does not count", () => {
    const evidence: Evidence = { ...withFiles(baseEvidence(), ["README.md"]), directory: { ...directory, teams: { ...directory.teams, "acme/core": { ...directory.teams["acme/core"]!, team: { kind: "found", value: { privacy: "secret" } } } } } };
    expect(outcome(run(withReviews(evidence, approve(USERS.bob))))).toBe("failure");
  });
  test("a team without write access to the repository does not count", () => {
    const evidence: Evidence = { ...withFiles(baseEvidence(), ["README.md"]), directory: { ...directory, teams: { ...directory.teams, "acme/core": { ...directory.teams["acme/core"]!, repository: { kind: "found", value: { push: false } } } } } };
    expect(outcome(run(withReviews(evidence, approve(USERS.bob))))).toBe("failure");
  });
  test("a pending team membership does not count", () => {
    const core = directory.teams["acme/core"]!;
    const evidence: Evidence = { ...withFiles(baseEvidence(), ["README.md"]), directory: { ...directory, teams: { ...directory.teams, "acme/core": { ...core, memberships: { ...core.memberships, bob: { kind: "found", value: { state: "pending" } } } } } } };
    expect(outcome(run(withReviews(evidence, approve(USERS.bob))))).toBe("failure");
  });
  test("email owners never satisfy a set", () => {
    const evidence = withCodeowners(baseEvidence(), "* alice@example.com\n");
    const decision = run(withReviews(evidence, approve(alice)));
    expect(outcome(decision)).toBe("failure");
    expect(decision.suggestedReviewers).toEqual([]);
  });
  test("a transient failure looking up an approver's eligibility retries", () => {
    const evidence: Evidence = { ...baseEvidence(), directory: { ...directory, collaborators: { ...directory.collaborators, alice: { kind: "incomplete", cause: "transient", detail: "rate limited" } } } };
    expect(run(withReviews(evidence, approve(alice))).kind).toBe("retry");
  });
  test("an eligibility fact the fetcher never looked up fails closed", () => {
    const { alice: _omitted, ...rest } = directory.collaborators;
    const evidence: Evidence = { ...baseEvidence(), directory: { ...directory, collaborators: rest } };
    const decision = run(withReviews(evidence, approve(alice)));
    expect(outcome(decision)).toBe("failure");
    expect(codes(decision)).toEqual(["directory_incomplete"]);
  });
  test("logins and teams named like Object.prototype members (__proto__, constructor, hasOwnProperty) are ordinary owners", () => {
    const names = ["__proto__", "constructor", "hasOwnProperty"];
    const hostile = names.map((login, i) => ({ id: 100 + i, login, type: "User" }));
    const grant = <T>(value: T) => ({ kind: "found" as const, value });
    // Object.fromEntries makes "__proto__" an own key, as JSON.parse does for evidence read from storage or a link.
    const each = <T>(value: T) => Object.fromEntries(names.map((name) => [name, value]));
    const team = { team: grant({ privacy: "closed" }), repository: grant({ push: true }), memberships: each(grant({ state: "active" })) };
    const evidence: Evidence = {
      ...withFiles(withCodeowners(baseEvidence(), "/a/ @__proto__\n/b/ @constructor\n/c/ @acme/hasOwnProperty\n/d/ @acme/__proto__\n"), ["a/x", "b/x", "c/x", "d/x"]),
      directory: {
        ...directory,
        collaborators: { ...directory.collaborators, ...each(grant({ permission: "write" })) },
        organizationMemberships: { ...directory.organizationMemberships, ...each(grant({ state: "active" })) },
        teams: Object.fromEntries([["acme/hasOwnProperty", team], ["acme/__proto__", team]]),
      },
    };
    expect(outcome(run(evidence))).toBe("failure");
    const approved = withReviews(evidence, ...hostile.map((user) => approve(user)));
    expect(planLookups(approved, settings)).toEqual({
      collaborators: ["__proto__", "constructor"],
      organizationMemberships: ["__proto__", "constructor"],
      teams: ["acme/__proto__", "acme/hasOwnProperty"].map((name) => ({ team: name, members: names, info: false })),
      apps: [],
      botUsers: [],
    });
    const decision = run(approved);
    expect(decision.reasons).toEqual([]);
    expect(outcome(decision)).toBe("success");
    expect(decision.ownerSets.map((set) => [set.owners, set.counted.map((c) => c.reviewer)])).toEqual([
      [["@__proto__"], ["__proto__"]],
      [["@acme/__proto__"], names],
      [["@acme/hasOwnProperty"], names],
      [["@constructor"], ["constructor"]],
    ]);
  });
  test("an unknown fact that cannot change the outcome does not block", () => {
    const evidence: Evidence = { ...withCodeowners(baseEvidence(), "* @alice @carol\n"), directory: { ...directory, collaborators: { ...directory.collaborators, carol: { kind: "incomplete", cause: "transient", detail: "timeout" } } } };
    expect(outcome(run(withReviews(evidence, approve(alice), approve(USERS.carol))))).toBe("success");
  });
  test("a changes-requested reviewer whose eligibility is unknown keeps the set undecided", () => {
    const evidence: Evidence = { ...withCodeowners(baseEvidence(), "* @alice @carol\n"), directory: { ...directory, collaborators: { ...directory.collaborators, carol: { kind: "incomplete", cause: "transient", detail: "timeout" } } } };
    expect(run(withReviews(evidence, approve(alice), review(USERS.carol, "CHANGES_REQUESTED"))).kind).toBe("retry");
  });
});

describe("rule 5: App approvals", () => {
  const appEvidence = (policy: string, files: string[] = ["docs/guide.md"]) => withReviews(withFiles(withRepositoryPolicy(baseEvidence(), policy), files), approve(BOT));
  test("an enrolled App approval counts on delegated paths", () => {
    const decision = run(appEvidence(delegationPolicy(["docs/**"])));
    expect(outcome(decision)).toBe("success");
    expect(decision.ownerSets[0]!.counted).toMatchObject([{ reviewer: BOT.login, via: { kind: "app", app: APP_SLUG }, reviewerId: BOT.id, commitId: HEAD, rule: "app_delegation" }]);
  });
  test("an App approval does not count without a delegation covering every path of the set", () => {
    expect(outcome(run(appEvidence(delegationPolicy(["docs/**"]), ["docs/guide.md", "src/app.ts"])))).toBe("failure");
    expect(outcome(run(appEvidence(delegationPolicy(["docs/*.txt"]))))).toBe("failure");
  });
  test("a set with one path outside the delegation gets no App approval", () => {
    const evidence = withCodeowners(appEvidence(delegationPolicy(["docs/guide.md"]), ["docs/guide.md", "docs/other.md"]), "/docs/ @acme/docs\n");
    expect(outcome(run(evidence))).toBe("failure");
  });
  test("an App approval does not count when the bot's user ID differs", () => {
    const impostor = { ...BOT, id: 4242 };
    const evidence = withReviews(withFiles(withRepositoryPolicy(baseEvidence(), delegationPolicy(["docs/**"])), ["docs/guide.md"]), approve(impostor));
    expect(outcome(run(evidence))).toBe("failure");
  });
  test("an App approval does not count when the reviewer is not of type Bot", () => {
    const evidence = withReviews(withFiles(withRepositoryPolicy(baseEvidence(), delegationPolicy(["docs/**"])), ["docs/guide.md"]), approve({ ...BOT, type: "User" }));
    expect(outcome(run(evidence))).toBe("failure");
  });
  test("an App approval does not count when the App fetched by slug has another ID", () => {
    const evidence = appEvidence(delegationPolicy(["docs/**"]));
    const changed: Evidence = { ...evidence, directory: { ...evidence.directory, apps: { [APP_SLUG]: { kind: "found", value: { id: 1, slug: APP_SLUG } } } } };
    expect(outcome(run(changed))).toBe("failure");
  });
  test("an App approval of an older head does not count", () => {
    const evidence = withReviews(withFiles(withRepositoryPolicy(baseEvidence(), delegationPolicy(["docs/**"])), ["docs/guide.md"]), approve(BOT, OLD_HEAD));
    expect(outcome(run(evidence))).toBe("failure");
  });
  test("the delegation's owners condition holds when it names one owner of the set", () => {
    expect(outcome(run(appEvidence(delegationPolicy(["docs/**"], 'owners = ["@acme/docs"]'))))).toBe("success");
    expect(outcome(run(appEvidence(delegationPolicy(["docs/**"], 'owners = ["@acme/core"]'))))).toBe("failure");
  });
  test("a delegation with a required label applies only while the label is on the pull request", () => {
    const evidence = appEvidence(delegationPolicy(["docs/**"], 'required_label = "bot-review"'));
    expect(outcome(run(evidence))).toBe("failure");
    expect(outcome(run({ ...evidence, pullRequest: { ...evidence.pullRequest, labels: ["bot-review"] } }))).toBe("success");
  });
  test("a label alone never approves", () => {
    const evidence = withFiles(withRepositoryPolicy(baseEvidence(), delegationPolicy(["docs/**"], 'required_label = "bot-review"')), ["docs/guide.md"]);
    expect(outcome(run({ ...evidence, pullRequest: { ...evidence.pullRequest, labels: ["bot-review"] } }))).toBe("failure");
  });
  test("an App approval counts as one approval toward required_approvals", () => {
    const policy = delegationPolicy(["docs/**"], "", 2);
    expect(outcome(run(appEvidence(policy)))).toBe("failure");
    const both = appEvidence(policy);
    expect(outcome(run(withReviews(both, approve(BOT), approve(USERS.erin))))).toBe("success");
  });
  test("a delegation to an App the organization did not enroll makes the policy invalid", () => {
    const policy = delegationPolicy(["docs/**"]).replace(`app = "${APP_SLUG}"`, 'app = "rogue-bot"');
    expect(codes(run(appEvidence(policy)))).toContain("delegation_app_not_enrolled");
  });
  test("a repository policy cannot enroll its own App", () => {
    const policy = `${delegationPolicy(["docs/**"])}\n[[trusted_apps]]\nslug = "rogue-bot"\napp_id = 1\n`;
    const decision = run(appEvidence(policy));
    expect(outcome(decision)).toBe("failure");
    expect(codes(decision)).toContain("repository_policy_invalid");
  });
  test("without an organization policy no App is trusted", () => {
    const evidence = { ...appEvidence(delegationPolicy(["docs/**"])), organizationPolicy: { kind: "missing" as const } };
    expect(outcome(run(evidence))).toBe("failure");
  });
  test("a transient failure fetching the App identity retries", () => {
    const evidence = appEvidence(delegationPolicy(["docs/**"]));
    const changed: Evidence = { ...evidence, directory: { ...evidence.directory, apps: { [APP_SLUG]: { kind: "incomplete", cause: "transient", detail: "502" } } } };
    expect(run(changed).kind).toBe("retry");
  });
});

describe("the forge directory (.github on GitHub)", () => {
  const GITHUB = { forgeDirectory: ".github", policyPath: ".github/service-policy.toml" };
  const underGithub = (evidence: Evidence): Evidence => ({
    ...evidence,
    codeowners: { ".github/CODEOWNERS": found(".github/CODEOWNERS", "* @bob\n") },
    repositoryPolicy: found(".github/service-policy.toml", (evidence.repositoryPolicy as { text: string }).text),
  });
  /** An App's approval of `paths` owned by @acme/docs in the root CODEOWNERS, both forge directories' first location missing. */
  const appApproved = (paths: string[]): Evidence => {
    const evidence = withReviews(withFiles(withCodeowners(withRepositoryPolicy(baseEvidence(), delegationPolicy(["**"])), "* @acme/docs\n"), paths), approve(BOT));
    return { ...evidence, codeowners: { ".github/CODEOWNERS": { kind: "missing" }, ...evidence.codeowners } };
  };
  test("a .github/CODEOWNERS is the code-owners file under the forge directory .github", () => {
    const decision = run(underGithub(withReviews(baseEvidence(), approve(USERS.bob))), GITHUB);
    expect(outcome(decision)).toBe("success");
    expect(decision.codeownersPath).toBe(".github/CODEOWNERS");
    expect(decision.ownerSets.map((set) => set.owners)).toEqual([["@bob"]]);
  });
  test("under .github, a .forge/CODEOWNERS is not a code-owners location: the root CODEOWNERS is read after .github/CODEOWNERS", () => {
    const evidence: Evidence = {
      ...withReviews(baseEvidence(), approve(alice)),
      codeowners: { ".github/CODEOWNERS": { kind: "missing" }, ".forge/CODEOWNERS": found(".forge/CODEOWNERS", "* @bob\n"), CODEOWNERS: found("CODEOWNERS", "* @alice\n") },
    };
    const decision = run(evidence, GITHUB);
    expect(decision.codeownersPath).toBe("CODEOWNERS");
    expect(outcome(decision)).toBe("success");
  });
  test("evidence read for another forge directory fails closed: its first location was not read", () => {
    const decision = run(underGithub(withReviews(baseEvidence(), approve(USERS.bob))));
    expect(outcome(decision)).toBe("failure");
    expect(codes(decision)).toContain("codeowners_incomplete");
  });
  test("an App approval never counts on .github/workflows/** or .github/actions/** under .github, and does under .forge", () => {
    const appOn = (path: string, overrides: Partial<EvaluationSettings>) => run(appApproved([path]), overrides);
    for (const path of [".github/workflows/x.yml", ".github/actions/setup/action.yml"]) {
      const github = appOn(path, { forgeDirectory: ".github" });
      expect(outcome(github)).toBe("failure");
      expect(github.ownerSets[0]!.nonDelegablePaths).toEqual([path]);
      expect(outcome(appOn(path, {}))).toBe("success");
    }
    expect(outcome(appOn(".forge/workflows/x.yml", { forgeDirectory: ".github" }))).toBe("success");
  });
  test("the .github/CODEOWNERS file itself is non-delegable under .github", () => {
    const decision = run(appApproved([".github/CODEOWNERS"]), { forgeDirectory: ".github" });
    expect(outcome(decision)).toBe("failure");
    expect(codes(decision)).not.toContain("codeowners_incomplete");
    expect(decision.ownerSets[0]!.nonDelegablePaths).toEqual([".github/CODEOWNERS"]);
  });
});

describe("rule 6: non-delegable paths", () => {
  const appOn = (files: string[], allowInsecureChanges = false) => {
    const evidence = withReviews(withFiles(withCodeowners(withRepositoryPolicy(baseEvidence(), delegationPolicy(["**"])), "* @acme/docs\n"), files), approve(BOT));
    return run(evidence, { allowInsecureChanges });
  };
  test.each([".forge/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS", ".forge/service-policy.toml", `${APP_SLUG}.toml`, ".forge/workflows/ci.yml", ".forge/actions/setup/action.yml"])(
    "an App approval never counts on the built-in non-delegable path %s",
    (path) => {
      expect(outcome(appOn([path]))).toBe("failure");
      expect(appOn([path]).ownerSets[0]!.nonDelegablePaths).toEqual([path]);
    },
  );
  test("the root configuration file of every enrolled App is non-delegable, not only of Apps that reviewed", () => {
    const evidence = withOrganizationPolicy(withReviews(withFiles(withCodeowners(withRepositoryPolicy(baseEvidence(), delegationPolicy(["**"])), "* @acme/docs\n"), ["other-app.toml"]), approve(BOT)), `schema_version = 1\n[[trusted_apps]]\nslug = "${APP_SLUG}"\napp_id = 12345\n[[trusted_apps]]\nslug = "other-app"\napp_id = 7\n`);
    expect(outcome(run(evidence))).toBe("failure");
  });
  test("organization guardrails are non-delegable", () => {
    expect(outcome(appOn(["deploy/prod.yaml"]))).toBe("failure");
    expect(outcome(appOn(["Makefile"]))).toBe("failure");
    expect(outcome(appOn(["docs/guide.md"]))).toBe("success");
  });
  test("the insecure switch removes only the built-in non-delegable paths", () => {
    expect(outcome(appOn([".forge/workflows/ci.yml"], true))).toBe("success");
    expect(outcome(appOn(["CODEOWNERS"], true))).toBe("success");
  });
  test("the insecure switch never removes an organization guardrail", () => {
    expect(outcome(appOn(["deploy/prod.yaml"], true))).toBe("failure");
  });
  test("a human owner can still approve a non-delegable path", () => {
    const evidence = withReviews(withFiles(withCodeowners(baseEvidence(), "* @acme/docs\n"), ["CODEOWNERS"]), approve(USERS.erin));
    expect(outcome(run(evidence))).toBe("success");
  });
  test("the effective policy path follows the setting", () => {
    const evidence = withReviews(withFiles(withCodeowners(withRepositoryPolicy(baseEvidence(), delegationPolicy(["**"])), "* @acme/docs\n"), ["config/approval.toml"]), approve(BOT));
    expect(outcome(run(evidence))).toBe("success");
    expect(outcome(run(evidence, { policyPath: "config/approval.toml" }))).toBe("failure");
  });
});

describe("rule 7: never success", () => {
  test("a head shared by another open pull request never succeeds", () => {
    const evidence = withReviews({ ...baseEvidence(), sameHeadPullRequests: { complete: true, items: [{ number: 7, headSha: HEAD }, { number: 8, headSha: HEAD }] } }, approve(alice));
    const decision = run(evidence);
    expect(outcome(decision)).toBe("failure");
    expect(decision.sharedHeadWith).toEqual([8]);
  });
  test("an incomplete list of open pull requests on the head retries", () => {
    expect(run(withReviews({ ...baseEvidence(), sameHeadPullRequests: { complete: false, cause: "transient", detail: "timeout" } }, approve(alice))).kind).toBe("retry");
  });
  test("3,000 changed files fail before any listing", () => {
    const evidence = withReviews({ ...baseEvidence(), pullRequest: { ...baseEvidence().pullRequest, changedFiles: 3000 }, files: { complete: false, cause: "over_bound", detail: "not listed" } }, approve(alice));
    expect(codes(run(evidence))).toEqual(["too_many_files"]);
  });
  test("a truncated file list fails closed", () => {
    const evidence = withReviews({ ...baseEvidence(), files: { complete: false, cause: "over_bound", detail: "stopped at page 31" } }, approve(alice));
    expect(outcome(run(evidence))).toBe("failure");
  });
  test("a file count contradicting changed_files fails closed", () => {
    const evidence = withReviews({ ...baseEvidence(), pullRequest: { ...baseEvidence().pullRequest, changedFiles: 2 } }, approve(alice));
    expect(codes(run(evidence))).toEqual(["files_inconsistent"]);
  });
  test("an invalid repository policy fails with the field location", () => {
    const decision = run(withReviews(withRepositoryPolicy(baseEvidence(), "schema_version = 1\nenabled = true\nrequired_approvals = 0\n"), approve(alice)));
    expect(outcome(decision)).toBe("failure");
    expect(plain(decision.reasons[0]!.details![0]!)).toContain("required_approvals");
  });
  test("an invalid organization policy fails closed", () => {
    const decision = run(withReviews(withOrganizationPolicy(baseEvidence(), "schema_version = 1\nunknown = true\n"), approve(alice)));
    expect(codes(decision)).toEqual(["organization_policy_invalid"]);
  });
  test("a missing organization policy means no trusted Apps and no guardrails, not failure", () => {
    expect(outcome(run(withReviews({ ...baseEvidence(), organizationPolicy: { kind: "missing" } }, approve(alice))))).toBe("success");
  });
  test("an organization policy that could not be read retries", () => {
    expect(run(withReviews({ ...baseEvidence(), organizationPolicy: { kind: "incomplete", cause: "transient", detail: "500" } }, approve(alice))).kind).toBe("retry");
  });
});

describe("suggested reviewers", () => {
  test("the smallest set covering every missing owner set is suggested, deterministically", () => {
    const evidence = withFiles(withCodeowners(baseEvidence(), "/a/ @alice @bob\n/b/ @bob @erin\n/c/ @erin\n"), ["a/x", "b/y", "c/z"]);
    expect(run(evidence).suggestedReviewers).toEqual(["@alice", "@erin"]);
    const one = withFiles(withCodeowners(baseEvidence(), "/a/ @alice @bob\n/b/ @bob @erin\n/c/ @erin @bob\n"), ["a/x", "b/y", "c/z"]);
    expect(run(one).suggestedReviewers).toEqual(["@bob"]);
  });
  test("owners that already approved a set are not suggested for it again", () => {
    const evidence = withRepositoryPolicy(withCodeowners(baseEvidence(), "* @alice @bob @erin\n"), "schema_version = 1\nenabled = true\nrequired_approvals = 2\n");
    expect(run(withReviews(evidence, approve(alice))).suggestedReviewers).toEqual(["@bob"]);
  });
});
