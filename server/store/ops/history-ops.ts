import { decodeStoredBody, storedRecordOf } from "../../records/codec.ts";
import {
  type DecisionRecord, type HistoryFilter, type HistoryPage, type HistoryRecord, type HistorySummary, type MergeGroupRecord, type MergeRecord, RECORD_SCHEMA_VERSION, type RecordId,
} from "../../records/schema.ts";
import { all, one, type Op } from "../op.ts";

/**
 * The read side of the decision records (migration 0008, DESIGN 3.10): the history routes, commands and export read only
 * through these operations, which take no row lock.
 *
 * ORDER. Decision records and merge records are one history, ordered by time (a decision's `published_at_ms`, a merge's
 * `recorded_at_ms`), then kind (decision before merge at the same millisecond, oldest first), then id. listHistory walks it
 * newest first, readHistoryBatch oldest first. Each page is one indexed statement per table, keyset-paginated: the cursor
 * names the last item's (time, kind, id), so a page costs the same however deep it is and a record written meanwhile never
 * shifts the pages after it.
 *
 * CURSOR. Opaque to clients (base64url of `h1.<direction>.<time>.<kind>.<id>`), decoded strictly: anything else is a
 * HistoryCursorError (the routes answer 400). Its numbers are parsed to safe integers and only ever bound as parameters,
 * never spliced into SQL text, and a cursor of one direction is refused by the other.
 *
 * FILTERS (HistoryFilter). `repository` matches the full name the record was written with, case-insensitively (the forge
 * treats `Acme/App` and `acme/app` as one repository); `commit` matches a decision's head, a merge's head at merge or its
 * merge commit, case-insensitively; `sinceMs` inclusive and `untilMs` exclusive bound the record's time; `unapproved` keeps
 * only unapproved merges; `overrides` keeps only records that carry a break-glass override; `kind` keeps one table.
 *
 * INDEXES (migration 0008). Unfiltered and time-bounded pages walk `*_published` / `*_recorded` (time, id). The repository
 * filter compares `lower(repository_full_name)` and the commit filter the SHA columns without a repository ID, which the
 * name-first and SHA-first indexes serve: on decision_records `(lower(repository_full_name), published_at_ms, id)`,
 * `(lower(repository_full_name), pull_number, published_at_ms, id)` and `(head_sha, published_at_ms, id)`; on merge_records
 * `(lower(repository_full_name), recorded_at_ms, id)`, `(head_sha)` and `(merge_commit_sha)`. history-plan.test.ts plans
 * these searches on both backends and requires an index search, never a scan (without them a search scanned the table:
 * about 100 ms per 200,000 rows on SQLite, where a scan also holds the process's only thread; 0.1 ms with them).
 */

/** Items one listHistory page may hold (the routes' `limit` bound). */
export const MAX_HISTORY_PAGE = 100;
/** Records one readHistoryBatch may read (the export streams batches of at most this). */
export const MAX_HISTORY_BATCH = 1000;
/**
 * Record JSON one readHistoryBatch returns at most (its decisions' `body_bytes`; a merge counts MERGE_RECORD_BYTES), past its
 * first record: a batch of large records is cut short and its cursor goes on after the last one returned, so the export's
 * memory is bounded by bytes, not only by count (a record may be 256 KiB: a thousand of them would be 256 MiB).
 */
export const MAX_HISTORY_BATCH_BYTES = 8 * 1024 * 1024;
const MERGE_RECORD_BYTES = 512;

/** A cursor that is not one this service wrote for that walk (the routes answer 400). */
export class HistoryCursorError extends Error {
  override readonly name = "HistoryCursorError";
}

type Direction = "newest" | "oldest";
/** Kind rank in the order: a decision comes before a merge of the same millisecond (oldest first). */
const DECISION = 0;
const MERGE = 1;
type Position = { readonly time: number; readonly kind: typeof DECISION | typeof MERGE; readonly id: number };

const CURSOR_TEXT = /^h1\.([no])\.(\d{1,16})\.([01])\.(\d{1,16})$/;
/** Cursors are short; anything longer is refused before decoding. */
const MAX_CURSOR_LENGTH = 80;

export function encodeHistoryCursor(direction: Direction, at: Position): string {
  return Buffer.from(`h1.${direction === "newest" ? "n" : "o"}.${at.time}.${at.kind}.${at.id}`, "utf8").toString("base64url");
}

