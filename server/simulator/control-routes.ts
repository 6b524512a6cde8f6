// The simulator's HTTP control API (`POST /_control/<operation>` with a JSON body), for tests in other processes and the demo.
import type { SimulatorControl } from "./control.ts";
import type { Fault, FaultTable } from "./faults.ts";
import type { RequestCounter } from "./request-counter.ts";
import type { TokenRequest } from "./rest.ts";

export interface RequestRecord { method: string; path: string; query: string; status: number; auth: "jwt" | "token" | "none"; apiVersion: string | null }

export interface ControlContext { control: SimulatorControl; faults: FaultTable; requests: RequestRecord[]; counter: RequestCounter; tokenRequests: TokenRequest[] }

type Op = (c: ControlContext, body: any) => unknown;

/** Operation name → handler. Each returns a small JSON projection (IDs, SHAs) of what it created or changed. */
export const CONTROL_OPERATIONS: Record<string, Op> = {
  "organizations": (c, b) => c.control.createOrganization(b),
  "users": (c, b) => c.control.createUser(b),
  "apps": (c, b) => { const a = c.control.createApp(b); return { id: a.id, slug: a.slug, client_id: a.clientId }; },
  "installations": async (c, b) => { const i = await c.control.installApp(b); return { id: i.id, app_id: i.appId, account: i.accountLogin }; },
  "installation-suspension": (c, b) => c.control.suspendInstallation(b),
  "repositories": (c, b) => { const r = c.control.createRepository(b); return { id: r.id, full_name: `${r.ownerLogin}/${r.name}`, default_branch: r.defaultBranch, head: r.branches.get(r.defaultBranch) }; },
  "repository-settings": async (c, b) => { const r = await c.control.setRepository(b); return { id: r.id, archived: r.archived, default_branch: r.defaultBranch }; },
  "commits": (c, b) => c.control.commit(b),
  "pulls": async (c, b) => pullProjection(await c.control.openPullRequest(b)),
  "pull-pushes": (c, b) => c.control.pushToPullRequest(b),
  "pull-force-pushes": async (c, b) => { await c.control.forcePushPullRequest(b); return {}; },
  "pull-state": async (c, b) => pullProjection(await c.control.setPullRequestState(b)),
  "pull-merges": async (c, b) => ({ ...pullProjection(await c.control.mergePullRequest(b)), merge_commit_sha: c.control.mustPull(b.owner, b.repo, b.number).merged!.commitSha }),
  "reviews": async (c, b) => { const r = await c.control.submitReview(b); return { id: r.id, state: r.state, commit_id: r.commitId }; },
  "review-edits": async (c, b) => { const r = await c.control.editReview(b); return { id: r.id, last_edited_at: r.lastEditedAt ?? null }; },
  "review-dismissals": async (c, b) => { const r = await c.control.dismissReview(b); return { id: r.id, state: r.state }; },
  "labels": async (c, b) => pullProjection(await c.control.label(b)),
  "collaborators": (c, b) => c.control.setCollaborator(b),
  "org-memberships": (c, b) => c.control.setOrgMembership(b),
  "teams": (c, b) => { const t = c.control.createTeam(b); return { id: t.id, slug: t.slug, privacy: t.privacy }; },
  "team-settings": (c, b) => c.control.setTeam(b),
  "team-repositories": (c, b) => c.control.setTeamRepository(b),
  "team-memberships": (c, b) => c.control.setTeamMembership(b),
  "label-definitions": (c, b) => c.control.defineLabel(b),
  "check-runs": (c, b) => c.control.checkRuns(b),
  "merge-queue-settings": (c, b) => { const q = c.control.mergeQueues.configure(b); return { branch: q.branch, required_checks: q.requiredChecks }; },
  "merge-queue-entries": (c, b) => c.control.mergeQueues.enqueue(b),
  "merge-queue-removals": (c, b) => c.control.mergeQueues.remove(b),
  "merge-queue": (c, b) => c.control.mergeQueues.entriesOf(c.control.mustRepo(b.owner, b.repo), b.branch) ?? [],
  "check-run-rerequests": (c, b) => c.control.rerequestCheckRun(b),
  "check-suite-rerequests": (c, b) => c.control.rerequestCheckSuite(b),
  "manifest-codes": (c, b) => c.control.mintManifestCode(b ?? {}),
  "manifest-codes-expire": (c) => c.control.expireManifestCodes(),
  "webhook-target": (c, b) => c.control.setWebhookTarget(b ?? {}),
  "faults": (c, b) => ({ id: c.faults.add(b as Fault) }),
  "faults-clear": (c) => c.faults.clear(),
  "commit-pulls-lag": (c, b) => c.control.setCommitPullsLag(b),
  "requests": (c) => c.requests,
  "requests-clear": (c) => { c.requests.length = 0; },
  "request-counts": (c) => c.counter.snapshot(),
  "request-counts-clear": (c) => c.counter.reset(),
  "token-requests": (c) => c.tokenRequests,
  "deliveries": (c) => c.control.deliveries.map(({ body: _body, ...d }) => d),
};

function pullProjection(p: { id: number; number: number; headSha: string; baseSha: string; state: string; headRef: string; baseRef: string }) {
  return { id: p.id, number: p.number, head_sha: p.headSha, base_sha: p.baseSha, head_ref: p.headRef, base_ref: p.baseRef, state: p.state };
}
