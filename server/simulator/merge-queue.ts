// The forge's merge queue, one per repository and base branch, as the forge runs it:
//   - enqueue (control API `merge-queue-entries`): the pull request joins the end of its base branch's queue; its merge group
//     is a new commit on the commit ahead of it (the previous entry's group commit, or the branch tip) that merges the pull
//     request's changes (the merge method), and `merge_group` `checks_requested` is sent for it;
//   - a check run completing on a group commit: when every required check of the branch succeeded, the entry is mergeable; the
//     queue merges from its front (the branch moves to the group commit, the pull request is closed as merged, `push`,
//     `pull_request` `closed` and `merge_group` `destroyed` (merged) are sent); a required check that completes otherwise
//     ejects the entry (`destroyed`, dequeued) and rebuilds every group behind it (`destroyed`, invalidated, then
//     `checks_requested` for the new group commit);
//   - a removal (control API) ejects likewise; a push to the base branch rebuilds every group on the new tip.
// A push to a queued pull request does not eject it here: the queue keeps the group it built, so tests see the service refuse it.
// `entriesOf` is what the forge's GraphQL `Repository.mergeQueue(branch:).entries` answers.
import { diffCommits, makeCommit } from "./git.ts";
import type { CheckRun, PullRequest, Repository } from "./model.ts";
import type { SimulatorControl } from "./control.ts";
import { ControlError } from "./control.ts";

/** The forge's `MergeQueueEntryState` values this model uses. */
export type MergeQueueEntryState = "AWAITING_CHECKS" | "MERGEABLE";

export interface MergeQueueEntry {
  readonly id: string;
  readonly pullNumber: number;
  readonly enqueuedAt: string;
  readonly enqueuedBy: string;
  /** The commit the group is built on, and the group's own commit. */
  baseCommit: string;
  headCommit: string;
  state: MergeQueueEntryState;
}

export interface MergeQueue { readonly repoId: number; readonly branch: string; requiredChecks: string[]; entries: MergeQueueEntry[] }

/** One entry as the forge's GraphQL `MergeQueueEntry` shows it (the fields the service asks for, and `id`). */
export type MergeQueueEntryJson = {
  id: string; position: number; state: MergeQueueEntryState;
  headCommit: { oid: string }; baseCommit: { oid: string }; pullRequest: { number: number; headRefOid: string };
};

export class MergeQueues {
  private readonly queues = new Map<string, MergeQueue>();
  /** Queue work runs one operation at a time, in order (a check write answers before its queue reacts, as on the forge). */
  private chain: Promise<unknown> = Promise.resolve();
  private nextEntry = 0;

  constructor(private readonly control: SimulatorControl) {}

  private key(repo: Repository, branch: string) { return `${repo.id}:${branch}`; }

  /** Turns the queue on for a branch and sets the check names it waits for on each group. */
  configure(args: { owner: string; repo: string; branch: string; requiredChecks: string[] }): MergeQueue {
    const repo = this.control.mustRepo(args.owner, args.repo);
    if (!repo.branches.has(args.branch)) throw new ControlError(422, "no such branch");
    if (!Array.isArray(args.requiredChecks) || args.requiredChecks.length === 0 || !args.requiredChecks.every((name) => typeof name === "string" && name !== "")) {
      throw new ControlError(422, "requiredChecks must name at least one check");
    }
    const queue = this.queues.get(this.key(repo, args.branch)) ?? { repoId: repo.id, branch: args.branch, requiredChecks: [], entries: [] };
    queue.requiredChecks = [...args.requiredChecks];
    this.queues.set(this.key(repo, args.branch), queue);
    return queue;
  }

  /** The queue's entries as GraphQL answers them (position from 1), or null when the branch has no queue. */
  entriesOf(repo: Repository, branch: string): MergeQueueEntryJson[] | null {
    const queue = this.queues.get(this.key(repo, branch));
    if (!queue) return null;
    return queue.entries.map((entry, index) => ({
      id: entry.id, position: index + 1, state: entry.state, headCommit: { oid: entry.headCommit }, baseCommit: { oid: entry.baseCommit },
      pullRequest: { number: entry.pullNumber, headRefOid: repo.pulls.get(entry.pullNumber)!.headSha },
    }));
  }

