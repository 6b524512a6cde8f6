import {
  decideCheck,
  planLookups,
  previewLeftOut,
  wantsPreview,
  type CheckOutput,
  type Decision,
  type DirectoryFacts,
  type EvaluationSettings,
  type Evidence,
  type LookupPlan,
} from "../evaluation/index.ts";
import type { Logger } from "../observability/logger.ts";
import { EVALUATION_THREAD_URL } from "../threads.ts";
import { RetryLater } from "./errors.ts";

/**
 * Where the pure decision core runs for the worker (issue 16 item 2). `serve` uses threadEvaluator(): planLookups(),
 * evaluate() and renderCheck() run on evaluation threads, so however long one decision takes, the event loop keeps answering
 * webhooks and health probes and keeps renewing leases. The work of one evaluation is bounded by MAX_MATCH_STEPS (a
 * deterministic bound: over it the decision is a permanent failure); each thread request is also bounded in wall time as a
 * backstop for anything else (EVALUATION_TIMEOUT_MS).
 *
 * A request over its time bound terminates its thread (a new one starts for the next request) and the job is retried
 * (RetryLater "evaluation_timeout"), never published as failure: wall time depends on the host's load as well as on the
 * input, and a conclusion must depend on the evidence only. The check meanwhile stays in_progress, so nothing merges on it.
 *
 * The change preview (issue 25 item 1) is a request of its own, made once the decision and its output are back, with a
 * short bound counted from when it is asked for (PREVIEW_TIMEOUT_MS, queueing included). It can only add its section:
 * when it fails, runs past that bound or its thread dies, its thread is stopped and the decision's output is published with
 * a one-line note instead (previewLeftOut); the decision is never retried or changed because of it.
 */
export type Evaluator = {
  /** The directory facts the evaluation still needs beyond `known`, those fetched so far (planLookups). */
  plan(evidence: Omit<Evidence, "directory">, known: DirectoryFacts, signal?: AbortSignal): Promise<LookupPlan>;
  /** The decision and its check-run output. */
  decide(evidence: Evidence, signal?: AbortSignal): Promise<{ decision: Decision; output: CheckOutput }>;
  /** Stops every thread; requests still waiting are rejected. */
  close(): Promise<void>;
};

/** Wall-time bound of one thread request. The heaviest benchmarked decision takes about a second on the 2-core machine. */
export const EVALUATION_TIMEOUT_MS = 15_000;

/**
 * Wall-time bound of one change preview, from the moment it is asked for. A preview spends at most MAX_PREVIEW_MATCH_STEPS
 * (about a tenth of a second) plus parsing both sides' files. On the shared 2-core machine e2e/bench/preview-attack-bench.ts
 * measured about 0.1 s for a 3 MB owner token and 0.9-1.4 s for a 3 MB line of 75,000 valid owners (the costliest file the
 * byte bound allows). Past this the check is published without the preview: the publication waits no longer.
 */
export const PREVIEW_TIMEOUT_MS = 2_000;

/**
 * Evaluation threads per process: decisions are CPU-bound and short, so two keep one slow decision from delaying every other
 * while a 2-core host keeps a core for the event loop. More requests wait in order; their time bound starts on a thread.
 */
export const EVALUATION_THREADS = 2;

export type ThreadRequest =
  | { readonly id: number; readonly kind: "plan"; readonly evidence: Omit<Evidence, "directory">; readonly known: DirectoryFacts; readonly settings: EvaluationSettings }
  | { readonly id: number; readonly kind: "decide"; readonly evidence: Evidence; readonly settings: EvaluationSettings }
  /** The change preview appended to `output`, the decision's output from the "decide" request. */
  | { readonly id: number; readonly kind: "preview"; readonly evidence: Evidence; readonly settings: EvaluationSettings; readonly output: CheckOutput };

export type ThreadReply =
  | { readonly id: number; readonly ok: true; readonly kind: "plan"; readonly plan: LookupPlan }
  | { readonly id: number; readonly ok: true; readonly kind: "decide"; readonly decision: Decision; readonly output: CheckOutput }
  | { readonly id: number; readonly ok: true; readonly kind: "preview"; readonly output: CheckOutput }
  | { readonly id: number; readonly ok: false; readonly error: string };

/** On the calling thread: for tests and one-shot commands, where nothing else waits on the event loop. */
export function inlineEvaluator(settings: EvaluationSettings): Evaluator {
  return {
    plan: async (evidence, known) => planLookups(evidence, settings, known),
    async decide(evidence) {
      const { decision, output } = decideCheck(evidence, settings);
      return { decision, output };
    },
    close: async () => {},
  };
}

export type ThreadEvaluatorOptions = {
  readonly log: Logger;
  readonly threads?: number;
  readonly timeoutMs?: number;
  /** The change preview's bound (PREVIEW_TIMEOUT_MS). */
  readonly previewTimeoutMs?: number;
  /** The thread's entry point (tests substitute a slow one). */
  readonly url?: URL;
};

type Waiting = {
  readonly message: ThreadRequest;
  readonly signal: AbortSignal | undefined;
  resolve(reply: ThreadReply & { ok: true }): void;
  reject(error: unknown): void;
};

