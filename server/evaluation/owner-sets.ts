// Owner-set evaluation (DESIGN 3.2 rules 2-5): each distinct owner set against the reviews, independently (invariant 5).
// Each owner's eligible approvers and blockers are computed once per evaluation and sets take the union, so the cost grows
// with owners and reviewers, not with their product per set.
import { MAX_LISTED_REVIEWS_PER_SET } from "../policy/bounds.ts";
import { ownerKind } from "../policy/codeowners.ts";
import type { Analysis, LatestReview, OwnerGroup } from "./analyze.ts";
import { t, type CountedApproval, type NotCounted, type OwnerSetResult, type Text } from "./decision.ts";
import type { Directory } from "./eligibility.ts";
import type { Evidence } from "./evidence.ts";
import { onlyNotLookedUp, type Fact, type FactGap } from "./facts.ts";

const short = (sha: string | null) => (sha === null ? "an unknown commit" : sha.slice(0, 7));

/** Reviews sorted once per evaluation by what they can do (DESIGN 3.2 rule 3). */
export interface ClassifiedReviews {
  /** Latest review APPROVED on the head by a user account other than the author: may count through an owner. */
  readonly humanApprovers: readonly LatestReview[];
  /** Latest review APPROVED on the head by a bot account: may count through an App delegation. */
  readonly botApprovers: readonly LatestReview[];
  /** Latest non-comment review CHANGES_REQUESTED (any commit), not by the author: blocks where the reviewer is an owner. */
  readonly blockers: readonly LatestReview[];
  /** Every latest APPROVED or DISMISSED review, counted or not (for "did not count"). */
  readonly approvals: readonly LatestReview[];
}

export function classify(latest: readonly LatestReview[], evidence: Pick<Evidence, "pullRequest">): ClassifiedReviews {
  const head = evidence.pullRequest.headSha;
  const authorId = evidence.pullRequest.author.id;
  const humanApprovers: LatestReview[] = [];
  const botApprovers: LatestReview[] = [];
  const blockers: LatestReview[] = [];
  const approvals: LatestReview[] = [];
  for (const entry of latest) {
    const { review, state } = entry;
    if (state === "APPROVED" || state === "DISMISSED") approvals.push(entry);
    if (review.user.id === authorId) continue;
    if (state === "CHANGES_REQUESTED" && review.user.type === "User") blockers.push(entry);
    if (state === "APPROVED" && review.commitId === head) {
      if (review.user.type === "User") humanApprovers.push(entry);
      else if (review.user.type === "Bot") botApprovers.push(entry);
    }
  }
  return { humanApprovers, botApprovers, blockers, approvals };
}

/** What one owner can contribute: reviewers eligible through it (yes) and those whose eligibility is unknown. */
interface OwnerReach {
  readonly approveYes: readonly LatestReview[];
  readonly approveUnknown: ReadonlyMap<number, readonly FactGap[]>;
  readonly blockYes: readonly LatestReview[];
  readonly blockUnknown: ReadonlyMap<number, readonly FactGap[]>;
}

const NO_REACH: OwnerReach = { approveYes: [], approveUnknown: new Map(), blockYes: [], blockUnknown: new Map() };

function reachOf(owner: string, reviews: ClassifiedReviews, directory: Directory): OwnerReach {
  const kind = ownerKind(owner);
  if (kind !== "user" && kind !== "team") return NO_REACH; // email owners cannot be resolved (DESIGN 3.2 rule 4)
  const login = owner.slice(1).toLowerCase();
  const factFor = (entry: LatestReview): Fact | null => {
    const user = entry.review.user;
    if (kind === "user") return user.login.toLowerCase() === login ? directory.userEligible(user.login) : null;
    return directory.teamGrants(owner.slice(1), user.login);
  };
  const split = (entries: readonly LatestReview[]) => {
    const yes: LatestReview[] = [];
    const unknown = new Map<number, readonly FactGap[]>();
    for (const entry of entries) {
      const fact = factFor(entry);
      if (fact === null) continue;
      if (fact.value === "yes") yes.push(entry);
      else if (fact.value === "unknown") unknown.set(entry.review.user.id, fact.gaps);
    }
    return { yes, unknown };
  };
  const approve = split(reviews.humanApprovers);
  const block = split(reviews.blockers);
  return { approveYes: approve.yes, approveUnknown: approve.unknown, blockYes: block.yes, blockUnknown: block.unknown };
}

/** The identifiers a counted approval carries for decision records (DESIGN 3.10). */
function reviewFacts({ review }: Pick<LatestReview, "review">): Pick<CountedApproval, "reviewId" | "reviewerId" | "commitId" | "submittedAt"> {
  return { reviewId: review.id, reviewerId: review.user.id, commitId: review.commitId, submittedAt: review.submittedAt ?? null };
}

interface SetContext {
  readonly analysis: Analysis;
  readonly evidence: Evidence;
  readonly directory: Directory;
  readonly reviews: ClassifiedReviews;
  readonly reach: (owner: string) => OwnerReach;
}