  /** Resolves when every queue reaction started so far has finished (its webhooks sent). */
  idle(): Promise<void> {
    return this.chain.then(() => undefined);
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.chain.then(work);
    this.chain = next.catch(() => undefined);
    return next;
  }

  enqueue(args: { owner: string; repo: string; number: number; by?: string }): Promise<MergeQueueEntryJson> {
    return this.serial(async () => {
      const repo = this.control.mustRepo(args.owner, args.repo);
      const pr = this.control.mustPull(args.owner, args.repo, args.number);
      if (pr.state !== "open" || pr.draft) throw new ControlError(422, "only an open, ready pull request can be queued");
      const queue = this.queues.get(this.key(repo, pr.baseRef));
      if (!queue) throw new ControlError(422, "the base branch has no merge queue");
      if (queue.entries.some((entry) => entry.pullNumber === pr.number)) throw new ControlError(422, "already queued");
      const parent = queue.entries.at(-1)?.headCommit ?? repo.branches.get(pr.baseRef)!;
      const entry: MergeQueueEntry = {
        id: `MQE_${++this.nextEntry}`, pullNumber: pr.number, enqueuedAt: this.control.now(), enqueuedBy: args.by ?? pr.authorLogin,
        baseCommit: parent, headCommit: this.buildGroupCommit(pr, parent), state: "AWAITING_CHECKS",
      };
      queue.entries.push(entry);
      await this.requestChecks(repo, queue, entry);
      return this.entriesOf(repo, pr.baseRef)!.at(-1)!;
    });
  }

  /** Takes a pull request out of its queue (the forge's "remove from queue"). */
  remove(args: { owner: string; repo: string; number: number }): Promise<void> {
    return this.serial(async () => {
      const repo = this.control.mustRepo(args.owner, args.repo);
      const pr = this.control.mustPull(args.owner, args.repo, args.number);
      const queue = this.queues.get(this.key(repo, pr.baseRef));
      const index = queue?.entries.findIndex((entry) => entry.pullNumber === pr.number) ?? -1;
      if (!queue || index < 0) throw new ControlError(422, "not queued");
      await this.eject(repo, queue, index);
    });
  }

  /** A check run was written: the queue of the group it is on reacts once the write has been answered. */
  checkRunChanged(run: CheckRun): void {
    if (run.status !== "completed") return;
    void this.serial(async () => {
      const repo = this.control.state.repoById(run.repoId);
      if (!repo) return;
      for (const queue of this.queues.values()) {
        if (queue.repoId !== repo.id) continue;
        const index = queue.entries.findIndex((entry) => entry.headCommit === run.headSha);
        if (index < 0) continue;
        const verdict = this.requiredChecksOn(queue, repo, run.headSha);
        if (verdict === "failed") await this.eject(repo, queue, index);
        else if (verdict === "passed") queue.entries[index]!.state = "MERGEABLE";
        await this.mergeFromFront(repo, queue);
      }
    });
  }

  /** The branch moved under its queue (a push): every group is built again on the new tip. */
  branchMoved(repo: Repository, branch: string): Promise<void> {
    const queue = this.queues.get(this.key(repo, branch));
    if (!queue || queue.entries.length === 0) return Promise.resolve();
    return this.serial(() => this.rebuildFrom(repo, queue, 0));
  }

  private requiredChecksOn(queue: MergeQueue, repo: Repository, sha: string): "passed" | "failed" | "waiting" {
    const latest = new Map<string, CheckRun>();
    for (const run of this.control.state.checkRuns.values()) {
      if (run.repoId !== repo.id || run.headSha !== sha || !queue.requiredChecks.includes(run.name)) continue;
      if ((latest.get(run.name)?.id ?? 0) < run.id) latest.set(run.name, run);
    }
    let waiting = false;
    for (const name of queue.requiredChecks) {
      const run = latest.get(name);
      if (run === undefined || run.status !== "completed") waiting = true;
      else if (run.conclusion !== "success" && run.conclusion !== "neutral" && run.conclusion !== "skipped") return "failed";
    }
    return waiting ? "waiting" : "passed";
  }

