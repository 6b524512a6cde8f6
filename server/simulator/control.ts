// Simulator control: every state change tests and the demo make, each followed by the webhooks the forge would send. One class
// on purpose (it is longer than our usual file): each operation pairs a state change with its events, and tests call it directly.
import { createPublicKey, randomBytes } from "node:crypto";
import { MANIFEST_CODE_LIFETIME_MS } from "./app-creation.ts";
import { makeCommit } from "./git.ts";
import {
  ForgeState, type Account, type CheckRun, type ForgeApp, type Installation, type PullRequest, type RepoPermission,
  type Repository, type Review, type Team, type TeamRepoPermission,
} from "./model.ts";
import { appJson, checkRunJson, installationJson, mergedJson, organizationJson, pullJson, repositoryJson, reviewJson, teamJson, userJson } from "./shapes.ts";
import { MergeQueues } from "./merge-queue.ts";
import { deliverWebhook, type WebhookDelivery } from "./webhooks.ts";

export const DEFAULT_APP_PERMISSIONS = { checks: "write", statuses: "write", contents: "read", metadata: "read", pull_requests: "read", members: "read", merge_queues: "read" };
export const DEFAULT_APP_EVENTS = ["check_run", "installation_target", "label", "member", "membership", "merge_group", "organization", "pull_request", "pull_request_review", "push", "repository", "team", "team_add"];

export class ControlError extends Error {
  constructor(readonly status: number, message: string) { super(message); }
}

export interface ControlOptions {
  baseUrl: () => string; webhookUrl?: string; webhookSecret?: string; webhookTimeoutMs?: number; webhookNeutralHeaders?: boolean | undefined;
  /** The forge's clock follows the real one (the demo, a local trial), so its times read in order with the service's. */
  realClock?: boolean;
}

export class SimulatorControl {
  readonly deliveries: WebhookDelivery[] = [];
  private clock = Date.parse("2026-01-01T00:00:00Z");
  /**
   * The lag fault of `GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls` (the forge computes that list asynchronously):
   * a pull request opened, or moved to a new head, while it is set is missing from the list of its head for this many ms of
   * real time. 0: no lag.
   */
  commitPullsLagMs = 0;
  /** Per pull request ID: when (Date.now()) its current head's commit-pulls list shows it; absent: already. */
  readonly commitPullsVisibleAt = new Map<number, number>();

  /** The merge queues of the repositories' branches (merge-queue.ts). */
  readonly mergeQueues: MergeQueues;

  constructor(readonly state: ForgeState, private readonly options: ControlOptions) {
    this.mergeQueues = new MergeQueues(this);
  }

  /**
   * The forge's time of the next event, strictly later than the one before: by default one second after it from a fixed start
   * (tests read the same times every run); with `realClock`, the real time (one millisecond on when two events share one).
   */
  now(): string {
    this.clock = this.options.realClock ? Math.max(Date.now(), this.clock + 1) : this.clock + 1000;
    return new Date(this.clock).toISOString();
  }

  /** Sets the commit-pulls lag (ms) for pull requests opened or moved from now on. */
  setCommitPullsLag(args: { ms: number }): void {
    if (!Number.isSafeInteger(args.ms) || args.ms < 0) throw new ControlError(422, "ms must be a non-negative integer");
    this.commitPullsLagMs = args.ms;
  }

  private lagCommitPulls(pr: PullRequest): void {
    if (this.commitPullsLagMs > 0) this.commitPullsVisibleAt.set(pr.id, Date.now() + this.commitPullsLagMs);
    else this.commitPullsVisibleAt.delete(pr.id);
  }

  setWebhookTarget(target: { url?: string; secret?: string }): void {
    this.options.webhookUrl = target.url;
    this.options.webhookSecret = target.secret;
  }

  createOrganization(args: { login: string }): Account { return this.createAccount(args.login, "Organization"); }
  createUser(args: { login: string }): Account { return this.createAccount(args.login, "User"); }

  private createAccount(login: string, type: Account["type"]): Account {
    const existing = this.state.account(login);
    if (existing) return existing;
    const account: Account = { id: this.state.nextId("account"), login, type };
    this.state.accounts.set(login.toLowerCase(), account);
    return account;
  }

