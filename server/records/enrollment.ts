import { repositoryEnrollment } from "../evaluation/index.ts";
import type { CallOptions, ForgeClient } from "../forge/index.ts";
import type { Logger } from "../observability/logger.ts";
import type { Metrics } from "../observability/metrics.ts";
import { MAX_POLICY_FILE_BYTES } from "../policy/bounds.ts";
import { type MergeAwaitingEnrollment, settleMergeEnrollment, type Store } from "../store/index.ts";
import { reportUnapprovedMerge } from "./unapproved.ts";

/**
 * Enrollment of merges (DESIGN 3.12): a merge in a repository whose policy at the merge's base commit does not enable the
 * service is `not_enrolled`, never unapproved, and not counted by service_unapproved_merges_total. The acceptance of a
 * `closed` delivery records the merge with its enrollment not yet read (it makes no forge request); the worker (when it
 * evaluates the merged pull request) or the reconciler (every attempt, for what is left) reads the repository policy at the
 * base commit, once per commit (EnrollmentCache; the forge client's file cache also keeps the file by commit), settles the
 * record, and only then reports an unapproved merge. A read that does not complete leaves the merge pending (read again
 * later); a merge whose base commit is not known is judged as enrolled (fail closed: it stays unapproved unless approved).
 */
export type Enrollment = "enrolled" | "not_enrolled";

/** Enrollment by repository and commit: a commit never changes, so an answer holds for good (bounded, oldest out first). */
export class EnrollmentCache {
  private readonly answers = new Map<string, Enrollment>();
  constructor(private readonly max = 10_000) {}
  get(repositoryId: number, commit: string): Enrollment | undefined {
    return this.answers.get(`${repositoryId}:${commit}`);
  }
  set(repositoryId: number, commit: string, enrollment: Enrollment): void {
    if (this.answers.size >= this.max) this.answers.delete(this.answers.keys().next().value!);
    this.answers.set(`${repositoryId}:${commit}`, enrollment);
  }
}

/** The process's answers, shared by its worker and reconciler. */
const PROCESS_CACHE = new EnrollmentCache();

export type EnrollmentDeps = {
  readonly store: Store;
  readonly forge: Pick<ForgeClient, "readFile">;
  readonly policyPath: string;
  /** The process's cache when absent. */
  readonly cache?: EnrollmentCache;
  readonly metrics?: Pick<Metrics, "unapprovedMerges">;
  readonly log: Pick<Logger, "warn">;
  /** The clock: when a merge was settled is part of its record. */
  readonly now: () => number;
};

/** Reads and settles each merge's enrollment; answers how many were settled (the rest stay pending). */
export async function settleEnrollments(deps: EnrollmentDeps, merges: readonly MergeAwaitingEnrollment[], call?: CallOptions): Promise<number> {
  let settled = 0;
  for (const merge of merges) {
    const enrollment = await enrollmentOf(deps, merge, call);
    if (enrollment === null) continue;
    const outcome = await deps.store.execute(() => settleMergeEnrollment(merge.id, enrollment, deps.now()));
    if (outcome === null) continue; // settled by another process meanwhile: it reported
    settled++;
    if (outcome.unapproved && deps.metrics) {
      reportUnapprovedMerge({ metrics: deps.metrics, log: deps.log }, { installationId: merge.installationId, repositoryId: merge.repositoryId, pullNumber: merge.pullNumber, headSha: merge.headSha, record: merge.id, recovered: merge.recovered });
    }
  }
  return settled;
}

async function enrollmentOf(deps: EnrollmentDeps, merge: MergeAwaitingEnrollment, call?: CallOptions): Promise<Enrollment | null> {
  if (merge.baseSha === null) return "enrolled";
  const cache = deps.cache ?? PROCESS_CACHE;
  const known = cache.get(merge.repositoryId, merge.baseSha);
  if (known !== undefined) return known;
  const slash = merge.repositoryFullName.indexOf("/");
  const owner = merge.repositoryFullName.slice(0, slash);
  const repo = merge.repositoryFullName.slice(slash + 1);
  const read = await deps.forge.readFile({ installationId: merge.installationId, owner, repo, path: deps.policyPath, ref: merge.baseSha }, MAX_POLICY_FILE_BYTES, call);
  const answer = repositoryEnrollment(read);
  if (answer === "unknown") return null;
  cache.set(merge.repositoryId, merge.baseSha, answer);
  return answer;
}
