// A base fixture for tests and the demo: one organization with our App installed, a target repository with CODEOWNERS and
// policy at the base commit, an organization policy repository, teams, collaborators and a trusted review App. Tests tweak it.
import { createHash, createSign, generateKeyPairSync } from "node:crypto";
import { makeCommit } from "./git.ts";
import type { ForgeSimulator } from "./simulator.ts";

export interface AppKeys { privateKey: string; publicKey: string }

/** An RSA key pair in PKCS#1 PEM, the format the forge's App settings page downloads. */
export function generateAppKeys(): AppKeys {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048, publicKeyEncoding: { type: "pkcs1", format: "pem" }, privateKeyEncoding: { type: "pkcs1", format: "pem" },
  });
  return { privateKey, publicKey };
}

export interface Scenario {
  org: string; repo: string; appId: number; appSlug: string; installationId: number; privateKey: string;
  botSlug: string; botAppId: number; pullNumber: number; headSha: string; baseSha: string;
}

export const POLICY_PATH = ".forge/service-policy.toml";

export interface ScenarioOptions {
  /** The service App's key pair; the public half may be the private PEM itself (the public key is derived from it). */
  keys: AppKeys;
  /** The service App's ID (default: allocated by the simulator), e.g. SERVICE_FORGE_APP_ID for the demo. */
  appId?: number;
  /** Files changed by the pull request besides the fixed ones (path → content). */
  extraFiles?: number;
  renames?: number;
  reviewers?: string[];
}

export async function createScenario(sim: ForgeSimulator, options: ScenarioOptions): Promise<Scenario> {
  const c = sim.control;
  const org = "acme";
  c.createOrganization({ login: org });
  const app = c.createApp({ id: options.appId, slug: "approval-service", owner: org, publicKeyPem: options.keys.publicKey });
  const bot = c.createApp({ slug: "docs-review-bot", owner: "bot-vendor", publicKeyPem: options.keys.publicKey });
  for (const login of ["alice", "bob", "carol", "dave", "erin"]) { c.createUser({ login }); await c.setOrgMembership({ org, user: login, state: "active" }); }
  const renamed: Record<string, string> = {};
  for (let i = 0; i < (options.renames ?? 0); i++) renamed[`src/old/module-${i}.ts`] = `export const m${i} = ${i};\n`;
  c.createRepository({
    owner: org, name: "web", files: {
      ".forge/CODEOWNERS": "* @acme/core\n/docs/ @acme/docs @alice\n/src/ @bob @acme/core\n",
      [POLICY_PATH]: "schema_version = 1\nenabled = true\n[[delegations]]\napp = \"docs-review-bot\"\npaths = [\"docs/**\"]\n",
      "README.md": "# web\n", ...renamed,
    },
  });
  c.createRepository({ owner: org, name: ".forge", files: { [POLICY_PATH]: `schema_version = 1\n[[trusted_apps]]\nslug = "docs-review-bot"\napp_id = ${bot.id}\n` } });
  for (const login of ["alice", "bob"]) await c.setCollaborator({ owner: org, repo: "web", user: login, permission: "write" });
  await c.setCollaborator({ owner: org, repo: "web", user: "carol", permission: "read" });
  c.createTeam({ org, slug: "core", privacy: "closed" });
  c.createTeam({ org, slug: "docs", privacy: "secret" });
  await c.setTeamRepository({ org, team: "core", owner: org, repo: "web", permission: "push" });
  await c.setTeamRepository({ org, team: "docs", owner: org, repo: "web", permission: "pull" });
  await c.setTeamMembership({ org, team: "core", user: "dave", state: "active" });
  await c.setTeamMembership({ org, team: "core", user: "erin", state: "pending" });
  await c.setTeamMembership({ org, team: "docs", user: "carol", state: "active" });
  const installation = c.createInstallation({ appId: app.id, account: org });
  c.createInstallation({ appId: bot.id, account: org, repositories: ["web"] });

  const files: Record<string, string | null> = { "docs/guide.md": "# Guide\nnew\n", "src/index.ts": "export {};\n" };
  for (let i = 0; i < (options.extraFiles ?? 0); i++) files[`src/generated/file-${String(i).padStart(4, "0")}.ts`] = `export const v${i} = ${i};\n`;
  for (const [path, content] of Object.entries(renamed)) { files[path] = null; files[path.replace("/old/", "/new/")] = content; }
  await c.commit({ owner: org, repo: "web", branch: "feature", files, sender: "erin" });
  const pr = await c.openPullRequest({ owner: org, repo: "web", head: "feature", author: "erin", title: "Feature" });
  for (const user of options.reviewers ?? []) await c.submitReview({ owner: org, repo: "web", number: pr.number, user, state: "APPROVED" });
  return {
    org, repo: "web", appId: app.id, appSlug: app.slug, installationId: installation.id, privateKey: options.keys.privateKey,
    botSlug: bot.slug, botAppId: bot.id, pullNumber: pr.number, headSha: pr.headSha, baseSha: pr.baseSha,
  };
}