  createApp(args: { id?: number; slug: string; name?: string; owner?: string; publicKeyPem: string; permissions?: Record<string, string>; events?: string[]; webhookUrl?: string; webhookSecret?: string; callbackUrls?: string[] }): ForgeApp {
    if (this.state.appBySlug(args.slug)) throw new ControlError(422, "slug taken");
    if (args.id !== undefined && this.state.apps.has(args.id)) throw new ControlError(422, "App ID taken");
    const owner = args.owner ?? args.slug;
    if (!this.state.account(owner)) this.createOrganization({ login: owner });
    const app: ForgeApp = {
      id: args.id ?? this.state.nextId("app"), slug: args.slug, name: args.name ?? args.slug, ownerLogin: owner,
      publicKey: createPublicKey(args.publicKeyPem), permissions: args.permissions ?? { ...DEFAULT_APP_PERMISSIONS },
      events: args.events ?? DEFAULT_APP_EVENTS, clientId: `Iv1.${randomBytes(8).toString("hex")}`,
      clientSecret: randomBytes(20).toString("hex"), callbackUrls: [...(args.callbackUrls ?? [])],
      webhookUrl: args.webhookUrl, webhookSecret: args.webhookSecret, createdAt: this.now(),
    };
    this.state.apps.set(app.id, app);
    this.createAccount(`${app.slug}[bot]`, "Bot");
    return app;
  }

  createInstallation(args: { appId: number; account: string; repositories?: string[]; permissions?: Record<string, string> }): Installation {
    const app = this.mustApp(args.appId);
    if (!this.state.account(args.account)) throw new ControlError(404, "no such account");
    const inst: Installation = {
      id: this.state.nextId("installation"), appId: app.id, accountLogin: args.account,
      repositorySelection: args.repositories ? "selected" : "all",
      repositoryIds: new Set((args.repositories ?? []).map((name) => this.mustRepo(args.account, name).id)),
      permissions: args.permissions ?? { ...app.permissions }, suspendedAt: null, createdAt: this.now(),
    };
    this.state.installations.set(inst.id, inst);
    return inst;
  }

  /** As createInstallation, then sends installation created (only to the new installation). */
  async installApp(args: Parameters<SimulatorControl["createInstallation"]>[0]): Promise<Installation> {
    const inst = this.createInstallation(args);
    await this.emitToAccount(inst.accountLogin, "installation", () => ({
      action: "created", installation: installationJson(this.base, this.state, inst), sender: this.userBody(inst.accountLogin),
      repositories: [...this.state.repos.values()].filter((r) => r.ownerLogin.toLowerCase() === inst.accountLogin.toLowerCase() && (inst.repositorySelection === "all" || inst.repositoryIds.has(r.id)))
        .map((r) => ({ id: r.id, name: r.name, full_name: `${r.ownerLogin}/${r.name}`, private: r.private })),
    }), (i) => i.id === inst.id);
    return inst;
  }

  async suspendInstallation(args: { installationId: number; suspended: boolean }): Promise<void> {
    const inst = this.state.installations.get(args.installationId);
    if (!inst) throw new ControlError(404, "no such installation");
    if ((inst.suspendedAt !== null) === args.suspended) return;
    inst.suspendedAt = args.suspended ? this.now() : null;
    for (const [token, t] of this.state.tokens) if (t.installationId === inst.id) this.state.tokens.delete(token);
    await this.emitToAccount(inst.accountLogin, "installation", () => ({ action: args.suspended ? "suspend" : "unsuspend", installation: installationJson(this.base, this.state, inst), sender: this.userBody(inst.accountLogin) }), (i) => i.id === inst.id);
  }

  createRepository(args: { owner: string; name: string; defaultBranch?: string; private?: boolean; files?: Record<string, string> }): Repository {
    if (!this.state.account(args.owner)) throw new ControlError(404, "no such owner");
    if (this.state.repo(args.owner, args.name)) throw new ControlError(422, "repository exists");
    const at = this.now();
    const commit = makeCommit(this.state, null, args.files ?? { "README.md": `# ${args.name}\n` }, "Initial commit", at);
    const branch = args.defaultBranch ?? "main";
    const repo: Repository = {
      id: this.state.nextId("repo"), ownerLogin: args.owner, name: args.name, private: args.private ?? true, archived: false,
      defaultBranch: branch, branches: new Map([[branch, commit.sha]]), collaborators: new Map(), pulls: new Map(), nextNumber: 1,
      createdAt: at, pushedAt: at,
    };
    this.state.repos.set(this.state.repoKey(args.owner, args.name), repo);
    return repo;
  }