export function decodeHistoryCursor(cursor: string, direction: Direction): Position {
  if (cursor.length === 0 || cursor.length > MAX_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw new HistoryCursorError("the cursor is not one this service wrote");
  const match = CURSOR_TEXT.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (match === null) throw new HistoryCursorError("the cursor is not one this service wrote");
  if (match[1] !== (direction === "newest" ? "n" : "o")) throw new HistoryCursorError("the cursor belongs to the other direction of the history");
  const time = Number(match[2]);
  const id = Number(match[4]);
  if (!Number.isSafeInteger(time) || !Number.isSafeInteger(id) || id < 1) throw new HistoryCursorError("the cursor is not one this service wrote");
  return { time, kind: match[3] === "1" ? MERGE : DECISION, id };
}

/** `d<n>` or `m<n>` with n a positive safe integer, or null. */
export function parseRecordId(text: string): { readonly kind: "decision" | "merge"; readonly id: number } | null {
  const match = /^([dm])([1-9]\d{0,15})$/.exec(text);
  if (match === null) return null;
  const id = Number(match[2]);
  if (!Number.isSafeInteger(id)) return null;
  return { kind: match[1] === "d" ? "decision" : "merge", id };
}

/** The newest records matching `filter`, at most `limit` (1..MAX_HISTORY_PAGE), after `cursor` (null: from the newest). */
export function* listHistory(filter: HistoryFilter, cursor: string | null, limit: number): Op<HistoryPage> {
  checkLimit(limit, MAX_HISTORY_PAGE, "listHistory");
  const after = cursor === null ? null : decodeHistoryCursor(cursor, "newest");
  const { page, next } = cut(yield* walk(filter, after, limit, "newest"), limit, "newest");
  return { schema_version: RECORD_SCHEMA_VERSION, items: (yield* withBodies(page)).map(summaryOf), next_cursor: next };
}

/** The oldest records matching `filter` after `after` (null: from the oldest), whole, at most `limit` (1..MAX_HISTORY_BATCH). */
export function* readHistoryBatch(
  filter: HistoryFilter, after: string | null, limit: number, options: { readonly maxBytes?: number } = {},
): Op<{ records: HistoryRecord[]; next: string | null }> {
  checkLimit(limit, MAX_HISTORY_BATCH, "readHistoryBatch");
  const position = after === null ? null : decodeHistoryCursor(after, "oldest");
  const rows = yield* walk(filter, position, limit, "oldest");
  const maxBytes = options.maxBytes ?? MAX_HISTORY_BATCH_BYTES;
  let fit = 0;
  for (let bytes = 0; fit < Math.min(rows.length, limit); fit++) {
    const row = rows[fit]!;
    bytes += row.kind === "decision" ? Number(row.row.body_bytes) : MERGE_RECORD_BYTES;
    if (bytes > maxBytes && fit > 0) break;
  }
  const { page, next } = cut(rows, fit, "oldest");
  return { records: (yield* withBodies(page)).map(recordOf), next };
}

/** One record by its id, whole; null when there is none (pruned, or never written). */
export function* readHistoryRecord(id: RecordId): Op<HistoryRecord | null> {
  const parsed = parseRecordId(id);
  if (parsed === null) return null;
  if (parsed.kind === "decision") {
    const row = yield* one<DecisionRow>(`select ${DECISION_COLUMNS}, body from decision_records where id = $1`, parsed.id);
    return row === null ? null : decisionOf(row);
  }
  const row = yield* one<MergeRow>(`select ${MERGE_COLUMNS} from merge_records where id = $1`, parsed.id);
  return row === null ? null : mergeOf(row);
}

function checkLimit(limit: number, max: number, name: string): void {
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > max) throw new RangeError(`${name}: limit must be 1..${max}`);
}

type DecisionRow = { id: number; confirmed_at_ms: number | null; break_glass: unknown; t: number; body_bytes: number; body?: Uint8Array };
type MergeRow = {
  id: number; installation_id: number; repository_id: number; repository_full_name: string; pull_number: number; head_sha: string;
  merge_commit_sha: string | null; merged_by_id: number | null; merged_by_login: string | null; merged_at_ms: number | null;
  decision_id: number | null; decision_conclusion: string | null; unapproved: unknown; reset_at_ms: number | null; base_sha: string | null; enrollment: string | null; break_glass: unknown; recovered: unknown; t: number;
  merge_group_id: number | null;
};
type Fetched = { readonly kind: "decision"; readonly row: DecisionRow } | { readonly kind: "merge"; readonly row: MergeRow };

/** Without the body: a page's bodies are read after it is cut (withBodies), so rows past the page never load theirs. */
const DECISION_COLUMNS = "id, confirmed_at_ms, break_glass, published_at_ms as t, body_bytes";
const MERGE_COLUMNS = `id, installation_id, repository_id, repository_full_name, pull_number, head_sha, merge_commit_sha, merged_by_id, merged_by_login,
  merged_at_ms, decision_id, decision_conclusion, unapproved, reset_at_ms, base_sha, enrollment, break_glass, recovered, recorded_at_ms as t, merge_group_id`;