export function threadEvaluator(settings: EvaluationSettings, options: ThreadEvaluatorOptions): Evaluator {
  const { log, threads = EVALUATION_THREADS, timeoutMs = EVALUATION_TIMEOUT_MS, previewTimeoutMs = PREVIEW_TIMEOUT_MS, url = EVALUATION_THREAD_URL } = options;
  const idle: Worker[] = [];
  const all = new Set<Worker>();
  const queue: Waiting[] = [];
  const inFlight = new Set<(error: unknown) => void>();
  let nextId = 1;
  let closed = false;

  function retire(thread: Worker) {
    all.delete(thread);
    thread.terminate();
  }

  function pump() {
    while (!closed && queue.length > 0 && (idle.length > 0 || all.size < threads)) {
      const waiting = queue.shift()!;
      let thread = idle.pop();
      if (thread === undefined) {
        // Unreferenced: an idle thread never keeps the process alive (a request in flight holds its timer).
        thread = new Worker(url, { ref: false });
        all.add(thread);
      }
      run(thread, waiting);
    }
  }

  function run(thread: Worker, waiting: Waiting) {
    const started = performance.now();
    const finish = (keep: boolean) => {
      clearTimeout(timer);
      inFlight.delete(cancel);
      thread.onmessage = null;
      thread.onerror = null;
      waiting.signal?.removeEventListener("abort", onAbort);
      if (keep && !closed) idle.push(thread);
      else retire(thread);
      pump();
    };
    // Abandoned (aborted, over its time bound, failed, or the evaluator closed): the thread is stopped mid-work.
    const cancel = (error: unknown) => {
      finish(false);
      waiting.reject(error);
    };
    const onAbort = () => cancel(waiting.signal!.reason);
    const timer = setTimeout(() => {
      log.warn({ kind: waiting.message.kind, timeout_ms: timeoutMs }, "an evaluation ran past its time bound; its thread was stopped and the job will be retried");
      cancel(new RetryLater("evaluation_timeout"));
    }, timeoutMs);
    thread.onmessage = (event: MessageEvent<ThreadReply>) => {
      const reply = event.data;
      if (reply.id !== waiting.message.id) return;
      finish(true);
      log.debug({ kind: reply.ok ? reply.kind : waiting.message.kind, ms: Math.round(performance.now() - started) }, "evaluation thread answered");
      if (reply.ok) waiting.resolve(reply);
      else waiting.reject(Object.assign(new Error("the decision core failed on an evaluation thread"), { name: reply.error }));
    };
    thread.onerror = (event: ErrorEvent) => {
      event.preventDefault();
      log.error({ kind: waiting.message.kind }, "an evaluation thread failed; the job will be retried");
      cancel(new RetryLater("evaluation_thread_failed"));
    };
    inFlight.add(cancel);
    waiting.signal?.addEventListener("abort", onAbort, { once: true });
    thread.postMessage(waiting.message);
  }

  function request(message: ThreadRequest, signal: AbortSignal | undefined): Promise<ThreadReply & { ok: true }> {
    return new Promise((resolve, reject) => {
      if (closed) return reject(new Error("the evaluator is closed"));
      if (signal?.aborted) return reject(signal.reason);
      // Aborted while it waits for a thread: leave the queue (on a thread, run() handles the abort).
      const dropWhileQueued = () => {
        const index = queue.indexOf(waiting);
        if (index < 0) return;
        queue.splice(index, 1);
        reject(signal!.reason);
      };
      const settled = () => signal?.removeEventListener("abort", dropWhileQueued);
      const waiting: Waiting = {
        message,
        signal,
        resolve: (reply) => (settled(), resolve(reply)),
        reject: (error) => (settled(), reject(error)),
      };
      signal?.addEventListener("abort", dropWhileQueued, { once: true });
      queue.push(waiting);
      pump();
    });
  }

  return {
    async plan(evidence, known, signal) {
      const reply = await request({ id: nextId++, kind: "plan", evidence, known, settings }, signal);
      if (reply.kind !== "plan") throw new Error("an evaluation thread answered the wrong request");
      return reply.plan;
    },
    async decide(evidence, signal) {
      // The decision never reads the head's files: they are copied to the preview's thread only.
      const { headFiles: _, ...decisionEvidence } = evidence;
      const reply = await request({ id: nextId++, kind: "decide", evidence: decisionEvidence, settings }, signal);
      if (reply.kind !== "decide") throw new Error("an evaluation thread answered the wrong request");
      const { decision, output } = reply;
      if (!wantsPreview(decision, evidence)) return { decision, output };
      // Aborting the combined signal stops the preview's thread (run()) or drops it from the queue (request()).
      const bound = AbortSignal.timeout(previewTimeoutMs);
      try {
        const previewed = await request({ id: nextId++, kind: "preview", evidence, settings, output }, signal === undefined ? bound : AbortSignal.any([signal, bound]));
        if (previewed.kind !== "preview") throw new Error("an evaluation thread answered the wrong request");
        return { decision, output: previewed.output };
      } catch (error) {
        if (signal?.aborted || closed) throw error; // the job itself was abandoned: nothing is published
        const omission = bound.aborted ? { kind: "timeout" as const, ms: previewTimeoutMs } : { kind: "failed" as const };
        log.warn({ reason: omission.kind, error: error instanceof Error ? error.name : "unknown" }, "the change preview was left out; the decision is published without it");
        return { decision, output: previewLeftOut(output, omission) };
      }
    },
    async close() {
      closed = true;
      const error = new Error("the evaluator is closed");
      for (const waiting of queue.splice(0)) waiting.reject(error);
      for (const cancel of [...inFlight]) cancel(error);
      for (const thread of [...all]) retire(thread);
      idle.length = 0;
    },
  };
}
