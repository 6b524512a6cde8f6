// The evaluation threads of `serve` (issue 16 item 2): the decision core runs off the event loop, a request is bounded in
// wall time, and an abandoned request stops its thread. Responsiveness is measured by counting probes answered while a
// decision runs, never by timing one.
import { afterEach, describe, expect, test } from "bun:test";
import { pino } from "pino";
import { MatchBudget } from "../policy/match-budget.ts";
import { evaluate } from "../evaluation/evaluate.ts";
import { NO_DIRECTORY_FACTS } from "../evaluation/plan-lookups.ts";
import { DEFAULT_EVALUATION_SETTINGS, type Evidence } from "../evaluation/evidence.ts";
import { renderCheck } from "../evaluation/render-check.ts";
import { approve, baseEvidence, fiveStarRule, found, sixtyDeepPath, USERS, withCodeowners, withFiles, withReviews } from "../evaluation/evidence-fixture.ts";
import { decideCheck } from "../evaluation/decide-check.ts";
import { PREVIEW_HEADING } from "../evaluation/render-check.ts";
import { RetryLater } from "./errors.ts";
import { type Evaluator, inlineEvaluator, threadEvaluator } from "./evaluator.ts";

const log = pino({ level: "silent" });
const settings = DEFAULT_EVALUATION_SETTINGS;
const STUCK = new URL("./stuck-thread-fixture.ts", import.meta.url);
const PREVIEW_FAULTS = new URL("./preview-fault-thread-fixture.ts", import.meta.url);

/** The base fixture as pull request `number`, changing CODEOWNERS to `headText` (the head's files give it a preview). */
function editingCodeowners(number: number, headText = "* @bob\n"): Evidence {
  const changed = withFiles(baseEvidence(), ["CODEOWNERS", "src/app.ts"]);
  return {
    ...changed,
    pullRequest: { ...changed.pullRequest, number },
    sameHeadPullRequests: { complete: true, items: [{ number, headSha: changed.pullRequest.headSha }] },
    headFiles: { codeowners: { ".forge/CODEOWNERS": { kind: "missing" }, CODEOWNERS: found("CODEOWNERS", headText) }, repositoryPolicy: changed.repositoryPolicy },
  };
}

/** 100 rules of five ** and 2,999 sixty-deep paths: the decision runs until it spends MAX_MATCH_STEPS. */
function heavyEvidence(): Evidence {
  const rules = ["* @alice", ...Array.from({ length: 100 }, (_, i) => `${fiveStarRule(i)} @bob`)].join("\n");
  const files = Array.from({ length: 2_999 }, (_, i) => sixtyDeepPath(`f${i}.txt`));
  return withReviews(withFiles(withCodeowners(baseEvidence(), rules), files), approve(USERS.alice));
}

/** Probes answered by a local HTTP server while `work` runs (the probe loop and the server share this event loop). */
async function probesAnsweredDuring(work: () => Promise<unknown>): Promise<number> {
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok") });
  let answered = 0;
  let running = true;
  const probing = (async () => {
    while (running) {
      const response = await fetch(`http://127.0.0.1:${server.port}/health/live`);
      await response.text();
      if (running) answered++;
    }
  })();
  try {
    await work();
  } finally {
    running = false;
    await probing;
    await server.stop(true);
  }
  return answered;
}

let evaluators: Evaluator[] = [];
afterEach(async () => {
  for (const evaluator of evaluators.splice(0)) await evaluator.close();
});
const threads = (options: Partial<Parameters<typeof threadEvaluator>[1]> = {}) => {
  const evaluator = threadEvaluator(settings, { log, ...options });
  evaluators.push(evaluator);
  return evaluator;
};

