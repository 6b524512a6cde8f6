import { MAX_OPEN_PULL_REQUESTS } from "../../policy/bounds.ts";
import { all, batch, type Op, type Query, query, run } from "../op.ts";
import { type ElectionLease, renewElectionLease } from "./reconcile-ops.ts";

/**
 * The open-pull-request index (DESIGN 3.9, migration 0006): per repository, each open pull request's number, head commit and
 * base ref. Written by the acceptance of every pull_request delivery (indexWrite, in the acceptance's transaction: see
 * ingress-ops.ts) and replaced by every complete reconciler listing, streamed page by page (indexListingPage, then
 * indexListingComplete). Read by the shared-head check, exact-head invalidation and authority fan-out as a source of
 * sharers (a row can only add a pull request to a head, never prove that none shares it), and by base-ref work by base
 * ref (readPullsOnBase, migration 0007). Its rows come after
 * `pull_generations` and before `jobs` in the store's lock order (store.ts).
 *
 * A `closed` delivery does not delete its row: it leaves a tombstone (`closed`, migration 0011), a row a delivery wrote,
 * which a listing that started before it neither overwrites nor deletes, so a page fetched while the pull request was still
 * open cannot bring it back. Every reader asks for `closed = false` (the head and base indexes hold only those rows); a
 * tombstone names nothing, so it never stands for absence either.
 */
export type IndexedPull = { readonly number: number; readonly headSha: string; readonly baseRef: string | null };

/** What a pull_request delivery does to the index: upsert (opened, reopened, synchronize, edited) or delete (closed: leaves a tombstone). */
export type IndexWrite = { readonly kind: "upsert"; readonly baseRef: string | null } | { readonly kind: "delete" };

/**
 * One reconciler listing of one repository. `listingId` is unique per listing (the rows it saw carry it); `startedAtMs` is
 * when its first page was asked for: a row a delivery wrote at or after it is newer than anything the listing can show, so
 * the listing neither overwrites nor deletes it. With `lease`, each write renews it first and writes nothing when it was lost.
 */
export type IndexListing = {
  readonly installationId: number;
  readonly repositoryId: number;
  readonly listingId: string;
  readonly startedAtMs: number;
  readonly lease?: ElectionLease;
};

/** Rows per statement of a listing page (6 parameters each): well inside both dialects' parameter limits. */
const PAGE_STATEMENT_ROWS = 500;

/**
 * Upserts one page of a listing: each row takes the listing's ID (seen by it) and `now`; a row a delivery wrote since the
 * listing started keeps the delivery's (newer) head and base, and a closing since then stays closed (its tombstone is such a
 * row). False when the lease was lost (nothing written).
 */
export function* indexListingPage(listing: IndexListing, rows: readonly IndexedPull[], now: number): Op<boolean> {
  if (listing.lease && !(yield* renewElectionLease(listing.lease, now))) return false;
  // Sorted by number: the rows are taken in one order by every writer (store.ts).
  const sorted = [...new Map(rows.map((row) => [row.number, row])).values()].sort((a, b) => a.number - b.number);
  const statements: Query[] = [];
  for (let start = 0; start < sorted.length; start += PAGE_STATEMENT_ROWS) {
    const part = sorted.slice(start, start + PAGE_STATEMENT_ROWS);
    const params: unknown[] = [listing.installationId, listing.repositoryId, now, listing.listingId, listing.startedAtMs];
    const values = part.map((row) => {
      params.push(row.number, row.headSha, row.baseRef);
      const at = params.length;
      return `($1, $2, $${at - 2}, $${at - 1}, $${at}, $3, $4)`;
    });
    statements.push(query(
      "run",
      `insert into open_pull_requests (installation_id, repository_id, pull_number, head_sha, base_ref, seen_at_ms, listing_id)
       values ${values.join(", ")}
       on conflict (repository_id, pull_number) do update set head_sha = excluded.head_sha, base_ref = excluded.base_ref,
         seen_at_ms = excluded.seen_at_ms, listing_id = excluded.listing_id, closed = false
       where open_pull_requests.listing_id is not null or open_pull_requests.seen_at_ms < $5`,
      ...params,
    ));
  }
  if (statements.length > 0) yield* batch(statements);
  return true;
}

/**
 * The listing was complete: every row of the repository it did not see goes, tombstones included, except rows a delivery
 * wrote since the listing started. Called only for a complete listing (an incomplete one changes nothing: its pages only
 * added or refreshed rows). Returns the number of rows removed, or null when the lease was lost.
 */
