import { gunzipSync, gzipSync } from "node:zlib";
import { type DecisionRecord, type MergeGroupRecord, RECORD_SCHEMA_VERSION } from "./schema.ts";

/**
 * What `decision_records.body` holds: the record without the two fields the row itself knows (its `id`, and `confirmed`,
 * which is `confirmed_at_ms is not null`), as gzip-compressed JSON. node:zlib rather than a hand-written codec: Bun implements
 * it natively and the store keeps plain bytes on both backends.
 */
export type DecisionRecordBody = Omit<DecisionRecord, "id" | "confirmed">;
/** A merge group's record as `decision_records.body` holds it (its row has pull request number 0: no pull request has it). */
export type MergeGroupRecordBody = Omit<MergeGroupRecord, "id" | "confirmed">;

/** A stored body decompresses to at most this (a record is bounded to MAX_RECORD_BYTES; the margin is for JSON escaping). */
const MAX_DECODED_BYTES = 4 * 1024 * 1024;

export function encodeRecordBody(body: DecisionRecordBody | MergeGroupRecordBody): { readonly bytes: Uint8Array; readonly size: number } {
  const json = Buffer.from(JSON.stringify(body), "utf8");
  return { bytes: new Uint8Array(gzipSync(json)), size: json.byteLength };
}

/** A pull request's decision body; a merge group's (or anything else) is an error here: use decodeStoredBody. */
export function decodeRecordBody(bytes: Uint8Array): DecisionRecordBody {
  const body = decodeStoredBody(bytes);
  if (body.kind !== "decision") throw new Error(`a ${body.kind} record where a pull request's decision was expected`);
  return body;
}

/** Any body `decision_records` holds: a pull request's decision or a merge group's judgement. */
export function decodeStoredBody(bytes: Uint8Array): DecisionRecordBody | MergeGroupRecordBody {
  const json = gunzipSync(bytes, { maxOutputLength: MAX_DECODED_BYTES }).toString("utf8");
  const body = JSON.parse(json) as DecisionRecordBody | MergeGroupRecordBody;
  if (body.schema_version !== RECORD_SCHEMA_VERSION || (body.kind !== "decision" && body.kind !== "merge_group")) throw new Error(`decision record body of an unknown schema (${String(body.schema_version)})`);
  return body;
}

/**
 * The record as the routes and commands show it: the stored body with the row's id and confirmation, and with the row's
 * `published_at_ms` (when given) as its `published_at`: a retried publication adopts the retry's body but keeps the record's
 * first time, by which the history is ordered (ops/record-ops.ts).
 */
export function storedRecordOf(
  row: { readonly id: number | string | bigint; readonly confirmed_at_ms: number | string | null; readonly published_at_ms?: number | string | bigint },
  body: DecisionRecordBody | MergeGroupRecordBody,
): DecisionRecord | MergeGroupRecord {
  const published = row.published_at_ms === undefined ? body.published_at : new Date(Number(row.published_at_ms)).toISOString();
  return { ...body, published_at: published, id: `d${String(row.id)}` as `d${number}`, confirmed: row.confirmed_at_ms !== null };
}

/** storedRecordOf for a pull request's decision. */
export function decisionRecordOf(
  row: { readonly id: number | string | bigint; readonly confirmed_at_ms: number | string | null; readonly published_at_ms?: number | string | bigint },
  body: DecisionRecordBody,
): DecisionRecord {
  return storedRecordOf(row, body) as DecisionRecord;
}
