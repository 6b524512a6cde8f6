// evaluate(evidence, settings) → Decision: the whole approval decision, pure (DESIGN 2, 3.2, 3.6; STYLE 1-2).
// Evidence is complete before this runs (or says where it is not); nothing here performs I/O or reads the clock.
import { MAX_MATCH_STEPS } from "../policy/bounds.ts";
import { MatchBudget, MatchBudgetExceeded } from "../policy/match-budget.ts";
import { analyze, matchingBudgetReason } from "./analyze.ts";
import { judgeBreakGlass } from "./break-glass.ts";
import { t, type BreakGlassOverride, type BreakGlassRefusal, type Decision, type OwnerSetResult, type ReasonCode, type ResultNode, type Text } from "./decision.ts";
import { Directory } from "./eligibility.ts";
import type { EvaluationSettings, Evidence } from "./evidence.ts";
import type { FactGap } from "./facts.ts";
import { evaluateOwnerSets } from "./owner-sets.ts";
import { suggestReviewers } from "./suggest.ts";

function node(name: string, status: ResultNode["status"], description: Text, children: ResultNode[] = []): ResultNode {
  return { name, status, description, children };
}

function setNode(set: OwnerSetResult, index: number): ResultNode {
  const status = set.status === "satisfied" ? "passed" : set.status === "unknown" ? "pending" : "failed";
  const description =
    set.status === "blocked"
      ? t`changes requested by ${set.blockedBy.join(", ")}`
      : set.status === "unknown"
        ? t`eligibility could not be established`
        : t`${String(set.approvals)} of ${String(set.required)} approvals`;
  return node(`owner set ${index + 1}: ${set.owners.join(" ")}`, status, description);
}