/**
 * The merged order past the position: at most `limit + 1` rows of each table (one statement each), merged, and the first
 * `limit + 1` of them kept (`cut` makes the page and says whether more follow).
 */
function* walk(filter: HistoryFilter, after: Position | null, limit: number, direction: Direction): Op<Fetched[]> {
  const wantDecisions = filter.kind !== "merge" && filter.unapproved !== true;
  const wantMerges = filter.kind !== "decision";
  const decisions = wantDecisions ? yield* all<DecisionRow>(...select("decision_records", DECISION_COLUMNS, "published_at_ms", DECISION, filter, after, limit + 1, direction)) : [];
  const merges = wantMerges ? yield* all<MergeRow>(...select("merge_records", MERGE_COLUMNS, "recorded_at_ms", MERGE, filter, after, limit + 1, direction)) : [];
  const rows: Fetched[] = [];
  let d = 0;
  let m = 0;
  const sign = direction === "newest" ? -1 : 1;
  while (rows.length <= limit && (d < decisions.length || m < merges.length)) {
    const nextDecision = decisions[d];
    const nextMerge = merges[m];
    const takeDecision = nextMerge === undefined || (nextDecision !== undefined && sign * compare(positionOf(DECISION, nextDecision), positionOf(MERGE, nextMerge)) < 0);
    if (takeDecision) rows.push({ kind: "decision", row: decisions[d++]! });
    else rows.push({ kind: "merge", row: merges[m++]! });
  }
  return rows;
}

/**
 * The page's decision bodies, read by ID in one statement. A record pruned since the page was read (PostgreSQL reads each
 * statement at its own snapshot) is left out: it is gone.
 */
function* withBodies(page: readonly Fetched[]): Op<Fetched[]> {
  const ids = page.flatMap((fetched) => (fetched.kind === "decision" ? [Number(fetched.row.id)] : []));
  if (ids.length === 0) return [...page];
  const rows = yield* all<{ id: number; body: Uint8Array }>(`select id, body from decision_records where id in (${ids.map((_, i) => `$${i + 1}`).join(", ")})`, ...ids);
  const bodies = new Map(rows.map((row) => [Number(row.id), row.body]));
  return page.flatMap((fetched): Fetched[] => {
    if (fetched.kind === "merge") return [fetched];
    const body = bodies.get(Number(fetched.row.id));
    return body === undefined ? [] : [{ kind: "decision", row: { ...fetched.row, body } }];
  });
}

/** The first `count` rows as a page, with the cursor after its last row when rows follow it. */
function cut(rows: readonly Fetched[], count: number, direction: Direction): { page: Fetched[]; next: string | null } {
  if (rows.length <= count) return { page: [...rows], next: null };
  const page = rows.slice(0, count);
  const last = page.at(-1)!;
  return { page, next: encodeHistoryCursor(direction, positionOf(last.kind === "decision" ? DECISION : MERGE, last.row)) };
}

function positionOf(kind: Position["kind"], row: { id: number; t: number }): Position {
  return { time: Number(row.t), kind, id: Number(row.id) };
}

function compare(a: Position, b: Position): number {
  return a.time - b.time || a.kind - b.kind || a.id - b.id;
}

/**
 * The statement for one table: its filters, the keyset position and the order. Every value is a bound parameter; only fixed
 * column names and operators are in the text.
 */
