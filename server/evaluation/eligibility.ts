// Who may approve for an owner set, revalidated at each evaluation from directory facts (DESIGN 3.2 rules 4-5, 3.6).
import { ownerKind } from "../policy/codeowners.ts";
import type { NonDelegableSet } from "../policy/non-delegable.ts";
import type { Delegation, OwnerGroup } from "./analyze.ts";
import { t, type Text } from "./decision.ts";
import type { DirectoryFacts, ForgeUser, Lookup, Membership, TeamFacts } from "./evidence.ts";
import { all, any, Keyed, no, readLookup, YES, type Fact } from "./facts.ts";

const WRITE_PERMISSIONS = new Set(["admin", "maintain", "write"]);

export class Directory {
  private readonly collaborators;
  private readonly memberships;
  private readonly teams;
  private readonly apps;
  private readonly botUsers;
  /** Facts are fixed for one evaluation: memoised per user and per team and user. */
  private readonly userFacts = new Map<string, Fact>();
  private readonly teamFacts = new Map<string, Fact>();
  private readonly teamMemberships = new Map<string, Keyed<Lookup<Membership>>>();

  constructor(
    facts: DirectoryFacts,
    private readonly organizationOwned: boolean,
  ) {
    this.collaborators = new Keyed(facts.collaborators);
    this.memberships = new Keyed(facts.organizationMemberships);
    this.teams = new Keyed<TeamFacts>(facts.teams);
    this.apps = new Keyed(facts.apps);
    this.botUsers = new Keyed(facts.botUsers);
  }

  /** `@user` owner: direct write-or-higher permission and, on an organization-owned repository, active membership. */
  userEligible(login: string): Fact {
    const key = login.toLowerCase();
    let fact = this.userFacts.get(key);
    if (fact === undefined) {
      fact = this.computeUserEligible(login);
      this.userFacts.set(key, fact);
    }
    return fact;
  }

  private computeUserEligible(login: string): Fact {
    const permission = readLookup(this.collaborators.get(login), t`the repository permission of ${login}`, (value) =>
      WRITE_PERMISSIONS.has(value.permission) ? YES : no(t`${login} has ${value.permission} permission, not write`),
    );
    if (!this.organizationOwned) return permission;
    const membership = readLookup(this.memberships.get(login), t`the organization membership of ${login}`, (value) =>
      value.state === "active" ? YES : no(t`${login}'s organization membership is ${value.state}`),
    );
    return all([permission, membership]);
  }

  /** `@org/team` owner counts for `login`: visible (closed) team, push access to the repository, active team membership. */
  teamGrants(team: string, login: string): Fact {
    const key = `${team.toLowerCase()}\u0000${login.toLowerCase()}`;
    let fact = this.teamFacts.get(key);
    if (fact === undefined) {
      fact = this.computeTeamGrants(team, login);
      this.teamFacts.set(key, fact);
    }
    return fact;
  }

  private computeTeamGrants(team: string, login: string): Fact {
    const facts = this.teams.get(team);
    if (facts === undefined) return readLookup(undefined, t`the team ${team}`, () => YES);
    const visible = readLookup(facts.team, t`the team ${team}`, (value) =>
      value.privacy === "closed" ? YES : no(t`the team ${team} is not visible (privacy ${value.privacy})`),
    );
    const access = readLookup(facts.repository, t`the repository access of ${team}`, (value) =>
      value.push === true ? YES : no(t`the team ${team} has no write access to the repository`),
    );
    return all([visible, access, this.activeMember(team, login)]);
  }

  /**
   * `login`'s active membership in `team` alone: the membership lookup of owner teams, incomplete or absent evidence unknown.
   * A break-glass team needs nothing else (DESIGN 3.11: its visibility and repository access are not required).
   */
  activeMember(team: string, login: string): Fact {
    const facts = this.teams.get(team);
    let memberships = this.teamMemberships.get(team.toLowerCase());
    if (memberships === undefined) {
      memberships = new Keyed(facts?.memberships ?? {});
      this.teamMemberships.set(team.toLowerCase(), memberships);
    }
    return readLookup(memberships.get(login), t`the membership of ${login} in ${team}`, (value) =>
      value.state === "active" ? YES : no(t`${login}'s membership in ${team} is ${value.state}`),
    );
  }