export function* indexListingComplete(listing: IndexListing, now: number): Op<number | null> {
  if (listing.lease && !(yield* renewElectionLease(listing.lease, now))) return null;
  return yield* run(
    `delete from open_pull_requests where repository_id = $1 and (listing_id is null or listing_id <> $2) and seen_at_ms < $3`,
    listing.repositoryId, listing.listingId, listing.startedAtMs,
  );
}

/**
 * The acceptance's index write for one pull request (a delivery's view: listing_id null, seen now), for the step forms of
 * the acceptance; the PostgreSQL one-statement form writes the same in a CTE (ingress-ops.ts). A closing writes the
 * tombstone (closed, seen now; head and base as they were, or the closing's head when there was no row).
 */
export function indexWrite(repo: { readonly installationId: number; readonly repositoryId: number }, pullNumber: number, headSha: string, write: IndexWrite, now: number): Query {
  if (write.kind === "delete") return query("run", indexTombstoneSql("values ($1, $2, $3, $4, $5, true)"), repo.installationId, repo.repositoryId, pullNumber, headSha, now);
  return query(
    "run",
    `insert into open_pull_requests (installation_id, repository_id, pull_number, head_sha, base_ref, seen_at_ms, listing_id)
     values ($1, $2, $3, $4, $5, $6, null)
     on conflict (repository_id, pull_number) do update set head_sha = excluded.head_sha, base_ref = excluded.base_ref, seen_at_ms = excluded.seen_at_ms, listing_id = null, closed = false`,
    repo.installationId, repo.repositoryId, pullNumber, headSha, write.baseRef, now,
  );
}

/**
 * A closing's tombstone: `rows` is a VALUES list or a SELECT of (installation, repository, pull request, head, now, true).
 * An existing row keeps its head and base; listing_id null marks it as a delivery's write.
 */
export const indexTombstoneSql = (rows: string) =>
  `insert into open_pull_requests (installation_id, repository_id, pull_number, head_sha, seen_at_ms, closed) ${rows}
     on conflict (repository_id, pull_number) do update set seen_at_ms = excluded.seen_at_ms, listing_id = null, closed = true`;

/** Index rows read on one head at most (DESIGN 3.6: 1,000 pull requests on one head), plus one to tell that it was passed. */
export const MAX_INDEXED_ON_HEAD = MAX_OPEN_PULL_REQUESTS + 1;

/** The pull requests the index names on a head, by number (at most `limit`). A read: no row locks. */
export function* readIndexedOnHead(repositoryId: number, headSha: string, limit: number = MAX_INDEXED_ON_HEAD): Op<number[]> {
  const rows = yield* all<{ pull_number: number }>(
    "select pull_number from open_pull_requests where repository_id = $1 and head_sha = $2 and closed = false order by pull_number limit $3",
    repositoryId, headSha, limit,
  );
  return rows.map((row) => Number(row.pull_number));
}

/** Index rows read per page by a fan-out (readIndexPage). */
export const INDEX_PAGE_ROWS = 500;

/** One page of a repository's index, by number after `afterNumber` (null: from the start). */
export function* readIndexPage(repositoryId: number, afterNumber: number | null, limit: number = INDEX_PAGE_ROWS): Op<{ number: number; headSha: string }[]> {
  const rows = yield* all<{ pull_number: number; head_sha: string }>(
    "select pull_number, head_sha from open_pull_requests where repository_id = $1 and pull_number > $2 and closed = false order by pull_number limit $3",
    repositoryId, afterNumber ?? 0, limit,
  );
  return rows.map((row) => ({ number: Number(row.pull_number), headSha: row.head_sha }));
}

/** Index rows removed per pruning transaction. */
export const INDEX_PRUNE_BATCH = 1_000;

/** The hour a row was last seen, as migration 0009's `seen_hour` column computes it from seen_at_ms. */
export const SEEN_HOUR_MS = 3_600_000;

/**
 * Removes, fenced by the reconciler lease, up to `batch` index rows not seen since `cutoffMs` (a repository no longer listed:
 * every complete listing renews what it sees). Returns the number removed, or null when the lease was lost. The rows are
 * found by the hour they were last seen (migration 0009: no index holds seen_at_ms itself, so the rewrites of an unchanged
 * row are HOT) and each is checked against the cutoff to the millisecond.
 */
export function* pruneIndexBatch(lease: ElectionLease, cutoffMs: number, now: number, limit: number = INDEX_PRUNE_BATCH): Op<number | null> {
  if (!(yield* renewElectionLease(lease, now))) return null;
  return yield* run(
    `delete from open_pull_requests where (repository_id, pull_number) in (
       select repository_id, pull_number from open_pull_requests where seen_hour <= $3 and seen_at_ms < $1 order by seen_hour limit $2)`,
    cutoffMs, limit, Math.floor(cutoffMs / SEEN_HOUR_MS),
  );
}

