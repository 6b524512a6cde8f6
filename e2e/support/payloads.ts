import { createHmac } from "node:crypto";

/**
 * Webhook payloads shaped like the forge's real ones (the fields the forge sends, trimmed of URLs), for ingress tests.
 * Every builder takes the identifiers it needs and fills the rest with plausible values.
 */
export const SHA_A = "a".repeat(40);
export const SHA_B = "b".repeat(40);
export const SHA_256 = "c".repeat(64);

export type RepoFixture = { id: number; owner: string; name: string; defaultBranch?: string };
export const WEB: RepoFixture = { id: 1001, owner: "acme", name: "web", defaultBranch: "main" };
export const POLICY_REPO: RepoFixture = { id: 1002, owner: "acme", name: ".forge", defaultBranch: "main" };
export const INSTALLATION = 77;

const user = (login: string, id: number, type = "User") => ({ login, id, node_id: `U_${id}`, type, site_admin: false });

export function repositoryJson(repo: RepoFixture) {
  return {
    id: repo.id, node_id: `R_${repo.id}`, name: repo.name, full_name: `${repo.owner}/${repo.name}`, private: true,
    owner: { ...user(repo.owner, 500, "Organization") }, default_branch: repo.defaultBranch ?? "main", archived: false, fork: false,
  };
}
const installation = (id = INSTALLATION) => ({ id, node_id: `I_${id}` });

export function pullRequestJson(repo: RepoFixture, number: number, headSha: string, state = "open") {
  return {
    id: 9000 + number, number, state, draft: false, title: "Change things", user: user("erin", 42), locked: false,
    head: { label: `${repo.owner}:feature`, ref: "feature", sha: headSha, user: user(repo.owner, 500, "Organization"), repo: repositoryJson(repo) },
    base: { label: `${repo.owner}:main`, ref: "main", sha: "f".repeat(40), user: user(repo.owner, 500, "Organization"), repo: repositoryJson(repo) },
    labels: [], merged: false, changed_files: 2, additions: 3, deletions: 1, commits: 1,
  };
}

export function pullRequestEvent(action: string, options: { repo?: RepoFixture; number?: number; headSha?: string; installationId?: number } = {}) {
  const repo = options.repo ?? WEB;
  return {
    action, number: options.number ?? 7, pull_request: pullRequestJson(repo, options.number ?? 7, options.headSha ?? SHA_A),
    repository: repositoryJson(repo), organization: { login: repo.owner, id: 500 }, sender: user("erin", 42), installation: installation(options.installationId),
  };
}

export function reviewEvent(action: string, options: { repo?: RepoFixture; number?: number; headSha?: string; state?: string } = {}) {
  const repo = options.repo ?? WEB;
  const headSha = options.headSha ?? SHA_A;
  return {
    action, review: { id: 555, user: user("alice", 43), body: null, commit_id: headSha, state: options.state ?? "approved", submitted_at: "2026-11-22T10:00:00Z" },
    pull_request: pullRequestJson(repo, options.number ?? 7, headSha), repository: repositoryJson(repo), sender: user("alice", 43), installation: installation(),
  };
}

export function checkRunEvent(options: { appId: number; name: string; headSha?: string; repo?: RepoFixture }) {
  const repo = options.repo ?? WEB;
  return {
    action: "rerequested",
    check_run: { id: 31, name: options.name, head_sha: options.headSha ?? SHA_A, status: "completed", conclusion: "failure", app: { id: options.appId, slug: "approval-service" }, pull_requests: [] },
    repository: repositoryJson(repo), sender: user("alice", 43), installation: installation(),
  };
}

export function checkSuiteEvent(options: { appId: number; headSha?: string }) {
  return {
    action: "rerequested", check_suite: { id: 32, head_sha: options.headSha ?? SHA_A, head_branch: "feature", status: "completed", app: { id: options.appId }, pull_requests: [] },
    repository: repositoryJson(WEB), sender: user("alice", 43), installation: installation(),
  };
}