function select(table: "decision_records" | "merge_records", columns: string, timeColumn: string, kind: Position["kind"], filter: HistoryFilter, after: Position | null, limit: number, direction: Direction): [string, ...unknown[]] {
  const where: string[] = [];
  const params: unknown[] = [];
  const bind = (value: unknown) => {
    params.push(value);
    return `$${params.length}`;
  };
  // Full names are ASCII on the forge ([A-Za-z0-9._-] and one slash), where lower() agrees on both backends.
  if (filter.repository !== undefined) where.push(`lower(repository_full_name) = ${bind(filter.repository.toLowerCase())}`);
  if (filter.pull !== undefined) where.push(`pull_number = ${bind(filter.pull)}`);
  // A person's readable repositories, each a bound parameter (at most MAX_READABLE_REPOSITORIES, http/decisions-access.ts).
  if (filter.repositoryIds !== undefined) where.push(filter.repositoryIds.length === 0 ? "1 = 0" : `repository_id in (${filter.repositoryIds.map((id) => bind(id)).join(", ")})`);
  if (filter.commit !== undefined) {
    const commit = bind(filter.commit.toLowerCase());
    where.push(table === "merge_records" ? `(head_sha = ${commit} or merge_commit_sha = ${commit})` : `head_sha = ${commit}`);
  }
  if (filter.sinceMs !== undefined) where.push(`${timeColumn} >= ${bind(filter.sinceMs)}`);
  if (filter.untilMs !== undefined) where.push(`${timeColumn} < ${bind(filter.untilMs)}`);
  if (filter.overrides === true) where.push("break_glass = true");
  if (filter.unapproved === true && table === "merge_records") where.push("unapproved = true");
  const newest = direction === "newest";
  if (after !== null) {
    // Past (time, kind, id) in the walk's direction. This table's rows all have `kind`; at the cursor's time they are past it
    // when their id is, if the kinds are the same; if this kind is lower (decisions, after a merge's cursor) all of them are
    // newest first and none oldest first (bound MAX), if higher the reverse (bound 0).
    const idBound = kind === after.kind ? after.id : kind < after.kind ? Number.MAX_SAFE_INTEGER : 0;
    const time = bind(after.time);
    // The bound on the time alone is implied by the rest, and is what lets the index scan start at the cursor: without it
    // PostgreSQL reads (and filters out) every row before the cursor, and a million-record export costs quadratic time.
    where.push(newest
      ? `${timeColumn} <= ${time} and (${timeColumn} < ${time} or id < ${bind(idBound)})`
      : `${timeColumn} >= ${time} and (${timeColumn} > ${time} or id > ${bind(idBound)})`);
  }
  const order = newest ? "desc" : "asc";
  const text = `select ${columns} from ${table}${where.length > 0 ? ` where ${where.join(" and ")}` : ""} order by ${timeColumn} ${order}, id ${order} limit ${bind(limit)}`;
  return [text, ...params];
}

function flag(value: unknown): boolean {
  return value === true || value === 1 || value === 1n || value === "1" || value === "t";
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(Number(ms)).toISOString();
}

/** A row of decision_records: a pull request's decision, or a merge group's (its body says which). */
function decisionOf(row: DecisionRow): DecisionRecord | MergeGroupRecord {
  if (row.body === undefined) throw new Error("history-ops: a decision row without its body");
  return storedRecordOf({ id: row.id, confirmed_at_ms: row.confirmed_at_ms, published_at_ms: row.t }, decodeStoredBody(row.body));
}

function mergeOf(row: MergeRow): MergeRecord {
  return {
    schema_version: RECORD_SCHEMA_VERSION,
    kind: "merge",
    id: `m${Number(row.id)}`,
    installation_id: Number(row.installation_id),
    repository: { id: Number(row.repository_id), full_name: row.repository_full_name },
    pull_request: Number(row.pull_number),
    head_sha: row.head_sha,
    merge_commit_sha: row.merge_commit_sha,
    merged_by: row.merged_by_id === null ? null : { id: Number(row.merged_by_id), login: row.merged_by_login ?? "" },
    merged_at: iso(row.merged_at_ms),
    decision_id: row.decision_id === null ? null : `d${Number(row.decision_id)}`,
    decision_conclusion: row.decision_conclusion === "success" || row.decision_conclusion === "failure" ? row.decision_conclusion : null,
    unapproved: flag(row.unapproved),
    reset_at: iso(row.reset_at_ms),
    base_sha: row.base_sha,
    enrollment: row.enrollment === "enrolled" || row.enrollment === "not_enrolled" ? row.enrollment : "pending",
    break_glass: flag(row.break_glass),
    recovered: flag(row.recovered),
    recorded_at: iso(row.t)!,
    merge_group_id: row.merge_group_id === null || row.merge_group_id === undefined ? null : `d${Number(row.merge_group_id)}`,
  };
}

function recordOf(fetched: Fetched): HistoryRecord {
  return fetched.kind === "decision" ? decisionOf(fetched.row) : mergeOf(fetched.row);
}

function summaryOf(fetched: Fetched): HistorySummary {
  if (fetched.kind === "merge") {
    const { installation_id: _installation, ...summary } = mergeOf(fetched.row);
    return summary;
  }
  const record = decisionOf(fetched.row);
  if (record.kind === "merge_group") {
    return {
      schema_version: record.schema_version, kind: "merge_group", id: record.id, repository: record.repository, head_sha: record.head_sha,
      base_ref: record.base_ref, conclusion: record.conclusion, title: record.title, published_at: record.published_at, confirmed: record.confirmed,
      break_glass: false, pull_requests: record.members.map((member) => member.pull_request),
    };
  }
  return {
    schema_version: record.schema_version, kind: "decision", id: record.id, confirmed: record.confirmed, repository: record.repository,
    pull_request: record.pull_request, head_sha: record.head_sha, conclusion: record.conclusion, title: record.title,
    published_at: record.published_at, break_glass: flag(fetched.row.break_glass),
  };
}