function evaluateSet(group: OwnerGroup, context: SetContext): { result: OwnerSetResult; gaps: FactGap[] } {
  const { analysis, evidence, directory, reviews } = context;
  const head = evidence.pullRequest.headSha;
  const authorId = evidence.pullRequest.author.id;
  const countedIds = new Set<number>();
  const counted: CountedApproval[] = [];
  const blockedIds = new Set<number>();
  const approverGaps: FactGap[] = [];
  const blockerGaps: FactGap[] = [];
  const reaches = group.owners.map((owner) => [owner, context.reach(owner)] as const);

  for (const [owner, reach] of reaches) {
    for (const entry of reach.approveYes) {
      const user = entry.review.user;
      if (countedIds.has(user.id)) continue;
      countedIds.add(user.id);
      const team = ownerKind(owner) === "team";
      if (counted.length < MAX_LISTED_REVIEWS_PER_SET) counted.push({ reviewer: user.login, via: { kind: team ? "team" : "user", owner }, ...reviewFacts(entry), rule: team ? "team_membership" : "direct_owner" });
    }
    for (const entry of reach.blockYes) blockedIds.add(entry.review.user.id);
  }
  // App approvals (DESIGN 3.2 rule 5): few bot reviews, each checked against this set's paths.
  const botWhy = new Map<number, Text>();
  const botFacts = new Map<number, Fact>(); // bot reviews whose App identity is unknown
  for (const { review } of reviews.botApprovers) {
    const app = directory.appApproves({
      user: review.user,
      group,
      trustedApps: analysis.trustedApps,
      delegations: analysis.delegations,
      nonDelegable: analysis.nonDelegable,
      labels: evidence.pullRequest.labels,
    });
    if (app.fact.value === "yes" && app.app !== null) {
      if (countedIds.has(review.user.id)) continue;
      countedIds.add(review.user.id);
      if (counted.length < MAX_LISTED_REVIEWS_PER_SET) counted.push({ reviewer: review.user.login, via: { kind: "app", app: app.app }, ...reviewFacts({ review }), rule: "app_delegation" });
    } else if (app.fact.value === "unknown") {
      approverGaps.push(...app.fact.gaps);
      botFacts.set(review.user.id, app.fact);
    } else botWhy.set(review.user.id, app.fact.value === "no" ? app.fact.why : t`not counted`);
  }
  for (const [, reach] of reaches) {
    for (const [id, gaps] of reach.approveUnknown) if (!countedIds.has(id)) approverGaps.push(...gaps);
    for (const [id, gaps] of reach.blockUnknown) if (!blockedIds.has(id)) blockerGaps.push(...gaps);
  }
  // Stands whatever commit it was made on, until the reviewer approves or it is dismissed (DESIGN 3.6).
  const blockedBy = reviews.blockers.filter((entry) => blockedIds.has(entry.review.user.id)).map((entry) => entry.review.user.login);

  const required = analysis.requiredApprovals;
  const approvals = countedIds.size;
  let status: OwnerSetResult["status"];
  let gaps: FactGap[] = [];
  if (analysis.latestReviews === null) status = "unknown";
  else if (blockedBy.length > 0) status = "blocked";
  else if (blockerGaps.length > 0) {
    status = "unknown";
    gaps = blockerGaps;
  } else if (approvals >= required) status = "satisfied";
  else if (approverGaps.length > 0) {
    status = "unknown";
    gaps = approverGaps;
  } else status = "missing";

  // Why the other approvals did not count: the first MAX_LISTED_REVIEWS_PER_SET in review order, the rest counted. Facts the
  // fetcher did not look up because this set was decided without them (planLookups) are said to be so.
  const decided = status === "satisfied" || status === "blocked";
  const unknownWhy = (fact: Fact, otherwise: Text) => (decided && onlyNotLookedUp(fact) ? t`not looked up: this owner set was decided without it` : otherwise);
  const notCounted: NotCounted[] = [];
  for (const { review, state } of reviews.approvals) {
    if (notCounted.length >= MAX_LISTED_REVIEWS_PER_SET) break;
    const user = review.user;
    if (countedIds.has(user.id)) continue;
    let why: Text;
    if (state === "DISMISSED") why = t`the latest review was dismissed`;
    else if (user.id === authorId) why = t`the author cannot approve their own pull request`;
    else if (review.commitId !== head) why = t`approved ${short(review.commitId)}, not the current head ${short(head)}`; // invariant 2
    else if (botWhy.has(user.id)) why = botWhy.get(user.id)!;
    else if (botFacts.has(user.id)) why = unknownWhy(botFacts.get(user.id)!, t`the App's identity could not be established`);
    else {
      const human = directory.humanOwnerOf(group, user);
      why = human.fact.value === "no" ? human.fact.why : unknownWhy(human.fact, t`eligibility could not be established`);
    }
    notCounted.push({ reviewer: user.login, why });
  }
  const notCountedOmitted = reviews.approvals.length - countedIds.size - notCounted.length;

  return {
    result: {
      owners: group.owners,
      patterns: group.patterns,
      paths: group.paths,
      required,
      approvals,
      counted,
      notCounted,
      notCountedOmitted,
      blockedBy,
      unresolved: gaps.slice(0, MAX_LISTED_REVIEWS_PER_SET).map((gap) => gap.message),
      nonDelegablePaths: group.paths.filter((path) => analysis.nonDelegable.isNonDelegable(path)),
      status,
    },
    gaps,
  };
}

/** Evaluates every owner set of the analysis; returns the results in set order and the gaps that could change them. */
export function evaluateOwnerSets(analysis: Analysis, evidence: Evidence, directory: Directory): { sets: OwnerSetResult[]; gaps: FactGap[] } {
  const reviews = classify(analysis.latestReviews ?? [], evidence);
  const reaches = new Map<string, OwnerReach>();
  const context: SetContext = {
    analysis,
    evidence,
    directory,
    reviews,
    reach: (owner) => {
      const key = owner.toLowerCase();
      let reach = reaches.get(key);
      if (reach === undefined) {
        reach = reachOf(owner, reviews, directory);
        reaches.set(key, reach);
      }
      return reach;
    },
  };
  const sets: OwnerSetResult[] = [];
  const gaps: FactGap[] = [];
  for (const group of analysis.groups) {
    const evaluated = evaluateSet(group, context);
    sets.push(evaluated.result);
    gaps.push(...evaluated.gaps);
  }
  return { sets, gaps };
}