export function pushEvent(options: { repo?: RepoFixture; ref?: string; after?: string } = {}) {
  const repo = options.repo ?? WEB;
  return {
    ref: options.ref ?? "refs/heads/main", before: "0".repeat(40), after: options.after ?? SHA_B, created: false, deleted: false, forced: false,
    commits: [], head_commit: null, repository: { ...repositoryJson(repo), owner: { ...user(repo.owner, 500, "Organization"), name: repo.owner } },
    pusher: { name: "erin", email: "erin@example.com" }, sender: user("erin", 42), installation: installation(),
  };
}

export function repositoryEvent(action: string, options: { repo?: RepoFixture; changes?: Record<string, unknown> } = {}) {
  return { action, repository: repositoryJson(options.repo ?? WEB), ...(options.changes ? { changes: options.changes } : {}), sender: user("alice", 43), installation: installation() };
}

export function installationRepositoriesEvent(action: "added" | "removed", repos: RepoFixture[] | unknown) {
  const list = Array.isArray(repos) ? repos.map((r: RepoFixture) => ({ id: r.id, node_id: `R_${r.id}`, name: r.name, full_name: `${r.owner}/${r.name}`, private: true })) : repos;
  return {
    action, installation: { ...installation(), account: user("acme", 500, "Organization") }, repository_selection: "selected",
    repositories_added: action === "added" ? list : [], repositories_removed: action === "removed" ? list : [], sender: user("alice", 43),
  };
}

export function labelEvent(action: string) {
  return { action, label: { id: 3, name: "bot-review", color: "ededed", default: false }, repository: repositoryJson(WEB), sender: user("alice", 43), installation: installation() };
}

export function organizationWideEvent(event: string, action: string) {
  const base = { action, organization: { login: "acme", id: 500 }, sender: user("alice", 43), installation: installation() };
  if (event === "team" || event === "team_add") return { ...base, team: { id: 8, slug: "core", name: "core", privacy: "closed" } };
  if (event === "membership") return { ...base, scope: "team", member: user("dave", 44), team: { id: 8, slug: "core" } };
  if (event === "member") return { ...base, member: user("dave", 44), repository: repositoryJson(WEB) };
  return base;
}

/** A merge queue's group for `main`: its own ref and commit, built on the parent commit `baseSha`. */
export function mergeGroupEvent(action: "checks_requested" | "destroyed", options: { repo?: RepoFixture; headSha?: string; baseSha?: string; baseRef?: string; reason?: string } = {}) {
  const repo = options.repo ?? WEB;
  const headSha = options.headSha ?? SHA_A;
  const baseRef = options.baseRef ?? "refs/heads/main";
  return {
    action, ...(action === "destroyed" ? { reason: options.reason ?? "merged" } : {}),
    merge_group: {
      head_sha: headSha, head_ref: `refs/heads/gh-readonly-queue/${baseRef.replace(/^refs\/heads\//, "")}/pr-7-${SHA_B}`, base_sha: options.baseSha ?? SHA_B, base_ref: baseRef,
      head_commit: { id: headSha, tree_id: "d".repeat(40), message: "Merge pull request #7", timestamp: "2026-11-22T10:00:00Z", author: { name: "erin", email: "erin@example.com" }, committer: { name: "forge", email: "noreply@example.com" } },
    },
    repository: repositoryJson(repo), organization: { login: repo.owner, id: 500 }, sender: user("erin", 42), installation: installation(),
  };
}

export function installationEvent(action: string) {
  return { action, installation: { ...installation(), account: user("acme", 500, "Organization"), app_id: 1 }, sender: user("alice", 43) };
}

/** A signed delivery: the exact body bytes and the three headers the forge sends. */
export function signedDelivery(secret: string | Uint8Array, event: string, deliveryId: string, payload: unknown): { body: Uint8Array; headers: Record<string, string> } {
  const body = typeof payload === "string" ? new TextEncoder().encode(payload) : payload instanceof Uint8Array ? payload : new TextEncoder().encode(JSON.stringify(payload));
  const signature = `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
  return { body, headers: { "content-type": "application/json", "x-hub-signature-256": signature, "x-forge-event": event, "x-forge-delivery": deliveryId } };
}
