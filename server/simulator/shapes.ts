// REST response bodies shaped like the forge's (see @octokit/openapi, api.github.com): every required property is present.
import type { Account, CheckRun, ForgeApp, ForgeState, Installation, Label, PullRequest, Repository, Review, Team } from "./model.ts";

const EPOCH = "2026-01-01T00:00:00Z";
const nodeId = (kind: string, id: number) => Buffer.from(`${kind}:${id}`).toString("base64");

export function userJson(base: string, a: Account) {
  const u = `${base}/users/${encodeURIComponent(a.login)}`;
  return {
    login: a.login, id: a.id, node_id: nodeId(a.type, a.id), avatar_url: `${base}/avatars/${a.id}`, gravatar_id: "",
    url: u, html_url: `${base}/html/${a.login}`, followers_url: `${u}/followers`, following_url: `${u}/following{/other_user}`,
    gists_url: `${u}/gists{/gist_id}`, starred_url: `${u}/starred{/owner}{/repo}`, subscriptions_url: `${u}/subscriptions`,
    organizations_url: `${u}/orgs`, repos_url: `${u}/repos`, events_url: `${u}/events{/privacy}`,
    received_events_url: `${u}/received_events`, type: a.type, site_admin: false, user_view_type: "public",
  };
}

export function privateUserJson(base: string, a: Account) {
  return {
    ...userJson(base, a), name: a.login, company: null, blog: "", location: null, email: null, hireable: null, bio: null,
    twitter_username: null, public_repos: 0, public_gists: 0, followers: 0, following: 0, created_at: EPOCH, updated_at: EPOCH,
    private_gists: 0, total_private_repos: 0, owned_private_repos: 0, disk_usage: 0, collaborators: 0, two_factor_authentication: true,
  };
}

export function organizationJson(base: string, a: Account) {
  const u = `${base}/orgs/${a.login}`;
  return {
    login: a.login, id: a.id, node_id: nodeId("Organization", a.id), url: u, repos_url: `${u}/repos`, events_url: `${u}/events`,
    hooks_url: `${u}/hooks`, issues_url: `${u}/issues`, members_url: `${u}/members{/member}`,
    public_members_url: `${u}/public_members{/member}`, avatar_url: `${base}/avatars/${a.id}`, description: null,
  };
}

export function organizationFullJson(base: string, a: Account) {
  return {
    ...organizationJson(base, a), html_url: `${base}/html/${a.login}`, has_organization_projects: false, has_repository_projects: false,
    public_repos: 0, public_gists: 0, followers: 0, following: 0, type: "Organization", created_at: EPOCH, updated_at: EPOCH, archived_at: null,
  };
}

export function appJson(base: string, state: ForgeState, app: ForgeApp) {
  const owner = state.account(app.ownerLogin);
  return {
    id: app.id, slug: app.slug, node_id: nodeId("App", app.id), client_id: app.clientId,
    owner: owner ? userJson(base, owner) : null, name: app.name, description: null,
    external_url: `${base}/html/apps/${app.slug}`, html_url: `${base}/html/apps/${app.slug}`, created_at: app.createdAt,
    updated_at: app.createdAt, permissions: app.permissions, events: app.events,
  };
}

export function installationJson(base: string, state: ForgeState, inst: Installation) {
  const app = state.apps.get(inst.appId);
  const account = state.account(inst.accountLogin);
  return {
    id: inst.id, app_id: inst.appId, app_slug: app?.slug ?? "", target_id: account?.id ?? 0, target_type: account?.type ?? "Organization",
    // The description's account is allOf(simple-user, enterprise), so the enterprise fields are carried too.
    account: account ? { ...userJson(base, account), name: account.login, slug: account.login.toLowerCase(), created_at: EPOCH, updated_at: EPOCH } : null,
    single_file_name: null, repository_selection: inst.repositorySelection,
    access_tokens_url: `${base}/app/installations/${inst.id}/access_tokens`, html_url: `${base}/html/installations/${inst.id}`,
    repositories_url: `${base}/installation/repositories`, events: app?.events ?? [], permissions: inst.permissions,
    created_at: inst.createdAt, updated_at: inst.createdAt, suspended_by: null, suspended_at: inst.suspendedAt,
    has_multiple_single_files: false, single_file_paths: [],
  };
}

