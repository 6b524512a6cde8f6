// A merge queue's entries (DESIGN 3.14): REST has no merge-queue endpoint, so they are read by one bounded GraphQL request
// per group. The answer is hostile input like any other: anything but a well-formed first page is incomplete evidence.
import { MAX_QUEUE_ENTRIES, type QueueAnswer, type QueueEntry } from "../merge-queue/shapes.ts";
import { graphqlQuery } from "./graphql.ts";
import type { CallOptions, Transport } from "./transport.ts";

/** One page of at most MAX_QUEUE_ENTRIES entries; `totalCount` and `hasNextPage` say whether it is all of them. */
export const MERGE_QUEUE_QUERY = `query MergeQueueEntries($owner: String!, $repo: String!, $branch: String!) {
  repository(owner: $owner, name: $repo) {
    mergeQueue(branch: $branch) {
      entries(first: ${MAX_QUEUE_ENTRIES}) {
        totalCount
        pageInfo { hasNextPage }
        nodes { position state headCommit { oid } baseCommit { oid } pullRequest { number headRefOid } }
      }
    }
  }
}`;

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);
const text = (value: unknown): string | null => (typeof value === "string" ? value : null);
const oid = (value: unknown): string | null => (isObject(value) ? text(value.oid) : null);

/**
 * The queue's entries from the `data` of MERGE_QUEUE_QUERY's answer, or null when the answer does not show a queue (no
 * repository, no queue for the branch, a malformed page): incomplete evidence. Entries are taken as answered; the judge
 * refuses malformed ones (server/merge-queue/judge.ts groupMembers).
 */
export function queueAnswerOf(data: unknown): QueueAnswer | null {
  if (!isObject(data) || !isObject(data.repository) || !isObject(data.repository.mergeQueue)) return null;
  const entries = data.repository.mergeQueue.entries;
  if (!isObject(entries) || !Array.isArray(entries.nodes) || !isObject(entries.pageInfo) || typeof entries.pageInfo.hasNextPage !== "boolean") return null;
  if (entries.nodes.length > MAX_QUEUE_ENTRIES) return { entries: [], complete: false };
  const nodes: QueueEntry[] = [];
  for (const node of entries.nodes) {
    if (!isObject(node) || typeof node.position !== "number") return null;
    const pull = isObject(node.pullRequest) ? node.pullRequest : null;
    nodes.push({
      position: node.position, state: text(node.state), headCommit: oid(node.headCommit), baseCommit: oid(node.baseCommit),
      pullNumber: pull !== null && typeof pull.number === "number" ? pull.number : null, headRefOid: pull === null ? null : text(pull.headRefOid),
    });
  }
  const total = typeof entries.totalCount === "number" ? entries.totalCount : null;
  return { entries: nodes, complete: !entries.pageInfo.hasNextPage && total !== null && total === nodes.length };
}

/** 100 entries of a few short fields each stay far below this; it leaves room for the forge's error entries. */
const MERGE_QUEUE_MAX_BYTES = 128 * 1024;

/**
 * The queue of a branch by one GraphQL request; null when the forge did not answer it whole (an error, `errors`, a missing
 * queue or a malformed page): the group is then incomplete, retried, never success.
 */
export async function readMergeQueue(t: Transport, at: { installationId: number; owner: string; repo: string; branch: string }, call?: CallOptions): Promise<QueueAnswer | null> {
  const answer = await graphqlQuery(t, at.installationId, { query: MERGE_QUEUE_QUERY, variables: { owner: at.owner, repo: at.repo, branch: at.branch }, maxBytes: MERGE_QUEUE_MAX_BYTES }, call);
  return answer.complete ? queueAnswerOf(answer.data) : null;
}
