// planLookups: which directory facts the evaluation of this pull request still needs, so the evidence fetcher (server/forge)
// fetches those before calling evaluate(). Pure; takes the evidence without its directory part, and the facts fetched so far.
//
// Lazy (issue 18 item 5): facts are asked for only where an owner set is still undecided by the facts already known. The
// fetcher calls planLookups again with what it fetched until the plan is empty (a few rounds at most):
// - a set that a changes-requested reviewer already blocks (an eligible owner, known) needs nothing more;
// - otherwise every changes-requested reviewer's every route into the set is needed (a blocker must never be missed);
// - a set with enough approvals already proven needs no more approvers' facts; otherwise the cheap routes come first: the App
//   identity of bot approvals and, for approvers the set names as users, that user's permission and membership; the set's
//   teams (membership, then team and repository access for an active member) only when the cheap routes cannot make up the
//   required approvals, or were looked up and did not.
// Facts stay fresh: every evaluation looks up what it needs (DESIGN 7.1); nothing here is a cache. A fact left out is absent
// from the evidence, which evaluate() reads as unknown: it can only keep a set from succeeding, never make it succeed.
import { ownerKind } from "../policy/codeowners.ts";
import { analyze, type Analysis, type LatestReview, type OwnerGroup } from "./analyze.ts";
import { breakGlassRequests, breakGlassTeams } from "./break-glass.ts";
import { Directory } from "./eligibility.ts";
import type { DirectoryFacts, EvaluationSettings, Evidence } from "./evidence.ts";
import { onlyNotLookedUp, type Fact } from "./facts.ts";
import { classify, type ClassifiedReviews } from "./owner-sets.ts";

export interface LookupPlan {
  /** Logins needing `collaborators/{u}/permission`. */
  readonly collaborators: readonly string[];
  /** Logins needing `orgs/{owner}/memberships/{u}` (organization-owned repositories only). */
  readonly organizationMemberships: readonly string[];
  /**
   * Teams (`org/slug` as written after `@`) needing these members' memberships and, with `info`, the team and its repository
   * access: asked for only once a reviewer is known to be an active member (for anyone else they change nothing).
   */
  readonly teams: readonly { readonly team: string; readonly members: readonly string[]; readonly info: boolean }[];
  /** App slugs needing `GET /apps/{slug}`. */
  readonly apps: readonly string[];
  /** Bot logins `<slug>[bot]` needing `GET /users/{login}`. */
  readonly botUsers: readonly string[];
  /**
   * Break-glass requests that could override, whose review's edits are still to be asked for: all in one GraphQL query
   * (DirectoryFacts.reviewEdits). Absent unless a request could override, so no other evaluation asks.
   */
  readonly reviewEdits?: readonly { readonly reviewId: number; readonly nodeId: string }[];
}

const EMPTY: LookupPlan = { collaborators: [], organizationMemberships: [], teams: [], apps: [], botUsers: [] };
export const NO_DIRECTORY_FACTS: DirectoryFacts = Object.freeze({ collaborators: {}, organizationMemberships: {}, teams: {}, apps: {}, botUsers: {} });

/** Lookups gathered by owner and login, case-insensitively (the first spelling is kept). */
class PlanBuilder {
  private readonly users = new Map<string, string>();
  /** `owners`: the members looked up as owners through the team, whose active membership asks for the team's own facts. */
  private readonly teams = new Map<string, { team: string; members: Map<string, string>; owners: Set<string> }>();
  private readonly apps = new Set<string>();
  private readonly bots = new Set<string>();

  /** The lookups that tell whether `login` is an eligible owner through `owner` (`@user` or `@org/team`). */
  route(owner: string, login: string): void {
    if (ownerKind(owner) === "user") {
      if (!this.users.has(login.toLowerCase())) this.users.set(login.toLowerCase(), login);
      return;
    }
    this.membership(owner.slice(1), login).owners.add(login.toLowerCase());
  }