export function repositoryJson(base: string, state: ForgeState, repo: Repository, permissions?: Record<string, boolean>) {
  const owner = state.account(repo.ownerLogin) ?? { id: 0, login: repo.ownerLogin, type: "User" as const };
  const full = `${repo.ownerLogin}/${repo.name}`;
  const u = `${base}/repos/${full}`;
  return {
    id: repo.id, node_id: nodeId("Repository", repo.id), name: repo.name, full_name: full, owner: userJson(base, owner),
    private: repo.private, visibility: repo.private ? "private" : "public", html_url: `${base}/html/${full}`, description: null, fork: false, url: u,
    archive_url: `${u}/{archive_format}{/ref}`, assignees_url: `${u}/assignees{/user}`, blobs_url: `${u}/git/blobs{/sha}`,
    branches_url: `${u}/branches{/branch}`, collaborators_url: `${u}/collaborators{/collaborator}`, comments_url: `${u}/comments{/number}`,
    commits_url: `${u}/commits{/sha}`, compare_url: `${u}/compare/{base}...{head}`, contents_url: `${u}/contents/{+path}`,
    contributors_url: `${u}/contributors`, deployments_url: `${u}/deployments`, downloads_url: `${u}/downloads`, events_url: `${u}/events`,
    forks_url: `${u}/forks`, git_commits_url: `${u}/git/commits{/sha}`, git_refs_url: `${u}/git/refs{/sha}`, git_tags_url: `${u}/git/tags{/sha}`,
    git_url: `git://forge.test/${full}.git`, issue_comment_url: `${u}/issues/comments{/number}`, issue_events_url: `${u}/issues/events{/number}`,
    issues_url: `${u}/issues{/number}`, keys_url: `${u}/keys{/key_id}`, labels_url: `${u}/labels{/name}`, languages_url: `${u}/languages`,
    merges_url: `${u}/merges`, milestones_url: `${u}/milestones{/number}`, notifications_url: `${u}/notifications{?since,all,participating}`,
    pulls_url: `${u}/pulls{/number}`, releases_url: `${u}/releases{/id}`, ssh_url: `git@forge.test:${full}.git`,
    stargazers_url: `${u}/stargazers`, statuses_url: `${u}/statuses/{sha}`, subscribers_url: `${u}/subscribers`,
    subscription_url: `${u}/subscription`, tags_url: `${u}/tags`, teams_url: `${u}/teams`, trees_url: `${u}/git/trees{/sha}`,
    clone_url: `${base}/git/${full}.git`, mirror_url: null, hooks_url: `${u}/hooks`, svn_url: `${base}/html/${full}`, homepage: null,
    language: null, forks_count: 0, forks: 0, stargazers_count: 0, watchers_count: 0, watchers: 0, size: 0,
    default_branch: repo.defaultBranch, open_issues_count: 0, open_issues: 0, is_template: false, topics: [],
    has_issues: true, has_projects: false, has_wiki: false, has_pages: false, has_downloads: false, has_discussions: false,
    archived: repo.archived, disabled: false, pushed_at: repo.pushedAt, created_at: repo.createdAt, updated_at: repo.pushedAt,
    license: null, allow_forking: true, web_commit_signoff_required: false, network_count: 0, subscribers_count: 0,
    ...(permissions ? { permissions } : {}),
  };
}

function labelJson(base: string, repo: Repository, l: Label) {
  return { id: l.id, node_id: nodeId("Label", l.id), url: `${base}/repos/${repo.ownerLogin}/${repo.name}/labels/${encodeURIComponent(l.name)}`,
    name: l.name, description: "", color: l.color, default: false };
}

/** The full pull request's (and its webhook payload's) `merged` and `merged_by`. */
export function mergedJson(base: string, state: ForgeState, pr: PullRequest) {
  const by = pr.merged ? state.account(pr.merged.byLogin) : undefined;
  return { merged: pr.merged !== undefined, merged_by: by ? userJson(base, by) : null };
}