  async setRepository(args: { owner: string; repo: string; archived?: boolean; defaultBranch?: string }): Promise<Repository> {
    const repo = this.mustRepo(args.owner, args.repo);
    if (args.archived !== undefined && args.archived !== repo.archived) {
      repo.archived = args.archived;
      await this.emit(repo, "repository", () => ({ action: args.archived ? "archived" : "unarchived", sender: this.userBody(repo.ownerLogin) }));
    }
    if (args.defaultBranch !== undefined && args.defaultBranch !== repo.defaultBranch) {
      if (!repo.branches.has(args.defaultBranch)) throw new ControlError(422, "no such branch");
      const from = repo.defaultBranch;
      repo.defaultBranch = args.defaultBranch;
      await this.emit(repo, "repository", () => ({ action: "edited", changes: { default_branch: { from } }, sender: this.userBody(repo.ownerLogin) }));
    }
    return repo;
  }

  /** Commits `files` (path → content, null deletes) on `branch`, created from `from` (default branch) when missing; sends push. */
  async commit(args: { owner: string; repo: string; branch: string; files: Record<string, string | null>; from?: string; message?: string; sender?: string }): Promise<{ sha: string; before: string }> {
    const repo = this.mustRepo(args.owner, args.repo);
    const from = repo.branches.get(args.branch) ?? repo.branches.get(args.from ?? repo.defaultBranch);
    if (!from) throw new ControlError(422, "no base branch");
    const before = repo.branches.get(args.branch) ?? "0".repeat(40);
    const at = this.now();
    const commit = makeCommit(this.state, from, args.files, args.message ?? "Update files", at);
    repo.branches.set(args.branch, commit.sha);
    repo.pushedAt = at;
    await this.emitPush(repo, args.branch, before, commit.sha, args.sender ?? repo.ownerLogin);
    for (const pr of repo.pulls.values()) {
      if (pr.state === "open" && pr.headRef === args.branch && pr.headSha !== commit.sha) {
        pr.headSha = commit.sha;
        this.lagCommitPulls(pr);
        pr.baseSha = repo.branches.get(pr.baseRef) ?? pr.baseSha;
        pr.updatedAt = at;
        await this.emitPull(repo, pr, "synchronize", { before, after: commit.sha }, args.sender);
      }
    }
    await this.mergeQueues.branchMoved(repo, args.branch);
    return { sha: commit.sha, before };
  }

  private emitPush(repo: Repository, branch: string, before: string, after: string, sender: string): Promise<void> {
    const commit = this.state.commits.get(after)!;
    return this.emit(repo, "push", () => ({
      ref: `refs/heads/${branch}`, before, after, created: before === "0".repeat(40), deleted: false, forced: false,
      base_ref: null, compare: `${this.base}/html/${repo.ownerLogin}/${repo.name}/compare/${before}...${after}`,
      commits: [{ id: after, message: commit.message, timestamp: commit.date }], head_commit: { id: after, message: commit.message, timestamp: commit.date },
      pusher: { name: sender }, sender: this.userBody(sender),
    }));
  }

  /**
   * The merge queue merged a pull request: its branch already points at the group commit `mergeCommit`; the pull request is
   * closed as merged by whoever queued it, and `push` and `pull_request` `closed` are sent.
   */
  async recordQueuedMerge(repo: Repository, pr: PullRequest, merge: { branch: string; before: string; mergeCommit: string; by: string }): Promise<void> {
    const at = this.now();
    repo.pushedAt = at;
    pr.state = "closed";
    pr.updatedAt = at;
    pr.closedAt = at;
    pr.merged = { commitSha: merge.mergeCommit, byLogin: merge.by, at };
    await this.emitPush(repo, merge.branch, merge.before, merge.mergeCommit, merge.by);
    await this.emitPull(repo, pr, "closed", {}, merge.by);
  }