/** An App JWT as the forge expects it (RS256, iat 30 s in the past, 10 minutes), for tests that call the simulator directly. */
export function mintAppJwt(appId: number, privateKey: string, nowSeconds = Math.floor(Date.now() / 1000)): string {
  const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const head = `${enc({ alg: "RS256", typ: "JWT" })}.${enc({ iat: nowSeconds - 30, exp: nowSeconds + 570, iss: appId })}`;
  return `${head}.${createSign("RSA-SHA256").update(head).sign(privateKey).toString("base64url")}`;
}

/**
 * On a forge each App has its own webhook URL. The simulator's default target would send every App's deliveries to the
 * service under test, so Apps created after the first (ours) get an unreachable URL of their own unless they name one.
 * `onFirst` is told about our App once it exists.
 */
export function onlyFirstAppReceivesWebhooks(sim: ForgeSimulator, onFirst?: (app: { id: number }) => void): void {
  const createApp = sim.control.createApp.bind(sim.control);
  let first = true;
  sim.control.createApp = (args) => {
    const app = createApp(first ? args : { ...args, webhookUrl: args.webhookUrl ?? "http://127.0.0.1:9/another-app" });
    if (first) {
      first = false;
      onFirst?.(app);
    }
    return app;
  };
}

/**
 * Silent bulk fixtures for long lists (no webhooks; the forge would have sent them long ago): `count` open pull requests, each
 * on a head commit of its own, numbered on from the repository's next number. Without `files` the head is only a SHA (the list
 * route does not read commits); with `files` it is a real commit on the base changing those files (path → content), so every
 * route of the pull request answers as for one opened normally (e.g. the service can evaluate it), without a webhook each.
 */
export function addOpenPullRequests(sim: ForgeSimulator, args: { owner: string; repo: string; count: number; base?: string; files?: (number: number) => Record<string, string> }): number[] {
  const c = sim.control;
  const repo = c.mustRepo(args.owner, args.repo);
  const base = args.base ?? repo.defaultBranch;
  const baseSha = repo.branches.get(base)!;
  const added: number[] = [];
  for (let i = 0; i < args.count; i++) {
    const number = repo.nextNumber++;
    const at = c.now();
    const headRef = `filler-${number}`;
    const headSha = args.files
      ? makeCommit(c.state, baseSha, args.files(number), `Filler ${number}`, at).sha
      : createHash("sha1").update(`filler ${args.owner}/${args.repo}#${number}`).digest("hex");
    if (args.files) repo.branches.set(headRef, headSha);
    repo.pulls.set(number, {
      id: c.state.nextId("pull"), number, title: `Filler ${number}`, authorLogin: "erin", state: "open", draft: false,
      headRef, headSha, baseRef: base, baseSha, labels: [], reviews: [], createdAt: at, updatedAt: at, closedAt: null,
    });
    added.push(number);
  }
  return added;
}

/** Silent bulk fixtures: `count` reviews on a pull request's head (default: comments by carol, which decide nothing). */
export function addReviews(sim: ForgeSimulator, args: { owner: string; repo: string; number: number; count: number; user?: string; state?: "APPROVED" | "CHANGES_REQUESTED" | "COMMENTED" }): void {
  const c = sim.control;
  const pr = c.mustPull(args.owner, args.repo, args.number);
  for (let i = 0; i < args.count; i++) {
    pr.reviews.push({ id: c.state.nextId("review"), userLogin: args.user ?? "carol", state: args.state ?? "COMMENTED", commitId: pr.headSha, body: "", submittedAt: c.now() });
  }
}