/** An index row with what its pull request's recorded evaluation saw (null: no record), for a fan-out's scoping. */
export type IndexedForFanout = { readonly number: number; readonly headSha: string; readonly recordedHeadSha: string | null; readonly authoritySubjects: string | null };

/** One page of a repository's index after `afterNumber` (null: from the start), joined with the recorded evaluations. */
export function* readIndexedForFanout(repositoryId: number, afterNumber: number | null, limit: number = INDEX_PAGE_ROWS): Op<IndexedForFanout[]> {
  const rows = yield* all<{ pull_number: number; head_sha: string; recorded_head_sha: string | null; authority_subjects: string | null }>(
    `select o.pull_number, o.head_sha, e.head_sha as recorded_head_sha, e.authority_subjects from open_pull_requests o
       left join pull_evaluations e on e.repository_id = o.repository_id and e.pull_number = o.pull_number
     where o.repository_id = $1 and o.pull_number > $2 and o.closed = false order by o.pull_number limit $3`,
    repositoryId, afterNumber ?? 0, limit,
  );
  return rows.map((row) => ({ number: Number(row.pull_number), headSha: row.head_sha, recordedHeadSha: row.recorded_head_sha, authoritySubjects: row.authority_subjects }));
}

/** Where the next page of readPullsOnBase starts: a part, then keyset by pull request number within it. */
export type BaseRefCursor = { readonly part: "indexed" | "unknown_base" | "recorded"; readonly after: number };

/**
 * A pull request base-ref work re-queues, and why: `indexed`, the index names it on the base; `unknown_base`, the index
 * names it without a base (a listing item that named none); `recorded`, it has a recorded evaluation and no index row
 * (records do not name a base ref: taken as the safe superset), at the recorded head.
 */
export type PullOnBase = { readonly number: number; readonly headSha: string; readonly source: BaseRefCursor["part"] };

export type PullsOnBasePage = { readonly pulls: readonly PullOnBase[]; readonly next: BaseRefCursor | null };

/**
 * One page of the pull requests a push to `baseRef` re-evaluates (DESIGN 3.9), never a listing of the forge: the index's
 * rows on that base (its base index, migration 0007), then those of unknown base, then the recorded evaluations of pull
 * requests the index does not name. Each page is one keyset statement (a read: no row locks); pages run from a null
 * cursor until `next` is null. A pull request open on the base that neither names (never delivered nor listed) is not
 * here: the reconciler finds it.
 */
export function* readPullsOnBase(repositoryId: number, baseRef: string, cursor: BaseRefCursor | null, limit: number = INDEX_PAGE_ROWS): Op<PullsOnBasePage> {
  const at: BaseRefCursor = cursor ?? { part: "indexed", after: 0 };
  const rows = at.part === "indexed"
    ? yield* all<{ pull_number: number; head_sha: string }>(
      "select pull_number, head_sha from open_pull_requests where repository_id = $1 and base_ref = $2 and pull_number > $3 and closed = false order by pull_number limit $4",
      repositoryId, baseRef, at.after, limit,
    )
    : at.part === "unknown_base"
    ? yield* all<{ pull_number: number; head_sha: string }>(
      "select pull_number, head_sha from open_pull_requests where repository_id = $1 and base_ref is null and pull_number > $2 and closed = false order by pull_number limit $3",
      repositoryId, at.after, limit,
    )
    : yield* all<{ pull_number: number; head_sha: string }>(
      `select e.pull_number, e.head_sha from pull_evaluations e
       where e.repository_id = $1 and e.pull_number > $2
         and not exists (select 1 from open_pull_requests o where o.repository_id = e.repository_id and o.pull_number = e.pull_number and o.closed = false)
       order by e.pull_number limit $3`,
      repositoryId, at.after, limit,
    );
  const pulls = rows.map((row) => ({ number: Number(row.pull_number), headSha: row.head_sha, source: at.part }));
  const following: Record<BaseRefCursor["part"], BaseRefCursor["part"] | null> = { indexed: "unknown_base", unknown_base: "recorded", recorded: null };
  const nextPart = following[at.part];
  const next: BaseRefCursor | null = rows.length === limit ? { part: at.part, after: pulls.at(-1)!.number } : nextPart === null ? null : { part: nextPart, after: 0 };
  return { pulls, next };
}