  /** Opens a pull request from branch `head` (set to commit `headSha` first when given, e.g. a second branch on a shared head). */
  async openPullRequest(args: { owner: string; repo: string; head: string; headSha?: string; base?: string; title?: string; author: string; draft?: boolean }): Promise<PullRequest> {
    const repo = this.mustRepo(args.owner, args.repo);
    if (args.headSha !== undefined) {
      if (!this.state.commits.has(args.headSha)) throw new ControlError(422, "no such commit");
      repo.branches.set(args.head, args.headSha);
    }
    const baseRef = args.base ?? repo.defaultBranch;
    const headSha = repo.branches.get(args.head);
    const baseSha = repo.branches.get(baseRef);
    if (!headSha || !baseSha) throw new ControlError(422, "no such branch");
    if (!this.state.account(args.author)) this.createUser({ login: args.author });
    const at = this.now();
    const pr: PullRequest = {
      id: this.state.nextId("pull"), number: repo.nextNumber++, title: args.title ?? `Change ${args.head}`, authorLogin: args.author,
      state: "open", draft: args.draft ?? false, headRef: args.head, headSha, baseRef, baseSha, labels: [], reviews: [],
      createdAt: at, updatedAt: at, closedAt: null,
    };
    repo.pulls.set(pr.number, pr);
    this.lagCommitPulls(pr);
    await this.emitPull(repo, pr, "opened", {}, args.author);
    return pr;
  }

  /**
   * Merges an open pull request as `by` (a merge commit on its base branch whose tree is the head's), closes it and sends
   * pull_request `closed` with `merged: true` (no push event for the base branch: nothing here needs one).
   */
  async mergePullRequest(args: { owner: string; repo: string; number: number; by: string; /** ISO 8601; the simulator's clock by default. */ at?: string }): Promise<PullRequest> {
    const repo = this.mustRepo(args.owner, args.repo);
    const pr = this.mustPull(args.owner, args.repo, args.number);
    if (pr.state !== "open") throw new ControlError(405, "pull request is not open");
    if (!this.state.account(args.by)) this.createUser({ login: args.by });
    const baseTip = repo.branches.get(pr.baseRef);
    const headTree = this.state.commits.get(pr.headSha)?.tree;
    if (!baseTip || !headTree) throw new ControlError(422, "no such branch");
    const changes: Record<string, string | null> = {};
    for (const path of this.state.commits.get(baseTip)!.tree.keys()) if (!headTree.has(path)) changes[path] = null;
    for (const [path, blob] of headTree) changes[path] = new TextDecoder().decode(this.state.blobs.get(blob));
    const at = args.at ?? this.now();
    const merge = makeCommit(this.state, baseTip, changes, `Merge pull request #${pr.number}`, at);
    repo.branches.set(pr.baseRef, merge.sha);
    pr.state = "closed";
    pr.updatedAt = at;
    pr.closedAt = at;
    pr.merged = { commitSha: merge.sha, byLogin: args.by, at };
    await this.emitPull(repo, pr, "closed", {}, args.by);
    await this.mergeQueues.branchMoved(repo, pr.baseRef);
    return pr;
  }

  /** Pushes a new head commit to the pull request's head branch (sends push and pull_request synchronize). */
  async pushToPullRequest(args: { owner: string; repo: string; number: number; files: Record<string, string | null>; message?: string }): Promise<{ sha: string }> {
    const pr = this.mustPull(args.owner, args.repo, args.number);
    return this.commit({ owner: args.owner, repo: args.repo, branch: pr.headRef, files: args.files, message: args.message, sender: pr.authorLogin });
  }

  /**
   * Force-pushes the pull request's head branch to an existing commit (e.g. back to an earlier head): sends push with
   * `forced: true` and pull_request synchronize, as the forge does.
   */
  async forcePushPullRequest(args: { owner: string; repo: string; number: number; sha: string }): Promise<void> {
    const repo = this.mustRepo(args.owner, args.repo);
    const pr = this.mustPull(args.owner, args.repo, args.number);
    if (!this.state.commits.has(args.sha)) throw new ControlError(422, "no such commit");
    const before = pr.headSha;
    const at = this.now();
    repo.branches.set(pr.headRef, args.sha);
    repo.pushedAt = at;
    await this.emit(repo, "push", () => ({
      ref: `refs/heads/${pr.headRef}`, before, after: args.sha, created: false, deleted: false, forced: true, base_ref: null,
      compare: `${this.base}/html/${repo.ownerLogin}/${repo.name}/compare/${before}...${args.sha}`, commits: [], head_commit: null,
      pusher: { name: pr.authorLogin }, sender: this.userBody(pr.authorLogin),
    }));
    pr.headSha = args.sha;
    this.lagCommitPulls(pr);
    pr.updatedAt = at;
    await this.emitPull(repo, pr, "synchronize", { before, after: args.sha }, pr.authorLogin);
  }

