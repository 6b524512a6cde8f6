import { describe, expect, test } from "bun:test";
import { evaluate } from "./evaluate.ts";
import { DEFAULT_EVALUATION_SETTINGS } from "./evidence.ts";
import { BOT, ENABLED_POLICY, OLD_HEAD, USERS, approve, baseEvidence, delegationPolicy, directoryFromPlan, review, withCodeowners, withFiles, withRepositoryPolicy, withReviews } from "./evidence-fixture.ts";
import { NO_DIRECTORY_FACTS, planLookups } from "./plan-lookups.ts";

const NOTHING = { collaborators: [], organizationMemberships: [], teams: [], apps: [], botUsers: [] };
const FOUND_WRITE = { kind: "found" as const, value: { permission: "write" } };
const ACTIVE = { kind: "found" as const, value: { state: "active" } };

describe("planLookups", () => {
  test("without reviews nothing needs looking up", () => {
    const { directory: _unused, ...withoutDirectory } = baseEvidence();
    expect(planLookups(withoutDirectory, DEFAULT_EVALUATION_SETTINGS)).toEqual({
      collaborators: [],
      organizationMemberships: [],
      teams: [],
      apps: [],
      botUsers: [],
    });
  });
  test("first names the owners who reviewed, the teams of the changed paths and the enrolled Apps that approved", () => {
    const evidence = withReviews(
      withFiles(withRepositoryPolicy(baseEvidence(), delegationPolicy(["docs/**"])), ["src/a.ts", "docs/b.md", "README.md"]),
      approve(USERS.alice),
      review(USERS.bob, "CHANGES_REQUESTED"),
      approve(USERS.carol, OLD_HEAD),
      approve(BOT),
    );
    const plan = planLookups(evidence, DEFAULT_EVALUATION_SETTINGS);
    expect(plan.collaborators).toEqual(["alice"]);
    expect(plan.organizationMemberships).toEqual(["alice"]);
    // The docs set's App approval may satisfy it: alice's membership of acme/docs waits for the App's identity.
    expect(plan.teams).toEqual([
      { team: "acme/core", members: ["alice", "bob"], info: false },
      { team: "acme/docs", members: ["bob"], info: false },
    ]);
    expect(plan.apps).toEqual(["docs-review-bot"]);
    expect(plan.botUsers).toEqual([BOT.login]);
  });
  test("evidence fetched by the plan gives the same decision as complete directory facts", () => {
    const cases = [
      withReviews(baseEvidence(), approve(USERS.alice)),
      withReviews(withFiles(baseEvidence(), ["README.md", "docs/x.md"]), approve(USERS.bob), approve(USERS.erin), review(USERS.dave, "CHANGES_REQUESTED")),
      withReviews(withFiles(withRepositoryPolicy(baseEvidence(), delegationPolicy(["docs/**"])), ["docs/x.md"]), approve(BOT)),
    ];
    for (const evidence of cases) {
      const planned = evaluate(directoryFromPlan(evidence), DEFAULT_EVALUATION_SETTINGS);
      const complete = evaluate(evidence, DEFAULT_EVALUATION_SETTINGS);
      expect(planned.reasons).toEqual([]);
      expect([planned.kind, planned.conclusion]).toEqual([complete.kind, complete.conclusion]);
    }
  });

  test("an approver the set names as a user is looked up as that user, and through its teams only if that does not make them eligible", () => {
    const evidence = withReviews(withCodeowners(baseEvidence(), "* @alice @acme/core\n"), approve(USERS.alice));
    const first = planLookups(evidence, DEFAULT_EVALUATION_SETTINGS);
    expect(first).toEqual({ collaborators: ["alice"], organizationMemberships: ["alice"], teams: [], apps: [], botUsers: [] });
    const eligible = { ...NO_DIRECTORY_FACTS, collaborators: { alice: FOUND_WRITE }, organizationMemberships: { alice: ACTIVE } };
    expect(planLookups(evidence, DEFAULT_EVALUATION_SETTINGS, eligible)).toEqual(NOTHING);
    const readOnly = { ...eligible, collaborators: { alice: { kind: "found" as const, value: { permission: "read" } } } };
    expect(planLookups(evidence, DEFAULT_EVALUATION_SETTINGS, readOnly)).toEqual({ ...NOTHING, teams: [{ team: "acme/core", members: ["alice"], info: false }] });
  });

  test("a team's privacy and repository access are looked up only once a reviewer is known to be an active member", () => {
    const evidence = withReviews(withCodeowners(baseEvidence(), "* @acme/core\n"), approve(USERS.alice));
    expect(planLookups(evidence, DEFAULT_EVALUATION_SETTINGS).teams).toEqual([{ team: "acme/core", members: ["alice"], info: false }]);
    const notMember = { ...NO_DIRECTORY_FACTS, teams: { "acme/core": { memberships: { alice: { kind: "not_found" as const } } } } };
    expect(planLookups(evidence, DEFAULT_EVALUATION_SETTINGS, notMember)).toEqual(NOTHING);
    expect(evaluate({ ...evidence, directory: { ...evidence.directory, ...notMember } }, DEFAULT_EVALUATION_SETTINGS).conclusion).toBe("failure");
    const member = { ...NO_DIRECTORY_FACTS, teams: { "acme/core": { memberships: { alice: ACTIVE } } } };
    expect(planLookups(evidence, DEFAULT_EVALUATION_SETTINGS, member)).toEqual({ ...NOTHING, teams: [{ team: "acme/core", members: [], info: true }] });
    // Without the team's own facts an active member never makes the set succeed.
    expect(evaluate({ ...evidence, directory: { ...evidence.directory, ...member } }, DEFAULT_EVALUATION_SETTINGS).conclusion).not.toBe("success");
  });

  test("a set whose cheap routes cannot reach the required approvals asks for its teams at once", () => {
    const twoNeeded = withRepositoryPolicy(withCodeowners(baseEvidence(), "* @alice @acme/core\n"), `${ENABLED_POLICY}required_approvals = 2\n`);
    const plan = planLookups(withReviews(twoNeeded, approve(USERS.alice), approve(USERS.dave)), DEFAULT_EVALUATION_SETTINGS);
    expect(plan.collaborators).toEqual(["alice"]);
    expect(plan.teams).toEqual([{ team: "acme/core", members: ["alice", "dave"], info: false }]);
  });

  test("a set already satisfied asks for no other approver, and a blocked set for nothing more", () => {
    const evidence = withReviews(withCodeowners(baseEvidence(), "* @alice @acme/core\n"), approve(USERS.alice), approve(USERS.dave));
    const aliceEligible = { ...NO_DIRECTORY_FACTS, collaborators: { alice: FOUND_WRITE }, organizationMemberships: { alice: ACTIVE } };
    expect(planLookups(evidence, DEFAULT_EVALUATION_SETTINGS, aliceEligible)).toEqual(NOTHING);
    const blocked = withReviews(withCodeowners(baseEvidence(), "* @alice @bob\n"), review(USERS.bob, "CHANGES_REQUESTED"), approve(USERS.alice));
    const bobEligible = { ...NO_DIRECTORY_FACTS, collaborators: { bob: FOUND_WRITE }, organizationMemberships: { bob: ACTIVE } };
    expect(planLookups(blocked, DEFAULT_EVALUATION_SETTINGS, bobEligible)).toEqual(NOTHING);
  });

  test("a changes-requested reviewer is looked up through every route into every set not yet blocked, even a satisfied one", () => {
    const evidence = withReviews(withCodeowners(baseEvidence(), "* @alice @bob @acme/core\n"), approve(USERS.alice), review(USERS.bob, "CHANGES_REQUESTED"));
    const first = planLookups(evidence, DEFAULT_EVALUATION_SETTINGS);
    expect(first.collaborators).toEqual(["alice", "bob"]);
    expect(first.teams).toEqual([{ team: "acme/core", members: ["bob"], info: false }]);
    const aliceOnly = { ...NO_DIRECTORY_FACTS, collaborators: { alice: FOUND_WRITE }, organizationMemberships: { alice: ACTIVE } };
    expect(planLookups(evidence, DEFAULT_EVALUATION_SETTINGS, aliceOnly)).toEqual({ ...NOTHING, collaborators: ["bob"], organizationMemberships: ["bob"], teams: [{ team: "acme/core", members: ["bob"], info: false }] });
  });

  test("the facts a decided set did not need are reported as not looked up, and never turn a decision", () => {
    const evidence = withReviews(withCodeowners(baseEvidence(), "* @alice @acme/core\n"), approve(USERS.alice), approve(USERS.dave));
    const planned = directoryFromPlan(evidence);
    expect(Object.keys(planned.directory.teams)).toEqual([]);
    const decision = evaluate(planned, DEFAULT_EVALUATION_SETTINGS);
    expect(decision.conclusion).toBe("success");
    expect(decision.ownerSets[0]!.notCounted).toEqual([{ reviewer: "dave", why: ["not looked up: this owner set was decided without it"] }]);
    // The same absence where the set depends on it fails closed: alice's membership was never looked up.
    const withoutMembership = { ...planned, directory: { ...planned.directory, organizationMemberships: {} } };
    const failed = evaluate(withoutMembership, DEFAULT_EVALUATION_SETTINGS);
    expect(failed.conclusion).toBe("failure");
    expect(failed.ownerSets[0]!.status).toBe("unknown");
  });
});
