// App-authenticated routes (JWT): the App, its installations, installation tokens; and the App-manifest conversion.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { installationCovers, type ForgeApp, type Installation } from "./model.ts";
import { LEVEL, ok, paginate, s, HttpFail, type Route, type TokenRequest } from "./route-kit.ts";
import { appJson, installationJson, repositoryJson } from "./shapes.ts";

export const APP_ROUTES: Route[] = [
  { method: "GET", path: "/app", auth: "jwt", handle: (ctx) => ok(appJson(ctx.base, s(ctx), (ctx.auth as { app: ForgeApp }).app)) },
  {
    method: "GET", path: "/app/installations", auth: "jwt", handle: (ctx) => {
      const app = (ctx.auth as { app: ForgeApp }).app;
      const all = [...s(ctx).installations.values()].filter((i) => i.appId === app.id).map((i) => installationJson(ctx.base, s(ctx), i));
      const page = paginate(ctx, all);
      return ok(page.items, page.headers);
    },
  },
  {
    method: "POST", path: "/app/installations/{installation_id}/access_tokens", auth: "jwt", handle: (ctx) => {
      const app = (ctx.auth as { app: ForgeApp }).app;
      const inst = s(ctx).installations.get(Number(ctx.params.installation_id));
      if (!inst || inst.appId !== app.id) throw new HttpFail(404, "Not Found");
      if (inst.suspendedAt) throw new HttpFail(403, "This installation has been suspended");
      const body = (ctx.body ?? {}) as { permissions?: Record<string, string> };
      const requested = body.permissions ?? null;
      const record: TokenRequest = { installationId: inst.id, permissions: requested, granted: false };
      ctx.tokenRequests.push(record);
      if (requested && "statuses" in requested) throw new HttpFail(422, "The service must never request the statuses permission");
      for (const [name, level] of Object.entries(requested ?? {})) {
        if ((LEVEL[inst.permissions[name] ?? ""] ?? 0) < (LEVEL[level] ?? 9)) throw new HttpFail(422, "The permissions requested are not granted to this installation.");
      }
      record.granted = true;
      const token = { token: `ghs_${randomBytes(18).toString("hex")}`, installationId: inst.id, permissions: requested ?? { ...inst.permissions }, expiresAt: Date.now() + 3600_000 };
      s(ctx).tokens.set(token.token, token);
      return { status: 201, body: { token: token.token, expires_at: new Date(token.expiresAt).toISOString().replace(/\.\d+Z$/, "Z"), permissions: token.permissions, repository_selection: inst.repositorySelection } };
    },
  },
  {
    method: "GET", path: "/installation/repositories", auth: "token", permission: ["metadata", "read"], handle: (ctx) => {
      const inst = (ctx.auth as { installation: Installation }).installation;
      const repos = [...s(ctx).repos.values()].filter((r) => installationCovers(inst, r)).sort((a, b) => a.id - b.id);
      const page = paginate(ctx, repos);
      return ok({ total_count: repos.length, repository_selection: inst.repositorySelection, repositories: page.items.map((r) => repositoryJson(ctx.base, s(ctx), r)) }, page.headers);
    },
  },
  {
    method: "POST", path: "/app-manifests/{code}/conversions", auth: "optional", handle: (ctx) => {
      // A code from the App creation page (app-creation.ts): the App exists; its credentials are returned once, before expiry.
      const created = s(ctx).createdAppCodes.get(ctx.params.code!);
      if (created) {
        s(ctx).createdAppCodes.delete(ctx.params.code!);
        const app = s(ctx).apps.get(created.appId);
        if (created.expiresAt <= Date.now() || !app) throw new HttpFail(404, "Not Found");
        return { status: 201, body: { ...appJson(ctx.base, s(ctx), app), client_secret: created.clientSecret, webhook_secret: created.webhookSecret, pem: created.pem } };
      }
      const manifest = s(ctx).manifestCodes.get(ctx.params.code!);
      if (!manifest) throw new HttpFail(404, "Not Found");
      s(ctx).manifestCodes.delete(ctx.params.code!);
      if (typeof manifest.__expiresAt === "number" && manifest.__expiresAt <= Date.now()) throw new HttpFail(404, "Not Found");
      const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048, publicKeyEncoding: { type: "pkcs1", format: "pem" }, privateKeyEncoding: { type: "pkcs1", format: "pem" } });
      const name = typeof manifest.name === "string" ? manifest.name : "Forge App";
      let slug = name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "") || "app";
      while (s(ctx).appBySlug(slug)) slug += "-1";
      const hook = manifest.hook_attributes as { url?: string } | undefined;
      const webhookSecret = randomBytes(32).toString("hex");
      const owner = typeof manifest.__owner === "string" && manifest.__owner ? manifest.__owner : "simulator-admin";
      if (!s(ctx).account(owner)) ctx.control.createUser({ login: owner });
      const app = ctx.control.createApp({
        slug, name, owner, publicKeyPem: publicKey,
        permissions: (manifest.default_permissions as Record<string, string> | undefined) ?? undefined,
        events: (manifest.default_events as string[] | undefined) ?? undefined, webhookUrl: hook?.url, webhookSecret,
      });
      return { status: 201, body: { ...appJson(ctx.base, s(ctx), app), client_secret: app.clientSecret, webhook_secret: webhookSecret, pem: privateKey } };
    },
  },
];