  private async mergeFromFront(repo: Repository, queue: MergeQueue): Promise<void> {
    while (queue.entries[0]?.state === "MERGEABLE") {
      const entry = queue.entries.shift()!;
      const pr = repo.pulls.get(entry.pullNumber)!;
      const before = repo.branches.get(queue.branch)!;
      repo.branches.set(queue.branch, entry.headCommit);
      await this.control.recordQueuedMerge(repo, pr, { branch: queue.branch, before, mergeCommit: entry.headCommit, by: entry.enqueuedBy });
      await this.destroyed(repo, queue, entry, "merged");
    }
  }

  /** Removes the entry at `index` (dequeued) and builds every group behind it again on what is ahead of them. */
  private async eject(repo: Repository, queue: MergeQueue, index: number): Promise<void> {
    const [entry] = queue.entries.splice(index, 1);
    await this.destroyed(repo, queue, entry!, "dequeued");
    await this.rebuildFrom(repo, queue, index);
  }

  private async rebuildFrom(repo: Repository, queue: MergeQueue, index: number): Promise<void> {
    for (let i = index; i < queue.entries.length; i++) {
      const entry = queue.entries[i]!;
      await this.destroyed(repo, queue, entry, "invalidated");
      entry.baseCommit = i === 0 ? repo.branches.get(queue.branch)! : queue.entries[i - 1]!.headCommit;
      entry.headCommit = this.buildGroupCommit(repo.pulls.get(entry.pullNumber)!, entry.baseCommit);
      entry.state = "AWAITING_CHECKS";
    }
    for (let i = index; i < queue.entries.length; i++) await this.requestChecks(repo, queue, queue.entries[i]!);
  }

  /** The group commit: `parent` with the pull request's changes since it left its base. */
  private buildGroupCommit(pr: PullRequest, parent: string): string {
    const state = this.control.state;
    const head = state.commits.get(pr.headSha)!;
    const changes: Record<string, string | null> = {};
    for (const file of diffCommits(state, pr.baseSha, pr.headSha)) {
      if (file.previous_filename !== undefined) changes[file.previous_filename] = null;
      const blob = head.tree.get(file.filename);
      changes[file.filename] = file.status === "removed" || blob === undefined ? null : new TextDecoder().decode(state.blobs.get(blob));
    }
    return makeCommit(state, parent, changes, `Merge pull request #${pr.number}`, this.control.now()).sha;
  }

  private groupJson(queue: MergeQueue, entry: MergeQueueEntry) {
    const commit = this.control.state.commits.get(entry.headCommit)!;
    return {
      head_sha: entry.headCommit, head_ref: `refs/heads/gh-readonly-queue/${queue.branch}/pr-${entry.pullNumber}-${entry.baseCommit}`,
      base_sha: entry.baseCommit, base_ref: `refs/heads/${queue.branch}`,
      head_commit: {
        id: commit.sha, tree_id: treeId(commit.tree), message: commit.message, timestamp: commit.date,
        author: { name: entry.enqueuedBy, email: `${entry.enqueuedBy}@users.noreply.example.com` },
        committer: { name: "forge", email: "noreply@example.com" },
      },
    };
  }

  private requestChecks(repo: Repository, queue: MergeQueue, entry: MergeQueueEntry): Promise<void> {
    return this.control.emit(repo, "merge_group", () => ({ action: "checks_requested", merge_group: this.groupJson(queue, entry), sender: this.control.userJsonOf(entry.enqueuedBy) }));
  }

  private destroyed(repo: Repository, queue: MergeQueue, entry: MergeQueueEntry, reason: "merged" | "invalidated" | "dequeued"): Promise<void> {
    return this.control.emit(repo, "merge_group", () => ({ action: "destroyed", reason, merge_group: this.groupJson(queue, entry), sender: this.control.userJsonOf(entry.enqueuedBy) }));
  }
}

/** A stable 40-hex ID for a tree (the simulator keeps trees as maps, not objects). */
function treeId(tree: Map<string, string>): string {
  const hasher = new Bun.CryptoHasher("sha1");
  for (const [path, blob] of [...tree.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) hasher.update(`${blob} ${path}\n`);
  return hasher.digest("hex");
}