  /**
   * `login`'s membership in `team` (`org/slug`) alone: a break-glass team (DESIGN 3.11), whose visibility and repository
   * access are not required, so they are not asked for on this member's account.
   */
  membership(team: string, login: string): { owners: Set<string> } {
    const key = team.toLowerCase();
    let entry = this.teams.get(key);
    if (entry === undefined) {
      entry = { team, members: new Map(), owners: new Set() };
      this.teams.set(key, entry);
    }
    if (!entry.members.has(login.toLowerCase())) entry.members.set(login.toLowerCase(), login);
    return entry;
  }

  app(slug: string, botLogin: string): void {
    this.apps.add(slug);
    this.bots.add(botLogin);
  }

  /** The plan, without the facts `known` already holds (compared case-insensitively, as evaluate() reads them). */
  build(known: DirectoryFacts, organizationOwned: boolean): LookupPlan {
    const has = (record: Readonly<Record<string, unknown>>) => {
      const keys = new Set(Object.keys(record).map((key) => key.toLowerCase()));
      return (key: string) => keys.has(key.toLowerCase());
    };
    const knownCollaborator = has(known.collaborators);
    const knownMembership = has(known.organizationMemberships);
    const knownTeam = new Map(Object.entries(known.teams).map(([team, facts]) => [team.toLowerCase(), facts]));
    const knownApp = has(known.apps);
    const knownBot = has(known.botUsers);
    const logins = [...this.users.values()].sort();
    const teams: { team: string; members: string[]; info: boolean; owner: boolean }[] = [];
    for (const entry of this.teams.values()) {
      const facts = knownTeam.get(entry.team.toLowerCase());
      const member = facts ? has(facts.memberships) : () => false;
      const members = [...entry.members.values()].filter((login) => !member(login)).sort();
      // Memberships first; the team itself (privacy, repository access) once one of these reviewers is an active member.
      const active = facts !== undefined && [...entry.members.values()].some((login) => entry.owners.has(login.toLowerCase()) && isActive(facts.memberships, login));
      const info = active && (facts.team === undefined || facts.repository === undefined);
      if (members.length > 0 || info) teams.push({ team: entry.team, members, info, owner: entry.owners.size > 0 });
    }
    return {
      collaborators: logins.filter((login) => !knownCollaborator(login)),
      organizationMemberships: organizationOwned ? logins.filter((login) => !knownMembership(login)) : [],
      // Owner teams first, then teams asked about only for a break-glass request: the fetcher's bound on owners resolved
      // (MAX_RESOLVED_OWNERS, in plan order) reaches the owners' facts before an override request's.
      teams: teams.sort((a, b) => (a.owner !== b.owner ? (a.owner ? -1 : 1) : a.team < b.team ? -1 : 1)).map(({ team, members, info }) => ({ team, members, info })),
      apps: [...this.apps].filter((slug) => !knownApp(slug)).sort(),
      botUsers: [...this.bots].filter((login) => !knownBot(login)).sort(),
    };
  }
}

/** Whether the memberships record `login` (case-insensitively) as an active member. */
function isActive(memberships: DirectoryFacts["teams"][string]["memberships"], login: string): boolean {
  const key = Object.keys(memberships).find((candidate) => candidate.toLowerCase() === login.toLowerCase());
  const lookup = key === undefined ? undefined : memberships[key];
  return lookup?.kind === "found" && lookup.value.state === "active";
}

/** The routes through which `login` may be an owner of the set: `@login` itself and every team of the set. */
function routesOf(group: OwnerGroup, login: string): { user: string | null; teams: string[] } {
  let user: string | null = null;
  const teams: string[] = [];
  for (const owner of group.owners) {
    const kind = ownerKind(owner);
    if (kind === "user" && owner.slice(1).toLowerCase() === login.toLowerCase()) user = owner;
    else if (kind === "team") teams.push(owner);
  }
  return { user, teams };
}

