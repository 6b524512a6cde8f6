// Directory facts for owner eligibility (DESIGN 3.6): each lookup is found, not_found (404 = not eligible) or incomplete.
// Revalidated at every evaluation: nothing here is cached.
import type { CollaboratorPermission, ForgeUser, Lookup, Membership } from "../evaluation/evidence.ts";
import { ForgeError } from "./errors.ts";
import { gapFromError } from "./pagination.ts";
import type { CallOptions, Transport } from "./transport.ts";
import { bool, int, object, str } from "./validate.ts";

/** The team-repository endpoint returns the repository (with `permissions`) only for this media type; otherwise 204. */
export const REPOSITORY_MEDIA_TYPE = "application/vnd.github.v3.repository+json";

async function lookup<T>(run: () => Promise<T>): Promise<Lookup<T>> {
  try {
    return { kind: "found", value: await run() };
  } catch (error) {
    if (error instanceof ForgeError && error.kind === "not_found") return { kind: "not_found" };
    const g = gapFromError(error);
    return { kind: "incomplete", cause: g.cause, detail: g.detail };
  }
}

export interface RepoRef { installationId: number; owner: string; repo: string }

export function collaboratorPermission(t: Transport, at: RepoRef, username: string, call?: CallOptions): Promise<Lookup<CollaboratorPermission>> {
  const route = "GET /repos/{owner}/{repo}/collaborators/{username}/permission";
  return lookup(async () => ({ permission: str(object((await t.installation(at.installationId, route, { owner: at.owner, repo: at.repo, username }, call)).data, route), "permission", route) }));
}

export function organizationMembership(t: Transport, installationId: number, org: string, username: string, call?: CallOptions): Promise<Lookup<Membership>> {
  const route = "GET /orgs/{org}/memberships/{username}";
  return lookup(async () => ({ state: str(object((await t.installation(installationId, route, { org, username }, call)).data, route), "state", route) }));
}

export function team(t: Transport, installationId: number, org: string, teamSlug: string, call?: CallOptions): Promise<Lookup<{ privacy: string }>> {
  const route = "GET /orgs/{org}/teams/{team_slug}";
  return lookup(async () => ({ privacy: str(object((await t.installation(installationId, route, { org, team_slug: teamSlug }, call)).data, route), "privacy", route) }));
}

export function teamRepository(t: Transport, at: RepoRef, org: string, teamSlug: string, call?: CallOptions): Promise<Lookup<{ push: boolean }>> {
  const route = "GET /orgs/{org}/teams/{team_slug}/repos/{owner}/{repo}";
  return lookup(async () => {
    const response = await t.installation(at.installationId, route, { org, team_slug: teamSlug, owner: at.owner, repo: at.repo, headers: { accept: REPOSITORY_MEDIA_TYPE } }, call);
    if (response.status !== 200) throw new ForgeError("permanent", `${route}: the forge ignored the repository media type (status ${response.status})`);
    return { push: bool(object(object(response.data, route).permissions, route), "push", route) };
  });
}

export function teamMembership(t: Transport, installationId: number, org: string, teamSlug: string, username: string, call?: CallOptions): Promise<Lookup<Membership>> {
  const route = "GET /orgs/{org}/teams/{team_slug}/memberships/{username}";
  return lookup(async () => ({ state: str(object((await t.installation(installationId, route, { org, team_slug: teamSlug, username }, call)).data, route), "state", route) }));
}

export function appBySlug(t: Transport, installationId: number, slug: string, call?: CallOptions): Promise<Lookup<{ id: number; slug: string }>> {
  const route = "GET /apps/{app_slug}";
  return lookup(async () => {
    const body = object((await t.installation(installationId, route, { app_slug: slug }, call)).data, route);
    return { id: int(body, "id", route), slug: str(body, "slug", route) };
  });
}

/** `GET /users/<slug>[bot]`: the App's bot account (its user ID is what a review carries). */
export function user(t: Transport, installationId: number, login: string, call?: CallOptions): Promise<Lookup<ForgeUser>> {
  const route = "GET /users/{username}";
  return lookup(async () => {
    const body = object((await t.installation(installationId, route, { username: login }, call)).data, route);
    return { id: int(body, "id", route), login: str(body, "login", route), type: str(body, "type", route) };
  });
}
