import { expect, test } from "bun:test";
import { gzipSync } from "node:zlib";
import { decisionRecordOf, decodeRecordBody, encodeRecordBody, type DecisionRecordBody } from "./codec.ts";

const body: DecisionRecordBody = {
  schema_version: 1, kind: "decision", installation_id: 1, repository: { id: 2, full_name: "acme/app" }, pull_request: 3,
  head_sha: "a".repeat(40), base_sha: "b".repeat(40), check_run_id: 4, conclusion: "success", title: "Approved",
  reasons: [], published_at: "2026-11-27T00:00:00.000Z", service: { version: "1.0.0", revision: null }, codeowners: null,
  repository_policy: null, organization_policy: null, owner_sets: [], unowned_path_count: 0, non_delegable_path_count: 0,
  break_glass: null, summarised: null, inputs: null,
};

test("a record body survives encoding, and the row supplies its id and confirmation", () => {
  const { bytes, size } = encodeRecordBody(body);
  expect(size).toBe(JSON.stringify(body).length);
  expect(bytes.byteLength).toBeLessThan(size);
  const record = decisionRecordOf({ id: 17, confirmed_at_ms: null }, decodeRecordBody(bytes));
  expect(record).toEqual({ ...body, id: "d17", confirmed: false });
});

test("a body of another schema version is refused", () => {
  expect(() => decodeRecordBody(new Uint8Array(gzipSync(JSON.stringify({ ...body, schema_version: 2 }))))).toThrow("unknown schema");
});

test("a body that decompresses past the bound is refused", () => {
  expect(() => decodeRecordBody(new Uint8Array(gzipSync(Buffer.alloc(5 * 1024 * 1024, 32))))).toThrow();
});
