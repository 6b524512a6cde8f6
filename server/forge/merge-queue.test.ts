import { expect, test } from "bun:test";
import { queueAnswerOf } from "./merge-queue.ts";

const node = (n: number) => ({ position: n, state: "AWAITING_CHECKS", headCommit: { oid: "a".repeat(40) }, baseCommit: { oid: "b".repeat(40) }, pullRequest: { number: n, headRefOid: "c".repeat(40) } });
const page = (nodes: unknown[], extra: Record<string, unknown> = {}) => ({ repository: { mergeQueue: { entries: { totalCount: nodes.length, pageInfo: { hasNextPage: false }, nodes, ...extra } } } });

test("a whole first page is the queue's entries, as answered", () => {
  expect(queueAnswerOf(page([node(1), node(2)]))).toEqual({ complete: true, entries: [
    { position: 1, state: "AWAITING_CHECKS", headCommit: "a".repeat(40), baseCommit: "b".repeat(40), pullNumber: 1, headRefOid: "c".repeat(40) },
    { position: 2, state: "AWAITING_CHECKS", headCommit: "a".repeat(40), baseCommit: "b".repeat(40), pullNumber: 2, headRefOid: "c".repeat(40) },
  ] });
  expect(queueAnswerOf(page([]))).toEqual({ complete: true, entries: [] });
});

test("more entries than the page holds is not complete", () => {
  expect(queueAnswerOf(page([node(1)], { pageInfo: { hasNextPage: true } }))).toMatchObject({ complete: false });
  expect(queueAnswerOf(page([node(1)], { totalCount: 101 }))).toMatchObject({ complete: false });
  expect(queueAnswerOf(page(Array.from({ length: 101 }, (_, i) => node(i + 1))))).toEqual({ complete: false, entries: [] });
});

test("no repository, no queue or a malformed page is no answer; a node's missing fields are kept as missing", () => {
  expect(queueAnswerOf(null)).toBeNull();
  expect(queueAnswerOf({ repository: null })).toBeNull();
  expect(queueAnswerOf({ repository: { mergeQueue: null } })).toBeNull();
  expect(queueAnswerOf(page([node(1)], { pageInfo: null }))).toBeNull();
  expect(queueAnswerOf(page([{ ...node(1), position: "1" }]))).toBeNull();
  expect(queueAnswerOf(page([{ ...node(1), pullRequest: null, headCommit: null }]))).toMatchObject({ entries: [{ pullNumber: null, headRefOid: null, headCommit: null }] });
});