/** `budget`: the path-matching steps this evaluation may spend (MAX_MATCH_STEPS; tests pass their own to probe the bound). */
export function evaluate(evidence: Evidence, settings: EvaluationSettings, budget = new MatchBudget(MAX_MATCH_STEPS)): Decision {
  const pr = evidence.pullRequest;
  const base = {
    checkName: settings.checkName,
    pullRequest: pr.number,
    headSha: pr.headSha,
    insecureChangesAllowed: settings.allowInsecureChanges,
  };
  const analysis = analyze(evidence, settings, budget);
  if (analysis.kind === "not_enabled") {
    return {
      ...base,
      kind: "not_enabled",
      conclusion: null,
      reasons: [{ code: "not_enabled", message: analysis.why, transient: false }],
      ownerSets: [],
      unownedPathCount: 0,
      sharedHeadWith: [],
      suggestedReviewers: [],
      codeownersPath: null,
      result: node("repository policy", "skipped", analysis.why),
      breakGlass: null,
      breakGlassRefusals: [],
    };
  }
  if (analysis.kind === "retry") {
    return {
      ...base,
      kind: "retry",
      conclusion: null,
      reasons: analysis.reasons,
      ownerSets: [],
      unownedPathCount: 0,
      sharedHeadWith: [],
      suggestedReviewers: [],
      codeownersPath: null,
      result: node("evidence", "pending", t`evidence could not be read completely; the evaluation will be retried`),
      breakGlass: null,
      breakGlassRefusals: [],
    };
  }

  const directory = new Directory(evidence.directory, analysis.organizationOwned);
  const reasons = [...analysis.reasons];
  let ownerSets: OwnerSetResult[] = [];
  let gaps: FactGap[] = [];
  try {
    ({ sets: ownerSets, gaps } = evaluateOwnerSets(analysis, evidence, directory));
  } catch (error) {
    if (!(error instanceof MatchBudgetExceeded)) throw error;
    // The delegation and guardrail checks ran out of the budget the CODEOWNERS match left: no partial owner sets.
    reasons.push(matchingBudgetReason(budget));
  }
  if (gaps.length > 0) {
    const transient = gaps.filter((gap) => gap.cause === "transient");
    const permanent = gaps.filter((gap) => gap.cause !== "transient");
    if (permanent.length > 0) reasons.push({ code: "directory_incomplete", message: t`some owners could not be resolved`, transient: false, details: permanent.map((gap) => gap.message).slice(0, 50) });
    if (transient.length > 0) reasons.push({ code: "directory_incomplete", message: t`some directory facts could not be read`, transient: true, details: transient.map((gap) => gap.message).slice(0, 50) });
  }

  // Break-glass (DESIGN 3.11): needed unless the decision succeeds without it. It then meets the approval requirements
  // whatever else fails (the record says so); an unknown membership of a request that could decide it fails closed like an
  // owner team's.
  const needed = ownerSets.some((set) => set.status !== "satisfied") || reasons.length > 0;
  const breakGlass = judgeBreakGlass({ evidence, analysis, directory, ownerSets, needed });
  if (breakGlass.gaps.length > 0) {
    const transient = breakGlass.gaps.filter((gap) => gap.cause === "transient");
    const permanent = breakGlass.gaps.filter((gap) => gap.cause !== "transient");
    if (permanent.length > 0) reasons.push({ code: "directory_incomplete", message: t`the team membership of a break-glass reviewer, or whether their review was edited, could not be established`, transient: false, details: permanent.map((gap) => gap.message).slice(0, 50) });
    if (transient.length > 0) reasons.push({ code: "directory_incomplete", message: t`the team membership of a break-glass reviewer, or whether their review was edited, could not be read`, transient: true, details: transient.map((gap) => gap.message).slice(0, 50) });
  }
  const override = breakGlass.override;
  // An override meets the approval requirements (owner sets its owners did not satisfy, required_approvals, delegation and
  // non-delegable rules, an invalid code-owners line) and nothing else: every other reason still fails closed.
  const lifted = (code: ReasonCode) => override !== null && OVERRIDDEN_REASONS.has(code);
  const permanentFailure = reasons.some((reason) => !reason.transient && !lifted(reason.code));
  const transientGap = reasons.some((reason) => reason.transient);
  const allSatisfied = ownerSets.every((set) => set.status === "satisfied" || (override !== null && (set.status === "missing" || set.status === "blocked")));
  const kind: Decision["kind"] = transientGap && !permanentFailure ? "retry" : "conclusive";
  const conclusion = kind === "retry" ? null : !permanentFailure && allSatisfied ? "success" : "failure";
  const suggestedReviewers = suggestReviewers(ownerSets, pr.author.login);

  const evidenceNode = node(
    "evidence and policy",
    reasons.length === 0 ? "passed" : permanentFailure ? "failed" : "pending",
    reasons.length === 0 ? t`complete and valid` : [`${reasons.length} reason${reasons.length === 1 ? "" : "s"} this cannot succeed`],
    reasons.map((reason) => node(reason.code, reason.transient ? "pending" : "failed", reason.message)),
  );
  const setsNode = node(
    "owner sets",
    ownerSets.every((set) => set.status === "satisfied") ? "passed" : ownerSets.some((set) => set.status === "unknown") ? "pending" : "failed",
    t`${String(ownerSets.filter((set) => set.status === "satisfied").length)} of ${String(ownerSets.length)} satisfied`,
    ownerSets.map(setNode),
  );
  return {
    ...base,
    kind,
    conclusion,
    reasons,
    ownerSets,
    unownedPathCount: analysis.unownedPathCount,
    sharedHeadWith: analysis.sharedHeadWith,
    suggestedReviewers,
    codeownersPath: analysis.codeownersPath,
    result: node("code-owner approval", conclusion === "success" ? "passed" : conclusion === "failure" ? "failed" : "pending", t``, [evidenceNode, setsNode, ...breakGlassNodes(override, breakGlass.refusals)]),
    breakGlass: override,
    breakGlassRefusals: breakGlass.refusals,
  };
}

/** Reasons a break-glass override lifts: the approval requirements' own (DESIGN 3.11). */
const OVERRIDDEN_REASONS: ReadonlySet<ReasonCode> = new Set<ReasonCode>(["codeowners_invalid"]);

function breakGlassNodes(override: BreakGlassOverride | null, refusals: readonly BreakGlassRefusal[]): ResultNode[] {
  if (override === null && refusals.length === 0) return [];
  const children = refusals.map((refusal) => node(`review ${refusal.reviewId} by ${refusal.reviewer}: ${refusal.code}`, "skipped", refusal.message));
  const description = override === null ? t`no request overrides` : t`${override.reviewer} (member of ${override.team}) overrode the approval requirements: ${override.reason}`;
  return [node("break-glass override", override === null ? "skipped" : "passed", description, children)];
}
