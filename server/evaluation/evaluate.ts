// evaluate(evidence, settings) → Decision: the whole approval decision, pure (DESIGN 2, 3.2, 3.6; STYLE 1-2).
// Evidence is complete before this runs (or says where it is not); nothing here performs I/O or reads the clock.
import { analyze, type Analysis, type OwnerGroup } from "./analyze.ts";
import { t, type CountedApproval, type Decision, type NotCounted, type OwnerSetResult, type Reason, type ResultNode, type Text } from "./decision.ts";
import { Directory } from "./eligibility.ts";
import type { EvaluationSettings, Evidence } from "./evidence.ts";
import type { Fact, FactGap } from "./facts.ts";
import { suggestReviewers } from "./suggest.ts";

const short = (sha: string | null) => (sha === null ? "an unknown commit" : sha.slice(0, 7));

function evaluateSet(group: OwnerGroup, analysis: Analysis, evidence: Evidence, directory: Directory): { result: OwnerSetResult; gaps: FactGap[] } {
  const head = evidence.pullRequest.headSha;
  const authorId = evidence.pullRequest.author.id;
  const counted: CountedApproval[] = [];
  const notCounted: NotCounted[] = [];
  const blockedBy: string[] = [];
  const approverGaps: FactGap[] = [];
  const blockerGaps: FactGap[] = [];
  const countedIds = new Set<number>();
  const nonDelegablePaths = group.paths.filter((path) => analysis.nonDelegable.isNonDelegable(path));
  const collect = (into: FactGap[], fact: Fact) => {
    if (fact.value === "unknown") into.push(...fact.gaps);
  };

  for (const { review, state } of analysis.latestReviews ?? []) {
    const user = review.user;
    if (user.id === authorId) {
      if (state === "APPROVED") notCounted.push({ reviewer: user.login, why: t`the author cannot approve their own pull request` });
      continue;
    }
    if (state === "CHANGES_REQUESTED") {
      // Stands whatever commit it was made on, until the reviewer approves or it is dismissed (DESIGN 3.6).
      const owner = directory.humanOwnerOf(group, user);
      if (owner.fact.value === "yes") blockedBy.push(user.login);
      else collect(blockerGaps, owner.fact);
      continue;
    }
    if (state !== "APPROVED") continue; // DISMISSED: neither approves nor blocks
    if (review.commitId !== head) {
      // Invariant 2: an approval of another commit never counts, whoever gave it.
      notCounted.push({ reviewer: user.login, why: t`approved ${short(review.commitId)}, not the current head ${short(head)}` });
      continue;
    }
    const human = directory.humanOwnerOf(group, user);
    const app =
      user.type === "Bot"
        ? directory.appApproves({
            user,
            group,
            trustedApps: analysis.trustedApps,
            delegations: analysis.delegations,
            nonDelegable: analysis.nonDelegable,
            labels: evidence.pullRequest.labels,
          })
        : null;
    if (human.fact.value === "yes" && human.via !== null) {
      if (!countedIds.has(user.id)) counted.push({ reviewer: user.login, via: human.via });
      countedIds.add(user.id);
      continue;
    }
    if (app !== null && app.fact.value === "yes" && app.app !== null) {
      if (!countedIds.has(user.id)) counted.push({ reviewer: user.login, via: { kind: "app", app: app.app } });
      countedIds.add(user.id);
      continue;
    }
    collect(approverGaps, human.fact);
    if (app !== null) collect(approverGaps, app.fact);
    const why = app !== null && app.fact.value === "no" ? app.fact.why : human.fact.value === "no" ? human.fact.why : t`eligibility could not be established`;
    notCounted.push({ reviewer: user.login, why });
  }

  const required = analysis.requiredApprovals;
  let status: OwnerSetResult["status"];
  let gaps: FactGap[] = [];
  if (analysis.latestReviews === null) {
    status = "unknown";
  } else if (blockedBy.length > 0) status = "blocked";
  else if (blockerGaps.length > 0) {
    status = "unknown";
    gaps = blockerGaps;
  } else if (counted.length >= required) status = "satisfied";
  else if (approverGaps.length > 0) {
    status = "unknown";
    gaps = approverGaps;
  } else status = "missing";

  return {
    result: {
      owners: group.owners,
      paths: group.paths,
      required,
      counted,
      notCounted,
      blockedBy,
      unresolved: gaps.map((gap) => gap.message),
      nonDelegablePaths,
      status,
    },
    gaps,
  };
}

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
        : t`${String(set.counted.length)} of ${String(set.required)} approvals`;
  return node(`owner set ${index + 1}: ${set.owners.join(" ")}`, status, description);
}

export function evaluate(evidence: Evidence, settings: EvaluationSettings): Decision {
  const pr = evidence.pullRequest;
  const base = {
    checkName: settings.checkName,
    pullRequest: pr.number,
    headSha: pr.headSha,
    insecureChangesAllowed: settings.allowInsecureChanges,
  };
  const analysis = analyze(evidence, settings);
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
    };
  }

  const directory = new Directory(evidence.directory, analysis.organizationOwned);
  const reasons = [...analysis.reasons];
  const ownerSets: OwnerSetResult[] = [];
  const gaps: FactGap[] = [];
  for (const group of analysis.groups) {
    const evaluated = evaluateSet(group, analysis, evidence, directory);
    ownerSets.push(evaluated.result);
    gaps.push(...evaluated.gaps);
  }
  if (gaps.length > 0) {
    const transient = gaps.filter((gap) => gap.cause === "transient");
    const permanent = gaps.filter((gap) => gap.cause !== "transient");
    if (permanent.length > 0) reasons.push({ code: "directory_incomplete", message: t`some owners could not be resolved`, transient: false, details: permanent.map((gap) => gap.message).slice(0, 50) });
    if (transient.length > 0) reasons.push({ code: "directory_incomplete", message: t`some directory facts could not be read`, transient: true, details: transient.map((gap) => gap.message).slice(0, 50) });
  }

  const permanentFailure = reasons.some((reason) => !reason.transient);
  const transientGap = reasons.some((reason) => reason.transient);
  const allSatisfied = ownerSets.every((set) => set.status === "satisfied");
  const kind: Decision["kind"] = transientGap && !permanentFailure ? "retry" : "conclusive";
  const conclusion = kind === "retry" ? null : !permanentFailure && allSatisfied ? "success" : "failure";
  const suggestedReviewers = suggestReviewers(ownerSets, pr.author.login);

  const evidenceNode = node(
    "evidence and policy",
    reasons.length === 0 ? "passed" : permanentFailure ? "failed" : "pending",
    reasons.length === 0 ? t`complete and valid` : reasons[0]!.message,
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
    result: node("code-owner approval", conclusion === "success" ? "passed" : conclusion === "failure" ? "failed" : "pending", t``, [evidenceNode, setsNode]),
  };
}
