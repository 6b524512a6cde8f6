// Break-glass override (DESIGN 3.11, issue 29 items 2-3): every rule of the invocation, what it lifts and what it never does.
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { MAX_BREAK_GLASS_REQUESTS, MAX_RENDERED_BREAK_GLASS_REASON_CHARS, MAX_REVIEW_BODY_LINE_CHARS } from "../policy/bounds.ts";
import { BREAK_GLASS_MARKER, breakGlassReason, firstLineOf } from "./break-glass.ts";
import type { Decision } from "./decision.ts";
import { evaluate } from "./evaluate.ts";
import {
  approve,
  AUTHOR,
  BASE_ORGANIZATION_POLICY,
  baseEvidence,
  directoryFromPlan,
  edited,
  ENABLED_POLICY,
  OLD_HEAD,
  review,
  unedited,
  USERS,
  withCodeowners,
  withFiles,
  withOrganizationPolicy,
  withRepositoryPolicy,
  withReviews,
} from "./evidence-fixture.ts";
import { DEFAULT_EVALUATION_SETTINGS, type Evidence, type Lookup, type Membership, type Review } from "./evidence.ts";
import { planLookups } from "./plan-lookups.ts";
import { renderCheck } from "./render-check.ts";

const ONCALL = { id: 30, login: "oncall", type: "User" } as const;
const REASON = "prod is down, one-line fix of the health check";
const BREAK_GLASS_ORG = `${BASE_ORGANIZATION_POLICY}[break_glass]\nteams = ["sre", "incident"]\n`;

/** A review asking for an override: `break-glass: <reason>` on the first line (with the forge's node ID). */
function breakGlass(user: { id: number; login: string; type: string }, options: { state?: string; commitId?: string | null; body?: string } = {}): Review {
  const made = review(user, options.state ?? "APPROVED", options.commitId === undefined ? baseEvidence().pullRequest.headSha : options.commitId);
  return { ...made, nodeId: `PRR_${made.id}`, bodyFirstLine: options.body ?? `${BREAK_GLASS_MARKER} ${REASON}` };
}

/**
 * The base evidence (one file owned by @alice, unapproved) with break-glass enabled for acme/sre and acme/incident; `oncall`
 * is in no owner team and, unless `memberships` says otherwise, an active member of acme/sre and no member of acme/incident.
 */
function enabled(memberships: Record<string, Lookup<Membership>> = { oncall: { kind: "found", value: { state: "active" } } }): Evidence {
  const evidence = withOrganizationPolicy(baseEvidence(), BREAK_GLASS_ORG);
  const teams = evidence.directory.teams;
  const notOwner = (team: string) => ({ ...teams[team]!, memberships: { ...teams[team]!.memberships, oncall: { kind: "not_found" as const } } });
  return {
    ...evidence,
    directory: {
      ...evidence.directory,
      teams: { "acme/core": notOwner("acme/core"), "acme/docs": notOwner("acme/docs"), "acme/sre": { memberships }, "acme/incident": { memberships: { oncall: { kind: "not_found" }, bob: { kind: "not_found" } } } },
    },
  };
}

/** Evaluated with every review the evidence does not say was edited answered as never edited (`unedited`). */
const decide = (evidence: Evidence): Decision => evaluate(unedited(evidence), DEFAULT_EVALUATION_SETTINGS);
const refusals = (decision: Decision) => decision.breakGlassRefusals.map((refusal) => refusal.code);