  /** The owner through which a human reviewer is an eligible owner of the set, or why not. */
  humanOwnerOf(group: OwnerGroup, user: ForgeUser): { fact: Fact; via: { kind: "user" | "team"; owner: string } | null } {
    if (user.type !== "User") return { fact: no(t`${user.login} is not a user account`), via: null };
    const routes: { owner: string; kind: "user" | "team"; fact: () => Fact }[] = [];
    for (const owner of group.owners) {
      const kind = ownerKind(owner);
      if (kind === "user" && owner.slice(1).toLowerCase() === user.login.toLowerCase()) {
        routes.push({ owner, kind, fact: () => this.userEligible(user.login) });
      } else if (kind === "team") routes.push({ owner, kind, fact: () => this.teamGrants(owner.slice(1), user.login) });
    }
    if (routes.length === 0) return { fact: no(t`${user.login} is not an owner of these paths`), via: null };
    const facts = routes.map((route) => route.fact());
    const index = facts.findIndex((fact) => fact.value === "yes");
    if (index >= 0) return { fact: YES, via: { kind: routes[index]!.kind, owner: routes[index]!.owner } };
    return { fact: any(facts, t`${user.login} is not an eligible owner`), via: null };
  }

  /**
   * App approval (DESIGN 3.2 rule 5, 3.6): enrolled App whose bot identity and App identity both check out, a delegation
   * whose conditions hold covering every path of the set, and no non-delegable path in the set.
   */
  appApproves(input: {
    readonly user: ForgeUser;
    readonly group: OwnerGroup;
    readonly trustedApps: readonly { readonly slug: string; readonly app_id: number }[];
    readonly delegations: readonly Delegation[];
    readonly nonDelegable: NonDelegableSet;
    readonly labels: readonly string[];
  }): { fact: Fact; app: string | null } {
    const { user, group } = input;
    if (user.type !== "Bot" || !user.login.endsWith("[bot]")) return { fact: no(t`${user.login} is not an App`), app: null };
    const slug = user.login.slice(0, -"[bot]".length);
    const enrolled = input.trustedApps.find((app) => app.slug === slug);
    if (enrolled === undefined) return { fact: no(t`the App ${slug} is not enrolled by the organization policy`), app: null };

    const policy = delegationAllows(slug, group, input);
    if (policy.value === "no") return { fact: policy, app: slug };

    const bot = readLookup(this.botUsers.get(user.login), t`the bot account ${user.login}`, (value) =>
      value.id === user.id && value.login === user.login ? YES : no(t`the reviewer is not the bot account ${user.login} (ID mismatch)`),
    );
    const app = readLookup(this.apps.get(slug), t`the App ${slug}`, (value) =>
      value.id === enrolled.app_id && value.slug === enrolled.slug ? YES : no(t`the App ${slug} does not have the enrolled App ID ${enrolled.app_id}`),
    );
    return { fact: all([bot, app]), app: slug };
  }
}

/**
 * The policy part of an App approval (DESIGN 3.2 rule 5): a delegation to `slug` whose owners and required label hold covers
 * every path of the set, and no path of the set is non-delegable. Needs no directory facts; the change preview uses it to
 * show which Apps a policy change lets approve where.
 */
export function delegationAllows(
  slug: string,
  group: OwnerGroup,
  input: { readonly delegations: readonly Delegation[]; readonly nonDelegable: NonDelegableSet; readonly labels: readonly string[] },
): Fact {
  return delegationCovers(slug, holdingDelegations(slug, group.owners, input), group.paths, input.nonDelegable);
}

/**
 * The delegations to `slug` whose owners condition (any one owner of the set) and required label hold. Depends on the set's
 * owners, not its paths: the change preview asks once per owner set, then delegationCovers per path.
 */
export function holdingDelegations(slug: string, owners: readonly string[], input: { readonly delegations: readonly Delegation[]; readonly labels: readonly string[] }): readonly Delegation[] {
  const toApp = input.delegations.filter((delegation) => delegation.app === slug);
  if (toApp.length === 0) return toApp;
  const labels = new Set(input.labels.map((label) => label.toLowerCase()));
  const setOwners = toApp.some((delegation) => delegation.owners !== null) ? owners.map((owner) => owner.toLowerCase()) : [];
  return toApp.filter(
    (delegation) =>
      (delegation.owners === null || setOwners.some((owner) => delegation.owners!.has(owner))) &&
      (delegation.requiredLabel === null || labels.has(delegation.requiredLabel.toLowerCase())),
  );
}

/** Whether the `holding` delegations to `slug` cover every path of `paths` and none of them is non-delegable. */
export function delegationCovers(slug: string, holding: readonly Delegation[], paths: readonly string[], nonDelegable: NonDelegableSet): Fact {
  if (holding.length === 0) return no(t`no delegation to ${slug} applies to these owners (or its required label is absent)`);
  const uncovered = paths.find((path) => !holding.some((delegation) => delegation.covers(path)));
  const guarded = paths.find((path) => nonDelegable.isNonDelegable(path));
  if (guarded !== undefined) return no(t`${guarded} is non-delegable`);
  if (uncovered !== undefined) return no(t`${uncovered} is not covered by a delegation to ${slug}`);
  return YES;
}

export const describeNo = (fact: Fact, fallback: Text): Text => (fact.value === "no" ? fact.why : fallback);
