// Directory routes (installation token): collaborator permission, organization and team memberships, teams, Apps, users.
import { ok, repoFor, orgFor, s, HttpFail, type Route } from "./route-kit.ts";
import { appJson, organizationJson, privateUserJson, repositoryJson, teamJson, userJson } from "./shapes.ts";

export const DIRECTORY_ROUTES: Route[] = [
  {
    method: "GET", path: "/repos/{owner}/{repo}/collaborators/{username}/permission", auth: "token", permission: ["metadata", "read"], handle: (ctx) => {
      const repo = repoFor(ctx);
      const user = s(ctx).account(ctx.params.username!);
      if (!user) throw new HttpFail(404, "Not Found");
      const role = repo.collaborators.get(user.login.toLowerCase()) ?? (user.login.toLowerCase() === repo.ownerLogin.toLowerCase() ? "admin" : null);
      const permission = role === null ? "none" : role === "maintain" ? "write" : role === "triage" ? "read" : role;
      return ok({ permission, role_name: role ?? "none", user: { ...userJson(ctx.base, user), role_name: role ?? "none" } });
    },
  },
  {
    method: "GET", path: "/orgs/{org}/memberships/{username}", auth: "token", permission: ["members", "read"], handle: (ctx) => {
      const org = orgFor(ctx);
      const user = s(ctx).account(ctx.params.username!);
      const m = user ? s(ctx).memberships.get(org.toLowerCase())?.get(user.login.toLowerCase()) : undefined;
      if (!user || !m) throw new HttpFail(404, "Not Found");
      return ok({
        url: `${ctx.base}/orgs/${org}/memberships/${user.login}`, state: m.state, role: m.role, organization_url: `${ctx.base}/orgs/${org}`,
        organization: organizationJson(ctx.base, s(ctx).account(org)!), user: userJson(ctx.base, user),
      });
    },
  },
  {
    method: "GET", path: "/orgs/{org}/teams/{team_slug}", auth: "token", permission: ["members", "read"], handle: (ctx) => {
      const team = s(ctx).team(orgFor(ctx), ctx.params.team_slug!);
      if (!team) throw new HttpFail(404, "Not Found");
      return ok(teamJson(ctx.base, s(ctx), team));
    },
  },
  {
    method: "GET", path: "/orgs/{org}/teams/{team_slug}/repos/{owner}/{repo}", auth: "token", permission: ["members", "read"], handle: (ctx) => {
      const team = s(ctx).team(orgFor(ctx), ctx.params.team_slug!);
      const repo = repoFor(ctx);
      const level = team?.repos.get(repo.id);
      if (!team || !level) throw new HttpFail(404, "Not Found");
      if (!(ctx.req.headers.get("accept") ?? "").includes("application/vnd.github.v3.repository+json")) return { status: 204 };
      const rank = ["pull", "triage", "push", "maintain", "admin"].indexOf(level);
      return ok({ ...repositoryJson(ctx.base, s(ctx), repo, { pull: rank >= 0, triage: rank >= 1, push: rank >= 2, maintain: rank >= 3, admin: rank >= 4 }), role_name: level });
    },
  },
  {
    method: "GET", path: "/orgs/{org}/teams/{team_slug}/memberships/{username}", auth: "token", permission: ["members", "read"], handle: (ctx) => {
      const org = orgFor(ctx);
      const team = s(ctx).team(org, ctx.params.team_slug!);
      const user = s(ctx).account(ctx.params.username!);
      const m = user ? team?.members.get(user.login.toLowerCase()) : undefined;
      if (!team || !user || !m) throw new HttpFail(404, "Not Found");
      return ok({ url: `${ctx.base}/orgs/${org}/teams/${team.slug}/memberships/${user.login}`, role: m.role, state: m.state });
    },
  },
  {
    method: "GET", path: "/apps/{app_slug}", auth: "optional", handle: (ctx) => {
      const app = s(ctx).appBySlug(ctx.params.app_slug!);
      if (!app) throw new HttpFail(404, "Not Found");
      return ok(appJson(ctx.base, s(ctx), app));
    },
  },
  {
    method: "GET", path: "/users/{username}", auth: "optional", handle: (ctx) => {
      const user = s(ctx).account(ctx.params.username!);
      if (!user) throw new HttpFail(404, "Not Found");
      return ok(privateUserJson(ctx.base, user));
    },
  },
];