  async submitReview(args: { owner: string; repo: string; number: number; user: string; state: "APPROVED" | "CHANGES_REQUESTED" | "COMMENTED"; commitId?: string; body?: string }): Promise<Review> {
    const repo = this.mustRepo(args.owner, args.repo);
    const pr = this.mustPull(args.owner, args.repo, args.number);
    if (!this.state.account(args.user)) this.createUser({ login: args.user });
    const review: Review = {
      id: this.state.nextId("review"), userLogin: args.user, state: args.state, commitId: args.commitId ?? pr.headSha,
      body: args.body ?? "", submittedAt: this.now(),
    };
    pr.reviews.push(review);
    // As on the forge, activity on a pull request (reviews, pushes to its head, labels, edits, state changes) moves its
    // updated_at, which the reconciler compares with what the last evaluation saw.
    pr.updatedAt = review.submittedAt;
    await this.emit(repo, "pull_request_review", () => ({
      action: "submitted", review: reviewJson(this.base, this.state, repo, pr, review), pull_request: this.pullBody(repo, pr),
      sender: this.userBody(args.user),
    }));
    return review;
  }

  /**
   * Someone with write access (`by`, not necessarily the reviewer) edits a review's body, as the forge allows: the REST
   * review shows only the new body; GraphQL's `lastEditedAt` and `editor` say it was edited. Sends `pull_request_review`
   * `edited` with the old body in `changes`.
   */
  async editReview(args: { owner: string; repo: string; number: number; reviewId: number; body: string; by: string }): Promise<Review> {
    const repo = this.mustRepo(args.owner, args.repo);
    const pr = this.mustPull(args.owner, args.repo, args.number);
    const review = pr.reviews.find((r) => r.id === args.reviewId);
    if (!review) throw new ControlError(404, "no such review");
    if (!this.state.account(args.by)) this.createUser({ login: args.by });
    const from = review.body;
    review.body = args.body;
    review.lastEditedAt = this.now();
    review.editorLogin = args.by;
    pr.updatedAt = review.lastEditedAt;
    await this.emit(repo, "pull_request_review", () => ({
      action: "edited", changes: { body: { from } }, review: reviewJson(this.base, this.state, repo, pr, review), pull_request: this.pullBody(repo, pr),
      sender: this.userBody(args.by),
    }));
    return review;
  }

  async dismissReview(args: { owner: string; repo: string; number: number; reviewId: number }): Promise<Review> {
    const repo = this.mustRepo(args.owner, args.repo);
    const pr = this.mustPull(args.owner, args.repo, args.number);
    const review = pr.reviews.find((r) => r.id === args.reviewId);
    if (!review) throw new ControlError(404, "no such review");
    review.state = "DISMISSED";
    pr.updatedAt = this.now();
    await this.emit(repo, "pull_request_review", () => ({
      action: "dismissed", review: reviewJson(this.base, this.state, repo, pr, review), pull_request: this.pullBody(repo, pr),
      sender: this.userBody(repo.ownerLogin),
    }));
    return review;
  }

  async label(args: { owner: string; repo: string; number: number; name: string; remove?: boolean }): Promise<PullRequest> {
    const repo = this.mustRepo(args.owner, args.repo);
    const pr = this.mustPull(args.owner, args.repo, args.number);
    const key = `${repo.id}/${args.name}`;
    const id = this.state.labelIds.get(key) ?? this.state.nextId("label");
    this.state.labelIds.set(key, id);
    const label = { id, name: args.name, color: "ededed" };
    const has = pr.labels.some((l) => l.name === args.name);
    if (args.remove) { if (!has) return pr; pr.labels = pr.labels.filter((l) => l.name !== args.name); }
    else { if (has) return pr; pr.labels.push(label); }
    pr.updatedAt = this.now();
    await this.emitPull(repo, pr, args.remove ? "unlabeled" : "labeled", { label: { id, node_id: "", url: "", name: args.name, color: "ededed", default: false, description: null } });
    return pr;
  }

