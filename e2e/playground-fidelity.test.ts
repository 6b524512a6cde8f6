import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { pino } from "pino";
import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { createForgeClient, type ForgeClient } from "../server/forge/index.ts";
import { createMetrics } from "../server/observability/metrics.ts";
import { createScenario, generateAppKeys, type Scenario } from "../server/simulator/scenario.ts";
import { type ForgeSimulator, startForgeSimulator } from "../server/simulator/simulator.ts";
import { acceptDirectTrigger, claimNext, completeJob, type JobRow, migrateDatabase, openStore, type Store } from "../server/store/index.ts";
import type { WorkerContext } from "../server/worker/context.ts";
import { evaluatePullRequest } from "../server/worker/jobs/evaluate-pull-request.ts";
import { invalidateHead } from "../server/worker/jobs/invalidate-head.ts";
import { explain } from "../web/src/engine.ts";
import { ExplanationView } from "../web/src/explanation.tsx";
import { SCENARIOS } from "../web/src/scenarios.ts";
import type { PlaygroundState } from "../web/src/state.ts";
import { createTestDatabase, type TestDatabase } from "./support/databases.ts";

/**
 * The playground's "check run as the forge shows it" is what the worker publishes for the same inputs. Each built-in scenario
 * goes through both: the playground's engine, and the worker's own jobs (the head's invalidation, then the evaluation) with
 * the scenario's evidence in place of what the forge would have answered, writing to the forge simulator; the check run the
 * simulator then holds is compared with what the page shows.
 */
type Shown = { status: string; conclusion: string | null; title: string; summary: string; text: string | null };

/** What the playground shows of the check run: the page's status and title, and the output they come from. */
function playgroundShows(state: PlaygroundState): Shown {
  const explanation = explain(state, "");
  const page = renderToStaticMarkup(createElement(ExplanationView, { explanation, onLine: () => {}, onPreviewLine: () => {} }));
  const text = (html: string) => html.replace(/&#x27;/g, "'").replace(/&quot;/g, '"').replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
  const shown = (id: string) => {
    const found = new RegExp(`data-testid="${id}">([^<]*)<`).exec(page)?.[1];
    return found === undefined ? null : text(found);
  };
  const { published } = explanation;
  if (published.kind === "none") return { status: shown("forge-check-status") ?? "", conclusion: null, title: "", summary: "", text: null };
  const status = published.kind === "completed" ? "completed" : "in_progress";
  const conclusion = published.kind === "completed" ? published.conclusion : null;
  // The page says what the forge would: "completed: failure", "in progress", with the same title.
  expect(shown("forge-check-status")).toBe(conclusion === null ? "in progress" : `completed: ${conclusion}`);
  expect(shown("forge-check-title")).toBe(published.output.title);
  return { status, conclusion, title: published.output.title, summary: published.output.summary, text: "text" in published.output ? published.output.text : null };
}

let sim: ForgeSimulator;
let keys: ReturnType<typeof generateAppKeys>;
beforeAll(() => {
  keys = generateAppKeys();
});
afterAll(async () => {
  await sim?.stop();
});

/** The check run the worker leaves on a fresh pull request's head when the forge's evidence is the scenario's. */
async function workerPublishes(state: PlaygroundState): Promise<Shown> {
  await sim?.stop();
  sim = startForgeSimulator({});
  const scenario: Scenario = await createScenario(sim, { keys });
  const database: TestDatabase = await createTestDatabase("sqlite");
  let store: Store | undefined;
  try {
    await migrateDatabase(database.target, Date.now());
    store = openStore(database.target);
    const log = pino({ level: "silent" });
    const real = createForgeClient({ apiUrl: sim.url, appId: scenario.appId, privateKey: scenario.privateKey, requestTimeoutMs: 5_000, checkName: state.settings.checkName, logger: log });
    // The forge answers as usual (the pull request, its head), but the evidence evaluated is the scenario's.
    const forge = new Proxy(real, {
      get(target, key, receiver) {
        if (key !== "gatherEvidence") return Reflect.get(target, key, receiver);
        const gather: ForgeClient["gatherEvidence"] = async (request, options) => {
          const gathered = await target.gatherEvidence(request, options);
          return gathered.kind === "gathered" ? { ...gathered, evidence: state.evidence } : gathered;
        };
        return gather;
      },
    });
    const ctx: WorkerContext = {
      store, forge, metrics: createMetrics(), log, now: () => Date.now(), workerId: "w", guardTimeoutMs: 5_000, resetTimeoutMs: 5_000,
      settings: { ...state.settings, organizationPolicyRepository: ".forge" },
    };
    const repository = { installationId: scenario.installationId, repositoryId: sim.control.mustRepo(scenario.org, scenario.repo).id, owner: scenario.org, name: scenario.repo };
    await store.execute(() => acceptDirectTrigger({ ...repository, deliveryId: crypto.randomUUID(), event: "pull_request", action: "opened", pullNumber: scenario.pullNumber, headSha: scenario.headSha, now: Date.now() }));
    const run = async (kind: JobRow["kind"], handler: (ctx: WorkerContext, row: JobRow, signal: AbortSignal) => Promise<unknown>) => {
      const row = (await store!.execute(() => claimNext("w", Date.now(), 30_000)))!;
      expect(row.kind).toBe(kind);
      try {
        await handler(ctx, row, new AbortController().signal);
      } finally {
        await store!.execute(() => completeJob(row.id, "w", row.merges, Date.now()));
      }
    };
    await run("head_invalidation", invalidateHead);
    await run("evaluation", evaluatePullRequest);
    const runs = sim.control.checkRuns({ owner: scenario.org, repo: scenario.repo, headSha: scenario.headSha });
    expect(runs).toHaveLength(1);
    const { status, conclusion, output } = runs[0]! as { status: string; conclusion: string | null; output: { title: string; summary: string; text?: string | null } };
    return { status, conclusion, title: output.title, summary: output.summary, text: output.text ?? null };
  } finally {
    await store?.close();
    await database.drop();
  }
}

describe("the playground shows the check run the worker publishes", () => {
  for (const scenario of SCENARIOS) {
    test(`${scenario.id}: same status, conclusion, title, summary and text`, async () => {
      const state = scenario.build();
      expect(playgroundShows(state)).toEqual(await workerPublishes(state));
    }, 30_000);
  }
});
