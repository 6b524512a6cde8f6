// The forge simulator's state: plain records, no HTTP. Everything the service can observe through the REST API lives here.
import type { KeyObject } from "node:crypto";
import type { CreatedAppCode, PendingCreation } from "./app-creation.ts";
import type { OAuthCode, UserToken } from "./oauth.ts";

export type AccountType = "User" | "Organization" | "Bot";
export interface Account { id: number; login: string; type: AccountType }

export interface ForgeApp {
  id: number; slug: string; name: string; ownerLogin: string; publicKey: KeyObject;
  permissions: Record<string, string>; events: string[]; clientId: string;
  /** The OAuth client secret (oauth.ts), and where the web flow sends a person back (the manifest's callback_urls). */
  clientSecret: string; callbackUrls: string[];
  webhookUrl?: string; webhookSecret?: string; createdAt: string;
}

export interface Installation {
  id: number; appId: number; accountLogin: string; repositorySelection: "all" | "selected";
  repositoryIds: Set<number>; permissions: Record<string, string>; suspendedAt: string | null; createdAt: string;
}

export interface Token { token: string; installationId: number; permissions: Record<string, string>; expiresAt: number }

export interface Commit { sha: string; parent: string | null; tree: Map<string, string>; message: string; date: string }

export type RepoPermission = "admin" | "maintain" | "write" | "triage" | "read";
export type TeamRepoPermission = "pull" | "triage" | "push" | "maintain" | "admin";

export interface Label { id: number; name: string; color: string }

export interface Review {
  id: number; userLogin: string; state: "APPROVED" | "CHANGES_REQUESTED" | "COMMENTED" | "DISMISSED";
  commitId: string; body: string; submittedAt: string;
  /** Set when someone edited the body after it was submitted (control.editReview): when, and who (GraphQL `lastEditedAt`, `editor`). */
  lastEditedAt?: string; editorLogin?: string;
}

export interface PullRequest {
  id: number; number: number; title: string; authorLogin: string; state: "open" | "closed"; draft: boolean;
  headRef: string; headSha: string; baseRef: string; baseSha: string; labels: Label[]; reviews: Review[];
  createdAt: string; updatedAt: string; closedAt: string | null;
  /** Set when the pull request was merged (control.mergePullRequest): its merge commit, who merged it and when. */
  merged?: { commitSha: string; byLogin: string; at: string };
}

export interface CheckRun {
  id: number; appId: number; repoId: number; name: string; headSha: string; status: "queued" | "in_progress" | "completed";
  conclusion: string | null; output: { title: string | null; summary: string | null; text: string | null };
  startedAt: string | null; completedAt: string | null; externalId: string | null; detailsUrl: string | null; suiteId: number;
}

export interface Repository {
  id: number; ownerLogin: string; name: string; private: boolean; archived: boolean; defaultBranch: string;
  branches: Map<string, string>; collaborators: Map<string, RepoPermission>; pulls: Map<number, PullRequest>;
  nextNumber: number; createdAt: string; pushedAt: string;
}

export interface Team {
  id: number; orgLogin: string; slug: string; name: string; privacy: "closed" | "secret";
  repos: Map<number, TeamRepoPermission>; members: Map<string, { role: "member" | "maintainer"; state: "active" | "pending" }>;
  createdAt: string;
}

export interface Membership { state: "active" | "pending"; role: "member" | "admin" }

export class ForgeState {
  accounts = new Map<string, Account>();
  apps = new Map<number, ForgeApp>();
  installations = new Map<number, Installation>();
  tokens = new Map<string, Token>();
  repos = new Map<string, Repository>();
  commits = new Map<string, Commit>();
  blobs = new Map<string, Uint8Array>();
  teams = new Map<string, Team>();
  memberships = new Map<string, Map<string, Membership>>();
  checkRuns = new Map<number, CheckRun>();
  manifestCodes = new Map<string, Record<string, unknown>>();
  /** App creation page: manifests shown and awaiting "Create", and the one-use codes of Apps created there (app-creation.ts). */
  pendingAppCreations = new Map<string, PendingCreation>();
  createdAppCodes = new Map<string, CreatedAppCode>();
  /** The OAuth web flow's one-use codes and the user access tokens they were exchanged for (oauth.ts). */
  oauthCodes = new Map<string, OAuthCode>();
  userTokens = new Map<string, UserToken>();
  labelIds = new Map<string, number>();
  private ids = new Map<string, number>();

  nextId(kind: string): number {
    const bases: Record<string, number> = { account: 1000, app: 100, installation: 5000, repo: 70000, pull: 900000, review: 3000000, check: 8000000, team: 400, label: 60000, suite: 9000000 };
    const next = (this.ids.get(kind) ?? bases[kind] ?? 1) + 1;
    this.ids.set(kind, next);
    return next;
  }

  repoKey(owner: string, name: string): string { return `${owner.toLowerCase()}/${name.toLowerCase()}`; }
  repo(owner: string, name: string): Repository | undefined { return this.repos.get(this.repoKey(owner, name)); }
  repoById(id: number): Repository | undefined { for (const r of this.repos.values()) if (r.id === id) return r; return undefined; }
  account(login: string): Account | undefined { return this.accounts.get(login.toLowerCase()); }
  team(org: string, slug: string): Team | undefined { return this.teams.get(`${org.toLowerCase()}/${slug.toLowerCase()}`); }
  appBySlug(slug: string): ForgeApp | undefined { for (const a of this.apps.values()) if (a.slug === slug) return a; return undefined; }

  /** Installations of any App that can see this repository. */
  installationsFor(repo: Repository): Installation[] {
    return [...this.installations.values()].filter((i) => installationCovers(i, repo));
  }
}

export function installationCovers(inst: Installation, repo: Repository): boolean {
  if (inst.accountLogin.toLowerCase() !== repo.ownerLogin.toLowerCase()) return false;
  return inst.repositorySelection === "all" || inst.repositoryIds.has(repo.id);
}
