import { expect, test } from "bun:test";
import type { PullRequestDetails } from "../forge/index.ts";
import { PULL_HANDOFF_MAX_AGE_MS, PullHandoff } from "./pull-handoff.ts";

const HEAD = "a".repeat(40);
const pull = (number: number, headSha = HEAD) => ({ number, headSha }) as unknown as PullRequestDetails;
const at = (evaluationGeneration: number, nowMs = 1_000, headSha = HEAD) => ({ headSha, evaluationGeneration, nowMs });

test("the evaluation of the generation the fast path read after takes its read once", () => {
  const handoff = new PullHandoff();
  handoff.offer(7, pull(3), 2, 1_000);
  expect(handoff.take(7, 3, at(2))).toEqual(pull(3));
  expect(handoff.take(7, 3, at(2))).toBeNull();
});

test("a read made before a later acceptance is not used by that acceptance's evaluation", () => {
  const handoff = new PullHandoff();
  handoff.offer(7, pull(3), 2, 1_000);
  expect(handoff.take(7, 3, at(3))).toBeNull();
});

test("a read for a newer generation is left for its evaluation, not taken by an older one", () => {
  const handoff = new PullHandoff();
  handoff.offer(7, pull(3), 4, 1_000);
  expect(handoff.take(7, 3, at(3))).toBeNull();
  expect(handoff.take(7, 3, at(4))).toEqual(pull(3));
});

test("a read after an earlier acceptance that finished late never replaces one after a later acceptance", () => {
  const handoff = new PullHandoff();
  handoff.offer(7, pull(3), 5, 1_000);
  handoff.offer(7, pull(3, "b".repeat(40)), 4, 1_100);
  expect(handoff.take(7, 3, at(5))).toEqual(pull(3));
});

test("a read of another head, another pull request or repository, or an old read is not used", () => {
  const handoff = new PullHandoff();
  handoff.offer(7, pull(3), 2, 1_000);
  expect(handoff.take(7, 3, at(2, 1_000, "c".repeat(40)))).toBeNull();
  handoff.offer(7, pull(3), 2, 1_000);
  expect(handoff.take(8, 3, at(2))).toBeNull();
  expect(handoff.take(7, 4, at(2))).toBeNull();
  expect(handoff.take(7, 3, at(2, 1_000 + PULL_HANDOFF_MAX_AGE_MS))).toBeNull();
  handoff.offer(7, pull(3), 2, 1_000);
  expect(handoff.take(7, 3, at(2, 999))).toBeNull(); // a clock that went back: not known to be young
});
