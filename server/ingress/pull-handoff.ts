import { LRUCache } from "lru-cache";
import type { PullRequestDetails } from "../forge/index.ts";

/**
 * The fast path's read of a pull request, handed to the evaluation its delivery queued in this process (issue 18), so that the
 * evaluation does not read the same pull request again a moment later.
 *
 * Why this is as fresh as the evaluation's own read: the fast path reads the pull request after the acceptance that gave it
 * evaluation generation E. The evaluation takes the read only when the generation it captured with its fences is still that
 * E (no delivery about the pull request was accepted since: every one advances E), for the head it evaluates, and while the
 * read is young. Any change whose delivery is accepted later supersedes E and fences the publication, exactly as for a change
 * made just after the evaluation's own read: the evaluation behaves as if it had started when the fast path read. A read is
 * taken once; another process's worker finds nothing here and reads the pull request itself.
 */
export const PULL_HANDOFF_MAX_AGE_MS = 30_000;
/** Reads kept at once (the least recently offered go first). */
export const PULL_HANDOFF_ENTRIES = 1_000;

type Handed = { readonly pull: PullRequestDetails; readonly evaluationGeneration: number; readonly readAtMs: number };

export class PullHandoff {
  private readonly entries = new LRUCache<string, Handed>({ max: PULL_HANDOFF_ENTRIES });

  /** The fast path read `pull` at `readAtMs`, after the acceptance that gave it `evaluationGeneration`. */
  offer(repositoryId: number, pull: PullRequestDetails, evaluationGeneration: number, readAtMs: number): void {
    const key = `${repositoryId}#${pull.number}`;
    const kept = this.entries.get(key);
    // A read after a later acceptance is never replaced by one after an earlier acceptance that finished late.
    if (kept !== undefined && kept.evaluationGeneration > evaluationGeneration) return;
    this.entries.set(key, { pull, evaluationGeneration, readAtMs });
  }

  /** The read for an evaluation of `headSha` that captured `evaluationGeneration`, or null; taken either way. */
  take(repositoryId: number, pullNumber: number, at: { readonly headSha: string; readonly evaluationGeneration: number; readonly nowMs: number }): PullRequestDetails | null {
    const key = `${repositoryId}#${pullNumber}`;
    const kept = this.entries.get(key);
    if (kept === undefined) return null;
    if (kept.evaluationGeneration > at.evaluationGeneration) return null; // for a newer evaluation: left for it
    this.entries.delete(key);
    const young = at.nowMs >= kept.readAtMs && at.nowMs - kept.readAtMs < PULL_HANDOFF_MAX_AGE_MS;
    return young && kept.evaluationGeneration === at.evaluationGeneration && kept.pull.headSha === at.headSha ? kept.pull : null;
  }
}
