// planLookups: which directory facts the evaluation of this pull request will read, so the evidence fetcher (server/forge)
// fetches exactly those before calling evaluate(). Pure; takes the evidence without its directory part.
import { ownerKind } from "../policy/codeowners.ts";
import { analyze } from "./analyze.ts";
import type { EvaluationSettings, Evidence } from "./evidence.ts";

export interface LookupPlan {
  /** Logins needing `collaborators/{u}/permission`. */
  readonly collaborators: readonly string[];
  /** Logins needing `orgs/{owner}/memberships/{u}` (organization-owned repositories only). */
  readonly organizationMemberships: readonly string[];
  /** Teams (`org/slug` as written after `@`) needing team, team-repository and these members' memberships. */
  readonly teams: readonly { readonly team: string; readonly members: readonly string[] }[];
  /** App slugs needing `GET /apps/{slug}`. */
  readonly apps: readonly string[];
  /** Bot logins `<slug>[bot]` needing `GET /users/{login}`. */
  readonly botUsers: readonly string[];
}

const EMPTY: LookupPlan = { collaborators: [], organizationMemberships: [], teams: [], apps: [], botUsers: [] };

export function planLookups(evidence: Omit<Evidence, "directory">, settings: EvaluationSettings): LookupPlan {
  const analysis = analyze(evidence, settings);
  if (analysis.kind !== "analysed" || analysis.latestReviews === null) return EMPTY;
  const head = evidence.pullRequest.headSha;
  const authorId = evidence.pullRequest.author.id;
  const users = new Map<string, string>();
  const teams = new Map<string, { team: string; members: Map<string, string> }>();
  const apps = new Set<string>();
  const bots = new Set<string>();
  const enrolled = new Set(analysis.trustedApps.map((app) => app.slug));
  for (const { review, state } of analysis.latestReviews) {
    const user = review.user;
    if (user.id === authorId) continue;
    const approvesHead = state === "APPROVED" && review.commitId === head;
    if (!approvesHead && state !== "CHANGES_REQUESTED") continue;
    if (user.type === "Bot") {
      const slug = user.login.endsWith("[bot]") ? user.login.slice(0, -5) : null;
      if (approvesHead && slug !== null && enrolled.has(slug)) {
        apps.add(slug);
        bots.add(user.login);
      }
      continue;
    }
    if (user.type !== "User") continue;
    const login = user.login.toLowerCase();
    for (const group of analysis.groups) {
      for (const owner of group.owners) {
        const kind = ownerKind(owner);
        if (kind === "user" && owner.slice(1).toLowerCase() === login) users.set(login, user.login);
        if (kind === "team") {
          const key = owner.slice(1).toLowerCase();
          let entry = teams.get(key);
          if (entry === undefined) {
            entry = { team: owner.slice(1), members: new Map() };
            teams.set(key, entry);
          }
          entry.members.set(login, user.login);
        }
      }
    }
  }
  const logins = [...users.values()].sort();
  return {
    collaborators: logins,
    organizationMemberships: analysis.organizationOwned ? logins : [],
    teams: [...teams.values()]
      .map((entry) => ({ team: entry.team, members: [...entry.members.values()].sort() }))
      .sort((a, b) => (a.team < b.team ? -1 : 1)),
    apps: [...apps].sort(),
    botUsers: [...bots].sort(),
  };
}