describe("an override", () => {
  test("without it the base pull request fails: the owner set needs @alice", () => {
    expect(decide(enabled()).conclusion).toBe("failure");
  });

  test("an approving review on the head by an active member of a listed team, not the author, with a long enough reason, meets the approval requirements", () => {
    const request = breakGlass(ONCALL, { body: `${BREAK_GLASS_MARKER}   ${REASON}   ` });
    const decision = decide(withReviews(enabled(), request));
    expect(decision.conclusion).toBe("success");
    expect(decision.breakGlass).toEqual({ reviewId: request.id, reviewerId: ONCALL.id, reviewer: "oncall", reason: REASON, team: "sre", unsatisfiedOwnerSets: [0] });
    expect(decision.breakGlassRefusals).toEqual([]);
    // The owner set itself still says what its owners did.
    expect(decision.ownerSets[0]!.status).toBe("missing");
  });

  test("membership of any listed team counts, and the team that made it count is named", () => {
    const evidence = enabled({ oncall: { kind: "not_found" } });
    const withIncident = { ...evidence, directory: { ...evidence.directory, teams: { ...evidence.directory.teams, "acme/incident": { memberships: { OnCall: { kind: "found" as const, value: { state: "active" } } } } } } };
    expect(decide(withReviews(withIncident, breakGlass(ONCALL))).breakGlass?.team).toBe("incident");
  });

  test("owner sets its owners satisfied are not listed as unsatisfied", () => {
    const evidence = withFiles(enabled(), ["src/app.ts", "docs/guide.md"]);
    const decision = decide(withReviews(evidence, approve(USERS.alice), breakGlass(ONCALL)));
    expect(decision.conclusion).toBe("success");
    expect(decision.ownerSets.map((set) => set.status)).toEqual(["missing", "satisfied"]);
    expect(decision.breakGlass?.unsatisfiedOwnerSets).toEqual([0]);
  });
});