export function pullJson(base: string, state: ForgeState, repo: Repository, pr: PullRequest, counts?: { changedFiles: number; additions: number; deletions: number }) {
  const full = `${repo.ownerLogin}/${repo.name}`;
  const u = `${base}/repos/${full}/pulls/${pr.number}`;
  const author = state.account(pr.authorLogin)!;
  const owner = state.account(repo.ownerLogin)!;
  const repoBody = repositoryJson(base, state, repo);
  const simple = {
    url: u, id: pr.id, node_id: nodeId("PullRequest", pr.id), html_url: `${base}/html/${full}/pull/${pr.number}`,
    diff_url: `${base}/html/${full}/pull/${pr.number}.diff`, patch_url: `${base}/html/${full}/pull/${pr.number}.patch`,
    issue_url: `${base}/repos/${full}/issues/${pr.number}`, commits_url: `${u}/commits`, review_comments_url: `${u}/comments`,
    review_comment_url: `${base}/repos/${full}/pulls/comments{/number}`, comments_url: `${base}/repos/${full}/issues/${pr.number}/comments`,
    statuses_url: `${base}/repos/${full}/statuses/${pr.headSha}`, number: pr.number, state: pr.state, locked: false, title: pr.title,
    user: userJson(base, author), body: null, labels: pr.labels.map((l) => labelJson(base, repo, l)), milestone: null, active_lock_reason: null,
    created_at: pr.createdAt, updated_at: pr.updatedAt, closed_at: pr.closedAt, merged_at: pr.merged?.at ?? null, merge_commit_sha: pr.merged?.commitSha ?? null, assignee: null,
    assignees: [], requested_reviewers: [], requested_teams: [],
    head: { label: `${repo.ownerLogin}:${pr.headRef}`, ref: pr.headRef, sha: pr.headSha, user: userJson(base, owner), repo: repoBody },
    base: { label: `${repo.ownerLogin}:${pr.baseRef}`, ref: pr.baseRef, sha: pr.baseSha, user: userJson(base, owner), repo: repoBody },
    _links: {
      self: { href: u }, html: { href: `${base}/html/${full}/pull/${pr.number}` }, issue: { href: `${base}/repos/${full}/issues/${pr.number}` },
      comments: { href: `${base}/repos/${full}/issues/${pr.number}/comments` }, review_comments: { href: `${u}/comments` },
      review_comment: { href: `${base}/repos/${full}/pulls/comments{/number}` }, commits: { href: `${u}/commits` },
      statuses: { href: `${base}/repos/${full}/statuses/${pr.headSha}` },
    },
    author_association: "MEMBER", auto_merge: null, draft: pr.draft,
  };
  if (!counts) return simple;
  return {
    ...simple, ...mergedJson(base, state, pr), mergeable: true, rebaseable: true, mergeable_state: "clean", comments: 0, review_comments: 0,
    maintainer_can_modify: false, commits: 1, additions: counts.additions, deletions: counts.deletions, changed_files: counts.changedFiles,
  };
}

export function reviewJson(base: string, state: ForgeState, repo: Repository, pr: PullRequest, r: Review) {
  const full = `${repo.ownerLogin}/${repo.name}`;
  const user = state.account(r.userLogin);
  return {
    id: r.id, node_id: nodeId("PullRequestReview", r.id), user: user ? userJson(base, user) : null, body: r.body, state: r.state,
    html_url: `${base}/html/${full}/pull/${pr.number}#pullrequestreview-${r.id}`, pull_request_url: `${base}/repos/${full}/pulls/${pr.number}`,
    _links: { html: { href: `${base}/html/${full}/pull/${pr.number}#pullrequestreview-${r.id}` }, pull_request: { href: `${base}/repos/${full}/pulls/${pr.number}` } },
    submitted_at: r.submittedAt, commit_id: r.commitId, author_association: "MEMBER",
  };
}

export function teamJson(base: string, state: ForgeState, team: Team) {
  const org = state.account(team.orgLogin)!;
  const u = `${base}/orgs/${team.orgLogin}/teams/${team.slug}`;
  return {
    id: team.id, node_id: nodeId("Team", team.id), url: u, html_url: `${base}/html/orgs/${team.orgLogin}/teams/${team.slug}`,
    name: team.name, slug: team.slug, description: null, privacy: team.privacy, notification_setting: "notifications_enabled",
    permission: "pull", members_url: `${u}/members{/member}`, repositories_url: `${u}/repos`, type: "organization", parent: null,
    members_count: [...team.members.values()].filter((m) => m.state === "active").length, repos_count: team.repos.size,
    created_at: team.createdAt, updated_at: team.createdAt, organization: organizationFullJson(base, org),
  };
}

export function checkRunJson(base: string, state: ForgeState, repo: Repository, run: CheckRun) {
  const full = `${repo.ownerLogin}/${repo.name}`;
  const app = state.apps.get(run.appId);
  const prs = [...repo.pulls.values()].filter((p) => p.state === "open" && p.headSha === run.headSha).map((p) => ({
    id: p.id, number: p.number, url: `${base}/repos/${full}/pulls/${p.number}`,
    head: { ref: p.headRef, sha: p.headSha, repo: { id: repo.id, url: `${base}/repos/${full}`, name: repo.name } },
    base: { ref: p.baseRef, sha: p.baseSha, repo: { id: repo.id, url: `${base}/repos/${full}`, name: repo.name } },
  }));
  return {
    id: run.id, node_id: nodeId("CheckRun", run.id), head_sha: run.headSha, external_id: run.externalId,
    url: `${base}/repos/${full}/check-runs/${run.id}`, html_url: `${base}/html/${full}/runs/${run.id}`, details_url: run.detailsUrl,
    status: run.status, conclusion: run.conclusion, started_at: run.startedAt, completed_at: run.completedAt,
    output: { ...run.output, annotations_count: 0, annotations_url: `${base}/repos/${full}/check-runs/${run.id}/annotations` },
    name: run.name, check_suite: { id: run.suiteId }, app: app ? appJson(base, state, app) : null, pull_requests: prs,
  };
}