  async setPullRequestState(args: { owner: string; repo: string; number: number; state: "open" | "closed"; draft?: boolean }): Promise<PullRequest> {
    const repo = this.mustRepo(args.owner, args.repo);
    const pr = this.mustPull(args.owner, args.repo, args.number);
    if (args.draft !== undefined && args.draft !== pr.draft) {
      pr.draft = args.draft;
      pr.updatedAt = this.now();
      await this.emitPull(repo, pr, args.draft ? "converted_to_draft" : "ready_for_review", {});
    }
    if (args.state !== pr.state) {
      pr.state = args.state;
      pr.updatedAt = this.now();
      pr.closedAt = args.state === "closed" ? pr.updatedAt : null;
      await this.emitPull(repo, pr, args.state === "closed" ? "closed" : "reopened", {});
    }
    return pr;
  }

  /** Sets a direct collaborator permission (null removes); sends member added/edited/removed. */
  async setCollaborator(args: { owner: string; repo: string; user: string; permission: RepoPermission | null }): Promise<void> {
    const repo = this.mustRepo(args.owner, args.repo);
    if (!this.state.account(args.user)) this.createUser({ login: args.user });
    const key = args.user.toLowerCase();
    const before = repo.collaborators.get(key) ?? null;
    if (before === args.permission) return;
    if (args.permission === null) repo.collaborators.delete(key);
    else repo.collaborators.set(key, args.permission);
    const action = before === null ? "added" : args.permission === null ? "removed" : "edited";
    await this.emit(repo, "member", () => ({
      action, member: this.userBody(args.user), sender: this.userBody(repo.ownerLogin),
      ...(action === "edited" ? { changes: { permission: { from: before, to: args.permission } } } : {}),
    }));
  }

  /** Sets an organization membership (null removes); sends organization member_added/member_invited/member_removed. */
  async setOrgMembership(args: { org: string; user: string; state: "active" | "pending" | null; role?: "member" | "admin" }): Promise<void> {
    if (!this.state.account(args.user)) this.createUser({ login: args.user });
    const key = args.org.toLowerCase();
    const members = this.state.memberships.get(key) ?? new Map();
    this.state.memberships.set(key, members);
    const had = members.has(args.user.toLowerCase());
    if (args.state === null) members.delete(args.user.toLowerCase());
    else members.set(args.user.toLowerCase(), { state: args.state, role: args.role ?? "member" });
    if (args.state === null && !had) return;
    const action = args.state === null ? "member_removed" : args.state === "pending" ? "member_invited" : "member_added";
    await this.emitToAccount(args.org, "organization", () => ({
      action, membership: { state: args.state ?? "inactive", role: args.role ?? "member", user: this.userBody(args.user) }, sender: this.userBody(args.org),
    }));
  }

  createTeam(args: { org: string; slug: string; name?: string; privacy?: "closed" | "secret" }): Team {
    if (this.state.account(args.org)?.type !== "Organization") throw new ControlError(404, "no such organization");
    const team: Team = {
      id: this.state.nextId("team"), orgLogin: args.org, slug: args.slug, name: args.name ?? args.slug, privacy: args.privacy ?? "closed",
      repos: new Map(), members: new Map(), createdAt: this.now(),
    };
    this.state.teams.set(`${args.org.toLowerCase()}/${args.slug.toLowerCase()}`, team);
    return team;
  }

  /** Changes a team's privacy; sends team edited. */
  async setTeam(args: { org: string; team: string; privacy: "closed" | "secret" }): Promise<void> {
    const team = this.mustTeam(args.org, args.team);
    if (team.privacy === args.privacy) return;
    const from = team.privacy;
    team.privacy = args.privacy;
    await this.emitToAccount(args.org, "team", () => ({ action: "edited", team: teamJson(this.base, this.state, team), changes: { privacy: { from } }, sender: this.userBody(args.org) }));
  }

  /** Grants a team access to a repository (null removes); sends team added_to_repository/edited/removed_from_repository. */
  async setTeamRepository(args: { org: string; team: string; owner: string; repo: string; permission: TeamRepoPermission | null }): Promise<void> {
    const team = this.mustTeam(args.org, args.team);
    const repo = this.mustRepo(args.owner, args.repo);
    const before = team.repos.get(repo.id) ?? null;
    if (before === args.permission) return;
    if (args.permission === null) team.repos.delete(repo.id);
    else team.repos.set(repo.id, args.permission);
    const action = before === null ? "added_to_repository" : args.permission === null ? "removed_from_repository" : "edited";
    await this.emitToAccount(args.org, "team", () => ({ action, team: teamJson(this.base, this.state, team), repository: repositoryJson(this.base, this.state, repo), sender: this.userBody(args.org) }));
  }