describe("the rules of invocation (item 2): each refused request leaves the check failing and says why", () => {
  test("wrong state: a comment, a request for changes and a dismissed override do not override", () => {
    for (const state of ["COMMENTED", "CHANGES_REQUESTED", "DISMISSED", "PENDING"]) {
      const decision = decide(withReviews(enabled(), breakGlass(ONCALL, { state })));
      expect(decision.conclusion, state).toBe("failure");
      expect(decision.breakGlass, state).toBeNull();
      expect(refusals(decision), state).toEqual(["wrong_state"]);
    }
  });

  test("stale commit: an override of an older head does not count (a push ends it)", () => {
    for (const commitId of [OLD_HEAD, null]) {
      const decision = decide(withReviews(enabled(), breakGlass(ONCALL, { commitId })));
      expect(decision.conclusion).toBe("failure");
      expect(refusals(decision)).toEqual(["stale_commit"]);
    }
  });

  test("short reason: fewer than min_reason_length characters after trimming are refused; exactly that many count", () => {
    const at = (reason: string) => decide(withReviews(enabled(), breakGlass(ONCALL, { body: `${BREAK_GLASS_MARKER}${reason}` })));
    expect(at(` ${"x".repeat(20)} `).conclusion).toBe("success");
    expect(refusals(at(` ${"x".repeat(19)}          `))).toEqual(["short_reason"]);
    expect(refusals(at(""))).toEqual(["short_reason"]);
    // Characters, not UTF-16 units: 19 emoji are 38 units but 19 characters.
    expect(refusals(at("🔥".repeat(19)))).toEqual(["short_reason"]);
    const longer = withOrganizationPolicy(enabled(), `${BREAK_GLASS_ORG}min_reason_length = 60\n`);
    expect(refusals(decide(withReviews(longer, breakGlass(ONCALL))))).toEqual(["short_reason"]);
  });

  test("short reason: only visible characters count (letters, marks, numbers, punctuation, symbols), never invisible ones", () => {
    const at = (reason: string) => decide(withReviews(enabled(), breakGlass(ONCALL, { body: `${BREAK_GLASS_MARKER}${reason}` })));
    // Format (zero-width space, soft hyphen, bidi isolate, BOM), separators, control and private-use characters, and the
    // blank-looking fillers Unicode marks default-ignorable (Hangul filler) or that render as nothing (blank braille pattern).
    for (const invisible of ["\u200B", "\u2800", "\u3164", "\u00AD", "\u2066", "\uFEFF", "\u3000", "\u2028", "\u0007", "\uE000", "\u115F", "\uFFA0", "\u034F", "\uFE0F"]) {
      const code = `U+${invisible.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
      expect({ code, refusals: refusals(at(invisible.repeat(20))) }).toEqual({ code, refusals: ["short_reason"] });
      expect({ code, refusals: refusals(at(`${"x".repeat(10)}${invisible.repeat(20)}${"y".repeat(9)}`)) }).toEqual({ code, refusals: ["short_reason"] });
      expect({ code, conclusion: at(`${"x".repeat(10)}${invisible.repeat(5)}${"y".repeat(10)}`).conclusion }).toEqual({ code, conclusion: "success" });
    }
    // Visible text of every counted kind does count.
    for (const visible of ["Ж", "7", "!", "€", "e\u0301", "界"]) expect({ visible, conclusion: at(visible.repeat(20)).conclusion }).toEqual({ visible, conclusion: "success" });
    const message = at("\u200B".repeat(25)).breakGlassRefusals[0]?.message.map((part) => (typeof part === "string" ? part : part.code)).join("");
    expect(message).toContain("0 visible characters");
  });

  test("non-member: no active membership in a listed team (404, pending) is refused", () => {
    for (const membership of [{ kind: "not_found" } as const, { kind: "found", value: { state: "pending" } } as const]) {
      const decision = decide(withReviews(enabled({ oncall: membership }), breakGlass(ONCALL)));
      expect(decision.conclusion).toBe("failure");
      expect(refusals(decision)).toEqual(["not_a_member"]);
    }
    // An owner team's member is no break-glass member: bob is in acme/core only.
    expect(refusals(decide(withReviews(enabled({ bob: { kind: "not_found" } }), breakGlass(USERS.bob))))).toEqual(["not_a_member"]);
  });

  test("a bot account cannot override", () => {
    const bot = { id: 31, login: "oncall-bot[bot]", type: "Bot" };
    expect(refusals(decide(withReviews(enabled({ "oncall-bot[bot]": { kind: "found", value: { state: "active" } } }), breakGlass(bot))))).toEqual(["not_a_member"]);
  });

  test("author: the pull request's author cannot override, even as a member of a listed team", () => {
    const decision = decide(withReviews(enabled({ author: { kind: "found", value: { state: "active" } } }), breakGlass({ ...AUTHOR, type: "User" })));
    expect(decision.conclusion).toBe("failure");
    expect(refusals(decision)).toEqual(["author"]);
  });

  test("a repository policy trying to enable it is a policy error: failure, even with a valid override", () => {
    const evidence = withRepositoryPolicy(enabled(), `${ENABLED_POLICY}[break_glass]\nteams = ["devs"]\n`);
    const decision = decide(withReviews(evidence, breakGlass(ONCALL)));
    expect(decision.conclusion).toBe("failure");
    expect(decision.reasons.map((reason) => reason.code)).toEqual(["repository_policy_invalid"]);
    expect(decision.breakGlass).not.toBeNull(); // valid, but it never lifts an invalid policy
    expect(renderCheck(decision).title).toBe("Repository policy is invalid");
  });

  test("team membership lookup incomplete: transient retries, permanent or absent fails closed", () => {
    const transient = decide(withReviews(enabled({ oncall: { kind: "incomplete", cause: "transient", detail: "HTTP 502" } }), breakGlass(ONCALL)));
    expect(transient.kind).toBe("retry");
    expect(transient.reasons.map((reason) => [reason.code, reason.transient])).toEqual([["directory_incomplete", true]]);
    const permanent = decide(withReviews(enabled({ oncall: { kind: "incomplete", cause: "inconsistent", detail: "HTTP 403" } }), breakGlass(ONCALL)));
    expect(permanent.conclusion).toBe("failure");
    expect(refusals(permanent)).toEqual(["membership_incomplete"]);
    expect(permanent.reasons.map((reason) => [reason.code, reason.transient])).toEqual([["directory_incomplete", false]]);
    const absent = decide(withReviews(enabled({ someone: { kind: "not_found" } }), breakGlass(ONCALL)));
    expect(absent.conclusion).toBe("failure");
    expect(refusals(absent)).toEqual(["membership_incomplete"]);
  });

  test("a membership that does not matter is not waited for: another team's active membership decides", () => {
    const evidence = enabled({ oncall: { kind: "found", value: { state: "active" } } });
    const incomplete = { ...evidence, directory: { ...evidence.directory, teams: { ...evidence.directory.teams, "acme/incident": { memberships: { oncall: { kind: "incomplete" as const, cause: "transient" as const, detail: "HTTP 502" } } } } } };
    expect(decide(withReviews(incomplete, breakGlass(ONCALL))).conclusion).toBe("success");
  });

  test("a later review by the same reviewer replaces it; a later comment does not", () => {
    const replaced = decide(withReviews(enabled(), breakGlass(ONCALL), approve(ONCALL)));
    expect(replaced.conclusion).toBe("failure");
    expect(refusals(replaced)).toEqual(["superseded"]);
    expect(refusals(decide(withReviews(enabled(), breakGlass(ONCALL), review(ONCALL, "CHANGES_REQUESTED"))))).toEqual(["superseded"]);
    const commented = decide(withReviews(enabled(), breakGlass(ONCALL), review(ONCALL, "COMMENTED")));
    expect(commented.conclusion).toBe("success");
    // A new override by the same reviewer replaces an older refused one.
    expect(decide(withReviews(enabled(), breakGlass(ONCALL, { commitId: OLD_HEAD }), breakGlass(ONCALL))).conclusion).toBe("success");
  });

  test("only the body's first line asks, and it must start with the marker", () => {
    for (const body of [`Approving.\n${BREAK_GLASS_MARKER} ${REASON}`, `please ${BREAK_GLASS_MARKER} ${REASON}`, `Break-Glass: ${REASON}`, ""]) {
      const decision = decide(withReviews(enabled(), breakGlass(ONCALL, { body })));
      expect(decision.conclusion, body).toBe("failure");
      expect(decision.breakGlassRefusals, body).toEqual([]);
    }
    expect(breakGlassReason({ bodyFirstLine: `${BREAK_GLASS_MARKER} ${REASON}\r\nmore` })).toBe(REASON);
  });

  test("not enabled: without [break_glass], without an organization policy, or on a user-owned repository", () => {
    const noSection = withOrganizationPolicy(enabled(), BASE_ORGANIZATION_POLICY);
    const missing: Evidence = { ...enabled(), organizationPolicy: { kind: "missing" } };
    const userOwned: Evidence = { ...enabled(), repository: { ...enabled().repository, ownerType: "User" }, organizationPolicy: { kind: "missing" } };
    for (const evidence of [noSection, missing, userOwned]) {
      const decision = decide(withReviews(evidence, breakGlass(ONCALL)));
      expect(decision.conclusion).toBe("failure");
      expect(refusals(decision)).toEqual(["not_enabled"]);
    }
  });

  test("requests past MAX_BREAK_GLASS_REQUESTS are not judged, the most recent first", () => {
    const spam = Array.from({ length: MAX_BREAK_GLASS_REQUESTS }, (_, i) => breakGlass({ id: 100 + i, login: `spam${i}`, type: "User" }, { body: `${BREAK_GLASS_MARKER} short` }));
    const oldest = decide(withReviews(enabled(), breakGlass(ONCALL), ...spam));
    expect(oldest.conclusion).toBe("failure");
    expect(oldest.breakGlassRefusals.at(-1)).toMatchObject({ reviewer: "oncall", code: "too_many_requests" });
    const newest = decide(withReviews(enabled(), ...spam, breakGlass(ONCALL)));
    expect(newest.conclusion).toBe("success");
  });

  test("a body line longer than the bound is cut: the evidence keeps at most MAX_REVIEW_BODY_LINE_CHARS characters", () => {
    expect(firstLineOf("x".repeat(MAX_REVIEW_BODY_LINE_CHARS * 10))).toHaveLength(MAX_REVIEW_BODY_LINE_CHARS);
    expect(firstLineOf(`a\n${"x".repeat(MAX_REVIEW_BODY_LINE_CHARS * 10)}`)).toBe("a");
    // A pair of UTF-16 units is never split at the cut.
    expect(firstLineOf(`${"x".repeat(MAX_REVIEW_BODY_LINE_CHARS - 1)}🔥`)).toBe("x".repeat(MAX_REVIEW_BODY_LINE_CHARS - 1));
    const hostile = breakGlass(ONCALL, { body: `${BREAK_GLASS_MARKER} ${"y".repeat(MAX_REVIEW_BODY_LINE_CHARS * 50)}` });
    expect(decide(withReviews(enabled(), hostile)).breakGlass?.reason).toHaveLength(MAX_REVIEW_BODY_LINE_CHARS - BREAK_GLASS_MARKER.length - 1);
  });
});

describe("what an override lifts (item 3)", () => {
  test("an invalid code-owners line that would otherwise block", () => {
    const evidence = withCodeowners(enabled(), "* @acme/core\n/src/ @alice\n/broken/ not-an-owner\n");
    expect(decide(withReviews(evidence, approve(USERS.alice))).conclusion).toBe("failure");
    const decision = decide(withReviews(evidence, approve(USERS.alice), breakGlass(ONCALL)));
    expect(decision.conclusion).toBe("success");
    expect(decision.breakGlass?.unsatisfiedOwnerSets).toEqual([]);
    expect(decision.reasons.map((reason) => reason.code)).toEqual(["codeowners_invalid"]);
  });

  test("an owner's request for changes and required_approvals", () => {
    const blocked = decide(withReviews(enabled(), review(USERS.alice, "CHANGES_REQUESTED"), breakGlass(ONCALL)));
    expect(blocked.ownerSets[0]!.status).toBe("blocked");
    expect(blocked.conclusion).toBe("success");
    const two = withRepositoryPolicy(enabled(), "schema_version = 1\nenabled = true\nrequired_approvals = 2\n");
    expect(decide(withReviews(two, approve(USERS.alice), breakGlass(ONCALL))).conclusion).toBe("success");
  });

  test("a non-delegable path an App approved", () => {
    const evidence = withFiles(enabled(), [".forge/workflows/ci.yml"]);
    const decision = decide(withReviews(evidence, breakGlass(ONCALL)));
    expect(decision.conclusion).toBe("success");
  });

  test("it is not used when the owners' approvals already meet the requirements", () => {
    const decision = decide(withReviews(enabled(), approve(USERS.alice), breakGlass(ONCALL)));
    expect(decision.conclusion).toBe("success");
    expect(decision.breakGlass).toBeNull();
    expect(refusals(decision)).toEqual(["not_needed"]);
    expect(renderCheck(decision).title).toBe("All 1 owner set approved");
  });
});

describe("what an override never lifts (item 3)", () => {
  test("a shared head never succeeds", () => {
    const evidence: Evidence = { ...enabled(), sameHeadPullRequests: { complete: true, items: [{ number: 7, headSha: enabled().pullRequest.headSha }, { number: 8, headSha: enabled().pullRequest.headSha }] } };
    const decision = decide(withReviews(evidence, breakGlass(ONCALL)));
    expect(decision.conclusion).toBe("failure");
    expect(decision.sharedHeadWith).toEqual([8]);
  });

  test("incomplete evidence still fails closed: a transient gap retries, a bound fails", () => {
    const transient = decide({ ...withReviews(enabled(), breakGlass(ONCALL)), files: { complete: false, cause: "transient", detail: "HTTP 502" } });
    expect(transient.kind).toBe("retry");
    const tooMany = decide({ ...withReviews(enabled(), breakGlass(ONCALL)), pullRequest: { ...enabled().pullRequest, changedFiles: 3000 } });
    expect(tooMany.conclusion).toBe("failure");
    const unresolved = enabled();
    const noAlice = { ...unresolved, directory: { ...unresolved.directory, collaborators: { ...unresolved.directory.collaborators, alice: { kind: "incomplete" as const, cause: "inconsistent" as const, detail: "HTTP 403" } } } };
    expect(decide(withReviews(noAlice, approve(USERS.alice), breakGlass(ONCALL))).conclusion).toBe("failure");
  });

  test("a repository that does not enable the service still gets no check", () => {
    const evidence = withRepositoryPolicy(enabled(), "schema_version = 1\n");
    const decision = decide(withReviews(evidence, breakGlass(ONCALL)));
    expect(decision.kind).toBe("not_enabled");
    expect(decision.breakGlass).toBeNull();
  });
});

describe("lookups for an override (plan-lookups)", () => {
  test("the listed teams' memberships of a request only membership can refuse, and never the team's own facts", () => {
    const plan = planLookups(withReviews(enabled(), breakGlass(ONCALL)), DEFAULT_EVALUATION_SETTINGS);
    expect(plan.teams).toEqual([
      { team: "acme/incident", members: ["oncall"], info: false },
      { team: "acme/sre", members: ["oncall"], info: false },
    ]);
    const known = { ...enabled().directory, teams: { "acme/sre": { memberships: { oncall: { kind: "found" as const, value: { state: "active" } } } } } };
    expect(planLookups(withReviews(enabled(), breakGlass(ONCALL)), DEFAULT_EVALUATION_SETTINGS, known).teams).toEqual([{ team: "acme/incident", members: ["oncall"], info: false }]);
  });

  test("owner teams come before break-glass teams, so the fetcher's owner bound reaches the owners' facts first", () => {
    const evidence = withOrganizationPolicy(withFiles(enabled(), ["README.md"]), `${BASE_ORGANIZATION_POLICY}[break_glass]\nteams = ["aaa-on-call"]\n`);
    const plan = planLookups(withReviews(evidence, breakGlass(ONCALL)), DEFAULT_EVALUATION_SETTINGS);
    expect(plan.teams.map(({ team }) => team)).toEqual(["acme/core", "acme/aaa-on-call"]);
  });

  test("nothing for a request refused without them, or where break-glass is not enabled", () => {
    for (const evidence of [withReviews(enabled(), breakGlass(ONCALL, { commitId: OLD_HEAD })), withReviews(withOrganizationPolicy(enabled(), BASE_ORGANIZATION_POLICY), breakGlass(ONCALL))]) {
      expect(planLookups(evidence, DEFAULT_EVALUATION_SETTINGS).teams.filter(({ team }) => team === "acme/sre" || team === "acme/incident")).toEqual([]);
    }
  });

  test("a fetcher following the plan gets what the override needs, the review's edits included", () => {
    const fetched = directoryFromPlan(unedited(withReviews(enabled(), breakGlass(ONCALL))));
    expect(Object.keys(fetched.directory.reviewEdits ?? {})).toHaveLength(1);
    expect(evaluate(fetched, DEFAULT_EVALUATION_SETTINGS).conclusion).toBe("success");
  });

  test("the edits of every request that could override are planned together, in the first round, and never again", () => {
    const requests = [breakGlass(ONCALL), breakGlass(USERS.bob)];
    const evidence = withReviews(enabled(), ...requests);
    const plan = planLookups(evidence, DEFAULT_EVALUATION_SETTINGS);
    expect(plan.reviewEdits).toEqual(requests.map((r) => ({ reviewId: r.id, nodeId: r.nodeId! })).reverse()); // most recent first
    const asked = unedited(evidence).directory;
    expect(planLookups(evidence, DEFAULT_EVALUATION_SETTINGS, asked).reviewEdits).toBeUndefined();
  });

  test("no edits are planned without a request that could override: none at all, one refused without directory facts, or break-glass not enabled", () => {
    for (const evidence of [
      withReviews(enabled(), approve(USERS.alice)),
      withReviews(enabled(), breakGlass(ONCALL, { commitId: OLD_HEAD }), breakGlass(USERS.bob, { body: "break-glass: short" })),
      withReviews(withOrganizationPolicy(enabled(), BASE_ORGANIZATION_POLICY), breakGlass(ONCALL)),
    ]) {
      expect(planLookups(evidence, DEFAULT_EVALUATION_SETTINGS).reviewEdits).toBeUndefined();
    }
  });
});

describe("an edited review (a body that is not the reviewer's own)", () => {
  test("an override whose body was edited after it was submitted is refused as edited, and the check fails", () => {
    const request = breakGlass(ONCALL);
    const decision = decide(edited(withReviews(enabled(), request), request, "2026-11-28T10:11:12Z"));
    expect(decision.conclusion).toBe("failure");
    expect(decision.breakGlass).toBeNull();
    expect(decision.breakGlassRefusals).toMatchObject([{ reviewId: request.id, reviewer: "oncall", code: "edited" }]);
    expect(renderCheck(decision).summary).toContain("was edited after it was submitted");
  });

  test("edited is refused whatever the membership says, and another unedited request still overrides", () => {
    const editedRequest = breakGlass(USERS.bob);
    const request = breakGlass(ONCALL);
    const evidence = edited(withReviews(enabled({ oncall: { kind: "found", value: { state: "active" } }, bob: { kind: "incomplete", cause: "transient", detail: "503" } }), request, editedRequest), editedRequest);
    const decision = decide(evidence);
    expect(decision.conclusion).toBe("success");
    expect(decision.breakGlass?.reviewer).toBe("oncall");
    expect(refusals(decision)).toEqual(["edited"]);
  });

  test("edits not known fail closed as membership_incomplete: not looked up or inconsistent fails, transient retries", () => {
    const request = breakGlass(ONCALL);
    const evidence = withReviews(enabled(), request);
    const answered = (lookup: Lookup<{ lastEditedAt: string | null }> | undefined) => ({ ...evidence, directory: { ...evidence.directory, reviewEdits: lookup === undefined ? {} : { [String(request.id)]: lookup } } });
    for (const [lookup, kind, conclusion] of [
      [undefined, "conclusive", "failure"],
      [{ kind: "not_found" }, "conclusive", "failure"],
      [{ kind: "incomplete", cause: "inconsistent", detail: "POST /graphql: review 1 is missing from the answer" }, "conclusive", "failure"],
      [{ kind: "incomplete", cause: "transient", detail: "POST /graphql: the forge answered with errors (UNNAMED)" }, "retry", null],
    ] as const) {
      const decision = evaluate(answered(lookup), DEFAULT_EVALUATION_SETTINGS);
      expect({ lookup, kind: decision.kind, conclusion: decision.conclusion, refusals: refusals(decision), override: decision.breakGlass }).toEqual({ lookup, kind, conclusion, refusals: ["membership_incomplete"], override: null });
      expect(decision.reasons.map((reason) => reason.code)).toContain("directory_incomplete");
    }
  });

  test("a request without the forge's node ID cannot be asked about and fails closed", () => {
    const { nodeId: _nodeId, ...request } = breakGlass(ONCALL);
    const evidence = withReviews(enabled(), request);
    expect(planLookups(evidence, DEFAULT_EVALUATION_SETTINGS).reviewEdits).toBeUndefined();
    const decision = evaluate(evidence, DEFAULT_EVALUATION_SETTINGS);
    expect(decision.conclusion).toBe("failure");
    expect(refusals(decision)).toEqual(["membership_incomplete"]);
  });

  test("an edited request that is not needed changes nothing: the owners' approvals still succeed", () => {
    const request = breakGlass(ONCALL);
    const decision = decide(edited(withReviews(enabled(), approve(USERS.alice), request), request));
    expect(decision.conclusion).toBe("success");
    expect(refusals(decision)).toEqual(["edited"]);
  });
});

describe("the check output (item 3)", () => {
  test("the title says so; the summary names the reviewer, quotes the reason and lists the owner sets not satisfied by their owners", () => {
    const output = renderCheck(decide(withReviews(enabled(), breakGlass(ONCALL))));
    expect(output.title).toBe("Approved by break-glass override");
    expect(output.summary).toContain("<code>oncall</code>");
    expect(output.summary).toContain("<code>sre</code>");
    expect(output.summary).toContain("prod is down, one\\-line fix of the health check");
    expect(output.summary).toContain("Owner set 1");
    expect(output.summary).toContain("<code>\\@alice</code>");
  });

  test("the reason is escaped and at most MAX_RENDERED_BREAK_GLASS_REASON_CHARS characters are shown", () => {
    const hostile = `@everyone [click](https://evil.example) <img src=x> \u202e${"z".repeat(2000)}`;
    const output = renderCheck(decide(withReviews(enabled(), breakGlass(ONCALL, { body: `${BREAK_GLASS_MARKER} ${hostile}` }))));
    expect(output.summary).not.toMatch(/(?<!\\)@everyone/);
    expect(output.summary).not.toContain("[click](");
    expect(output.summary).not.toMatch(/(?<!\\)<img/);
    expect(output.summary).not.toContain("\u202e");
    expect(output.summary).toContain("u\\{202E\\}");
    const zs = output.summary.match(/z+/g)!.reduce((longest, run) => Math.max(longest, run.length), 0);
    expect(zs).toBeLessThan(MAX_RENDERED_BREAK_GLASS_REASON_CHARS);
    expect(zs).toBeGreaterThan(MAX_RENDERED_BREAK_GLASS_REASON_CHARS - 100);
    expect(output.summary).toContain("…");
  });

  test("a failing check lists the refused requests and why", () => {
    const output = renderCheck(decide(withReviews(enabled(), breakGlass(ONCALL, { commitId: OLD_HEAD }))));
    expect(output.title).not.toContain("break-glass");
    expect(output.summary).toContain("not the current head");
  });
});

describe("property: an override succeeds exactly when every rule of invocation holds and nothing it never lifts is present", () => {
  test("over generated requests and evidence", () => {
    // Each rule mostly holds, so that valid requests, alone and among every combination of what they never lift, are common.
    const mostly = <T>(good: T, bad: fc.Arbitrary<T>) => fc.oneof({ weight: 4, arbitrary: fc.constant(good) }, { weight: 1, arbitrary: bad });
    const request = fc.record({
      state: mostly("APPROVED", fc.constantFrom("COMMENTED", "CHANGES_REQUESTED", "DISMISSED")),
      onHead: mostly(true, fc.constant(false)),
      reasonLength: mostly(30, fc.integer({ min: 0, max: 40 })),
      membership: mostly("active", fc.constantFrom("pending", "not_found")),
      byAuthor: mostly(false, fc.constant(true)),
      replacedLater: mostly(false, fc.constant(true)),
    });
    const surroundings = fc.record({ sharedHead: fc.boolean(), invalidCodeowners: fc.boolean(), enabledSection: mostly(true, fc.constant(false)), tooManyFiles: fc.boolean() });
    let successes = 0;
    fc.assert(
      fc.property(request, surroundings, (r, around) => {
        const user = r.byAuthor ? { ...AUTHOR, type: "User" } : ONCALL;
        const membership: Lookup<Membership> = r.membership === "not_found" ? { kind: "not_found" } : { kind: "found", value: { state: r.membership } };
        let evidence = enabled({ [user.login]: membership });
        if (!around.enabledSection) evidence = withOrganizationPolicy(evidence, BASE_ORGANIZATION_POLICY);
        if (around.invalidCodeowners) evidence = withCodeowners(evidence, "* @acme/core\n/src/ @alice\n/broken/ not-an-owner\n");
        if (around.sharedHead) evidence = { ...evidence, sameHeadPullRequests: { complete: true, items: [{ number: 8, headSha: evidence.pullRequest.headSha }] } };
        if (around.tooManyFiles) evidence = { ...evidence, pullRequest: { ...evidence.pullRequest, changedFiles: 3000 } };
        const items = [breakGlass(user, { state: r.state, commitId: r.onHead ? evidence.pullRequest.headSha : OLD_HEAD, body: `${BREAK_GLASS_MARKER} ${"r".repeat(r.reasonLength)}` })];
        if (r.replacedLater) items.push(review(user, "APPROVED"));
        const decision = decide(withReviews(evidence, ...items));
        const valid = around.enabledSection && !r.replacedLater && !r.byAuthor && r.state === "APPROVED" && r.onHead && r.reasonLength >= 20 && r.membership === "active";
        const lifts = !around.sharedHead && !around.tooManyFiles;
        expect(decision.conclusion).toBe(valid && lifts ? "success" : "failure");
        expect(decision.breakGlass !== null).toBe(valid);
        if (decision.conclusion === "success") {
          successes++;
          expect(renderCheck(decision).title).toBe("Approved by break-glass override");
        }
      }),
      { numRuns: 400 },
    );
    expect(successes).toBeGreaterThan(10);
  });
});