function planSet(group: OwnerGroup, analysis: Analysis, evidence: Omit<Evidence, "directory">, reviews: ClassifiedReviews, directory: Directory, plan: PlanBuilder): void {
  const eligible = (entry: LatestReview): Fact => directory.humanOwnerOf(group, entry.review.user).fact;
  if (reviews.blockers.some((entry) => eligible(entry).value === "yes")) return; // blocked, whatever else holds
  for (const entry of reviews.blockers) {
    const routes = routesOf(group, entry.review.user.login);
    if (routes.user !== null) plan.route(routes.user, entry.review.user.login);
    for (const team of routes.teams) plan.route(team, entry.review.user.login);
  }
  let approvals = 0;
  const bots: LatestReview[] = []; // bot approvals whose App identity is still to be looked up
  for (const entry of reviews.botApprovers) {
    const app = directory.appApproves({
      user: entry.review.user, group, trustedApps: analysis.trustedApps, delegations: analysis.delegations,
      nonDelegable: analysis.nonDelegable, labels: evidence.pullRequest.labels,
    });
    if (app.fact.value === "yes") approvals++;
    else if (onlyNotLookedUp(app.fact) && app.app !== null) bots.push(entry);
  }
  const candidates: LatestReview[] = []; // human approvals not counted yet
  for (const entry of reviews.humanApprovers) {
    if (eligible(entry).value === "yes") approvals++;
    else candidates.push(entry);
  }
  if (approvals >= analysis.requiredApprovals) return; // satisfied unless a blocker's facts (planned above) say otherwise
  // Cheap routes first: the App identity of bot approvals and the user route of approvers the set names as users. Teams only
  // when those cannot reach the required approvals (or have been looked up and did not).
  const asUser = candidates.filter((entry) => routesOf(group, entry.review.user.login).user !== null && onlyNotLookedUp(directory.userEligible(entry.review.user.login)));
  for (const entry of bots) plan.app(entry.review.user.login.slice(0, -"[bot]".length), entry.review.user.login);
  for (const entry of asUser) plan.route(routesOf(group, entry.review.user.login).user!, entry.review.user.login);
  if (approvals + bots.length + asUser.length >= analysis.requiredApprovals) return;
  for (const entry of candidates) for (const team of routesOf(group, entry.review.user.login).teams) plan.route(team, entry.review.user.login);
}

/**
 * The directory facts the evaluation still needs beyond `known` (the facts fetched so far; none at first). Empty once the
 * evidence holds every fact that can change a decision.
 */
export function planLookups(evidence: Omit<Evidence, "directory">, settings: EvaluationSettings, known: DirectoryFacts = NO_DIRECTORY_FACTS): LookupPlan {
  const analysis = analyze(evidence, settings);
  if (analysis.kind !== "analysed" || analysis.latestReviews === null) return EMPTY;
  const reviews = classify(analysis.latestReviews, evidence);
  const directory = new Directory(known, analysis.organizationOwned);
  const plan = new PlanBuilder();
  for (const group of analysis.groups) planSet(group, analysis, evidence, reviews, directory, plan);
  // Break-glass (DESIGN 3.11): the listed teams' memberships of each reviewer whose request only membership and edits can
  // still refuse, and (in the same round, one query for all of them) whether their reviews were edited.
  const teams = breakGlassTeams(evidence, analysis);
  const candidates = breakGlassRequests(evidence, analysis).filter((request) => request.refusal === null);
  for (const request of candidates) for (const { team } of teams) plan.membership(team, request.review.user.login);
  const editsKnown = new Set(Object.keys(known.reviewEdits ?? {}));
  // A request without a node ID cannot be asked about: its edits stay unknown and it fails closed.
  const reviewEdits = editsKnown.size > 0 ? [] : candidates.flatMap(({ review }) => (typeof review.nodeId === "string" && review.nodeId !== "" ? [{ reviewId: review.id, nodeId: review.nodeId }] : []));
  const built = plan.build(known, analysis.organizationOwned);
  return reviewEdits.length > 0 ? { ...built, reviewEdits } : built;
}