  /** Sets a team membership (null removes); sends membership added/removed. */
  async setTeamMembership(args: { org: string; team: string; user: string; state: "active" | "pending" | null; role?: "member" | "maintainer" }): Promise<void> {
    const team = this.mustTeam(args.org, args.team);
    if (!this.state.account(args.user)) this.createUser({ login: args.user });
    const had = team.members.has(args.user.toLowerCase());
    if (args.state === null) team.members.delete(args.user.toLowerCase());
    else team.members.set(args.user.toLowerCase(), { state: args.state, role: args.role ?? "member" });
    if (had === (args.state !== null)) return;
    await this.emitToAccount(args.org, "membership", () => ({
      action: args.state === null ? "removed" : "added", scope: "team", member: this.userBody(args.user), team: teamJson(this.base, this.state, team), sender: this.userBody(args.org),
    }));
  }

  /** Creates, edits or deletes a repository label definition; sends label created/edited/deleted. */
  async defineLabel(args: { owner: string; repo: string; name: string; action: "created" | "edited" | "deleted"; color?: string }): Promise<void> {
    const repo = this.mustRepo(args.owner, args.repo);
    const key = `${repo.id}/${args.name}`;
    const id = this.state.labelIds.get(key) ?? this.state.nextId("label");
    if (args.action === "deleted") this.state.labelIds.delete(key);
    else this.state.labelIds.set(key, id);
    await this.emit(repo, "label", () => ({ action: args.action, label: { id, node_id: "", url: "", name: args.name, color: args.color ?? "ededed", default: false, description: null }, sender: this.userBody(repo.ownerLogin) }));
  }

  checkRuns(args: { owner: string; repo: string; headSha?: string }): ReturnType<typeof checkRunJson>[] {
    const repo = this.mustRepo(args.owner, args.repo);
    return [...this.state.checkRuns.values()]
      .filter((r) => r.repoId === repo.id && (!args.headSha || r.headSha === args.headSha))
      .map((r) => checkRunJson(this.base, this.state, repo, r));
  }

  async rerequestCheckRun(args: { checkRunId: number; sender?: string }): Promise<void> {
    const run = this.state.checkRuns.get(args.checkRunId);
    if (!run) throw new ControlError(404, "no such check run");
    const repo = this.state.repoById(run.repoId)!;
    await this.emit(repo, "check_run", () => ({ action: "rerequested", check_run: checkRunJson(this.base, this.state, repo, run), sender: this.userBody(args.sender ?? repo.ownerLogin) }),
      (inst) => inst.appId === run.appId);
  }

  /** Sends check_suite rerequested for the suite of `appId` on `headSha` (to that App only). */
  async rerequestCheckSuite(args: { owner: string; repo: string; headSha: string; appId: number; sender?: string }): Promise<void> {
    const repo = this.mustRepo(args.owner, args.repo);
    const app = this.mustApp(args.appId);
    const run = [...this.state.checkRuns.values()].find((r) => r.repoId === repo.id && r.headSha === args.headSha && r.appId === app.id);
    const prs = [...repo.pulls.values()].filter((p) => p.state === "open" && p.headSha === args.headSha).map((p) => ({
      id: p.id, number: p.number, head: { ref: p.headRef, sha: p.headSha }, base: { ref: p.baseRef, sha: p.baseSha },
    }));
    await this.emit(repo, "check_suite", () => ({
      action: "rerequested", sender: this.userBody(args.sender ?? repo.ownerLogin),
      check_suite: { id: run?.suiteId ?? this.state.nextId("suite"), head_sha: args.headSha, head_branch: null, status: "completed", conclusion: run?.conclusion ?? null, app: appJson(this.base, this.state, app), pull_requests: prs },
    }), (inst) => inst.appId === app.id);
  }

  mintManifestCode(args: { manifest?: Record<string, unknown>; owner?: string; expiresInSeconds?: number }): { code: string } {
    const code = randomBytes(10).toString("hex");
    const expiresAt = Date.now() + (args.expiresInSeconds ?? MANIFEST_CODE_LIFETIME_MS / 1000) * 1000;
    this.state.manifestCodes.set(code, { ...(args.manifest ?? {}), __owner: args.owner ?? "", __expiresAt: expiresAt });
    return { code };
  }