describe("evaluation threads", () => {
  test("a thread decides exactly what the decision core decides on the event loop", async () => {
    const evidence = withReviews(withFiles(baseEvidence(), ["src/a.ts", "docs/b.md", "vendor/c.js"]), approve(USERS.alice));
    const decision = evaluate(evidence, settings);
    const evaluator = threads();
    expect(await evaluator.decide(evidence)).toEqual({ decision, output: renderCheck(decision) });
    expect(await evaluator.plan(evidence, NO_DIRECTORY_FACTS)).toEqual(await inlineEvaluator(settings).plan(evidence, NO_DIRECTORY_FACTS));
  });

  test("a thread's decision with its change preview is the one the decision core makes on the event loop", async () => {
    const evidence = editingCodeowners(7);
    const inline = decideCheck(evidence, settings);
    expect(inline.output.summary).toContain("would change");
    expect(await threads().decide(evidence)).toEqual({ decision: inline.decision, output: inline.output });
  });

  test("a preview over its time bound is left out with a one-line note; the decision is published as without it", async () => {
    const evidence = editingCodeowners(1);
    const { headFiles: _, ...withoutHead } = evidence;
    const plain = decideCheck(withoutHead, settings);
    const evaluator = threads({ url: PREVIEW_FAULTS, previewTimeoutMs: 1_000, threads: 1 });
    const published = await evaluator.decide(evidence);
    expect(published.decision).toEqual(plain.decision);
    expect(published.output.title).toBe(plain.output.title);
    expect(published.output.text).toBe(plain.output.text);
    const [decided, section] = published.output.summary.split(`\n\n${PREVIEW_HEADING}\n\n`);
    expect(decided).toBe(plain.output.summary);
    expect(section).toBe("The preview is left out\\: it took longer than 1 s\\.");
    // With one thread allowed, this answer can only come from a new thread: the stuck one was terminated.
    expect((await evaluator.decide(editingCodeowners(2))).output.summary).toContain("The preview is left out\\: it could not be computed");
  });

  test("health probes are answered while a thread runs a decision that spends the whole matching budget", async () => {
    const evidence = heavyEvidence();
    const probe = new MatchBudget(Number.POSITIVE_INFINITY);
    evaluate(evidence, settings, probe);
    expect(probe.used).toBeGreaterThan(20_000_000); // heavy enough to hit the bound
    // On the event loop nothing else runs until the decision is made...
    let inline: Awaited<ReturnType<Evaluator["decide"]>> | undefined;
    expect(await probesAnsweredDuring(async () => (inline = await inlineEvaluator(settings).decide(evidence)))).toBe(0);
    // ...on a thread the loop keeps answering.
    let threaded: Awaited<ReturnType<Evaluator["decide"]>> | undefined;
    expect(await probesAnsweredDuring(async () => (threaded = await threads().decide(evidence)))).toBeGreaterThanOrEqual(5);
    expect(threaded!.decision.reasons.map((reason) => reason.code)).toEqual(["matching_budget_exceeded"]);
    expect(threaded).toEqual(inline!);
  }, 20_000); // three whole-budget evaluations (the probe runs past the bound): about 3.5 s on an idle 2-core machine, more under load

  test("a request over its time bound stops its thread and asks for a retry; the next request gets a fresh thread", async () => {
    const evaluator = threads({ url: STUCK, timeoutMs: 200, threads: 1 });
    const timedOut = await evaluator.decide(baseEvidence()).then(() => null, (error: unknown) => error);
    expect(timedOut).toBeInstanceOf(RetryLater);
    expect((timedOut as RetryLater).code).toBe("evaluation_timeout");
    // With one thread allowed, this answer can only come from a new thread: the stuck one was terminated.
    expect((await evaluator.plan(baseEvidence(), NO_DIRECTORY_FACTS)).collaborators).toEqual([]);
  });

  test("an aborted request stops its thread, and one still waiting for a thread leaves the queue", async () => {
    const evaluator = threads({ url: STUCK, timeoutMs: 60_000, threads: 1 });
    const running = new AbortController();
    const waiting = new AbortController();
    const first = evaluator.decide(baseEvidence(), running.signal).then(() => null, (error: unknown) => error);
    const second = evaluator.decide(baseEvidence(), waiting.signal).then(() => null, (error: unknown) => error);
    waiting.abort(new Error("lease lost"));
    expect(((await second) as Error).message).toBe("lease lost");
    running.abort(new Error("shutting down"));
    expect(((await first) as Error).message).toBe("shutting down");
    expect((await evaluator.plan(baseEvidence(), NO_DIRECTORY_FACTS)).apps).toEqual([]);
  });

  test("closing stops the thread of a request in flight and refuses later requests", async () => {
    const evaluator = threads({ url: STUCK, timeoutMs: 60_000 });
    const inFlight = evaluator.decide(baseEvidence()).then(() => null, (error: unknown) => error);
    await Bun.sleep(50);
    await evaluator.close();
    expect(((await inFlight) as Error).message).toBe("the evaluator is closed");
    await expect(evaluator.decide(baseEvidence())).rejects.toThrow("the evaluator is closed");
  });
});
