import { pino } from "pino";
import type { FileRead } from "../evaluation/index.ts";
import type { CallOptions, FileLocation, ListResult, ProbeClock } from "../forge/index.ts";
import { createMetrics } from "../observability/metrics.ts";
import type { ReconcileForge } from "./attempt.ts";

/** Test fixtures for the reconciler: a clock tests move by hand, a scripted forge, valid raw items, a capturing logger. */

export type ManualClock = ProbeClock & { advance(ms: number): void; pending(): number };

export function manualClock(start = 1_800_000_000_000): ManualClock {
  let now = start;
  let nextId = 1;
  const timers = new Map<number, { at: number; run: () => void }>();
  return {
    now: () => now,
    setTimeout(run, ms) {
      const id = nextId++;
      timers.set(id, { at: now + ms, run });
      return id;
    },
    clearTimeout(handle) {
      timers.delete(handle as number);
    },
    advance(ms) {
      now += ms;
      for (const [id, timer] of [...timers].sort((a, b) => a[1].at - b[1].at)) {
        if (timer.at <= now) {
          timers.delete(id);
          timer.run();
        }
      }
    },
    pending: () => timers.size,
  };
}

export const HEAD_A = "a".repeat(40);
export const HEAD_B = "b".repeat(64);
export const HEAD_C = "c".repeat(40);

export const installationItem = (id: number, extra: Record<string, unknown> = {}) => ({ id, account: { login: "acme" }, suspended_at: null, ...extra });
export const repositoryItem = (id: number, name: string, extra: Record<string, unknown> = {}) => ({ id, name, owner: { login: "acme" }, archived: false, ...extra });
export const pullItem = (number: number, sha: string, extra: Record<string, unknown> = {}) => ({ number, head: { sha, ref: `branch-${number}` }, state: "open", ...extra });

export type ForgeScript = {
  installations: () => ListResult | Promise<ListResult>;
  repositories: (installationId: number) => ListResult | Promise<ListResult>;
  pulls: (installationId: number, owner: string, repo: string) => ListResult | Promise<ListResult>;
  /** Recently closed pull requests (the merge recovery); default: nothing changed since the last answer (a 304). */
  closed: (installationId: number, owner: string, repo: string) => { notModified: boolean; items: unknown } | Promise<{ notModified: boolean; items: unknown }>;
  /** The repository policy at a merge's base commit (its enrollment); default: a policy that enables the service. */
  file: (at: FileLocation) => FileRead | Promise<FileRead>;
};

export const whole = (items: unknown): ListResult => ({ complete: true, items: items as unknown[] });

/** A forge that answers from a script and records every call (with the abort signal and governor priority it was given). */
export function scriptedForge(script: Partial<ForgeScript>): ReconcileForge & { calls: string[]; signals: (AbortSignal | undefined)[]; priorities: CallOptions["priority"][] } {
  const calls: string[] = [];
  const signals: (AbortSignal | undefined)[] = [];
  const priorities: CallOptions["priority"][] = [];
  /** The body of each page told, by installation, repository and page: the next telling of the same body is a 304. */
  const keptPages = new Map<string, string>();
  const record = (call: string, options?: CallOptions) => {
    calls.push(call);
    signals.push(options?.signal);
    priorities.push(options?.priority);
  };
  return {
    calls,
    signals,
    priorities,
    async listInstallations(options) {
      record("installations", options);
      return (script.installations ?? (() => whole([installationItem(1)])))();
    },
    async listInstallationRepositories(installationId, options) {
      record(`repositories:${installationId}`, options);
      return (script.repositories ?? (() => whole([repositoryItem(10, "web")])))(installationId);
    },
    // Every merge's base commit enables the service (a policy with enabled = true), unless the script says otherwise.
    async readFile(at, _maxBytes, options) {
      record(`file:${at.installationId}:${at.owner}/${at.repo}:${at.ref ?? "HEAD"}`, options);
      return (script.file ?? (() => ({ kind: "found", path: at.path, text: "schema_version = 1\nenabled = true\n", bytes: 32 }) as const))(at);
    },
    async listRecentlyClosedPullRequests(installationId, owner, repo, options) {
      record(`closed:${installationId}:${owner}/${repo}`, options);
      return (script.closed ?? (() => ({ notModified: true, items: null })))(installationId, owner, repo);
    },
    // The scripted list is told in pages of 100, like the forge's (a gap tells nothing), each awaited before the next. Each
    // page told is one request on the call's counter, answered 304 when it is the page told last time (a conditional forge).
    async streamOpenPullRequestItems(installationId, owner, repo, max, onPage, options) {
      record(`pulls:${installationId}:${owner}/${repo}`, options);
      const listed = await (script.pulls ?? (() => whole([pullItem(1, HEAD_A)])))(installationId, owner, repo);
      if (!listed.complete) return listed;
      if (!Array.isArray(listed.items)) return { complete: false, cause: "transient", detail: "not a list", notList: true };
      if (listed.items.length > max) return { complete: false, cause: "over_bound", detail: `more than ${max} items` };
      for (let start = 0, page = 1; start === 0 || start < listed.items.length; start += 100, page++) {
        const items = listed.items.slice(start, start + 100);
        const key = `${installationId}/${owner}/${repo}/${page}`;
        const body = JSON.stringify(items);
        if (options?.counter) {
          options.counter.requests += 1;
          if (keptPages.get(key) === body) options.counter.notModified = (options.counter.notModified ?? 0) + 1;
        }
        keptPages.set(key, body);
        if (items.length > 0) await onPage(items, { pass: 0, page });
      }
      return { complete: true, count: listed.items.length };
    },
  };
}

export function captureLog() {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino({ level: "debug" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { log, lines, text: () => lines.map((l) => JSON.stringify(l)).join("\n") };
}

export function reconcileMetrics() {
  const metrics = createMetrics();
  const count = async (result: string) => (await metrics.reconciliations.get()).values.find((v) => v.labels.result === result)?.value ?? 0;
  const lastSuccess = async () => (await metrics.reconciliationLastSuccess.get()).values[0]?.value ?? 0;
  return { metrics, count, lastSuccess };
}