  /** Expires every outstanding manifest code now (as if the forge's hour had passed); returns how many. */
  expireManifestCodes(): { expired: number } {
    let expired = 0;
    for (const entry of this.state.manifestCodes.values()) { entry.__expiresAt = 0; expired++; }
    for (const entry of this.state.createdAppCodes.values()) { entry.expiresAt = 0; expired++; }
    return { expired };
  }

  /** Sends `event` to every non-suspended installation that can see `repo` (optionally filtered), with GitHub-like common fields. */
  emit(repo: Repository, event: string, build: () => Record<string, unknown>, filter?: (i: Installation) => boolean): Promise<void> {
    const targets = this.state.installationsFor(repo).filter((i) => i.suspendedAt === null && (!filter || filter(i)));
    return this.send(targets, repo.ownerLogin, event, () => ({ ...build(), repository: repositoryJson(this.base, this.state, repo) }));
  }

  /** Sends an account-wide event (organization, membership, team, installation) to every installation on that account. */
  emitToAccount(account: string, event: string, build: () => Record<string, unknown>, filter?: (i: Installation) => boolean): Promise<void> {
    const targets = [...this.state.installations.values()].filter((i) => i.accountLogin.toLowerCase() === account.toLowerCase() && (!filter || filter(i)));
    return this.send(targets, account, event, build);
  }

  private async send(targets: Installation[], account: string, event: string, build: () => Record<string, unknown>): Promise<void> {
    const owner = this.state.account(account);
    await Promise.all(targets.map(async (inst) => {
      const app = this.state.apps.get(inst.appId)!;
      const payload = {
        ...build(),
        // The published webhook descriptions' organization-simple-webhooks shape (the merge_group descriptions require it whole).
        ...(owner?.type === "Organization" ? { organization: organizationJson(this.base, owner) } : {}),
        installation: { id: inst.id, node_id: Buffer.from(`Installation:${inst.id}`).toString("base64") },
      };
      const target = { url: app.webhookUrl ?? this.options.webhookUrl ?? null, secret: app.webhookSecret ?? this.options.webhookSecret ?? null, appId: app.id, neutralHeaders: this.options.webhookNeutralHeaders === true };
      this.deliveries.push(await deliverWebhook(target, event, payload, inst.id, this.options.webhookTimeoutMs ?? 5000));
      if (this.deliveries.length > 10_000) this.deliveries.splice(0, this.deliveries.length - 10_000);
    }));
  }

  private emitPull(repo: Repository, pr: PullRequest, action: string, extra: Record<string, unknown>, sender?: string): Promise<void> {
    return this.emit(repo, "pull_request", () => ({ action, number: pr.number, pull_request: this.pullBody(repo, pr), ...extra, sender: this.userBody(sender ?? pr.authorLogin) }));
  }

  // A webhook's pull request is the full one: it says whether and by whom it was merged.
  private pullBody(repo: Repository, pr: PullRequest) { return { ...pullJson(this.base, this.state, repo, pr), ...mergedJson(this.base, this.state, pr) }; }
  userJsonOf(login: string) { return this.userBody(login); }
  private userBody(login: string) { const a = this.state.account(login); return a ? userJson(this.base, a) : { login }; }
  get base(): string { return this.options.baseUrl(); }

  appJson(app: ForgeApp) { return appJson(this.base, this.state, app); }
  installationJson(inst: Installation) { return installationJson(this.base, this.state, inst); }

  mustApp(id: number): ForgeApp { const a = this.state.apps.get(id); if (!a) throw new ControlError(404, "no such app"); return a; }
  mustRepo(owner: string, name: string): Repository { const r = this.state.repo(owner, name); if (!r) throw new ControlError(404, "no such repository"); return r; }
  mustPull(owner: string, name: string, n: number): PullRequest { const p = this.mustRepo(owner, name).pulls.get(n); if (!p) throw new ControlError(404, "no such pull request"); return p; }
  mustTeam(org: string, slug: string): Team { const t = this.state.team(org, slug); if (!t) throw new ControlError(404, "no such team"); return t; }
}

export type { CheckRun };
